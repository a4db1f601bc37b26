"""One :class:`Format` object per Whisper model format, and the registry of them.

Everything whisperbench knows about one format lives in its module under :mod:`whisperbench.models.formats`
(``FORMAT = Format(...)``): how to recognise it from its contents, how to describe it from its headers
(:class:`ModelLayout`), how to read it back to a float32 ``Checkpoint``, its token embedding (the
fingerprint), which module converts to it, the file name its implementation loads, its default variant,
the adapters that run it as it is and one line for the help. The tables of :mod:`~whisperbench.models.detect`,
:mod:`~whisperbench.models.readers`, :mod:`~whisperbench.models.resolve` and the CLI are derived from
:func:`all_formats`. A new format is one new module in ``models/formats/`` (found by its presence), or
:func:`register` at run time (a plug-in, a test).

Shared here too: the header readers every inspector uses (JSON, safetensors, a safe ``torch.load``).

>>> [f.name for f in all_formats()][:3]
['ctranslate2', 'transformers', 'openai-whisper']
>>> get_format("hf").name, get_format("whisper.cpp").output_file
('transformers', 'ggml-model.bin')
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whisperbench.core.registry import Registry, package_items
from whisperbench.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

    from whisperbench.models.checkpoint import Checkpoint
    from whisperbench.models.source import SourceModel

#: the package whose modules each define one ``FORMAT``
FORMAT_PACKAGE = "whisperbench.models.formats"
DIMS = (
    "n_mels",
    "n_vocab",
    "n_audio_ctx",
    "n_audio_state",
    "n_audio_head",
    "n_audio_layer",
    "n_text_ctx",
    "n_text_state",
    "n_text_head",
    "n_text_layer",
)
#: openai-whisper's dimension names -> transformers' config.json keys
HF_DIMS = {
    "n_mels": "num_mel_bins",
    "n_vocab": "vocab_size",
    "n_audio_ctx": "max_source_positions",
    "n_audio_state": "d_model",
    "n_audio_head": "encoder_attention_heads",
    "n_audio_layer": "encoder_layers",
    "n_text_ctx": "max_target_positions",
    "n_text_state": "d_model",
    "n_text_head": "decoder_attention_heads",
    "n_text_layer": "decoder_layers",
}
SAFETENSORS_DTYPES = {
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I8": "int8",
    "U32": "uint32",
    "I64": "int64",
    "U8": "uint8",
}


@dataclass
class ModelLayout:
    """What :func:`~whisperbench.models.detect.inspect_model` found: enough to decide, convert and record,
    without the weights."""

    format: str
    path: Path  # the file or folder an implementation of this format loads
    weight_files: list[Path]
    dims: dict[str, int]
    dtype: str  # float32, float16, bfloat16, int8, q5_0, q4 (MLX 4-bit) ...
    quantized: bool

    @property
    def size_bytes(self) -> int:
        """Total size of the weight files on disk, in bytes."""
        return sum(f.stat().st_size for f in self.weight_files)


@dataclass(frozen=True)
class Format:
    """All that is known about one model format. Only ``name``, ``title``, ``description`` and ``rank`` are
    required: a format without a detector is a conversion target only (``flax``), one without ``read`` cannot
    be converted from, one without ``converter`` cannot be converted to."""

    name: str  # used everywhere: run.json, ``converted(model, name)``, ``--model NAME:PATH``
    title: str  # as prose names it: "CTranslate2", "ggml .bin"
    description: str  # one line for the help and ``models formats``
    rank: int  # detection and listing order
    aliases: tuple[str, ...] = ()  # short names users type (``hf``, ``ct2``)
    #: a folder format: does this folder look like it (from its contents, cheaply)
    folder: Callable[[Path], bool] | None = None
    #: a one-file format: does this file (its path and first 4 bytes) say so for sure
    file: Callable[[Path, bytes], bool] | None = None
    #: a file named directly that no format claims for sure: does it at least look like this one
    file_fallback: Callable[[bytes], bool] | None = None
    #: folder formats whose detector also fires on this one's folders (a CTranslate2 folder keeps a
    #: transformers config.json): dropped when both are found
    shadows: tuple[str, ...] = ()
    inspect: Callable[[Path], ModelLayout] | None = None  # headers only
    check_dims: bool = False  # Whisper's own invariants (mels, vocabulary, heads) apply to its dims
    read: Callable[[SourceModel], Checkpoint] | None = None  # back to float32 openai-whisper names
    unreadable: str = ""  # why ``read`` is None (the error a conversion from it gets)
    embedding: Callable[[SourceModel], np.ndarray] | None = None  # the token embedding: the fingerprint
    converter: str | None = None  # "module:function" writing ``fn(source, out_dir, variant)`` (imported on use)
    output_file: str | None = None  # its implementation loads one file: the converter writes this name
    default_variant: str = ""  # the variant an empty variant name means
    variants: str = ""  # for the help: "f16/q8_0/q5_0"
    native_adapters: tuple[str, ...] = ()  # adapter names that run it as it is (strings: models sees no adapters)

    @property
    def detectable(self) -> bool:
        """Whether a model on disk can be recognised as this format."""
        return self.folder is not None or self.file is not None


@lru_cache(maxsize=1)
def builtin_formats() -> tuple[Format, ...]:
    """The ``FORMAT`` of every module in :mod:`whisperbench.models.formats`, by rank."""
    return tuple(sorted(package_items(FORMAT_PACKAGE, "FORMAT"), key=_rank))


def _rank(fmt: Format) -> tuple[int, str]:
    return fmt.rank, fmt.name


#: every format: one module each in :mod:`whisperbench.models.formats`, then installed packages' (entry-point group
#: ``whisperbench.formats``), then those :func:`register` adds; by rank
FORMATS: Registry[Format] = Registry(
    "format", builtin=builtin_formats, kind=Format, group="whisperbench.formats", order=_rank, error=ModelError
)


def register(fmt: Format) -> Format:
    """Add (or replace) a format at run time: detection, ``models info``, conversion and the help see it."""
    return FORMATS.add(fmt)


def all_formats() -> tuple[Format, ...]:
    """Every known format, built in, installed and registered, by rank."""
    return FORMATS.items()


def format_names(formats: Iterable[Format] | None = None) -> dict[str, str]:
    """Every name a user may type (the names and their aliases) -> the format's name, of ``formats`` (default:
    every known format)."""
    names: dict[str, str] = {}
    for fmt in all_formats() if formats is None else formats:
        names |= {alias: fmt.name for alias in fmt.aliases}
        names[fmt.name] = fmt.name
    return names


def find_format(name: str) -> Format | None:
    """The format called ``name`` (or one of its aliases), else None."""
    canonical = format_names().get(name)
    return next((f for f in all_formats() if f.name == canonical), None)


def get_format(name: str) -> Format:
    """The format called ``name`` (or one of its aliases); ModelError naming the known ones otherwise."""
    fmt = find_format(name)
    if fmt is None:
        raise ModelError(f"unknown format {name!r} (formats: {', '.join(format_names())})")
    return fmt


# ------------------------------------------------------------------------- shared header readers


def bad(path: Path, fmt: str, problem: str) -> ModelError:
    """The one error of a model that is not what it claims: the file, the format guessed, the problem."""
    return ModelError(f"{path}: read as a {fmt} Whisper model: {problem}")


def read_json(path: Path, fmt: str) -> dict:
    """A JSON object from ``path``, or :func:`bad`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise bad(path, fmt, f"cannot read {path.name}: {exc}") from exc
    if not isinstance(data, dict):
        raise bad(path, fmt, f"{path.name} is not a JSON object")
    return data


