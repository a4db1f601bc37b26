"""Whisper in the Apple Neural Engine layout, built from the stock openai-whisper model.

The layout follows Apple's "Deploying Transformers on the Apple Neural Engine" principles (as
applied by ml-ane-transformers, whisper_ane and WhisperKit), written here from those principles:

- activations are channels-first 4-D tensors ``(B, C, 1, S)``;
- every linear layer is a 1x1 ``Conv2d`` (the encoder's Conv1d stem becomes a ``(1, 3)`` Conv2d);
- layer norm normalizes over the channel axis (dim 1);
- attention is computed one head at a time (the channels split per head), with the softmax over
  the key axis, so no ``(B, H, S, S)`` reshape/transpose is needed.

The decoder is a single-token step with an explicit key/value cache, as WhisperKit's TextDecoder:
the caller owns fixed-size caches ``(1, n_text_state * n_text_layer, 1, n_text_ctx)``, passes a
one-hot ``kv_cache_update_mask`` for the current position and an additive
``decoder_key_padding_mask`` (0 for positions up to and including it, -1e4 beyond), and writes the
returned ``key_cache_updates`` / ``value_cache_updates`` into its caches at that position.
Unlike WhisperKit, the cross-attention keys and values are computed once per audio (by
:meth:`TextDecoderANE.cross_kv`, exported inside the encoder package) and passed to every step,
instead of being re-projected from the encoder output at every token.

Parameter names are openai-whisper's, so :func:`ane_state_dict` only reshapes the stock tensors.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

#: additive mask value for excluded keys (representable in float16, as ml-ane-transformers uses)
MASK_VALUE = -1e4

#: names of the step decoder's inputs and outputs, in call order (the Core ML packages use them too)
ENCODER_INPUTS = ("melspectrogram_features",)
ENCODER_OUTPUTS = ("encoder_output_embeds", "cross_key_cache", "cross_value_cache")
DECODER_INPUTS = (
    "input_ids",
    "cache_length",
    "key_cache",
    "value_cache",
    "kv_cache_update_mask",
    "decoder_key_padding_mask",
    "cross_key_cache",
    "cross_value_cache",
)
DECODER_OUTPUTS = ("logits", "key_cache_updates", "value_cache_updates")


def _torch():
    import torch

    return torch


def whisper_ane_class():
    """The ``WhisperANE`` module class (imports torch)."""
    from .ane_modules import WhisperANE

    return WhisperANE


def ane_state_dict(stock_state_dict: dict) -> dict:
    """Stock openai-whisper torch tensors reshaped to the ANE layout (same names, same values).

    Linear weights ``(out, in)`` -> ``(out, in, 1, 1)``; the encoder's Conv1d weights ``(out, in, 3)``
    -> ``(out, in, 1, 3)``; the encoder's positional embedding ``(n_ctx, C)`` -> ``(1, C, 1, n_ctx)``.
    Everything else (biases, layer norms, embeddings) is unchanged.
    """
    converted = {}
    for name, tensor in stock_state_dict.items():
        if name == "encoder.positional_embedding":
            tensor = tensor.T[None, :, None, :]
        elif name in ("encoder.conv1.weight", "encoder.conv2.weight"):
            tensor = tensor[:, :, None, :]
        elif name.endswith(".weight") and tensor.ndim == 2 and not name.startswith("decoder.token_embedding"):
            tensor = tensor[:, :, None, None]
        converted[name] = tensor.contiguous()
    return converted


def from_stock(stock) -> Any:
    """A float32 ``WhisperANE`` in eval mode holding the weights of an openai-whisper ``Whisper``."""
    dims = dataclasses.asdict(stock.dims)  # whisper.model.ModelDimensions
    model = whisper_ane_class()(dims)
    model.load_state_dict(ane_state_dict(stock.state_dict()), strict=True)
    return model.float().eval()


def load_ane_model(model_name: str):
    """The ANE-layout model of a model name (through the cached openai-whisper conversion)."""
    from .convert import load_openai_whisper
    from .resolve import converted

    return from_stock(load_openai_whisper(converted(model_name, "openai-whisper")))


class TorchStepModel:
    """The ANE-layout model behind the named-array interface of the Core ML packages.

    ``encode`` and ``decode`` take and return dicts of numpy arrays named as in
    :data:`ENCODER_INPUTS` / :data:`DECODER_INPUTS`, so :mod:`whisperbench.models.greedy` drives
    this model and the Core ML packages through the same code.
    """

    def __init__(self, model, dtype: str = "float32", device: str = "cpu"):
        torch = _torch()
        self.torch = torch
        self.dtype = getattr(torch, dtype)
        self.device = device
        self.model = model.to(device=device, dtype=self.dtype).eval()
        self.dims = model.dims
        self.float_dtype = np.float32 if dtype == "float32" else np.float16

    def _tensor(self, array: np.ndarray):
        tensor = self.torch.from_numpy(np.ascontiguousarray(array)).to(self.device)
        return tensor.to(self.dtype) if tensor.is_floating_point() else tensor

    def encode(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the encoder on its inputs (the mel) and return its outputs by name."""
        with self.torch.inference_mode():
            features = self.model.encoder(self._tensor(inputs["melspectrogram_features"]))
            outputs = (features, *self.model.decoder.cross_kv(features))
        return {name: out.cpu().numpy() for name, out in zip(ENCODER_OUTPUTS, outputs)}

    def decode(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one decoder step on its inputs (tokens, caches, encoder output) and return its outputs by name."""
        with self.torch.inference_mode():
            outputs = self.model.decoder(*(self._tensor(inputs[name]) for name in DECODER_INPUTS))
        return {name: out.cpu().numpy() for name, out in zip(DECODER_OUTPUTS, outputs)}
