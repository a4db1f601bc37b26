"""Write whisper.cpp's legacy ggml model file from the converter layer's checkpoint, and check one.

Layout (little endian): int32 magic ``ggml``; 11 int32 hparams (n_vocab, n_audio_ctx, n_audio_state,
n_audio_head, n_audio_layer, n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype);
int32 n_mel, int32 n_fft, n_mel x n_fft float32 mel filters; int32 token count, then per token
int32 length + bytes (the tiktoken ranks in order; whisper.cpp adds the special tokens itself);
then per tensor: int32 n_dims, int32 name length, int32 ggml type, n_dims int32 sizes (innermost
first, i.e. numpy's shape reversed), the name, the data.

Variants: ``f32``: every tensor float32 (the pywhispercpp build of whisper.cpp aborts on it in im2col,
which asserts f16 conv kernels; other builds and readers take it).
``f16`` (or ``""``): 2-D and 3-D weights f16; 1-D tensors, conv biases (stored (n, 1)) and
positional embeddings f32. ``q8_0``, ``q5_0``, ``q5_1``, ``q4_0``, ``q4_1``: the 2-D weights (linears,
token embedding) in ggml's 32-value blocks; ``q6_k`` … ``q2_k``: in 256-value super-blocks (rows must be a
multiple of 256: not tiny's 384); quantization format version 2 (whisper.cpp >= 1.5; ftype = 2000 +
ggml_ftype), conv weights f16, as whisper.cpp's ``quantize`` writes them (the types beyond q8_0/q5_0
through ggml's own quantizer, :mod:`.ggml_quantize`). ``q8_0-qnt1`` / ``q5_0-qnt1``: format version 1 that
whisper.cpp 1.4 reads
(q8_0 with a float32 scale, q5_0 with interleaved nibbles; ftype without the version).
"""

from __future__ import annotations

import base64
import importlib.util
import os
import struct
from pathlib import Path

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models import ggml_quantize
from whisperbench.models.checkpoint import Checkpoint
from whisperbench.models.ggml_format import (
    _FTYPE_WEIGHT,
    F16,
    F32,
    HPARAMS,
    MAGIC,
    Q5_0,
    Q8_0,  # noqa: F401
    QNT_VERSION_FACTOR,
    TYPE_NAMES,
    validate_ggml_header,
)
from whisperbench.models.readers import read_checkpoint
from whisperbench.models.resolve import SourceModel

GGML_FILE = "ggml-model.bin"
#: variant -> (hparams ftype, weight type, quantization format version)
VARIANTS = {
    "f32": (0, F32, 0),
    "f16": (1, F16, 0),
    # quantization format 2: every type whisper.cpp's quantize tool writes (ftype = 2000 + ggml_ftype)
    **{
        TYPE_NAMES[weight]: (QNT_VERSION_FACTOR * 2 + ftype, weight, 2)
        for ftype, weight in _FTYPE_WEIGHT.items()
        if ftype > 1
    },
    "q8_0-qnt1": (7, Q8_0, 1),
    "q5_0-qnt1": (8, Q5_0, 1),
}
_F32_NAMES = {
    "encoder.conv1.bias",
    "encoder.conv2.bias",
    "encoder.positional_embedding",
    "decoder.positional_embedding",
}
# ------------------------------------------------------------------------------------ quantizers


def _blocks(weight: np.ndarray) -> np.ndarray:
    if weight.shape[-1] % 32:
        raise ModelError(f"rows of {weight.shape[-1]} values cannot be cut into 32-value ggml blocks")
    return np.ascontiguousarray(weight, dtype=np.float32).reshape(-1, 32)


def _inverse(d: np.ndarray) -> np.ndarray:
    inv = np.zeros_like(d)
    np.divide(np.float32(1), d, out=inv, where=d != 0)
    return inv


def quantize_q8_0(weight: np.ndarray, qnt_version: int = 2) -> bytes:
    """ggml q8_0: per 32 values a scale d = max|x| / 127 (f16; f32 in version 1) and int8 round(x / d)."""
    x = _blocks(weight)
    d = np.abs(x).max(axis=1) / np.float32(127)
    scaled = (x * _inverse(d)[:, None]).astype(np.float64)
    q = np.trunc(scaled + np.copysign(0.5, scaled)).astype(np.int8)  # C roundf: halves away from zero
    out = np.empty(len(x), dtype=[("d", "<f2" if qnt_version >= 2 else "<f4"), ("qs", "i1", 32)])
    out["d"], out["qs"] = d, q
    return out.tobytes()


def quantize_q5_0(weight: np.ndarray, qnt_version: int = 2) -> bytes:
    """ggml q5_0: d = (the value of largest magnitude) / -16 (f16), 5-bit q = min(31, int(x / d + 16.5)).

    The low 4 bits go in 16 bytes of nibbles, the 5th bits in a 32-bit mask. Version 2 pairs value j
    with value j + 16 in byte j; version 1 pairs values 2j and 2j + 1.
    """
    x = _blocks(weight)
    rows = np.arange(len(x))
    d = x[rows, np.abs(x).argmax(axis=1)] / np.float32(-16)
    q = np.minimum(31, np.trunc(x * _inverse(d)[:, None] + np.float32(16.5))).astype(np.uint32)
    if qnt_version >= 2:
        low, high = q[:, :16], q[:, 16:]
        position = np.arange(32, dtype=np.uint32)  # value i -> bit i
    else:
        low, high = q[:, 0::2], q[:, 1::2]
        position = np.arange(32, dtype=np.uint32).reshape(16, 2).T.reshape(32)  # still value i -> bit i
    nibbles = (low & 0xF) | ((high & 0xF) << 4)
    fifth = np.concatenate([(low >> 4) & 1, (high >> 4) & 1], axis=1)
    mask = (fifth << position).sum(axis=1, dtype=np.uint32)
    out = np.empty(len(x), dtype=[("d", "<f2"), ("qh", "<u4"), ("qs", "u1", 16)])
    out["d"], out["qh"], out["qs"] = d, mask, nibbles
    return out.tobytes()