def config_has(folder: Path, *keys: str) -> bool:
    """Whether ``folder/config.json`` is a JSON object holding any of ``keys``."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and any(k in config for k in keys)


def is_pickle_head(head: bytes) -> bool:
    """Whether a file's first bytes are a zip (torch's format) or a pickle."""
    return head[:2] == b"PK" or head[:1] == b"\x80"


def is_pickle(path: Path) -> bool:
    """Whether ``path`` starts like a torch zip or a pickle."""
    with open(path, "rb") as fh:
        return is_pickle_head(fh.read(4))


def safetensors_header(path: Path, fmt: str) -> dict[str, dict]:
    """The tensor table of a safetensors file (name -> dtype, shape, data_offsets), checked against its size."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise bad(path, fmt, "safetensors file is shorter than its 8-byte header length")
            (length,) = struct.unpack("<Q", head)
            if length > min(size - 8, 100 << 20):
                raise bad(path, fmt, f"safetensors header length {length} does not fit the file ({size} bytes)")
            table = json.loads(fh.read(length))
    except OSError as exc:
        raise bad(path, fmt, f"cannot read: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise bad(path, fmt, f"safetensors header is not JSON: {exc}") from exc
    table.pop("__metadata__", None)
    end = max((info["data_offsets"][1] for info in table.values()), default=0)
    if 8 + length + end > size:
        raise bad(path, fmt, f"truncated: its tensors need {8 + length + end} bytes, the file has {size}")
    return table


def torch_load(path: Path, fmt: str) -> Any:
    """``torch.load`` memory-mapped and without code execution; a clear error for anything else."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad file
        raise bad(path, fmt, f"torch cannot load it: {str(exc).splitlines()[0][:200]}") from exc


def torch_tensors(path: Path, fmt: str) -> dict[str, tuple[str, list[int]]]:
    """name -> (dtype, shape) of the tensors of a torch state dict file."""
    saved = torch_load(path, fmt)
    state = saved.get("model_state_dict", saved) if isinstance(saved, dict) else None
    if not isinstance(state, dict):
        raise bad(path, fmt, "the pickle holds no state dict")
    return {k: (str(v.dtype).replace("torch.", ""), list(v.shape)) for k, v in state.items() if hasattr(v, "shape")}


def check_layers(where: Path, fmt: str, tensors: dict, dims: dict, enc: str, dec: str, names: tuple) -> None:
    """:func:`bad` unless the weights hold as many encoder and decoder layers as the dimensions say."""
    for side, pattern, key in (("n_audio_layer", enc, names[0]), ("n_text_layer", dec, names[1])):
        count = 0
        while pattern.format(count) in tensors:
            count += 1
        if count != dims[side]:
            raise bad(where, fmt, f"the config says {key}={dims[side]} but the weights have {count} such layers")


def coreml_weights(folder: Path) -> list[Path]:
    """The weight files of a Core ML folder (every ``weight.bin`` under it)."""
    return sorted(folder.rglob("weight.bin"))


# ------------------------------------------------------------------------------------- help text


def _either(words: list[str]) -> str:
    return f"{', '.join(words[:-1])} or {words[-1]}" if len(words) > 1 else "".join(words)


def _typed(fmt: Format) -> str:
    return f"{fmt.name} ({', '.join(fmt.aliases)})" if fmt.aliases else fmt.name


def format_table() -> list[dict[str, Any]]:
    """One row per format for ``models formats``: names, what it is, what can be done with it, who runs it."""
    return [
        {
            "format": f.name,
            "aliases": list(f.aliases),
            "description": f.description,
            "detected": f.detectable,
            "read_back": f.read is not None,
            "convert_to": f.converter is not None,
            "one_file": f.output_file or ("yes" if f.file else ""),
            "default_variant": f.default_variant,
            "variants": f.variants,
            "fingerprint": f.embedding is not None,
            "native_adapters": list(f.native_adapters),
        }
        for f in all_formats()
    ]


def help_texts() -> dict[str, str]:
    """The CLI's words about formats, from the formats: ``to`` (``--to``), ``variant``, ``out``, ``paths``
    (what ``--model PATH`` may be).

    >>> help_texts()["to"]
    'ctranslate2 (ct2), transformers (hf), openai-whisper (openai), ggml (whisper.cpp), mlx, coreml or flax'
    """
    targets = [f for f in all_formats() if f.converter]
    return {
        "to": _either([_typed(f) for f in targets]),
        "variant": ", ".join(f"{f.name} {f.variants}" for f in targets if f.variants),
        "out": _either([f.name for f in targets if f.output_file]),
        "paths": ", ".join(f.title for f in all_formats() if f.detectable),
    }
