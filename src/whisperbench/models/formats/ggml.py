"""whisper.cpp's ggml: one ``.bin`` file starting with the magic ``0x67676d6c``."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from whisperbench.models.checkpoint import Checkpoint
from whisperbench.models.formats import Format, ModelLayout
from whisperbench.models.ggml_format import MAGIC
from whisperbench.models.source import SourceModel


def _is_ggml(path: Path, head: bytes) -> bool:
    return len(head) == 4 and struct.unpack("<I", head)[0] == MAGIC


def _inspect(path: Path) -> ModelLayout:
    from whisperbench.models.ggml_format import TYPE_NAMES, validate_ggml_header

    header = validate_ggml_header(path)
    dims = dict(header.hparams)
    dtype = TYPE_NAMES[header.weight_type]
    return ModelLayout("ggml", path, [path], dims, dtype, header.quantized)


def _read(source: SourceModel) -> Checkpoint:
    from whisperbench.models.ggml_format import read_ggml_state
    from whisperbench.models.readers import checkpoint_of

    _, state = read_ggml_state(source.path)
    return checkpoint_of(source, state)


def _embedding(source: SourceModel) -> np.ndarray:
    from whisperbench.models.ggml_format import read_ggml_state

    return read_ggml_state(source.path)[1]["decoder.token_embedding.weight"]


FORMAT = Format(
    name="ggml",
    title="ggml .bin",
    rank=40,
    aliases=("whisper.cpp",),
    description="whisper.cpp's ggml file (one .bin: f32, f16 or quantized q8_0/q5_0/...)",
    file=_is_ggml,
    inspect=_inspect,
    check_dims=True,
    read=_read,
    embedding=_embedding,
    converter="whisperbench.models.ggml:to_ggml",
    output_file="ggml-model.bin",
    default_variant="f16",
    variants="f16/q8_0/q5_0",
    native_adapters=("whisper-cpp",),
)
