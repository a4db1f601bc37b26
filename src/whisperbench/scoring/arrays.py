"""Arrow columns made from and read into NumPy buffers, without pandas.

``pyarrow`` imports pandas (about 0.2 s of CPU) on a process's first ``to_numpy``, even of a column of integers, and
on its first ``pa.array``/``pa.table`` of Python values or NumPy arrays (to recognize pandas objects, which a score
table never holds). ``score`` needs no pandas otherwise (``gate`` and ``compare`` import it for their tables), so
the score tables are built and read here: :func:`table` makes each column from its buffers (values, offsets,
validity bitmap), :func:`numbers` views a primitive column's data buffer as it is (no copy when it has one chunk
and no nulls) and turns its nulls into NaN.

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

from typing import Any, Mapping, Optional, Sequence, Union

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
    missing = [value is None for value in values]
    validity = pa.py_buffer(np.packbits(~np.array(missing, dtype=bool), bitorder="little")) if any(missing) else None
    if pa.types.is_string(arrow_type):
        return _strings(values, n, validity)
    if pa.types.is_boolean(arrow_type):
        bits = np.array([bool(value) if value is not None else False for value in values], dtype=bool)
        return pa.Array.from_buffers(arrow_type, n, [validity, pa.py_buffer(np.packbits(bits, bitorder="little"))])
    dtype = _dtype(arrow_type)
    filled = [0 if value is None else value for value in values] if validity is not None else values
    data = np.array(filled, dtype=dtype if dtype.kind == "f" else None)
    if n and dtype.kind != "f" and data.dtype.kind not in "iub":
        raise TypeError(f"not integers for a {arrow_type} column: {data.dtype}")
    return pa.Array.from_buffers(arrow_type, n, [validity, pa.py_buffer(data.astype(dtype, copy=False))])


def _strings(values: Sequence[Any], n: int, validity: Optional[pa.Buffer]) -> pa.Array:
    encoded = [b"" if value is None else value.encode("utf-8") for value in values]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=n), out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(f"{offsets[-1]} bytes of text: more than one string column holds (2 GiB)")
    buffers = [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))]
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
    if values.dtype.kind == "b":
        bits = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, bits])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])
