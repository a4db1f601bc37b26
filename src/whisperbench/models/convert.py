"""Write a :class:`~whisperbench.models.checkpoint.Checkpoint` as an openai-whisper checkpoint or a
transformers folder (with its tokenizer and generation config), and load the former.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
from pathlib import Path

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.checkpoint import (
    MAX_INITIAL_TIMESTAMP_INDEX,
    Checkpoint,
    alignment_heads_problem,
    transformers_name,
)
from whisperbench.models.readers import read_checkpoint
from whisperbench.models.resolve import SourceModel

logger = logging.getLogger(__name__)

# Whisper's vocabulary: 1501 timestamp tokens <|0.00|> ... <|30.00|>, 0.02 s apart.
TIME_PRECISION = 0.02
N_TIMESTAMPS = 1501
OPENAI_WHISPER_FILE = "model.pt"  # the checkpoint's name inside its converted folder


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

    heads: list[tuple[int, int]] | None
    if isinstance(source, Checkpoint):
        dims, heads = source.dims, source.alignment_heads
        state_dict = {name: torch.from_numpy(array) for name, array in source.state_dict.items()}
    else:
        saved = torch.load(source, map_location="cpu", weights_only=True)
        dims, heads, state_dict = saved["dims"], saved.get("alignment_heads"), saved["model_state_dict"]
    problem = alignment_heads_problem(
        str(source.source_dir if isinstance(source, Checkpoint) else source), heads or [], dims
    )
    if problem is not None:  # transcription goes on with openai-whisper's default heads; word timing is refused
        logger.warning("%s; transcribing with openai-whisper's default heads", problem)
        heads = None
    model = Whisper(ModelDimensions(**dims))
    model.load_state_dict(state_dict)
    if heads:
        mask = np.zeros((dims["n_text_layer"], dims["n_text_head"]), dtype=bool)
        mask[tuple(np.array(heads).T)] = True
        model.set_alignment_heads(base64.b85encode(gzip.compress(mask.tobytes())))
    return model.eval()


# ---------------------------------------------------------------------------------- transformers


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
    try:
        added = json.loads(Path(path).read_text(encoding="utf-8")).get("added_tokens", [])
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: cannot read the tokenizer: {exc}") from exc
    added = sorted(added, key=lambda token: token["id"])
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
        # Whisper's own GenerationConfig fields (set as attributes, as transformers' conversion script does)
        # (setattr: GenerationConfig takes attributes its class does not declare)
        setattr(generation, "lang_to_id", dict(zip(tokenizer.convert_ids_to_tokens(lang_ids), lang_ids)))  # noqa: B010
        setattr(generation, "task_to_id", {"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]})  # noqa: B010
    generation._from_model_config = False
    return generation


# ------------------------------------------------------------------------- registered converters


def to_openai_whisper(source: SourceModel, out_dir: Path, variant: str) -> None:
    """The converter of its Format: ``source`` as openai-whisper's one ``.pt`` file into ``out_dir``."""
    write_openai_whisper(read_checkpoint(source), out_dir / OPENAI_WHISPER_FILE)


def to_transformers(source: SourceModel, out_dir: Path, variant: str) -> None:
    """The converter of its Format: ``source`` as a Hugging Face transformers folder into ``out_dir``."""
    write_transformers(read_checkpoint(source), out_dir)
