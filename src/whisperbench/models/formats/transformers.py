"""Hugging Face transformers: a folder with ``config.json`` (``model_type: whisper``) and safetensors
(one file or shards) or ``pytorch_model.bin``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from whisperbench.models.checkpoint import Checkpoint, LazyStateDict, openai_name
from whisperbench.models.formats import (
    HF_DIMS,
    SAFETENSORS_DTYPES,
    Format,
    ModelLayout,
    bad,
    check_layers,
    config_has,
    read_json,
    safetensors_header,
    torch_tensors,
)
from whisperbench.models.source import SourceModel


def _looks_like(folder: Path) -> bool:
    return config_has(folder, "model_type", "architectures", "d_model") and not config_has(folder, "n_mels")


def _tensors(folder: Path) -> tuple[list[Path], dict[str, tuple[str, list[int]]]]:
    """Weight files of a transformers folder and name -> (dtype, shape) of its tensors."""
    index = folder / "model.safetensors.index.json"
    if (folder / "model.safetensors").is_file():
        files = [folder / "model.safetensors"]
    elif index.is_file():
        names = sorted(set(read_json(index, "transformers").get("weight_map", {}).values()))
        files = [folder / name for name in names]
        missing = [f.name for f in files if not f.is_file()]
        if not files or missing:
            raise bad(index, "transformers", f"shards missing: {', '.join(missing) or 'weight_map is empty'}")
    elif (folder / "pytorch_model.bin").is_file():
        return [folder / "pytorch_model.bin"], torch_tensors(folder / "pytorch_model.bin", "transformers")
    else:
        raise bad(
            folder,
            "transformers",
            "config.json says Whisper but there is no model.safetensors, "
            "model.safetensors.index.json or pytorch_model.bin",
        )
    tensors = {}
    for file in files:
        for name, info in safetensors_header(file, "transformers").items():
            tensors[name] = (SAFETENSORS_DTYPES.get(info["dtype"], info["dtype"].lower()), info["shape"])
    return files, tensors


def _inspect(folder: Path) -> ModelLayout:
    config = read_json(folder / "config.json", "transformers")
    if config.get("model_type") != "whisper":
        raise bad(
            folder / "config.json",
            "transformers",
            f"model_type is {config.get('model_type')!r}, not 'whisper': not a Whisper model",
        )
    missing = [key for key in set(HF_DIMS.values()) if key not in config]
    if missing:
        raise bad(folder / "config.json", "transformers", f"no {', '.join(sorted(missing))}")
    dims = {ours: int(config[theirs]) for ours, theirs in HF_DIMS.items()}
    files, tensors = _tensors(folder)
    prefix = "model." if any(k.startswith("model.") for k in tensors) else ""
    checks = {
        f"{prefix}encoder.conv1.weight": (1, "n_mels", "num_mel_bins"),
        f"{prefix}decoder.embed_tokens.weight": (0, "n_vocab", "vocab_size"),
        f"{prefix}encoder.embed_positions.weight": (0, "n_audio_ctx", "max_source_positions"),
    }
    for name, (axis, ours, theirs) in checks.items():
        if name not in tensors:
            raise bad(files[0], "transformers", f"no tensor {name}")
        if tensors[name][1][axis] != dims[ours]:
            raise bad(
                folder,
                "transformers",
                f"config.json says {theirs}={dims[ours]} but {name} has shape {tensors[name][1]}",
            )
    check_layers(
        folder,
        "transformers",
        tensors,
        dims,
        f"{prefix}encoder.layers.{{}}.fc1.weight",
        f"{prefix}decoder.layers.{{}}.fc1.weight",
        ("encoder_layers", "decoder_layers"),
    )
    dtype = tensors[f"{prefix}encoder.conv1.weight"][0]
    return ModelLayout("transformers", folder, files, dims, dtype, False)


def _state(source: SourceModel) -> LazyStateDict:
    from whisperbench.models.readers import tensor_loaders

    loaders = {}
    for file in source.weight_files:
        for name, load in tensor_loaders(file, "transformers").items():
            if name != "proj_out.weight":  # tied to the token embedding
                loaders[openai_name(name)] = load
    return LazyStateDict(loaders)


def _read(source: SourceModel) -> Checkpoint:
    from whisperbench.models.readers import checkpoint_of

    folder = Path(source.path)
    state = _state(source)
    generation = {}
    heads = None
    gen_file = folder / "generation_config.json"
    if gen_file.is_file():
        config = json.loads(gen_file.read_text(encoding="utf-8"))
        heads = config.get("alignment_heads")
        if config.get("suppress_tokens") is not None:
            generation = {
                "suppress_ids": config["suppress_tokens"],
                "suppress_ids_begin": config.get("begin_suppress_tokens") or [],
                "lang_ids": sorted((config.get("lang_to_id") or {}).values()),
            }
    tokenizer = folder / "tokenizer.json"
    return checkpoint_of(
        source, state, heads, tokenizer_file=str(tokenizer) if tokenizer.is_file() else "", generation=generation
    )


def _embedding(source: SourceModel) -> np.ndarray:
    from whisperbench.models.readers import tensor_from_files

    return tensor_from_files(source, "model.decoder.embed_tokens.weight")


FORMAT = Format(
    name="transformers",
    title="transformers",
    rank=20,
    aliases=("hf",),
    description="Hugging Face transformers folder (config.json + safetensors or pytorch_model.bin)",
    folder=_looks_like,
    inspect=_inspect,
    check_dims=True,
    read=_read,
    embedding=_embedding,
    converter="whisperbench.models.convert:to_transformers",
    native_adapters=("transformers",),
)
