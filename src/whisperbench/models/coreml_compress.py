"""Compressed Core ML variants (``coremltools.optimize.coreml``) and their weights read back on any OS.

Variants of the float16 export (:mod:`.coreml`), each written as the two ``.mlpackage`` files that
macOS runs through the ``coreml`` adapter:

- ``pal8``, ``pal6``, ``pal4``, ``pal2``: palettization, k-means per tensor (one lookup table of 2^n
  float16 values per weight), ``constexpr_lut_to_dense`` in the program (macOS 13 / iOS 16);
- ``pal8g16``, ``pal6g16``, ``pal4g16``, ``pal4g32``: palettization, k-means per grouped channel: one
  table of 2^n values for every 16 (32) consecutive output channels (axis 0) of a weight, the iOS 18
  ``constexpr_lut_to_dense``; made from the float16 export at a macOS 15 / iOS 18 target, which
  coremltools requires for it. A weight whose output channels the group size does not divide takes
  the greatest common divisor as its group (tiny's 51864-token embedding and the output bias: 8 rows),
  and the encoder's positional embedding, (1, C, 1, T) in the ANE layout, is grouped along its channels
  (axis 1); coreml.json lists these exceptions;
- ``lin8``: linear 8-bit weight quantization, symmetric, per output channel (``constexpr_affine_dequantize``).

Weights of fewer than ``WEIGHT_THRESHOLD`` values (biases, layer norms) stay float16, as coremltools
leaves them. On Linux no Core ML runs, so :func:`compressed_state_dict` reads each package's program and
rebuilds every weight the way Core ML expands it: a palettized tensor as ``lut[indices]`` (iOS 16:
indices unpacked from their n-bit words, least significant bits first, one table; iOS 18: each index
looked up in the table of its block, :func:`lut_to_dense`), a quantized one as
``(q - zero_point) * scale``, every other weight as its stored float16 constant. :func:`check_decompression`
compares that reconstruction, tensor by tensor, with coremltools' own decompression of the same
program. The ANE-layout PyTorch model (``ane-pytorch -o compression=pal4``) then runs with exactly
those values, so the QoI of a compression is known before anyone opens Xcode (computed in float32: the
rounding of Core ML's float16 activations is not part of it).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from whisperbench.errors import ModelError

WEIGHT_THRESHOLD = 2048


class Compression(NamedTuple):
    """One Core ML weight-compression variant: its name and how coremltools' optimize API applies it."""

    kind: str  # "palettize" or "linear"
    bits: int
    group_size: int = 0  # output channels per lookup table (per_grouped_channel); 0: per tensor / per channel

    @property
    def granularity(self) -> str:
        """Per tensor or grouped (``pal4g16``: groups of 16 channels), as run.json records it."""
        if self.group_size:
            return "per_grouped_channel"
        return "per_tensor" if self.kind == "palettize" else "per_channel"

    @property
    def target(self) -> str:
        """The deployment target the compression needs (grouped palettization: iOS 18 / macOS 15)."""
        return "iOS18" if self.group_size else "iOS16"


COMPRESSIONS = {
    "pal8": Compression("palettize", 8),
    "pal6": Compression("palettize", 6),
    "pal4": Compression("palettize", 4),
    "pal2": Compression("palettize", 2),
    "pal8g16": Compression("palettize", 8, 16),
    "pal6g16": Compression("palettize", 6, 16),
    "pal4g16": Compression("palettize", 4, 16),
    "pal4g32": Compression("palettize", 4, 32),
    "lin8": Compression("linear", 8),
}
PACKAGES = ("encoder.mlpackage", "decoder.mlpackage")
_COMPRESSED_OPS = ("constexpr_lut_to_dense", "constexpr_affine_dequantize")
_SUFFIXES = ("_palettized", "_quantized")


def _grouped_sizes(package: Path, group_size: int) -> dict[str, tuple[int, int]]:
    """Constants (op name -> (channel axis, group)) that cannot take ``group_size`` channels of axis 0 per table:
    axis 1 where axis 0 has one entry (the encoder's positional embedding, (1, C, 1, T) in the ANE layout),
    and the greatest common divisor where the group size does not divide the channels (51864 tokens: 8)."""
    sizes = {}
    for op in load_program(package).functions["main"].operations:
        value = op.outputs[0].val if op.op_type == "const" else None
        if not isinstance(value, np.ndarray) or value.size < WEIGHT_THRESHOLD:
            continue
        axis = 1 if value.shape[0] == 1 and value.ndim > 1 else 0
        if axis or value.shape[0] % group_size:
            sizes[op.name] = (axis, math.gcd(value.shape[axis], group_size))
    return sizes


