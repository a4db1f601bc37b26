"""Exceptions whose messages are meant for the user: they name the file, example or option at fault."""

from __future__ import annotations


class WhisperbenchError(Exception):
    """Base class: the CLI prints these without a traceback and exits with status 2."""


class DatasetError(WhisperbenchError):
    """A dataset cannot be loaded, or some of its examples are invalid."""

    def __init__(self, message: str, problems: list[str] | None = None):
        self.problems = list(problems or [])
        if self.problems:
            shown = "\n".join(f"  - {p}" for p in self.problems[:20])
            more = len(self.problems) - 20
            tail = f"\n  ... and {more} more" if more > 0 else ""
            message = f"{message}\n{shown}{tail}"
        super().__init__(message)


class AudioError(WhisperbenchError):
    """An audio file or buffer cannot be decoded."""


class AdapterUnavailable(WhisperbenchError):
    """An adapter's optional dependency is not installed."""


class ModelError(WhisperbenchError):
    """A model name cannot be resolved, or its weights cannot be read or converted."""


class RunStoreError(WhisperbenchError):
    """A run directory is missing, malformed, or belongs to a different configuration."""


class OptionError(WhisperbenchError):
    """A decoding or adapter option is unknown or has a bad value."""
