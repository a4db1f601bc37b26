"""The converter layer's one weights record: Whisper weights under openai-whisper's parameter names.

Every reader produces a :class:`Checkpoint`, every writer consumes one; ``state_dict`` may be lazy
(:class:`LazyStateDict`) so that a conversion holds one tensor at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

logger = logging.getLogger(__name__)

MULTILINGUAL_MIN_VOCAB = 51865


def is_multilingual(n_vocab: int) -> bool:
    """Decided by the vocabulary, never the name: English-only Whisper models have 51,864 tokens.

    >>> is_multilingual(51864), is_multilingual(51866)
    (False, True)
    """
    return n_vocab >= MULTILINGUAL_MIN_VOCAB


#: openai-whisper's max_initial_timestamp of 1.0 s, in 0.02 s timestamp steps
MAX_INITIAL_TIMESTAMP_INDEX = 50


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
    source_dir: str  # where the weights came from (named in messages)
    alignment_heads: list[tuple[int, int]]  # (decoder layer, head) pairs
    tokenizer_file: str = ""  # a tokenizer.json (BPE and special tokens; timestamps are added)
    #: suppress_ids, suppress_ids_begin, lang_ids as a CTranslate2 config.json holds them
    generation: dict = field(default_factory=dict)
    #: why the stored alignment heads were replaced by openai-whisper's default (None: they were usable)
    heads_problem: str | None = None

    def __post_init__(self) -> None:
        problem = alignment_heads_problem(self.source_dir, self.alignment_heads, self.dims)
        if problem is not None:  # e.g. a pruned fine-tune that kept its parent's generation config
            logger.warning("%s; transcribing with openai-whisper's default heads; word timing is refused", problem)
            self.heads_problem, self.alignment_heads = problem, default_alignment_heads(self.dims)

    @property
    def multilingual(self) -> bool:
        """Whether the vocabulary is the multilingual one (51,865 tokens and more)."""
        return is_multilingual(self.dims["n_vocab"])


def alignment_heads_problem(where: str, heads: list[tuple[int, int]], dims: dict) -> str | None:
    """What is wrong with alignment heads that name a decoder layer or head the model does not have (None: fine).

    >>> alignment_heads_problem("m", [(5, 0)], {"n_text_layer": 4, "n_text_head": 6})[:45]
    'm: alignment head (layer 5, head 0) does not '
    """
    for layer, head in heads:
        if not (0 <= layer < dims["n_text_layer"] and 0 <= head < dims["n_text_head"]):
            return (
                f"{where}: alignment head (layer {layer}, head {head}) does not exist in a model with "
                f"{dims['n_text_layer']} decoder layer(s) of {dims['n_text_head']} heads: the checkpoint's "
                "alignment_heads do not belong to these weights"
            )
    return None


def default_alignment_heads(dims: dict) -> list[tuple[int, int]]:
    """openai-whisper's default when a checkpoint names none: every head of the upper half of the decoder."""
    layers = dims["n_text_layer"]
    return [(layer, head) for layer in range(layers // 2, layers) for head in range(dims["n_text_head"])]


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


def openai_name(name: str) -> str:
    """The openai-whisper parameter name of a transformers one (inverse of ``convert.transformers_name``).

    >>> openai_name("model.decoder.layers.0.encoder_attn_layer_norm.weight")
    'decoder.blocks.0.cross_attn_ln.weight'
    >>> openai_name("model.encoder.embed_positions.weight")
    'encoder.positional_embedding'
    """
    name = name.removeprefix("model.")
    for old, new in reversed(HF_RENAMES):
        name = name.replace(new, old)
    return name
