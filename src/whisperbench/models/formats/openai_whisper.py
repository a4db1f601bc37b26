"""openai-whisper: one torch ``.pt`` file holding ``dims`` and ``model_state_dict``."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from whisperbench.models.checkpoint import Checkpoint, LazyStateDict
from whisperbench.models.formats import DIMS, Format, ModelLayout, bad, check_layers, is_pickle_head, torch_load
from whisperbench.models.source import SourceModel


def _inspect(path: Path) -> ModelLayout:
    saved = torch_load(path, "openai-whisper")
    if not isinstance(saved, dict) or "dims" not in saved or "model_state_dict" not in saved:
        raise bad(path, "openai-whisper", "a torch file without 'dims' and 'model_state_dict'")
    dims = {key: int(saved["dims"][key]) for key in DIMS if key in saved["dims"]}
    if len(dims) != len(DIMS):
        raise bad(path, "openai-whisper", f"dims lack {', '.join(sorted(set(DIMS) - set(dims)))}")
    state = saved["model_state_dict"]
    conv = state.get("encoder.conv1.weight")
    if conv is None or conv.shape[1] != dims["n_mels"]:
        raise bad(
            path,
            "openai-whisper",
            f"dims say n_mels={dims['n_mels']} but encoder.conv1.weight has shape "
            f"{None if conv is None else list(conv.shape)}",
        )
    tensors = {k: (str(v.dtype), list(v.shape)) for k, v in state.items()}
    check_layers(
        path,
        "openai-whisper",
        tensors,
        dims,
        "encoder.blocks.{}.mlp.0.weight",
        "decoder.blocks.{}.mlp.0.weight",
        ("n_audio_layer", "n_text_layer"),
    )
    dtype = str(conv.dtype).replace("torch.", "")
    return ModelLayout("openai-whisper", path, [path], dims, dtype, False)


def _read(source: SourceModel) -> Checkpoint:
    from whisperbench.models.readers import checkpoint_of

    saved = torch_load(Path(source.path), "openai-whisper")
    state = LazyStateDict(
        {
            name: partial(lambda t: t.float().numpy(), tensor)  # memory-mapped tensors
            for name, tensor in saved["model_state_dict"].items()
        }
    )
    return checkpoint_of(source, state, saved.get("alignment_heads"))


def _embedding(source: SourceModel) -> np.ndarray:
    saved = torch_load(Path(source.path), source.format)
    return saved["model_state_dict"]["decoder.token_embedding.weight"].float().numpy()


FORMAT = Format(
    name="openai-whisper",
    title="torch .pt",
    rank=30,
    aliases=("openai",),
    description="openai-whisper checkpoint: one torch .pt file (dims + model_state_dict)",
    file=lambda path, head: path.suffix == ".pt" and is_pickle_head(head),
    file_fallback=is_pickle_head,
    inspect=_inspect,
    check_dims=True,
    read=_read,
    embedding=_embedding,
    converter="whisperbench.models.convert:to_openai_whisper",
    output_file="model.pt",
    native_adapters=("openai-whisper", "ane-pytorch"),
)
