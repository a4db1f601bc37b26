"""Read the variables of a CTranslate2 ``model.bin`` (binary version 6) with numpy alone.

Layout, little endian: uint32 version, string spec name, uint32 revision, uint32 variable count,
then per variable: string name, uint8 ndim, ndim x uint32 shape, uint8 dtype id, uint32 byte count,
raw bytes; then uint32 alias count and (alias, target) string pairs. A string is a uint16 length
that counts a trailing NUL, then the bytes.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import BinaryIO, Optional

import numpy as np

from whisperbench.errors import ModelError

BINARY_VERSION = 6

# Type ids as numbered by ctranslate2.specs.model_spec._dtype_to_type_id.
_DTYPES = {
    0: np.dtype("<f4"),
    1: np.dtype("i1"),
    2: np.dtype("<i2"),
    3: np.dtype("<i4"),
    4: np.dtype("<f2"),
    5: np.dtype("<u2"),  # bfloat16: the upper half of a float32
}
_BFLOAT16 = 5


class _Reader:
    def __init__(self, stream: BinaryIO, path: str):
        self._stream = stream
        self._size = os.fstat(stream.fileno()).st_size
        self._path = path

    def fail(self, problem: str) -> ModelError:
        return ModelError(f"{self._path}: not a readable CTranslate2 model.bin: {problem}")

    def read(self, count: int, what: str) -> bytearray:
        data = bytearray(count)
        if self._stream.readinto(data) != count:
            raise self.fail(f"file is truncated (while reading {what})")
        return data

    def skip(self, count: int, what: str) -> None:
        start = self._stream.tell()
        if self._stream.seek(count, 1) > self._size:
            raise self.fail(f"file is truncated (while reading {what} at byte {start})")

    def unpack(self, fmt: str, what: str) -> int:
        return struct.unpack("<" + fmt, self.read(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        data = self.read(self.unpack("H", what), what)
        if not data or data[-1] != 0:
            raise self.fail(f"malformed string (while reading {what})")
        return data[:-1].decode("utf-8", errors="replace")


_DTYPE_NAMES = {0: "float32", 1: "int8", 2: "int16", 3: "int32", 4: "float16", 5: "bfloat16"}


def read_ct2_shapes(path: str | Path) -> dict[str, tuple[str, tuple[int, ...], Optional[int]]]:
    """name -> (dtype name, shape, value of a scalar int) of every variable, seeking over the data.

    >>> read_ct2_shapes("/nonexistent/model.bin")
    Traceback (most recent call last):
    ...
    whisperbench.errors.ModelError: /nonexistent/model.bin: cannot open CTranslate2 model.bin: No such file or directory
    """
    return _walk(str(path), shapes_only=True)


def read_ct2_variables(path: str | Path) -> dict[str, np.ndarray]:
    """Return every variable of a CTranslate2 model.bin by name, aliases resolved to their targets.

    bfloat16 tensors are widened to float32; other tensors keep their stored dtype.
    Raises ModelError naming the file when it is missing, of another version, malformed or truncated.
    """
    return _walk(str(path), shapes_only=False)


def _walk(path: str, shapes_only: bool) -> dict:
    try:
        stream = open(path, "rb")
    except OSError as exc:
        raise ModelError(f"{path}: cannot open CTranslate2 model.bin: {exc.strerror}") from exc
    with stream:
        reader = _Reader(stream, path)
        version = reader.unpack("I", "the version")
        if version != BINARY_VERSION:
            raise reader.fail(f"binary version {version}, expected {BINARY_VERSION}")
        reader.string("the spec name")
        reader.unpack("I", "the spec revision")
        variables: dict[str, np.ndarray] = {}
        mapped = None
        for _ in range(reader.unpack("I", "the variable count")):
            name = reader.string("a variable name")
            ndim = reader.unpack("B", f"the rank of {name}")
            shape = tuple(reader.unpack("I", f"the shape of {name}") for _ in range(ndim))
            type_id = reader.unpack("B", f"the dtype of {name}")
            if type_id not in _DTYPES:
                raise reader.fail(f"unknown dtype id {type_id} for {name}")
            dtype = _DTYPES[type_id]
            nbytes = reader.unpack("I", f"the size of {name}")
            if nbytes != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
                raise reader.fail(f"{name} has {nbytes} bytes, which does not fit shape {shape}")
            if shapes_only and nbytes > 8:
                reader.skip(nbytes, name)
                variables[name] = (_DTYPE_NAMES[type_id], shape, None)
                continue
            if shapes_only:
                array = np.frombuffer(reader.read(nbytes, name), dtype=dtype).reshape(shape)
            else:  # a view of the memory-mapped file: pages are read when a tensor is used, not all at once
                offset = stream.tell()
                reader.skip(nbytes, name)  # raises on a truncated file before anything is mapped
                mapped = mapped if mapped is not None else np.memmap(path, dtype=np.uint8, mode="r")
                array = np.frombuffer(mapped, dtype=dtype, count=nbytes // dtype.itemsize,
                                      offset=offset).reshape(shape)
            if shapes_only:
                scalar = int(array.reshape(-1)[0]) if array.size == 1 and dtype.kind == "i" else None
                variables[name] = (_DTYPE_NAMES[type_id], shape, scalar)
                continue
            if type_id == _BFLOAT16:
                array = (array.astype("<u4") << 16).view("<f4")
            variables[name] = array
        for _ in range(reader.unpack("I", "the alias count")):
            alias = reader.string("an alias name")
            target = reader.string(f"the target of {alias}")
            if target not in variables:
                raise reader.fail(f"alias {alias} points to unknown variable {target}")
            variables[alias] = variables[target]
    return variables
