"""Convert a CTranslate2 (faster-whisper) Whisper folder to openai-whisper and transformers formats.

A CTranslate2 Whisper folder holds model.bin, config.json (alignment_heads, lang_ids, suppress_ids,
suppress_ids_begin) and tokenizer.json. The weights are renamed to openai-whisper parameter names
first; the transformers names are derived from those.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
from dataclasses import dataclass, field
from functools import partial
from collections.abc import Mapping
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.ctranslate2_format import read_ct2_variables
from whisperbench.models.registry import SourceModel, converter

# Whisper's vocabulary: 1501 timestamp tokens <|0.00|> ... <|30.00|>, 0.02 s apart.
TIME_PRECISION = 0.02
N_TIMESTAMPS = 1501
MAX_INITIAL_TIMESTAMP_INDEX = 50  # 1.0 s, openai-whisper's default
MULTILINGUAL_MIN_VOCAB = 51865
OPENAI_WHISPER_FILE = "model.pt"  # the checkpoint's name inside its converted folder


class LazyStateDict(Mapping):
    """name -> array, each loaded (and converted) when asked for and not kept: a conversion holds one
    tensor at a time instead of two copies of the model.

    >>> lazy = LazyStateDict({"a": lambda: np.zeros(2)})
    >>> list(lazy), lazy["a"].tolist()
    (['a'], [0.0, 0.0])
    """

    def __init__(self, loaders: dict[str, Callable[[], np.ndarray]]):
        self._loaders = loaders

    def __getitem__(self, name: str) -> np.ndarray:
        return self._loaders[name]()

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)


@dataclass
class Checkpoint:
    """Whisper weights under openai-whisper parameter names, with what the converters need."""

    dims: dict  # openai-whisper ModelDimensions fields
    state_dict: Mapping[str, np.ndarray]  # a dict, or a LazyStateDict reading tensor by tensor
    multilingual: bool
    source_dir: str  # where the weights came from (named in messages)
    alignment_heads: list[tuple[int, int]]  # (decoder layer, head) pairs
    tokenizer_file: str = ""  # a tokenizer.json (BPE and special tokens; timestamps are added)
    #: suppress_ids, suppress_ids_begin, lang_ids as a CTranslate2 config.json holds them
    generation: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_alignment_heads(self.source_dir, self.alignment_heads, self.dims)


def check_alignment_heads(where: str, heads: list[tuple[int, int]], dims: dict) -> None:
    """A clear error for alignment heads that name a decoder layer or head the model does not have."""
    for layer, head in heads:
        if not (0 <= layer < dims["n_text_layer"] and 0 <= head < dims["n_text_head"]):
            raise ModelError(
                f"{where}: alignment head (layer {layer}, head {head}) does not exist in a model with "
                f"{dims['n_text_layer']} decoder layer(s) of {dims['n_text_head']} heads: the checkpoint's "
                "alignment_heads do not belong to these weights")


def default_alignment_heads(dims: dict) -> list[tuple[int, int]]:
    """openai-whisper's default when a checkpoint names none: every head of the upper half of the decoder."""
    layers = dims["n_text_layer"]
    return [(layer, head) for layer in range(layers // 2, layers) for head in range(dims["n_text_head"])]


def load_ct2_checkpoint(model_dir: str, model_bin: str | None = None, dtype: str = "float32") -> Checkpoint:
    """Read a CTranslate2 Whisper folder (model_bin overrides model_dir/model.bin).

    Tensors are cast to dtype; the default float32 holds float16 weights exactly.
    """
    model_bin = model_bin or os.path.join(model_dir, "model.bin")
    variables = read_ct2_variables(model_bin)

    def get(name: str, check_only: bool = False) -> np.ndarray:
        if name not in variables:
            raise ModelError(f"{model_bin}: not a CTranslate2 Whisper model (no variable {name})")
        if variables[name].dtype.kind != "f":
            raise ModelError(
                f"{model_bin}: {name} is quantized ({variables[name].dtype}); "
                "convert from a float16 or float32 model"
            )
        return variables[name] if check_only else variables[name].astype(dtype)

    plain = {  # openai-whisper name -> CTranslate2 name
        "encoder.conv1.weight": "encoder/conv1/weight",
        "encoder.conv1.bias": "encoder/conv1/bias",
        "encoder.conv2.weight": "encoder/conv2/weight",
        "encoder.conv2.bias": "encoder/conv2/bias",
        "encoder.positional_embedding": "encoder/position_encodings/encodings",
        "decoder.token_embedding.weight": "decoder/embeddings/weight",
        "decoder.positional_embedding": "decoder/position_encodings/encodings",
    }
    layer_norms = {"encoder.ln_post": "encoder/layer_norm", "decoder.ln": "decoder/layer_norm"}
    linears: dict[str, str] = {}
    fused: dict[str, tuple[str, tuple[str, ...]]] = {}  # CTranslate2 name -> (openai prefix, row blocks)
    n_layers = {side: _count_layers(variables, side) for side in ("encoder", "decoder")}
    for side in ("encoder", "decoder"):
        for i in range(n_layers[side]):
            src, dst = f"{side}/layer_{i}", f"{side}.blocks.{i}"
            layer_norms[f"{dst}.attn_ln"] = f"{src}/self_attention/layer_norm"
            layer_norms[f"{dst}.mlp_ln"] = f"{src}/ffn/layer_norm"
            linears[f"{dst}.attn.out"] = f"{src}/self_attention/linear_1"
            linears[f"{dst}.mlp.0"] = f"{src}/ffn/linear_0"
            linears[f"{dst}.mlp.2"] = f"{src}/ffn/linear_1"
            fused[f"{src}/self_attention/linear_0"] = (f"{dst}.attn", ("query", "key", "value"))
            if side == "decoder":
                layer_norms[f"{dst}.cross_attn_ln"] = f"{src}/attention/layer_norm"
                linears[f"{dst}.cross_attn.query"] = f"{src}/attention/linear_0"
                linears[f"{dst}.cross_attn.out"] = f"{src}/attention/linear_2"
                fused[f"{src}/attention/linear_1"] = (f"{dst}.cross_attn", ("key", "value"))
    for dst, src in layer_norms.items():
        plain[f"{dst}.weight"], plain[f"{dst}.bias"] = f"{src}/gamma", f"{src}/beta"
    for dst, src in linears.items():
        plain[f"{dst}.weight"], plain[f"{dst}.bias"] = f"{src}/weight", f"{src}/bias"
    for name in plain.values():
        get(name, check_only=True)
    loaders = {dst: partial(get, src) for dst, src in plain.items()}
    for src, (dst, parts) in fused.items():
        loaders.update(_split_linear(get, model_bin, src, dst, parts))
    state_dict = LazyStateDict(loaders)

    n_audio_ctx, n_audio_state = variables[plain["encoder.positional_embedding"]].shape
    n_text_ctx, n_text_state = variables[plain["decoder.positional_embedding"]].shape
    dims = {
        "n_mels": variables[plain["encoder.conv1.weight"]].shape[1],
        "n_vocab": variables[plain["decoder.token_embedding.weight"]].shape[0],
        "n_audio_ctx": n_audio_ctx,
        "n_audio_state": n_audio_state,
        "n_audio_head": _num_heads(variables, "encoder", n_audio_state),
        "n_audio_layer": n_layers["encoder"],
        "n_text_ctx": n_text_ctx,
        "n_text_state": n_text_state,
        "n_text_head": _num_heads(variables, "decoder", n_text_state),
        "n_text_layer": n_layers["decoder"],
    }
    config = _read_json(os.path.join(model_dir, "config.json"))
    dims = {k: int(v) for k, v in dims.items()}
    heads = config.get("alignment_heads") or default_alignment_heads(dims)
    return Checkpoint(
        dims=dims,
        state_dict=state_dict,
        multilingual=dims["n_vocab"] >= MULTILINGUAL_MIN_VOCAB,
        source_dir=str(model_dir),
        alignment_heads=[(int(layer), int(head)) for layer, head in heads],
        tokenizer_file=os.path.join(model_dir, "tokenizer.json"),
        generation={key: config[key] for key in ("suppress_ids", "suppress_ids_begin", "lang_ids") if key in config},
    )


def _count_layers(variables: dict, side: str) -> int:
    count = 0
    while f"{side}/layer_{count}/ffn/linear_0/weight" in variables:
        count += 1
    return count


def _num_heads(variables: dict, side: str, n_state: int) -> int:
    """The head count stored in the model, else n_state // 64 (every Whisper size has 64-wide heads)."""
    stored = variables.get(f"{side}/num_heads")
    return int(stored) if stored is not None else n_state // 64


def _split_linear(get, model_bin: str, src: str, dst: str, parts: tuple[str, ...]) -> dict[str, Callable]:
    """Loaders of a fused projection's row blocks; the key part has no bias in Whisper (stored as zeros)."""
    bias = get(f"{src}/bias", check_only=True)
    if "key" in parts and np.any(np.split(bias, len(parts))[parts.index("key")]):
        raise ModelError(f"{model_bin}: {src}/bias has a non-zero key bias, which Whisper lacks")

    def block(suffix: str, index: int) -> np.ndarray:
        return np.ascontiguousarray(np.split(get(f"{src}/{suffix}"), len(parts))[index])

    loaders = {}
    for index, part in enumerate(parts):
        loaders[f"{dst}.{part}.weight"] = partial(block, "weight", index)
        if part != "key":
            loaders[f"{dst}.{part}.bias"] = partial(block, "bias", index)
    return loaders


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: cannot read JSON: {exc}") from exc


# ---------------------------------------------------------------------------------------- openai


def write_openai_whisper(ckpt: Checkpoint, out_path: str | Path) -> None:
    """Save a checkpoint that ``whisper.load_model(out_path)`` loads.

    The alignment heads are stored under an extra key that ``load_openai_whisper`` reads back.
    """
    import torch

    torch.save(
        {
            "dims": ckpt.dims,
            "model_state_dict": {name: torch.from_numpy(array) for name, array in ckpt.state_dict.items()},
            "alignment_heads": [list(pair) for pair in ckpt.alignment_heads],
        },
        out_path,
    )


def load_openai_whisper(source: Checkpoint | str | Path):
    """Return a float32 ``whisper.model.Whisper`` in eval mode, with alignment heads where known."""
    import torch
    from whisper.model import ModelDimensions, Whisper

    if isinstance(source, Checkpoint):
        dims, heads = source.dims, source.alignment_heads
        state_dict = {name: torch.from_numpy(array) for name, array in source.state_dict.items()}
    else:
        saved = torch.load(source, map_location="cpu", weights_only=True)
        dims, heads, state_dict = saved["dims"], saved.get("alignment_heads"), saved["model_state_dict"]
    if heads:
        check_alignment_heads(str(source.source_dir if isinstance(source, Checkpoint) else source), heads, dims)
    model = Whisper(ModelDimensions(**dims))
    model.load_state_dict(state_dict)
    if heads:
        mask = np.zeros((dims["n_text_layer"], dims["n_text_head"]), dtype=bool)
        mask[tuple(np.array(heads).T)] = True
        model.set_alignment_heads(base64.b85encode(gzip.compress(mask.tobytes())))
    return model.eval()


# ---------------------------------------------------------------------------------- transformers

HF_RENAMES = (
    ("encoder.positional_embedding", "encoder.embed_positions.weight"),
    ("decoder.positional_embedding", "decoder.embed_positions.weight"),
    ("decoder.token_embedding.", "decoder.embed_tokens."),
    ("encoder.ln_post.", "encoder.layer_norm."),
    ("decoder.ln.", "decoder.layer_norm."),
    (".blocks.", ".layers."),
    (".attn_ln.", ".self_attn_layer_norm."),
    (".cross_attn_ln.", ".encoder_attn_layer_norm."),
    (".mlp_ln.", ".final_layer_norm."),
    (".attn.", ".self_attn."),
    (".cross_attn.", ".encoder_attn."),
    (".query.", ".q_proj."),
    (".key.", ".k_proj."),
    (".value.", ".v_proj."),
    (".out.", ".out_proj."),
    (".mlp.0.", ".fc1."),
    (".mlp.2.", ".fc2."),
)


def transformers_name(name: str) -> str:
    """The WhisperForConditionalGeneration parameter name for an openai-whisper one."""
    for old, new in HF_RENAMES:
        name = name.replace(old, new)
    return "model." + name


def write_transformers(ckpt: Checkpoint, out_dir: str | Path) -> None:
    """Write a folder that WhisperForConditionalGeneration, WhisperProcessor and pipeline() load offline."""
    import torch
    from transformers import (
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
    )

    dims = ckpt.dims
    if dims["n_audio_state"] != dims["n_text_state"]:
        raise ModelError(f"{ckpt.source_dir}: transformers' Whisper needs equal encoder and decoder widths")
    config_json = ckpt.generation
    tokenizer = build_tokenizer(ckpt)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in _CONTROL_TOKENS}
    eot, sot = ids["<|endoftext|>"], ids["<|startoftranscript|>"]
    config = WhisperConfig(
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
        suppress_tokens=None,  # generation settings live in the generation config only
        begin_suppress_tokens=None,
    )
    model = WhisperForConditionalGeneration(config)
    state_dict = {transformers_name(name): torch.from_numpy(array) for name, array in ckpt.state_dict.items()}
    state_dict["proj_out.weight"] = state_dict["model.decoder.embed_tokens.weight"]
    model.load_state_dict(state_dict)
    model.generation_config = _generation_config(ckpt, config_json, tokenizer, ids)
    model.save_pretrained(out_dir)
    WhisperProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=dims["n_mels"]), tokenizer=tokenizer
    ).save_pretrained(out_dir)


