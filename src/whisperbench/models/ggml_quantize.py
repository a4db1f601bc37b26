"""ggml's own quantizer, called in the ``libggml-base`` that the whisper.cpp bindings ship (pywhispercpp).

whisper.cpp's ``quantize`` tool turns every 2-D weight into ggml blocks with ``ggml_quantize_chunk``
(``examples/common-ggml.cpp``); this module calls the same function through :mod:`ctypes`, so the
harness writes q4_0, q4_1, q5_0, q5_1, q8_0 and the k-quants q2_k … q6_k byte for byte as ggml does,
without a compiler. The library checks itself: each type's name (``ggml_type_name``) and row size
(``ggml_row_size``) must be the ones :mod:`.ggml_format` reads, else nothing is written.

A k-quant packs 256 values per super-block, so it needs rows whose length is a multiple of 256:
tiny and tiny.en (384 channels) have none, base (512) and larger have them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
from pathlib import Path

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.ggml_format import _BLOCKS, TYPE_NAMES

_LIBRARY_NAMES = ("libggml-base.so", "libggml-base.dylib", "ggml-base.dll")


def _candidates() -> list[Path]:
    """Where a whisper.cpp binding keeps ggml's library (pywhispercpp installs it beside its module)."""
    spec = importlib.util.find_spec("_pywhispercpp")
    folders = [Path(spec.origin).parent] if spec and spec.origin else []
    found = [folder / name for folder in folders for name in _LIBRARY_NAMES]
    system = ctypes.util.find_library("ggml-base")
    return [path for path in found if path.exists()] + ([Path(system)] if system else [])


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL | None:
    """ggml's base library with the quantizer's signatures set, or None when no binding ships it."""
    for path in _candidates():
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        lib.ggml_quantize_chunk.restype = ctypes.c_size_t
        lib.ggml_quantize_chunk.argtypes = [
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_int64,
            ctypes.c_int64,
            ctypes.c_int64,
            ctypes.c_void_p,
        ]
        lib.ggml_row_size.restype = ctypes.c_size_t
        lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
        lib.ggml_type_name.restype = ctypes.c_char_p
        lib.ggml_type_name.argtypes = [ctypes.c_int]
        return lib
    return None


def _checked(ggml_type: int) -> ctypes.CDLL:
    lib = library()
    if lib is None:
        raise ModelError(
            f"writing ggml {TYPE_NAMES[ggml_type]} needs ggml's quantizer: pip install pywhispercpp (its libggml-base)"
        )
    name = lib.ggml_type_name(ggml_type).decode().lower()
    values, size = _BLOCKS[ggml_type]
    if name != TYPE_NAMES[ggml_type] or lib.ggml_row_size(ggml_type, values * 8) != size * 8:
        raise ModelError(
            f"this libggml-base's type {ggml_type} is {name!r}, not {TYPE_NAMES[ggml_type]!r} with "
            f"{size}-byte blocks of {values}: another ggml version than the file format's"
        )
    return lib


def quantize(weight: np.ndarray, ggml_type: int, name: str = "tensor") -> bytes:
    """``weight`` (rows along its innermost axis) as ggml blocks of ``ggml_type``, as ggml writes them."""
    lib = _checked(ggml_type)
    rows = np.ascontiguousarray(weight, dtype=np.float32).reshape(-1, weight.shape[-1])
    values = _BLOCKS[ggml_type][0]
    if rows.shape[1] % values:
        raise ModelError(
            f"ggml {TYPE_NAMES[ggml_type]} packs {values} values per block: {name} has rows of "
            f"{rows.shape[1]}, not a multiple (this model's width does not fit this type)"
        )
    out = np.empty(lib.ggml_row_size(ggml_type, rows.shape[1]) * rows.shape[0], dtype=np.uint8)
    written = lib.ggml_quantize_chunk(
        ggml_type, rows.ctypes.data, out.ctypes.data, 0, rows.shape[0], rows.shape[1], None
    )
    if written != out.size:
        raise ModelError(f"ggml_quantize_chunk wrote {written} bytes for {name}, expected {out.size}")
    return out.tobytes()
