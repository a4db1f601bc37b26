"""Arrow columns made from and read into NumPy buffers, without pandas.

``pyarrow`` imports pandas (about 0.2 s of CPU) on a process's first ``to_numpy``, even of a column of integers, and
on its first ``pa.array``/``pa.table``/``pa.scalar`` of Python values or NumPy arrays (to recognize pandas objects,
which a score table never holds). ``score``, ``gate`` and ``compare --json`` need no pandas otherwise (it is imported
where a DataFrame is built), so the score tables are built and read here: :func:`table` makes each column from its
buffers (values, offsets, validity bitmap), :func:`numbers` views a primitive column's data buffer as it is (no copy
when it has one chunk and no nulls) and turns its nulls into NaN; :func:`scalar` and :func:`from_numpy` make the
scalars and row numbers that compute functions take.

>>> import pyarrow as pa
>>> numbers(pa.chunked_array([[1, 2], [3]]))
array([1, 2, 3])
>>> numbers(pa.array([1.5, None, 2.0]).slice(1))
array([nan,  2.])
>>> numbers(pa.array([True, None, False]))
array([ 1., nan,  0.])
>>> table({"n": [1, None], "s": ["ü", None]}, pa.schema([("n", pa.int64()), ("s", pa.string())])).to_pylist()
[{'n': 1, 's': 'ü'}, {'n': None, 's': None}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa

Column: TypeAlias = pa.Array | pa.ChunkedArray


def numbers(column: Column, dtype: Any | None = None) -> np.ndarray:
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


def table(columns: Mapping[str, Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """``pa.table(columns, schema=schema)`` for columns of Python values (None: null), each built by :func:`array`."""
    return pa.Table.from_arrays([array(columns[field.name], field.type) for field in schema], schema=schema)


def array(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array:
    """``pa.array(values, arrow_type)`` for a string, boolean, integer or floating type, made from its buffers (None:
    null; NaN stays a value). Integers are checked to be integers (a float is refused, as pyarrow refuses one it
    would truncate); another type is refused (TypeError): this is not a general converter.

    >>> array([1.5, None, float("nan")], pa.float64()).to_pylist()
    [1.5, None, nan]
    """
    n = len(values)
    if pa.types.is_string(arrow_type):
        return _strings(values, n)
    dtype = _dtype(arrow_type)
    if n and values[0] is not None:  # most likely none is missing: converted at once, then checked
        data = np.array(values, dtype=np.float64 if dtype.kind == "f" else None)  # float: a None becomes NaN
        if dtype.kind == "f":
            nan = np.flatnonzero(np.isnan(data))
            none = nan[np.array([values[i] is None for i in nan.tolist()], dtype=bool)] if len(nan) else nan
            return _numbers(arrow_type, dtype, data, _validity(n, none) if len(none) else None)
        if data.dtype != object:
            return _numbers(arrow_type, dtype, data, None)
    missing = np.array([value is None for value in values], dtype=bool)  # many missing, maybe
    present = np.flatnonzero(~missing)
    data = np.zeros(n, dtype=np.float64 if dtype.kind == "f" else np.int64)
    if len(present):
        given = np.array([values[i] for i in present.tolist()], dtype=np.float64 if dtype.kind == "f" else None)
        data[present] = _checked(arrow_type, dtype, given)
    return _numbers(arrow_type, dtype, data, _validity(n, np.flatnonzero(missing)) if missing.any() else None)


def _checked(arrow_type: pa.DataType, dtype: np.dtype, data: np.ndarray) -> np.ndarray:
    """``data`` where it holds what ``arrow_type`` takes (integers or booleans for an integer or boolean type: a float
    is refused, as pyarrow refuses one it would truncate), else TypeError."""
    if len(data) and dtype.kind != "f" and data.dtype.kind not in "iub":
        raise TypeError(f"not {arrow_type} values: {data.dtype}")
    return data


def _numbers(arrow_type: pa.DataType, dtype: np.dtype, data: np.ndarray, validity: pa.Buffer | None) -> pa.Array:
    data = _checked(arrow_type, dtype, data)
    if dtype.kind == "b":
        bits = np.packbits(data.astype(bool, copy=False), bitorder="little")
        return pa.Array.from_buffers(arrow_type, len(data), [validity, pa.py_buffer(bits)])
    return pa.Array.from_buffers(arrow_type, len(data), [validity, pa.py_buffer(data.astype(dtype, copy=False))])


def _validity(n: int, nulls: np.ndarray) -> pa.Buffer:
    """Arrow's validity bitmap of ``n`` values, ``nulls`` the positions of the missing ones."""
    valid = np.ones(n, dtype=bool)
    valid[nulls] = False
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def _strings(values: Sequence[Any], n: int) -> pa.Array:
    validity = None
    try:
        joined = "".join(values)
    except TypeError:  # a None among them (anything else that is not text is refused below)
        validity = _validity(n, np.flatnonzero([value is None for value in values]))
        values = ["" if value is None else value for value in values]
        joined = "".join(values)
    data = joined.encode("utf-8")
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=n)  # characters: an ASCII text's bytes
    if len(data) != len(joined):  # some text is not ASCII: its bytes counted
        for i in np.flatnonzero(~np.fromiter(map(str.isascii, values), dtype=bool, count=n)).tolist():
            lengths[i] = len(values[i].encode("utf-8"))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(f"{offsets[-1]} bytes of text: more than one string column holds (2 GiB)")
    buffers = [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), n, buffers)


def scalar(value: Any, arrow_type: pa.DataType) -> pa.Scalar:
    """``pa.scalar(value, arrow_type)`` made by :func:`array` (``pa.scalar`` of a Python value imports pandas: see
    the module), e.g. for ``pc.fill_null(mask, FALSE)``.

    >>> scalar(False, pa.bool_()) == pa.scalar(False), scalar(7, pa.int32()).type
    (True, DataType(int32))
    """
    return array([value], arrow_type)[0]


def text(value: str) -> pa.Scalar:
    """A text scalar (:func:`scalar`), e.g. for ``pc.equal(table["status"], text("ok"))``.

    >>> text("ok") == pa.scalar("ok", pa.string())
    True
    """
    return scalar(value, pa.string())


#: the status of a successful example, as a scalar to compare a ``status`` column with
OK = text("ok")
#: false, as a scalar to fill a mask's nulls with
FALSE = scalar(False, pa.bool_())


def from_numpy(values: np.ndarray) -> pa.Array:
    """``pa.array(values)`` for a one-dimensional NumPy array of booleans, integers or floats (no nulls), made from
    its buffer (``pa.array`` of an array imports pandas: see the module), e.g. row numbers for ``take``.

    >>> from_numpy(np.array([2, 0])).to_pylist(), from_numpy(np.array([True, False])).type
    ([2, 0], DataType(bool))
    """
    values = np.ascontiguousarray(values)
    if values.ndim != 1 or values.dtype.kind not in "biuf":
        raise TypeError(f"not a one-dimensional numeric array: {values.dtype}, {values.ndim} dimension(s)")
    return _numbers(pa.from_numpy_dtype(values.dtype), values.dtype, values, None)
