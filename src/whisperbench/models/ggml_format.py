"""Read whisper.cpp's legacy ggml model files: check the structure without native code, map the tensors.

Layout (little endian): int32 magic ``ggml``; 11 int32 hparams (n_vocab, n_audio_ctx, n_audio_state,
n_audio_head, n_audio_layer, n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype);
int32 n_mel, int32 n_fft, n_mel x n_fft float32 mel filters; int32 token count, then per token
int32 length + bytes; then per tensor: int32 n_dims, int32 name length, int32 ggml type, n_dims int32
sizes (innermost first), the name, the data. The writer is :mod:`whisperbench.models.ggml`.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.checkpoint import LazyStateDict

MAGIC = 0x67676D6C
QNT_VERSION_FACTOR = 1000
N_FFT_BINS = 201  # 400-point FFT -> 201 frequency bins per mel filter row

F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 = 0, 1, 2, 3, 6, 7, 8
Q2_K, Q3_K, Q4_K, Q5_K, Q6_K = 10, 11, 12, 13, 14
TYPE_NAMES = {
    F32: "f32",
    F16: "f16",
    Q4_0: "q4_0",
    Q4_1: "q4_1",
    Q5_0: "q5_0",
    Q5_1: "q5_1",
    Q8_0: "q8_0",
    Q2_K: "q2_k",
    Q3_K: "q3_k",
    Q4_K: "q4_k",
    Q5_K: "q5_k",
    Q6_K: "q6_k",
}
#: ggml type -> (values per block, bytes per block), quantization format version 2 (ggml's block_q*
#: structs; the k-quants pack 256 values per super-block)
_BLOCKS = {
    F32: (1, 4),
    F16: (1, 2),
    Q4_0: (32, 18),
    Q4_1: (32, 20),
    Q5_0: (32, 22),
    Q5_1: (32, 24),
    Q8_0: (32, 34),
    Q2_K: (256, 84),
    Q3_K: (256, 110),
    Q4_K: (256, 144),
    Q5_K: (256, 176),
    Q6_K: (256, 210),
}
_BLOCKS_QNT1 = {**_BLOCKS, Q4_0: (32, 20), Q4_1: (32, 24), Q8_0: (32, 36)}
#: hparams ftype (ggml_ftype, modulo the version factor) -> ggml type of the big weights
_FTYPE_WEIGHT = {
    0: F32,
    1: F16,
    2: Q4_0,
    3: Q4_1,
    7: Q8_0,
    8: Q5_0,
    9: Q5_1,
    10: Q2_K,
    11: Q3_K,
    12: Q4_K,
    13: Q5_K,
    14: Q6_K,
}
HPARAMS = (
    "n_vocab",
    "n_audio_ctx",
    "n_audio_state",
    "n_audio_head",
    "n_audio_layer",
    "n_text_ctx",
    "n_text_state",
    "n_text_head",
    "n_text_layer",
    "n_mels",
)


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
        """Whether the file's weights are a quantized type (not f32 or f16)."""
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
        fh = open(path, "rb")  # noqa: SIM115 - closed by the `with` below; opened apart to name the error
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
        raise ModelError(
            f"{path}: ggml {TYPE_NAMES[header.weight_type]} is quantized: it runs only in whisper.cpp "
            "as it is; convert from the f16/f32 file it was quantized from"
        )
    data = np.memmap(path, dtype=np.uint8, mode="r")

    def load(name: str) -> np.ndarray:
        shape, offset = header.tensor_offsets[name]
        dtype = np.dtype("<f4" if header.tensor_types[name] == F32 else "<f2")
        array = np.frombuffer(data, dtype=dtype, count=int(np.prod(shape)), offset=offset).astype(np.float32)
        return array if name in ("encoder.conv1.bias", "encoder.conv2.bias") else array.reshape(shape)

    return header.hparams, LazyStateDict({name: partial(load, name) for name in header.tensor_offsets})
