"""whisperbench: WER and QoI across Whisper implementations, on the same weights."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("whisperbench")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+local"
