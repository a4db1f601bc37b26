"""Convert the source checkpoint to a Flax Whisper folder (``FlaxWhisperForConditionalGeneration``).

Written straight from the CTranslate2 weights with numpy, so neither the conversion nor the ``jax``
adapter needs torch: the folder holds config.json, generation_config.json, the tokenizer files and
flax_model.msgpack, and loads with ``FlaxWhisperForConditionalGeneration.from_pretrained(folder)``.

Names follow transformers' Whisper (derived from the openai-whisper names as for the transformers
folder); Flax layouts differ from PyTorch's: a Dense kernel is (in, out), a Conv kernel is
(width, in, out), LayerNorm weights are ``scale`` and embeddings ``embedding``. The output
projection is tied to the token embedding (no ``proj_out``), as in Whisper.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.convert import (
    _CONTROL_TOKENS,
    Checkpoint,
    _generation_config,
    build_tokenizer,
    read_checkpoint,
    transformers_name,
)
from whisperbench.models.resolve import SourceModel

FLAX_WEIGHTS_FILE = "flax_model.msgpack"


def flax_path(name: str) -> tuple[str, ...]:
    """The Flax parameter path of an openai-whisper parameter name."""
    *module, leaf = transformers_name(name).split(".")
    if module[-1] in ("embed_positions", "embed_tokens"):
        leaf = "embedding"
    elif "layer_norm" in module[-1] and leaf == "weight":
        leaf = "scale"
    elif leaf == "weight":
        leaf = "kernel"
    return (*module, leaf)


def flax_array(name: str, array: np.ndarray) -> np.ndarray:
    """An openai-whisper (PyTorch layout) array in Flax's layout."""
    leaf = flax_path(name)[-1]
    if leaf == "kernel" and array.ndim == 3:  # Conv1d (out, in, width) -> (width, in, out)
        return np.ascontiguousarray(array.transpose(2, 1, 0))
    if leaf == "kernel":  # Linear (out, in) -> Dense (in, out)
        return np.ascontiguousarray(array.T)
    return array


def flax_params(ckpt: Checkpoint) -> dict:
    """The nested Flax parameter tree of a checkpoint (float32 numpy arrays)."""
    params: dict = {}
    for name, array in ckpt.state_dict.items():
        *parents, leaf = flax_path(name)
        node = params
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = flax_array(name, array)
    return params


def whisper_config(ckpt: Checkpoint, eot: int, sot: int):
    """A ``WhisperConfig`` for the checkpoint's dimensions (generation settings stay out of it)."""
    from transformers import WhisperConfig

    dims = ckpt.dims
    if dims["n_audio_state"] != dims["n_text_state"]:
        raise ModelError(f"{ckpt.source_dir}: transformers' Whisper needs equal encoder and decoder widths")
    return WhisperConfig(
        vocab_size=dims["n_vocab"],
        num_mel_bins=dims["n_mels"],
        d_model=dims["n_audio_state"],
        encoder_layers=dims["n_audio_layer"],
        encoder_attention_heads=dims["n_audio_head"],
        encoder_ffn_dim=ckpt.state_dict["encoder.blocks.0.mlp.0.weight"].shape[0],
        decoder_layers=dims["n_text_layer"],
        decoder_attention_heads=dims["n_text_head"],
        decoder_ffn_dim=ckpt.state_dict["decoder.blocks.0.mlp.0.weight"].shape[0],
        max_source_positions=dims["n_audio_ctx"],
        max_target_positions=dims["n_text_ctx"],
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        decoder_start_token_id=sot,
        suppress_tokens=None,
        begin_suppress_tokens=None,
    )


def write_flax(ckpt: Checkpoint, out_dir: str | Path) -> None:
    """Write a folder that ``FlaxWhisperForConditionalGeneration.from_pretrained`` loads offline."""
    from transformers import FlaxWhisperForConditionalGeneration, WhisperFeatureExtractor, WhisperProcessor

    tokenizer = build_tokenizer(ckpt)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in _CONTROL_TOKENS}
    config = whisper_config(ckpt, ids["<|endoftext|>"], ids["<|startoftranscript|>"])
    model = FlaxWhisperForConditionalGeneration(config, _do_init=False)
    model.generation_config = _generation_config(ckpt, ckpt.generation, tokenizer, ids)
    model.save_pretrained(str(out_dir), params=flax_params(ckpt))
    WhisperProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=ckpt.dims["n_mels"]), tokenizer=tokenizer
    ).save_pretrained(str(out_dir))


def to_flax(source: SourceModel, out_dir: Path, variant: str) -> None:
    """The converter of its Format: ``source`` as a Flax (Whisper JAX) folder into ``out_dir``."""
    write_flax(read_checkpoint(source), out_dir)
