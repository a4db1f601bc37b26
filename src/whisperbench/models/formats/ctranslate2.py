"""CTranslate2 (faster-whisper): a folder with ``model.bin`` (CTranslate2's own binary) and ``config.json``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from whisperbench.models.checkpoint import Checkpoint
from whisperbench.models.formats import Format, ModelLayout, bad, is_pickle
from whisperbench.models.source import SourceModel


def _looks_like(folder: Path) -> bool:
    return (folder / "model.bin").is_file() and not is_pickle(folder / "model.bin")


def _inspect(folder: Path) -> ModelLayout:
    from whisperbench.models.ctranslate2_format import ct2_dims, read_ct2_shapes

    shapes = read_ct2_shapes(folder / "model.bin")
    try:
        dims = ct2_dims(shapes)
    except KeyError as exc:
        raise bad(folder / "model.bin", "ctranslate2", f"not a Whisper model (no variable {exc.args[0]})") from exc
    first_linear = "encoder/layer_0/ffn/linear_0/weight"
    dtype = shapes[first_linear][0] if first_linear in shapes else shapes["encoder/conv1/weight"][0]
    if not (folder / "config.json").is_file():
        raise bad(folder, "ctranslate2", "model.bin but no config.json")
    return ModelLayout("ctranslate2", folder, [folder / "model.bin"], dims, dtype, dtype in ("int8", "int16"))


def _read(source: SourceModel) -> Checkpoint:
    from whisperbench.models.ctranslate2_format import load_ct2_checkpoint
    from whisperbench.models.readers import with_vocabulary

    return with_vocabulary(load_ct2_checkpoint(str(source.path)))


def _embedding(source: SourceModel) -> np.ndarray:
    from whisperbench.models.ctranslate2_format import read_ct2_variables

    return read_ct2_variables(source.weight_files[0])["decoder/embeddings/weight"]


FORMAT = Format(
    name="ctranslate2",
    title="CTranslate2",
    rank=10,
    aliases=("ct2",),
    description="CTranslate2 folder (model.bin + config.json), as faster-whisper runs it",
    folder=_looks_like,
    shadows=("transformers",),
    inspect=_inspect,
    check_dims=True,
    read=_read,
    embedding=_embedding,
    converter="whisperbench.models.ctranslate2_writer:to_ctranslate2",
    variants="float16/int8/...",
    native_adapters=("faster-whisper",),
)
