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
positional embeddings f32. ``q8_0`` / ``q5_0``: the 2-D weights (linears, token embedding) in
ggml's 32-value blocks, quantization format version 2 (whisper.cpp >= 1.5; ftype = 2000 + type),
conv weights f16. ``q8_0-qnt1`` / ``q5_0-qnt1``: format version 1 that whisper.cpp 1.4 reads
(q8_0 with a float32 scale, q5_0 with interleaved nibbles; ftype without the version).
"""

from __future__ import annotations

import base64
import importlib.util
import os
import struct
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.convert import Checkpoint, LazyStateDict, read_checkpoint
from whisperbench.models.registry import SourceModel, converter

GGML_FILE = "ggml-model.bin"
MAGIC = 0x67676D6C
QNT_VERSION_FACTOR = 1000
N_FFT_BINS = 201  # 400-point FFT -> 201 frequency bins per mel filter row

F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 = 0, 1, 2, 3, 6, 7, 8
Q2_K, Q3_K, Q4_K, Q5_K, Q6_K = 10, 11, 12, 13, 14
TYPE_NAMES = {F32: "f32", F16: "f16", Q4_0: "q4_0", Q4_1: "q4_1", Q5_0: "q5_0", Q5_1: "q5_1", Q8_0: "q8_0",
              Q2_K: "q2_k", Q3_K: "q3_k", Q4_K: "q4_k", Q5_K: "q5_k", Q6_K: "q6_k"}
#: ggml type -> (values per block, bytes per block), quantization format version 2 (ggml's block_q*
#: structs; the k-quants pack 256 values per super-block)
_BLOCKS = {F32: (1, 4), F16: (1, 2), Q4_0: (32, 18), Q4_1: (32, 20), Q5_0: (32, 22), Q5_1: (32, 24), Q8_0: (32, 34),
           Q2_K: (256, 84), Q3_K: (256, 110), Q4_K: (256, 144), Q5_K: (256, 176), Q6_K: (256, 210)}
_BLOCKS_QNT1 = {**_BLOCKS, Q4_0: (32, 20), Q4_1: (32, 24), Q8_0: (32, 36)}
#: hparams ftype (ggml_ftype, modulo the version factor) -> ggml type of the big weights
_FTYPE_WEIGHT = {0: F32, 1: F16, 2: Q4_0, 3: Q4_1, 7: Q8_0, 8: Q5_0, 9: Q5_1,
                 10: Q2_K, 11: Q3_K, 12: Q4_K, 13: Q5_K, 14: Q6_K}
#: variant -> (hparams ftype, weight type, quantization format version)
VARIANTS = {
    "f32": (0, F32, 0),
    "f16": (1, F16, 0),
    "q8_0": (QNT_VERSION_FACTOR * 2 + 7, Q8_0, 2),
    "q5_0": (QNT_VERSION_FACTOR * 2 + 8, Q5_0, 2),
    "q8_0-qnt1": (7, Q8_0, 1),
    "q5_0-qnt1": (8, Q5_0, 1),
}
_F32_NAMES = {"encoder.conv1.bias", "encoder.conv2.bias", "encoder.positional_embedding",
              "decoder.positional_embedding"}
HPARAMS = ("n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer", "n_text_ctx",
           "n_text_state", "n_text_head", "n_text_layer", "n_mels")


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


_QUANTIZERS = {Q8_0: quantize_q8_0, Q5_0: quantize_q5_0}


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
    """Write ``ckpt`` as a whisper.cpp ggml file of the given variant (see the module docstring)."""
    variant = variant or "f16"
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
                out.write(_QUANTIZERS[ttype](array, qnt_version))
            else:
                out.write(np.ascontiguousarray(array, dtype="<f4" if ttype == F32 else "<f2").tobytes())
    os.replace(tmp, out_path)
    validate_ggml_header(out_path)


@converter("ggml")
def _to_ggml(source: SourceModel, out_dir: Path, variant: str) -> None:
    write_ggml(read_checkpoint(source), out_dir / GGML_FILE, variant)


# ------------------------------------------------------------------------------------- validator


@dataclass(frozen=True)
class GgmlHeader:
    """What :func:`validate_ggml_header` found."""

    hparams: dict[str, int]
    ftype: int  # modulo the version factor
    qnt_version: int  # 0 for files that do not record one
    weight_type: int  # ggml type of the big weights
    n_tokens: int
    tensor_types: dict[str, int]
    #: name -> (numpy shape, byte offset of the data)
    tensor_offsets: dict[str, tuple[tuple[int, ...], int]] = field(default_factory=dict)

    @property
    def quantized(self) -> bool:
        return self.weight_type not in (F32, F16)


def _expected_tensors(h: dict[str, int]) -> int:
    """Tensor count of a Whisper model: 7 + 15 per encoder block, 4 + 24 per decoder block."""
    return 7 + 15 * h["n_audio_layer"] + 4 + 24 * h["n_text_layer"]


def validate_ggml_header(path: str | Path) -> GgmlHeader:
    """Check a ggml Whisper file's structure without loading it natively; ModelError naming the path.

    Checks the magic, that the hparams are plausible and consistent, the mel filter and vocabulary
    sections, every tensor header (dims, type, a known block size), the tensor count for the
    hparams, and that the tensors end exactly at the end of the file.
    """
    path = Path(path)

    def bad(problem: str) -> ModelError:
        return ModelError(f"{path}: not a valid whisper.cpp ggml model: {problem}")

    try:
        size = path.stat().st_size
        fh = open(path, "rb")
    except OSError as exc:
        raise ModelError(f"{path}: cannot open ggml model: {exc.strerror or exc}") from exc
    with fh:
        def ints(count: int, what: str) -> tuple[int, ...]:
            raw = fh.read(4 * count)
            if len(raw) != 4 * count:
                raise bad(f"file ends inside the {what} at byte {fh.tell()} of {size}")
            return struct.unpack(f"<{count}i", raw)

        def skip(nbytes: int, what: str) -> None:
            if fh.tell() + nbytes > size:
                raise bad(f"file ends inside the {what} ({size} bytes in all)")
            fh.seek(nbytes, os.SEEK_CUR)

        (magic,) = ints(1, "magic")
        if magic != MAGIC:
            raise bad(f"bad magic 0x{magic & 0xFFFFFFFF:08x} (expected 0x{MAGIC:08x})")
        values = ints(11, "hparams")
        hparams = dict(zip(HPARAMS, values[:10]))
        raw_ftype = values[10]
        for key, value in hparams.items():
            if not 0 < value < 1 << 20:
                raise bad(f"hparam {key} = {value}")
        if hparams["n_audio_state"] != hparams["n_text_state"]:
            raise bad(f"n_audio_state {hparams['n_audio_state']} != n_text_state {hparams['n_text_state']}")
        qnt_version, ftype = divmod(raw_ftype, QNT_VERSION_FACTOR) if raw_ftype >= 0 else (0, -1)
        if ftype not in _FTYPE_WEIGHT or qnt_version > 2:
            raise bad(f"unknown ftype {raw_ftype}")
        weight_type = _FTYPE_WEIGHT[ftype]
        blocks = _BLOCKS if qnt_version >= 2 else _BLOCKS_QNT1

        n_mel, n_fft = ints(2, "mel filter header")
        if n_mel != hparams["n_mels"] or n_fft != N_FFT_BINS:
            raise bad(f"mel filters are {n_mel} x {n_fft}, expected {hparams['n_mels']} x {N_FFT_BINS}")
        skip(4 * n_mel * n_fft, "mel filters")
        (n_tokens,) = ints(1, "vocabulary size")
        if not 0 < n_tokens <= hparams["n_vocab"]:
            raise bad(f"{n_tokens} vocabulary entries for n_vocab {hparams['n_vocab']}")
        for i in range(n_tokens):
            (length,) = ints(1, f"vocabulary entry {i}")
            if not 0 <= length <= 1024:
                raise bad(f"vocabulary entry {i} has length {length}")
            skip(length, f"vocabulary entry {i}")

        types: dict[str, int] = {}
        offsets: dict[str, tuple[tuple[int, ...], int]] = {}
        while fh.tell() < size:
            n_dims, name_len, ttype = ints(3, f"header of tensor {len(types)}")
            if not 1 <= n_dims <= 4 or not 0 < name_len < 256:
                raise bad(f"tensor {len(types)} header has n_dims {n_dims}, name length {name_len}")
            shape = ints(n_dims, f"dims of tensor {len(types)}")
            name = fh.read(name_len).decode("utf-8", "replace")
            if ttype not in blocks:
                raise bad(f"tensor {name} has unsupported ggml type {ttype}")
            per_block, block_bytes = blocks[ttype]
            if min(shape) < 1 or shape[0] % per_block:
                raise bad(f"tensor {name} has dims {list(shape)} (type {ttype} needs rows of {per_block}n values)")
            offsets[name] = (tuple(shape[::-1]), fh.tell())
            skip(int(np.prod(shape)) // per_block * block_bytes, f"data of tensor {name}")
            types[name] = ttype
        if len(types) != _expected_tensors(hparams):
            raise bad(f"{len(types)} tensors, expected {_expected_tensors(hparams)} for these hparams")
    return GgmlHeader(hparams, ftype, qnt_version, weight_type, n_tokens, types, offsets)


def read_ggml_state(path: str | Path) -> tuple[dict[str, int], LazyStateDict]:
    """hparams and float32 tensors (openai-whisper names) of an f16 or f32 ggml file.

    A quantized file is refused: its weights are not the full-precision ones any more.
    """
    header = validate_ggml_header(path)
    if header.quantized:
        raise ModelError(f"{path}: ggml {TYPE_NAMES[header.weight_type]} is quantized: it runs only in whisper.cpp "
                         "as it is; convert from the f16/f32 file it was quantized from")
    data = np.memmap(path, dtype=np.uint8, mode="r")

    def load(name: str) -> np.ndarray:
        shape, offset = header.tensor_offsets[name]
        dtype = np.dtype("<f4" if header.tensor_types[name] == F32 else "<f2")
        array = np.frombuffer(data, dtype=dtype, count=int(np.prod(shape)), offset=offset).astype(np.float32)
        return array if name in ("encoder.conv1.bias", "encoder.conv2.bias") else array.reshape(shape)

    return header.hparams, LazyStateDict({name: partial(load, name) for name in header.tensor_offsets})
