"""Core ML as whisperbench exports it: a folder with ``coreml.json`` beside the encoder and decoder packages."""

from __future__ import annotations

from pathlib import Path

from whisperbench.models.formats import DIMS, Format, ModelLayout, coreml_weights, read_json


def _inspect(folder: Path) -> ModelLayout:
    info = read_json(folder / "coreml.json", "coreml")
    dims = {k: int(v) for k, v in info.get("dims", {}).items() if k in DIMS}
    return ModelLayout("coreml", folder, coreml_weights(folder), dims, str(info.get("precision", "float16")), False)


FORMAT = Format(
    name="coreml",
    title="Core ML",
    rank=60,
    description="Core ML packages as whisperbench exports them (a folder with coreml.json); macOS runs them",
    folder=lambda folder: (folder / "coreml.json").is_file(),
    inspect=_inspect,
    unreadable="a coreml model runs only in Core ML as it is; its weights cannot be read back for conversion: "
    "convert from the checkpoint it was built from",
    converter="whisperbench.models.coreml:to_coreml",
    variants="float16/float32",
    native_adapters=("coreml", "ane-pytorch"),
)
