"""Recognise a Whisper model on disk from its contents (never its name) and describe it cheaply.

:func:`inspect_model` reads headers only (config files, the safetensors / ggml / CTranslate2
headers, a memory-mapped ``.pt``): the format, the weight files, the dimensions in openai-whisper's
names, the stored precision and whether it is quantized. Every problem is a :class:`ModelError`
naming the file and the format that was guessed. What each format looks like is its
:class:`~whisperbench.models.formats.Format` (:mod:`whisperbench.models.formats`); this module only asks them.

>>> sorted(DETECTABLE)
['coreml', 'ctranslate2', 'ggml', 'mlx', 'openai-whisper', 'transformers', 'whisperkit']
>>> FORMAT_ALIASES["hf"], FORMAT_ALIASES["openai"]
('transformers', 'openai-whisper')
"""

from __future__ import annotations

from pathlib import Path

from whisperbench.errors import ModelError
from whisperbench.models.formats import (
    DIMS,
    ModelLayout,
    all_formats,
    bad,
    builtin_formats,
    format_names,
    get_format,
    safetensors_header,
    torch_load,
)

__all__ = [
    "DIMS",
    "DETECTABLE",
    "FORMAT_ALIASES",
    "ModelLayout",
    "check_dims",
    "check_format",
    "detect_format",
    "folder_formats",
    "inspect_model",
    "parse_model_format",
    "safetensors_header",
    "torch_load",
]

#: the built-in formats a model on disk is recognised as (run.json, ``converted``, ``--model FORMAT:PATH``)
DETECTABLE = tuple(f.name for f in builtin_formats() if f.detectable)
#: every name users type -> the format's name (built-in formats; :func:`format_names` sees registered ones too)
FORMAT_ALIASES = format_names(builtin_formats())


