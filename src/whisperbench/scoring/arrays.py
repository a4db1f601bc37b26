"""Numeric Arrow columns as NumPy arrays, read from their buffers.

``pyarrow``'s own ``to_numpy`` goes through its pandas conversion layer, which imports pandas (about 0.2 s of CPU)
on a process's first call, even for a column of integers. ``score`` needs no pandas otherwise (``gate`` and
``compare`` import it for their tables), so the score tables' columns are read here: a primitive column's data
buffer is viewed as it is (no copy when it has one chunk and no nulls), its validity bitmap turns nulls into NaN.

>>> import pyarrow as pa
>>> numbers(pa.chunked_array([[1, 2], [3]]))
array([1, 2, 3])
>>> numbers(pa.array([1.5, None, 2.0]).slice(1))
array([nan,  2.])
>>> numbers(pa.array([True, None, False]))
array([ 1., nan,  0.])
"""

from __future__ import annotations

import importlib.abc
import multiprocessing
import sys
from typing import Any, Optional, Union

import numpy as np
import pyarrow as pa

Column = Union[pa.Array, pa.ChunkedArray]


def numbers(column: Column, dtype: Optional[Any] = None) -> np.ndarray:
    """``column`` (integers, floats or booleans, in one or more chunks) as one NumPy array, as pyarrow's
    ``to_numpy`` gives it: nulls become NaN (an integer or boolean column with nulls then is float64, a float column
    keeps its width); ``dtype``: cast to it. A column of another
    type is refused (TypeError): this is not a general converter."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = [_chunk(chunk) for chunk in chunks]
    if not parts:
        out = np.empty(0, dtype=_dtype(column.type))
    elif len(parts) == 1:
        out = parts[0]
    else:
        out = np.concatenate(parts)
    return out if dtype is None else out.astype(dtype, copy=False)


def text(value: str) -> pa.Scalar:
    """``pa.scalar(value, pa.string())``, made from its UTF-8 bytes (``pa.scalar`` converts a Python object, which
    imports pandas: see the module), e.g. for ``pc.equal(table["status"], text("ok"))``.

    >>> text("ok") == pa.scalar("ok", pa.string())
    True
    """
    data = value.encode("utf-8")
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int32))
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])[0]


#: the status of a successful example, as a scalar to compare a ``status`` column with
OK = text("ok")


def strings(column: Column) -> np.ndarray:
    """A text column as a NumPy array of ``str`` objects (None where null)."""
    return np.array(column.to_pylist(), dtype=object)


def _chunk(array: pa.Array) -> np.ndarray:
    n, offset = len(array), array.offset
    if pa.types.is_null(array.type):
        return np.full(n, np.nan)
    buffers, dtype = array.buffers(), _dtype(array.type)
    if n == 0:
        return np.empty(0, dtype)
    if dtype.kind == "b":
        values: np.ndarray = _bits(buffers[1], offset, n)
    else:
        values = np.frombuffer(buffers[1], dtype=dtype, count=n, offset=offset * dtype.itemsize)
    if array.null_count == 0:
        return values
    nan = np.array(np.nan, dtype=dtype if dtype.kind == "f" else np.float64)
    return np.where(_bits(buffers[0], offset, n), values, nan)


def _bits(buffer: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """Arrow's bitmap (least significant bit first) as booleans, ``n`` of them from bit ``offset``."""
    bits = np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), count=offset + n, bitorder="little")
    return bits[offset:].astype(bool)


def _dtype(arrow_type: pa.DataType) -> np.dtype:
    if pa.types.is_boolean(arrow_type):
        return np.dtype(bool)
    if pa.types.is_floating(arrow_type):
        kind = "f"
    elif pa.types.is_signed_integer(arrow_type):
        kind = "i"
    elif pa.types.is_unsigned_integer(arrow_type):
        kind = "u"
    elif pa.types.is_null(arrow_type):
        return np.dtype(np.float64)
    else:
        raise TypeError(f"not a numeric column: {arrow_type}")
    return np.dtype(f"{kind}{arrow_type.bit_width // 8}")


class _NoPandas(importlib.abc.MetaPathFinder):
    """An import finder that answers pandas with ImportError (see :func:`arrow_without_pandas`)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not needed to build a score table")


def arrow_without_pandas() -> None:
    """In a worker process that has not imported pandas, let pyarrow know that it will not: pyarrow imports pandas
    on the first array it makes from Python objects (to recognize pandas objects, which a score table never holds)
    unless its first try failed. For a worker that builds typed columns from Python values and ends with its part
    (``scoring.table``); a main process is left as it is (a later ``pa.array`` of a pandas object would be
    converted as a plain sequence there)."""
    if "pandas" in sys.modules or multiprocessing.parent_process() is None:
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([], pa.int64())
    finally:
        sys.meta_path.remove(finder)
