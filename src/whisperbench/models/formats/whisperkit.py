"""WhisperKit (Argmax): a folder of compiled Core ML models, ``AudioEncoder`` and ``TextDecoder``."""

from __future__ import annotations

from pathlib import Path

from whisperbench.models.formats import HF_DIMS, Format, ModelLayout, coreml_weights, read_json


def _looks_like(folder: Path) -> bool:
    parts = ("AudioEncoder", "TextDecoder")
    return all(any((folder / f"{p}{ext}").exists() for ext in (".mlmodelc", ".mlpackage")) for p in parts)


def _inspect(folder: Path) -> ModelLayout:
    dims: dict[str, int] = {}
    if (folder / "config.json").is_file():
        config = read_json(folder / "config.json", "whisperkit")
        dims = {ours: int(config[theirs]) for ours, theirs in HF_DIMS.items() if theirs in config}
    return ModelLayout("whisperkit", folder, coreml_weights(folder), dims, "float16", False)


FORMAT = Format(
    name="whisperkit",
    title="WhisperKit",
    rank=70,
    description="WhisperKit folder (AudioEncoder + TextDecoder .mlmodelc/.mlpackage); macOS runs it",
    folder=_looks_like,
    inspect=_inspect,
    unreadable="a whisperkit model runs only in Core ML as it is; its weights cannot be read back for conversion: "
    "convert from the checkpoint it was built from",
    native_adapters=("whisperkit",),
)
