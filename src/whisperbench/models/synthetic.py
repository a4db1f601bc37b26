"""Random-weight Whisper checkpoints of any architecture, for tests and benchmarks of conversions.

Any dimensions (128 mels, a 51,866-token vocabulary, fewer decoder than encoder layers) at any width;
written with :func:`whisperbench.models.convert.write_transformers` they are what a user's
transformers checkpoint looks like, without downloading one.
"""

from __future__ import annotations

import numpy as np
from whisper.model import sinusoids

from whisperbench.models.checkpoint import Checkpoint, default_alignment_heads
from whisperbench.models.readers import expected_names, with_vocabulary


def random_checkpoint(dims: dict, seed: int = 0) -> Checkpoint:
    """Random Whisper weights in openai-whisper names; a large token embedding gives clear logit margins,
    so every implementation's greedy choice is the same token despite float summation order."""
    rng = np.random.default_rng(seed)
    shapes = _synthetic_shapes(dims)
    state = {}
    for name in sorted(expected_names(dims)):
        # the audio reaches the text through a weak cross-attention: greedy tokens then do not flip on the
        # 1e-7 differences between the implementations' log-mel paddings (real models have wide margins there)
        scale = {"decoder.token_embedding.weight": 1.0}.get(name, 0.002 if "cross_attn.out.weight" in name else 0.05)
        array = rng.normal(0, scale, shapes(name)).astype(np.float32)
        if name.endswith("_ln.weight") or name.endswith("ln_post.weight") or name == "decoder.ln.weight":
            array = np.ones_like(array)
        state[name] = array
    # special and timestamp tokens (from end-of-text, 50257, on) get zero logits: the random model writes text
    state["decoder.token_embedding.weight"][50257:] = 0.0
    state["encoder.positional_embedding"] = sinusoids(dims["n_audio_ctx"], dims["n_audio_state"]).numpy()
    return with_vocabulary(
        Checkpoint(dims=dims, state_dict=state, source_dir="synthetic", alignment_heads=default_alignment_heads(dims))
    )


def _synthetic_shapes(dims):
    width, mels = dims["n_audio_state"], dims["n_mels"]

    def shape(name: str) -> tuple[int, ...]:
        if name == "encoder.conv1.weight":
            return (width, mels, 3)
        if name == "encoder.conv2.weight":
            return (width, width, 3)
        if name == "encoder.positional_embedding":
            return (dims["n_audio_ctx"], width)
        if name == "decoder.positional_embedding":
            return (dims["n_text_ctx"], width)
        if name == "decoder.token_embedding.weight":
            return (dims["n_vocab"], width)
        if name.endswith("mlp.0.weight"):
            return (4 * width, width)
        if name.endswith("mlp.0.bias"):
            return (4 * width,)
        if name.endswith("mlp.2.weight"):
            return (width, 4 * width)
        return (width, width) if name.endswith(".weight") and ("attn." in name) else (width,)

    return shape
