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

import itertools
import json
import shutil
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.convert import Checkpoint, read_checkpoint
from whisperbench.models.resolve import SourceModel

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
        raise ModelError(
            f"mlx: quantization {quantization!r} is not one of {', '.join(q or '(none)' for q in QUANTIZATIONS)}"
        )
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


def _mlx_items(ckpt: Checkpoint) -> Iterator[tuple[str, np.ndarray]]:
    """The checkpoint's float32 arrays under mlx-whisper's names and layouts, one at a time."""
    for name in ckpt.state_dict:
        if name == "encoder.positional_embedding":
            continue  # mlx-whisper computes the sinusoids itself
        array = ckpt.state_dict[name]
        if name in ("encoder.conv1.weight", "encoder.conv2.weight"):
            array = np.ascontiguousarray(array.swapaxes(1, 2))
        yield name.replace(".mlp.0.", ".mlp1.").replace(".mlp.2.", ".mlp2."), array


def mlx_state_dict(ckpt: Checkpoint) -> dict[str, np.ndarray]:
    """The checkpoint's float32 arrays under mlx-whisper's names and layouts."""
    return dict(_mlx_items(ckpt))


def write_safetensors(path: Path, arrays: Iterable[tuple[str, np.ndarray]], metadata: dict[str, str]) -> None:
    """A safetensors file written tensor by tensor: data to a side file first (offsets recorded), then the
    header and the data copied behind it, so only one tensor is in memory at a time."""
    kinds = {np.dtype("float16"): "F16", np.dtype("float32"): "F32", np.dtype("int64"): "I64"}
    header: dict = {"__metadata__": metadata}
    data_path = path.with_suffix(".data.tmp")
    with open(data_path, "wb") as data:
        for name, array in arrays:
            start = data.tell()
            data.write(np.ascontiguousarray(array).tobytes())
            header[name] = {
                "dtype": kinds[array.dtype],
                "shape": list(array.shape),
                "data_offsets": [start, data.tell()],
            }
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as out, open(data_path, "rb") as data:
        out.write(struct.pack("<Q", len(encoded)) + encoded)
        shutil.copyfileobj(data, out, 1 << 22)
    data_path.unlink()


def write_mlx(ckpt: Checkpoint, out_dir: str | Path, variant: str = "") -> None:
    """Write a folder that ``mlx_whisper.load_models.load_model(out_dir)`` loads.

    Unquantized variants are streamed tensor by tensor (mlx-whisper's names and layouts, cast to the
    dtype); quantized ones go through mlx-whisper's model and ``mlx.nn.quantize``.
    """
    dtype, quantization = parse_variant(variant)
    if not quantization:
        out_dir = Path(out_dir)
        arrays = ((name, array.astype(dtype)) for name, array in _mlx_items(ckpt))
        heads = [("alignment_heads", np.array(ckpt.alignment_heads, dtype=np.int64))]
        write_safetensors(out_dir / WEIGHTS_FILE, itertools.chain(arrays, heads), {"format": "mlx"})
        config = {"model_type": "whisper", **ckpt.dims}
        (out_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        return
    _write_mlx_quantized(ckpt, out_dir, dtype, quantization)


def _write_mlx_quantized(ckpt: Checkpoint, out_dir: str | Path, dtype: str, quantization: str) -> None:
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten, tree_unflatten
    from mlx_whisper.whisper import ModelDimensions, Whisper

    config = {"model_type": "whisper", **ckpt.dims}
    model = Whisper(ModelDimensions(**ckpt.dims), getattr(mx, dtype))
    weights = {name: mx.array(array).astype(getattr(mx, dtype)) for name, array in mlx_state_dict(ckpt).items()}
    model.update(tree_unflatten(list(weights.items())), strict=True)
    model.alignment_heads = mx.array(np.array(ckpt.alignment_heads, dtype=np.int64))  # a parameter: saved, loaded
    if quantization:
        bits = QUANTIZATIONS[quantization]
        assert bits is not None  # "" (no quantization) is falsy
        nn.quantize(
            model,
            GROUP_SIZE,
            bits,
            class_predicate=lambda _, m: (
                isinstance(m, (nn.Linear, nn.Embedding)) and m.weight.shape[-1] % GROUP_SIZE == 0
            ),
        )
        config["quantization"] = {"group_size": GROUP_SIZE, "bits": bits}
    out_dir = Path(out_dir)
    mx.save_safetensors(str(out_dir / WEIGHTS_FILE), dict(tree_flatten(model.parameters())), metadata={"format": "mlx"})
    (out_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def to_mlx(source: SourceModel, out_dir: Path, variant: str) -> None:
    """The converter of its Format: ``source`` as an MLX folder (``variant``: its dtype or quantization)
    into ``out_dir``."""
    write_mlx(read_checkpoint(source), out_dir, variant)