def _ggml_quantizer(ggml_type: int):
    def quantize(weight: np.ndarray, qnt_version: int, name: str) -> bytes:
        return ggml_quantize.quantize(weight, ggml_type, name)

    return quantize


#: ggml type -> quantizer(weight, format version, name); q8_0 and q5_0 in numpy (both format versions, equal
#: byte for byte to ggml's, a test checks), the others by ggml's own ``ggml_quantize_chunk``
_QUANTIZERS = {
    **{weight: _ggml_quantizer(weight) for weight in _FTYPE_WEIGHT.values() if weight > F16},
    Q8_0: lambda weight, version, name: quantize_q8_0(weight, version),
    Q5_0: lambda weight, version, name: quantize_q5_0(weight, version),
}


# ---------------------------------------------------------------------------------------- writer


def _whisper_assets() -> Path:
    """openai-whisper's (or mlx-whisper's) assets folder: mel_filters.npz and the tiktoken files."""
    for package in ("whisper", "mlx_whisper"):
        spec = importlib.util.find_spec(package)
        if spec and spec.submodule_search_locations:
            assets = Path(list(spec.submodule_search_locations)[0]) / "assets"
            if (assets / "mel_filters.npz").exists():
                return assets
    raise ModelError("writing a ggml file needs Whisper's mel filters and vocabulary: pip install openai-whisper")


def _tiktoken_ranks(path: Path) -> list[bytes]:
    """Token byte strings in rank order from a ``.tiktoken`` file (base64 token, rank per line)."""
    pairs = []
    for line in path.read_bytes().splitlines():
        if line.strip():
            token, rank = line.split()
            pairs.append((int(rank), base64.b64decode(token)))
    pairs.sort()
    if [rank for rank, _ in pairs] != list(range(len(pairs))):
        raise ModelError(f"{path}: token ranks are not 0..{len(pairs) - 1}")
    return [token for _, token in pairs]


def _tensor_type(name: str, array: np.ndarray, weight_type: int) -> int:
    if array.ndim < 2 or name in _F32_NAMES or weight_type == F32:
        return F32
    if array.ndim == 2 and weight_type in _QUANTIZERS:
        return weight_type
    return F16


def write_ggml(ckpt: Checkpoint, out_path: str | Path, variant: str = "f16") -> None:
    """Write ``ckpt`` as a whisper.cpp ggml file of the given variant (see the module docstring).

    A quantized variant is quantized from the checkpoint's float32 weights; ``VARIANT+f16`` takes whisper.cpp's
    usual route instead (convert to an f16 file, then ``quantize`` it): each quantized weight is rounded to float16
    first, which gives whisper.cpp's bytes for a float32 source (and changes nothing for a float16 one)."""
    variant, _, route = (variant or "f16").partition("+")
    if route not in ("", "f16"):
        raise ModelError(f"unknown ggml quantization route {route!r} in {variant}+{route} (known: +f16)")
    if variant not in VARIANTS:
        raise ModelError(f"unknown ggml variant {variant!r} (known: {', '.join(VARIANTS)})")
    ftype, weight_type, qnt_version = VARIANTS[variant]
    dims = ckpt.dims
    assets = _whisper_assets()
    with np.load(assets / "mel_filters.npz") as npz:
        key = f"mel_{dims['n_mels']}"
        if key not in npz:
            raise ModelError(f"{assets / 'mel_filters.npz'} has no {dims['n_mels']}-band filters")
        filters = npz[key].astype("<f4")
    tokens = _tiktoken_ranks(assets / ("multilingual.tiktoken" if ckpt.multilingual else "gpt2.tiktoken"))
    if len(tokens) >= dims["n_vocab"]:
        raise ModelError(f"{ckpt.source_dir}: {len(tokens)} vocabulary tokens do not fit n_vocab {dims['n_vocab']}")

    tmp = Path(f"{out_path}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(struct.pack("<i", MAGIC))
            out.write(struct.pack("<11i", *(dims[k] for k in HPARAMS), ftype))
            out.write(struct.pack("<2i", *filters.shape))
            out.write(filters.tobytes())
            out.write(struct.pack("<i", len(tokens)))
            for token in tokens:
                out.write(struct.pack("<i", len(token)) + token)
            for name, array in ckpt.state_dict.items():
                if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
                    array = array.reshape(-1, 1)
                ttype = _tensor_type(name, array, weight_type)
                encoded = name.encode()
                out.write(struct.pack(f"<3i{array.ndim}i", array.ndim, len(encoded), ttype, *array.shape[::-1]))
                out.write(encoded)
                if ttype in _QUANTIZERS:
                    if route == "f16":  # what whisper.cpp's quantize reads from an f16 file
                        array = array.astype(np.float16).astype(np.float32)
                    out.write(_QUANTIZERS[ttype](array, qnt_version, name))
                else:
                    out.write(np.ascontiguousarray(array, dtype="<f4" if ttype == F32 else "<f2").tobytes())
    except BaseException:
        tmp.unlink(missing_ok=True)  # a half-written file is never left behind
        raise
    os.replace(tmp, out_path)
    validate_ggml_header(out_path)


def to_ggml(source: SourceModel, out_dir: Path, variant: str) -> None:
    """The converter of its Format: ``source`` as whisper.cpp's ggml file (``variant``: its type, e.g. q5_0)
    into ``out_dir``."""
    write_ggml(read_checkpoint(source), out_dir / GGML_FILE, variant)
