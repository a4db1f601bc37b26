"""Read the variables of a CTranslate2 ``model.bin`` (binary version 6) with numpy alone.

Layout, little endian: uint32 version, string spec name, uint32 revision, uint32 variable count,
then per variable: string name, uint8 ndim, ndim x uint32 shape, uint8 dtype id, uint32 byte count,
raw bytes; then uint32 alias count and (alias, target) string pairs. A string is a uint16 length
that counts a trailing NUL, then the bytes.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from functools import partial
from io import BufferedIOBase
from pathlib import Path
from typing import Any

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.checkpoint import Checkpoint, LazyStateDict, default_alignment_heads

BINARY_VERSION = 6

# Type ids as numbered by ctranslate2.specs.model_spec._dtype_to_type_id.
_DTYPES: dict[int, np.dtype] = {
    0: np.dtype("<f4"),
    1: np.dtype("i1"),
    2: np.dtype("<i2"),
    3: np.dtype("<i4"),
    4: np.dtype("<f2"),
    5: np.dtype("<u2"),  # bfloat16: the upper half of a float32
}
_BFLOAT16 = 5


class _Reader:
    def __init__(self, stream: BufferedIOBase, path: str):
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


def read_ct2_shapes(path: str | Path) -> dict[str, tuple[str, tuple[int, ...], int | None]]:
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
        stream = open(path, "rb")  # noqa: SIM115 - closed by the `with` below; opened apart to name the error
    except OSError as exc:
        raise ModelError(f"{path}: cannot open CTranslate2 model.bin: {exc.strerror}") from exc
    with stream:
        reader = _Reader(stream, path)
        version = reader.unpack("I", "the version")
        if version != BINARY_VERSION:
            raise reader.fail(f"binary version {version}, expected {BINARY_VERSION}")
        reader.string("the spec name")
        reader.unpack("I", "the spec revision")
        variables: dict[str, Any] = {}  # name -> array, or (dtype, shape, scalar) with shapes_only
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
                array = np.frombuffer(mapped, dtype=dtype, count=nbytes // dtype.itemsize, offset=offset).reshape(shape)
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


# ------------------------------------------------------------------------ as a Checkpoint


def load_ct2_checkpoint(model_dir: str, model_bin: str | None = None, dtype: str = "float32") -> Checkpoint:
    """Read a CTranslate2 Whisper folder (model_bin overrides model_dir/model.bin).

    Tensors are cast to dtype; the default float32 holds float16 weights exactly.
    """
    model_bin = model_bin or os.path.join(model_dir, "model.bin")
    variables = read_ct2_variables(model_bin)

    def get(name: str, check_only: bool = False) -> np.ndarray:
        if name not in variables:
            raise ModelError(f"{model_bin}: not a CTranslate2 Whisper model (no variable {name})")
        if variables[name].dtype.kind != "f":
            raise ModelError(
                f"{model_bin}: {name} is quantized ({variables[name].dtype}); convert from a float16 or float32 model"
            )
        return variables[name] if check_only else variables[name].astype(dtype)

    shapes = {
        name: ("", array.shape, int(array.reshape(-1)[0]) if array.size == 1 and array.dtype.kind == "i" else None)
        for name, array in variables.items()
    }
    try:
        dims = ct2_dims(shapes)
    except KeyError as exc:
        raise ModelError(f"{model_bin}: not a CTranslate2 Whisper model (no variable {exc.args[0]})") from exc
    plain, fused = _ct2_names({"encoder": dims["n_audio_layer"], "decoder": dims["n_text_layer"]})
    for name in plain.values():
        get(name, check_only=True)
    loaders: dict[str, Callable[[], np.ndarray]] = {dst: partial(get, src) for dst, src in plain.items()}
    for src, (dst, parts) in fused.items():
        loaders.update(_split_linear(get, model_bin, src, dst, parts))
    state_dict = LazyStateDict(loaders)

    config = _read_json(os.path.join(model_dir, "config.json"))
    heads = config.get("alignment_heads") or default_alignment_heads(dims)
    return Checkpoint(
        dims=dims,
        state_dict=state_dict,
        source_dir=str(model_dir),
        alignment_heads=[(int(layer), int(head)) for layer, head in heads],
        tokenizer_file=os.path.join(model_dir, "tokenizer.json"),
        generation={key: config[key] for key in ("suppress_ids", "suppress_ids_begin", "lang_ids") if key in config},
    )


def _ct2_names(n_layers: dict[str, int]) -> tuple[dict[str, str], dict[str, tuple[str, tuple[str, ...]]]]:
    """openai-whisper name -> CTranslate2 name, and the fused projections: CTranslate2 name -> (openai
    prefix, row blocks)."""
    plain = {
        "encoder.conv1.weight": "encoder/conv1/weight",
        "encoder.conv1.bias": "encoder/conv1/bias",
        "encoder.conv2.weight": "encoder/conv2/weight",
        "encoder.conv2.bias": "encoder/conv2/bias",
        "encoder.positional_embedding": "encoder/position_encodings/encodings",
        "decoder.token_embedding.weight": "decoder/embeddings/weight",
        "decoder.positional_embedding": "decoder/position_encodings/encodings",
    }
    layer_norms = {"encoder.ln_post": "encoder/layer_norm", "decoder.ln": "decoder/layer_norm"}
    linears: dict[str, str] = {}
    fused: dict[str, tuple[str, tuple[str, ...]]] = {}
    for side in ("encoder", "decoder"):
        for i in range(n_layers[side]):
            src, dst = f"{side}/layer_{i}", f"{side}.blocks.{i}"
            layer_norms[f"{dst}.attn_ln"] = f"{src}/self_attention/layer_norm"
            layer_norms[f"{dst}.mlp_ln"] = f"{src}/ffn/layer_norm"
            linears[f"{dst}.attn.out"] = f"{src}/self_attention/linear_1"
            linears[f"{dst}.mlp.0"] = f"{src}/ffn/linear_0"
            linears[f"{dst}.mlp.2"] = f"{src}/ffn/linear_1"
            fused[f"{src}/self_attention/linear_0"] = (f"{dst}.attn", ("query", "key", "value"))
            if side == "decoder":
                layer_norms[f"{dst}.cross_attn_ln"] = f"{src}/attention/layer_norm"
                linears[f"{dst}.cross_attn.query"] = f"{src}/attention/linear_0"
                linears[f"{dst}.cross_attn.out"] = f"{src}/attention/linear_2"
                fused[f"{src}/attention/linear_1"] = (f"{dst}.cross_attn", ("key", "value"))
    for dst, src in layer_norms.items():
        plain[f"{dst}.weight"], plain[f"{dst}.bias"] = f"{src}/gamma", f"{src}/beta"
    for dst, src in linears.items():
        plain[f"{dst}.weight"], plain[f"{dst}.bias"] = f"{src}/weight", f"{src}/bias"
    return plain, fused


def ct2_dims(shapes: dict[str, tuple[str, tuple[int, ...], int | None]]) -> dict[str, int]:
    """openai-whisper's dimensions of a CTranslate2 Whisper model from its variables' shapes (as
    :func:`read_ct2_shapes` gives them); KeyError names a variable a Whisper model must have. The head
    count is the stored one, else width // 64 (every Whisper size has 64-wide heads)."""
    dims: dict[str, int] = {
        "n_mels": shapes["encoder/conv1/weight"][1][1],
        "n_vocab": shapes["decoder/embeddings/weight"][1][0],
    }
    for side, prefix in (("encoder", "n_audio"), ("decoder", "n_text")):
        ctx, state = shapes[f"{side}/position_encodings/encodings"][1]
        layers = 0
        while f"{side}/layer_{layers}/ffn/linear_0/weight" in shapes:
            layers += 1
        stored_heads = shapes.get(f"{side}/num_heads", ("", (), None))[2]
        dims |= {
            f"{prefix}_ctx": ctx,
            f"{prefix}_state": state,
            f"{prefix}_layer": layers,
            f"{prefix}_head": stored_heads or state // 64,
        }
    return {key: int(value) for key, value in dims.items()}


def _split_linear(
    get: Callable[..., np.ndarray], model_bin: str, src: str, dst: str, parts: tuple[str, ...]
) -> dict[str, Callable[[], np.ndarray]]:
    """Loaders of a fused projection's row blocks; the key part has no bias in Whisper (stored as zeros)."""
    bias = get(f"{src}/bias", check_only=True)
    if "key" in parts and np.any(np.split(bias, len(parts))[parts.index("key")]):
        raise ModelError(f"{model_bin}: {src}/bias has a non-zero key bias, which Whisper lacks")

    def block(suffix: str, index: int) -> np.ndarray:
        return np.ascontiguousarray(np.split(get(f"{src}/{suffix}"), len(parts))[index])

    loaders: dict[str, Callable[[], np.ndarray]] = {}
    for index, part in enumerate(parts):
        loaders[f"{dst}.{part}.weight"] = partial(block, "weight", index)
        if part != "key":
            loaders[f"{dst}.{part}.bias"] = partial(block, "bias", index)
    return loaders


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: cannot read JSON: {exc}") from exc
