"""Convert the source checkpoint to an mlx-whisper model folder (config.json + weights.safetensors).

mlx-whisper's layout differs from openai-whisper's in three ways: the MLP linears are ``mlp1`` /
``mlp2`` (not ``mlp.0`` / ``mlp.2``), Conv1d weights are (out, kernel, in) instead of (out, in,
kernel), and the encoder's sinusoidal positional embedding is computed at load, not stored. The
checkpoint's alignment heads (for word timestamps) are stored as the ``alignment_heads`` array.

Variants: ``float16`` (also ``""``) and ``float32`` keep every weight; ``q4`` / ``q8`` quantize
the linear and embedding layers with ``mlx.nn.quantize`` (affine, groups of 64) on top of float16,
``q4-float32`` / ``q8-float32`` on top of float32. mlx-whisper reads ``"quantization"`` from
config.json and quantizes exactly the layers whose ``<layer>.scales`` the weights file holds.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.convert import Checkpoint, read_checkpoint
from whisperbench.models.registry import SourceModel, converter

DTYPES = ("float16", "float32")
QUANTIZATIONS = {"": None, "q4": 4, "q8": 8}
GROUP_SIZE = 64
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "weights.safetensors"


def variant_name(dtype: str, quantization: str) -> str:
    """The one cache variant for a dtype and a quantization: ``float16``, ``float32``, ``q4``, ``q8-float32`` …"""
    if dtype not in DTYPES:
        raise ModelError(f"mlx: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    if quantization not in QUANTIZATIONS:
        raise ModelError(f"mlx: quantization {quantization!r} is not one of {', '.join(q or '(none)' for q in QUANTIZATIONS)}")
    if not quantization:
        return dtype
    return quantization if dtype == "float16" else f"{quantization}-{dtype}"


def parse_variant(variant: str) -> tuple[str, str]:
    """``(dtype, quantization)`` of a variant name (inverse of :func:`variant_name`; ``""`` is float16)."""
    quantization, _, dtype = variant.partition("-") if variant.startswith("q") else ("", "", variant)
    dtype = dtype or "float16"
    if dtype not in DTYPES or quantization not in QUANTIZATIONS:
        raise ModelError(f"mlx: unknown variant {variant!r} (float16, float32, q4, q8, q4-float32, q8-float32)")
    return dtype, quantization


def mlx_state_dict(ckpt: Checkpoint) -> dict[str, np.ndarray]:
    """The checkpoint's float32 arrays under mlx-whisper's names and layouts."""
    weights = {}
    for name, array in ckpt.state_dict.items():
        if name == "encoder.positional_embedding":
            continue  # mlx-whisper computes the sinusoids itself
        if name in ("encoder.conv1.weight", "encoder.conv2.weight"):
            array = np.ascontiguousarray(array.swapaxes(1, 2))
        weights[name.replace(".mlp.0.", ".mlp1.").replace(".mlp.2.", ".mlp2.")] = array
    return weights


def write_mlx(ckpt: Checkpoint, out_dir: str | Path, variant: str = "") -> None:
    """Write a folder that ``mlx_whisper.load_models.load_model(out_dir)`` loads."""
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten, tree_unflatten
    from mlx_whisper.whisper import ModelDimensions, Whisper

    dtype, quantization = parse_variant(variant)
    config = {"model_type": "whisper", **ckpt.dims}
    model = Whisper(ModelDimensions(**ckpt.dims), getattr(mx, dtype))
    weights = {name: mx.array(array).astype(getattr(mx, dtype)) for name, array in mlx_state_dict(ckpt).items()}
    model.update(tree_unflatten(list(weights.items())), strict=True)
    model.alignment_heads = mx.array(np.array(ckpt.alignment_heads, dtype=np.int64))  # a parameter: saved, loaded
    if quantization:
        bits = QUANTIZATIONS[quantization]
        nn.quantize(model, GROUP_SIZE, bits,
                    class_predicate=lambda _, m: isinstance(m, (nn.Linear, nn.Embedding))
                    and m.weight.shape[-1] % GROUP_SIZE == 0)
        config["quantization"] = {"group_size": GROUP_SIZE, "bits": bits}
    out_dir = Path(out_dir)
    mx.save_safetensors(str(out_dir / WEIGHTS_FILE), dict(tree_flatten(model.parameters())),
                        metadata={"format": "mlx"})
    (out_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


@converter("mlx")
def _to_mlx(source: SourceModel, out_dir: Path, variant: str) -> None:
    write_mlx(read_checkpoint(source), out_dir, variant)