def _head(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(4)
    except OSError:
        return None


def _file_format(path: Path) -> str | None:
    """The one-file format whose first bytes (and name) say so for sure (``ggml``, ``openai-whisper``), else None."""
    head = _head(path)
    if head is None:
        return None
    return next((f.name for f in all_formats() if f.file is not None and f.file(path, head)), None)


def _file_fallback(path: Path) -> str | None:
    head = _head(path) or b""
    return next((f.name for f in all_formats() if f.file_fallback is not None and f.file_fallback(head)), None)


def _model_files(folder: Path) -> list[tuple[Path, str]]:
    """Single-file models lying in ``folder`` (a ggml ``.bin``, an openai-whisper ``.pt``), by content."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".bin", ".pt"))
    return [(p, fmt) for p, fmt in ((p, _file_format(p)) for p in files) if fmt is not None]


def folder_formats(path: Path) -> list[str]:
    """The folder formats ``path`` looks like, from its contents."""
    found = [f for f in all_formats() if f.folder is not None and f.folder(path)]
    shadowed = {name for f in found for name in f.shadows}
    return [f.name for f in found if f.name not in shadowed]


def _expected() -> str:
    """'a transformers, CTranslate2, MLX, Core ML or WhisperKit folder, a ggml .bin or a .pt'"""
    folders = [f.title for f in all_formats() if f.folder is not None]
    files = [f"a {f.title}" for f in all_formats() if f.file is not None]
    listed = f"{', '.join(folders[:-1])} or {folders[-1]}" if len(folders) > 1 else "".join(folders)
    return ", ".join([f"a {listed} folder", *files[:-1]]) + (f" or {files[-1]}" if files else "")


def detect_format(path: Path) -> str:
    """The format of a file or folder, from its contents; ModelError when none or several match (a folder
    holding a folder model and a ggml .bin or .pt file beside it is several: it says what it found and how
    to choose, ``--model DIR/FILE`` or ``--model FORMAT:DIR``)."""
    if path.is_file():
        fmt = _file_format(path) or _file_fallback(path)
        if fmt is None:
            head = _head(path) or b""
            raise ModelError(
                f"{path}: not a Whisper model file (not a ggml .bin, magic {head.hex() or 'empty'}, "
                "and not a torch .pt)"
            )
        return fmt
    if not path.is_dir():
        raise ModelError(f"{path}: no such file or folder")
    found, files = folder_formats(path), _model_files(path)
    if len(found) + len(files) > 1 or (files and not found):
        raise ModelError(f"{path}: {_what_is_there(path, found, files)}")
    if not found:
        listed = ", ".join(sorted(p.name for p in path.iterdir())[:8]) or "nothing"
        raise ModelError(f"{path}: no Whisper model format recognised (it holds {listed}); expected {_expected()}")
    return found[0]


def _what_is_there(path: Path, found: list[str], files: list[tuple[Path, str]]) -> str:
    """What a folder holding several models (or only model files) holds, and how to pick one."""
    seen = [f"a {fmt} model" for fmt in found] + [f"{file.name} ({fmt})" for file, fmt in files]
    ways = [f"--model {file}" for file, _ in files[:3]] + [f"--model {fmt}:{path}" for fmt in found]
    head = (
        f"holds more than one model: {' and '.join(seen)}" if len(seen) > 1 else f"holds only the model file {seen[0]}"
    )
    return f"{head}; say which to use: {' or '.join(ways)}"


def parse_model_format(model: str) -> tuple[str | None, str]:
    """``("transformers", "DIR")`` for ``--model transformers:DIR`` (a format named before a path), else
    ``(None, model)``. Only the format names themselves qualify (``hf:`` and ``openai:`` mean downloads).

    >>> parse_model_format("ggml:/models/tiny"), parse_model_format("hf:openai/whisper-tiny")
    (('ggml', '/models/tiny'), (None, 'hf:openai/whisper-tiny'))
    """
    fmt, sep, rest = model.partition(":")
    if sep and rest and any(f.name == fmt and f.detectable for f in all_formats()):
        return fmt, rest
    return None, model


def check_format(path: Path, fmt: str) -> None:
    """ModelError unless ``path`` (named with ``--model FORMAT:PATH``) is a model of ``fmt``."""
    if path.is_file():
        if _file_format(path) != fmt and _file_fallback(path) != fmt:
            raise ModelError(f"{path}: not a {fmt} model file")
        return
    if fmt in folder_formats(path):
        return
    files = [file for file, kind in _model_files(path) if kind == fmt] if path.is_dir() else []
    hint = f" (it holds {files[0].name}: --model {files[0]})" if files else ""
    raise ModelError(f"{path}: no {fmt} model in this folder{hint}")


def inspect_model(path: str | Path, fmt: str | None = None) -> ModelLayout:
    """Detect (unless ``fmt`` is given) and describe the model at ``path``, reading headers only."""
    path = Path(path)
    if fmt is None:
        fmt = detect_format(path)
    else:
        check_format(path, fmt)
    spec = get_format(fmt)
    if spec.inspect is None:
        raise ModelError(f"{path}: format {fmt} cannot be inspected")
    layout = spec.inspect(path)
    if spec.check_dims:
        check_dims(path, fmt, layout.dims)
    return layout


def check_dims(path: Path, fmt: str, dims: dict[str, int]) -> None:
    """Whisper's own invariants: 80 or 128 mels, a Whisper vocabulary, heads that divide the width."""
    if dims["n_mels"] not in (80, 128):
        raise bad(path, fmt, f"n_mels={dims['n_mels']}: Whisper uses 80 (tiny … large-v2) or 128 (large-v3, turbo)")
    if not 51864 <= dims["n_vocab"] <= 51866:
        raise bad(path, fmt, f"n_vocab={dims['n_vocab']}: Whisper's vocabularies have 51,864 to 51,866 tokens")
    for side in ("audio", "text"):
        if dims[f"n_{side}_state"] % dims[f"n_{side}_head"]:
            raise bad(
                path,
                fmt,
                f"n_{side}_state={dims[f'n_{side}_state']} is not a multiple of n_{side}_head={dims[f'n_{side}_head']}",
            )