def _config(variant: str, reduced: dict[str, tuple[int, int]] | None = None):
    """coremltools' configuration of ``variant``; ``reduced``: :func:`_grouped_sizes` of the package."""
    import coremltools.optimize.coreml as cto

    spec = COMPRESSIONS[variant]
    if spec.kind == "linear":
        return cto.OptimizationConfig(
            global_config=cto.OpLinearQuantizerConfig(
                mode="linear_symmetric", dtype="int8", granularity="per_channel", weight_threshold=WEIGHT_THRESHOLD
            )
        )
    if not spec.group_size:
        return cto.OptimizationConfig(
            global_config=cto.OpPalettizerConfig(
                mode="kmeans", nbits=spec.bits, granularity="per_tensor", weight_threshold=WEIGHT_THRESHOLD
            )
        )

    def grouped(axis: int, size: int):
        return cto.OpPalettizerConfig(
            mode="kmeans",
            nbits=spec.bits,
            granularity="per_grouped_channel",
            group_size=size,
            channel_axis=axis,
            weight_threshold=WEIGHT_THRESHOLD,
        )

    return cto.OptimizationConfig(
        global_config=grouped(0, spec.group_size),
        op_name_configs={name: grouped(*size) for name, size in (reduced or {}).items()},
    )


def compress_export(float16_folder: Path, out_dir: Path, variant: str) -> dict:
    """Write ``variant`` of the float16 export in ``float16_folder`` to ``out_dir``; returns its coreml.json."""
    import coremltools as ct
    import coremltools.optimize.coreml as cto

    if variant not in COMPRESSIONS:
        raise ModelError(f"coreml: unknown compression {variant!r} (known: {', '.join(COMPRESSIONS)})")
    info = json.loads((float16_folder / "coreml.json").read_text(encoding="utf-8"))
    if info.get("precision") != "float16":
        raise ModelError(f"{float16_folder}: compression starts from a float16 export, not {info.get('precision')}")
    spec = COMPRESSIONS[variant]
    if spec.target == "iOS18" and not str(info.get("deployment_target", "")).endswith("iOS18"):
        raise ModelError(
            f"{float16_folder}: {variant} needs an iOS 18 / macOS 15 export, this one targets "
            f"{info.get('deployment_target')}"
        )
    compress = cto.palettize_weights if spec.kind == "palettize" else cto.linear_quantize_weights
    reduced = {}
    for package in PACKAGES:
        model = ct.models.MLModel(str(float16_folder / package), skip_model_load=True)
        reduced[package] = _grouped_sizes(float16_folder / package, spec.group_size) if spec.group_size else {}
        compressed = compress(model, _config(variant, reduced[package]))
        compressed.short_description = f"{model.short_description}, {variant}"
        compressed.save(str(out_dir / package))
    info |= {
        "compression": {
            "variant": variant,
            "kind": spec.kind,
            "bits": spec.bits,
            "granularity": spec.granularity,
            "weight_threshold": WEIGHT_THRESHOLD,
            "coremltools": ct.__version__,
        }
    }
    if spec.group_size:
        info["compression"] |= {
            "group_size": spec.group_size,
            "channel_axis": 0,
            "exceptions": {
                package: {name: {"channel_axis": axis, "group_size": size} for name, (axis, size) in names.items()}
                for package, names in reduced.items()
            },
        }
    (out_dir / "coreml.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def load_program(package: str | Path):
    """The MIL program of a saved ``.mlpackage`` (weights read from its weight file); needs no Core ML runtime."""
    import coremltools as ct
    from coremltools.converters.mil.frontend.milproto.load import load as milproto_load

    spec = ct.utils.load_spec(str(package))
    weights = Path(package) / "Data" / "com.apple.CoreML" / "weights"
    return milproto_load(spec, spec.specificationVersion, str(weights))


def unpack_indices(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """n-bit indices from their packed bytes, least significant bits first (as Core ML stores them).

    >>> unpack_indices(np.array([0b11100100], np.uint8), 2, 4).tolist()
    [0, 1, 2, 3]
    """
    flat = np.unpackbits(np.asarray(packed, dtype=np.uint8), bitorder="little")[: count * bits]
    return (flat.reshape(count, bits) * (1 << np.arange(bits))).sum(axis=1)


def lut_to_dense(indices: np.ndarray, lut: np.ndarray, vector_axis: int | None = None) -> np.ndarray:
    """The iOS 18 ``constexpr_lut_to_dense``: every index looked up in the table of its block.

    ``lut`` has shape ``[B_0, …, B_{k-1}, 2^n, V]`` for k-dimensional ``indices``: along axis ``a``, the
    ``B_a`` tables each cover ``indices.shape[a] // B_a`` consecutive positions (per-grouped-channel
    palettization: ``B_0`` groups of output channels, 1 elsewhere). ``V > 1`` (vector palettization):
    each index stands for ``V`` consecutive values along ``vector_axis``.

    >>> lut = np.array([1., 5., 9., 13., 2., 10., 18., 26.]).reshape(2, 1, 4, 1)
    >>> lut_to_dense(np.array([[2, 3], [3, 0], [1, 0], [3, 0], [2, 1], [0, 3]]), lut).T.tolist()
    [[9.0, 13.0, 5.0, 26.0, 18.0, 2.0], [13.0, 1.0, 1.0, 2.0, 10.0, 26.0]]
    """
    rank = indices.ndim
    blocks = tuple(
        np.arange(n).reshape([n if b == a else 1 for b in range(rank)]) // (n // lut.shape[a])
        for a, n in enumerate(indices.shape)
    )
    values = lut[blocks + (indices.astype(np.intp),)]  # indices.shape + (V,)
    if lut.shape[-1] == 1:
        return values[..., 0]
    assert vector_axis is not None, "vector palettization (V > 1) names its vector_axis"
    axis = int(vector_axis) % rank
    shape = list(indices.shape)
    shape[axis] *= lut.shape[-1]
    return np.moveaxis(values, -1, axis + 1).reshape(shape)


def _expand(op: Any) -> np.ndarray:
    """The dense float16 tensor of a compressed constant, computed from the op's own inputs."""
    if op.op_type == "constexpr_lut_to_dense" and "shape" in op.inputs:  # iOS 16: one table, packed indices
        lut, shape = op.lut.val, tuple(int(n) for n in op.shape.val)
        bits = int(np.log2(lut.shape[-1]))
        return lut[unpack_indices(op.indices.val, bits, int(np.prod(shape)))].reshape(shape)
    if op.op_type == "constexpr_lut_to_dense":  # iOS 18: a table per block, indices already n-bit integers
        return lut_to_dense(op.indices.val, op.lut.val, None if op.vector_axis is None else op.vector_axis.val)
    axis, data = int(op.axis.val), op.quantized_data.val
    along = [1] * data.ndim  # a scale/zero point per position along ``axis``
    along[axis] = -1
    scale = np.asarray(op.scale.val, np.float32).reshape(along if np.ndim(op.scale.val) else [])
    zero = np.asarray(op.zero_point.val, np.float32).reshape(along if np.ndim(op.zero_point.val) else [])
    return ((data.astype(np.float32) - zero) * scale).astype(np.float16)


def _stored_name(op) -> str:
    """A constant's name as the float16 export wrote it (the compression's suffix removed)."""
    name = op.outputs[0].name
    for suffix in _SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def _dense_constants(operations) -> dict[str, np.ndarray]:
    return {
        _stored_name(op): op.outputs[0].val
        for op in operations
        if op.op_type == "const" and isinstance(op.outputs[0].val, np.ndarray)
    }


class Package(NamedTuple):
    """One package read once: every stored weight by name (compressed ones expanded), and the compressed ops
    (for their names, and for coremltools' own expansion of each in :func:`check_decompression`)."""

    weights: dict[str, np.ndarray]
    compressed: list[Any]


def read_package(package: Path) -> Package:
    """Read an ``.mlpackage``'s weights and their compression as this module writes them."""
    operations = load_program(package).functions["main"].operations
    weights = _dense_constants(operations)
    compressed = [op for op in operations if op.op_type in _COMPRESSED_OPS]
    weights.update({_stored_name(op): _expand(op) for op in compressed})
    return Package(weights, compressed)


def read_export(folder: Path) -> dict[str, Package]:
    """Both packages of an export, each read once (for :func:`compressed_state_dict` and
    :func:`check_decompression`)."""
    return {package: read_package(folder / package) for package in PACKAGES}


def program_weights(package: Path) -> dict[str, np.ndarray]:
    """Every stored weight of a package by its constant's name (compression suffix removed), expanded."""
    return read_package(package).weights


def _compressed_names(package: Path) -> list[tuple[str, str]]:
    return [(op.op_type, _stored_name(op)) for op in read_package(package).compressed]


def _constant_name(key: str, package: str) -> str:
    """The constant a state-dict tensor becomes (the decoder package is traced from the decoder alone)."""
    traced = key.removeprefix("decoder.") if package == "decoder.mlpackage" else key
    return traced.replace(".", "_") + "_to_fp16"


def compressed_state_dict(
    folder: Path, reference: dict, programs: dict[str, Package] | None = None
) -> tuple[dict, dict]:
    """The ANE state dict as a (compressed) export holds it: (state dict, facts).

    ``reference``: the float32 ANE state dict of the same model, for the names and shapes, and for the
    small tensors the converter folds into other constants (layer norms: never compressed, so taken
    rounded to float16). Every compressed constant must land on a tensor, else ModelError. ``programs``:
    :func:`read_export` of ``folder``, when the caller has read it already.
    """
    import torch

    programs = programs or read_export(folder)
    state, used, from_program = {}, set(), 0
    for key, tensor in reference.items():
        found = [(p, _constant_name(key, p)) for p in PACKAGES if _constant_name(key, p) in programs[p].weights]
        if found:
            package, name = found[0]
            value = programs[package].weights[name]
            used.add((package, name))
            from_program += 1
        else:
            value = tensor.numpy().astype(np.float16)
        if tuple(value.shape) != tuple(tensor.shape):
            raise ModelError(f"{folder}: {key} is stored with shape {value.shape}, the model has {tuple(tensor.shape)}")
        state[key] = torch.from_numpy(np.asarray(value, dtype=np.float32).copy())
    compressed = {(p, _stored_name(op)) for p in PACKAGES for op in programs[p].compressed}
    unmatched = sorted(n for p, n in compressed - used)
    if unmatched:
        raise ModelError(f"{folder}: compressed constants that match no model tensor: {', '.join(unmatched[:5])}")
    return state, {
        "tensors_from_program": from_program,
        "compressed_tensors": len(compressed),
        "tensors_total": len(reference),
    }


#: elements of one slice of an iOS 18 table expansion in coremltools (which repeats each table to every weight)
_SLICE_ELEMENTS = 1 << 24


def coremltools_dense(op: Any) -> np.ndarray:
    """coremltools' own value of a compressed constant: the op's ``materialized_val_inference``, which is
    what ``decompress_weights`` writes. The iOS 18 table lookup (``coremltools.optimize._utils.lut_to_dense``,
    which copies the table for every weight: 10 GB for an 8-bit 51864 x 384 embedding) is applied to slices
    of whole groups of output channels, so it fits in memory."""
    from coremltools.optimize import _utils

    if op.op_type != "constexpr_lut_to_dense" or "shape" in op.inputs:
        return op.materialized_val_inference()
    indices, lut = op.indices.val, op.lut.val
    vector_axis = None if op.vector_axis is None else op.vector_axis.val
    rows = indices.shape[0] // lut.shape[0]  # positions along axis 0 that one table covers
    step = max(1, _SLICE_ELEMENTS // (indices[:rows].size * lut.shape[-2] * lut.shape[-1]))
    return np.concatenate(
        [
            _utils.lut_to_dense(indices[g * rows : (g + step) * rows], lut[g : g + step], vector_axis)
            for g in range(0, lut.shape[0], step)
        ]
    )


def check_decompression(folder: Path, programs: dict[str, Package] | None = None) -> int:
    """Compare :func:`program_weights` with coremltools' own decompression (:func:`coremltools_dense`) of every
    compressed constant; returns how many were compared, raises ModelError on the first difference."""
    programs = programs or read_export(folder)
    compared = 0
    for package in PACKAGES:
        ours, ops = programs[package]  # the ops read once: our expansion and coremltools' of the same constants
        for op in ops:
            if not np.array_equal(ours[_stored_name(op)], coremltools_dense(op)):
                raise ModelError(
                    f"{folder / package}: {_stored_name(op)} expands differently from coremltools' decompression"
                )
            compared += 1
    return compared