_CONTROL_TOKENS = (
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startofprev|>",
    "<|notimestamps|>",
)


def build_tokenizer(ckpt: Checkpoint):
    """A WhisperTokenizerFast from tokenizer.json whose ids match openai-whisper's tokenizer.

    The special tokens are registered in id order, since transformers takes the id after the last
    one (<|notimestamps|>) as the first timestamp; the timestamp tokens are then appended.
    """
    from tokenizers import AddedToken
    from transformers import WhisperTokenizerFast

    path = ckpt.tokenizer_file
    added = sorted(_read_json(path).get("added_tokens", []), key=lambda token: token["id"])
    tokenizer = WhisperTokenizerFast(
        tokenizer_file=path, pad_token="<|endoftext|>", model_max_length=ckpt.dims["n_text_ctx"]
    )
    specials = [t["content"] for t in added if t["special"] and t["content"] != "<|endoftext|>"]
    tokenizer.add_special_tokens({"additional_special_tokens": specials})
    timestamps = [f"<|{i * TIME_PRECISION:.2f}|>" for i in range(N_TIMESTAMPS)]
    tokenizer.add_tokens([AddedToken(t, normalized=False, special=False) for t in timestamps])
    last_special = tokenizer.all_special_ids[-1]
    if tokenizer.convert_ids_to_tokens(last_special) != "<|notimestamps|>" or (
        tokenizer.convert_tokens_to_ids(timestamps[0]) != last_special + 1
    ):
        raise ModelError(f"{path}: the special tokens do not end with <|notimestamps|> before the timestamps")
    if len(tokenizer) != (n_vocab := ckpt.dims["n_vocab"]):
        raise ModelError(f"{path}: {len(tokenizer)} tokens with timestamps; the model has {n_vocab}")
    return tokenizer


def _generation_config(ckpt: Checkpoint, config_json: dict, tokenizer, ids: dict):
    from transformers import GenerationConfig

    eot = ids["<|endoftext|>"]
    generation = GenerationConfig(
        decoder_start_token_id=ids["<|startoftranscript|>"],
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        max_length=ckpt.dims["n_text_ctx"],
        no_timestamps_token_id=ids["<|notimestamps|>"],
        prev_sot_token_id=ids["<|startofprev|>"],
        suppress_tokens=config_json.get("suppress_ids"),
        begin_suppress_tokens=config_json.get("suppress_ids_begin"),
        alignment_heads=[list(pair) for pair in ckpt.alignment_heads],
        is_multilingual=ckpt.multilingual,
        max_initial_timestamp_index=MAX_INITIAL_TIMESTAMP_INDEX,
        return_timestamps=False,
    )
    if ckpt.multilingual:
        lang_ids = config_json.get("lang_ids", [])
        generation.lang_to_id = dict(zip(tokenizer.convert_ids_to_tokens(lang_ids), lang_ids))
        generation.task_to_id = {"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]}
    generation._from_model_config = False
    return generation


# ------------------------------------------------------------------------- registered converters


def read_checkpoint(source: SourceModel) -> Checkpoint:
    """The source's full-precision weights in openai-whisper names, from any format (see readers)."""
    from whisperbench.models.readers import read_checkpoint as read

    return read(source)


@converter("openai-whisper")
def _to_openai_whisper(source: SourceModel, out_dir: Path, variant: str) -> None:
    write_openai_whisper(read_checkpoint(source), out_dir / OPENAI_WHISPER_FILE)


@converter("transformers")
def _to_transformers(source: SourceModel, out_dir: Path, variant: str) -> None:
    write_transformers(read_checkpoint(source), out_dir)
