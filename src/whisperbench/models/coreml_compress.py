"""Compressed Core ML variants (``coremltools.optimize.coreml``) and their weights read back on any OS.

Variants of the float16 export (:mod:`.coreml`), each written as the two ``.mlpackage`` files that
macOS runs through the ``coreml`` adapter:

- ``pal8``, ``pal6``, ``pal4``, ``pal2``: palettization, k-means per tensor (one lookup table of 2^n
  float16 values per weight), ``constexpr_lut_to_dense`` in the program (macOS 13 / iOS 16);
- ``lin8``: linear 8-bit weight quantization, symmetric, per output channel (``constexpr_affine_dequantize``).

Weights of fewer than ``WEIGHT_THRESHOLD`` values (biases, layer norms) stay float16, as coremltools
leaves them. On Linux no Core ML runs, so :func:`compressed_state_dict` reads each package's program and
rebuilds every weight the way Core ML expands it: a palettized tensor as ``lut[indices]`` (indices
unpacked from their n-bit words, least significant bits first), a quantized one as
``(q - zero_point) * scale``, every other weight as its stored float16 constant. :func:`check_decompression`
compares that reconstruction, tensor by tensor, with coremltools' own ``decompress_weights`` of the same
program. The ANE-layout PyTorch model (``ane-pytorch -o compression=pal4``) then runs with exactly
those values, so the QoI of a compression is known before anyone opens Xcode (computed in float32: the
rounding of Core ML's float16 activations is not part of it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import numpy as np

from whisperbench.errors import ModelError

WEIGHT_THRESHOLD = 2048
#: variant -> (kind, bits)
COMPRESSIONS = {"pal8": ("palettize", 8), "pal6": ("palettize", 6), "pal4": ("palettize", 4),
                "pal2": ("palettize", 2), "lin8": ("linear", 8)}
PACKAGES = ("encoder.mlpackage", "decoder.mlpackage")
_COMPRESSED_OPS = ("constexpr_lut_to_dense", "constexpr_affine_dequantize")
_SUFFIXES = ("_palettized", "_quantized")


def _config(variant: str):
    import coremltools.optimize.coreml as cto

    kind, bits = COMPRESSIONS[variant]
    if kind == "palettize":
        op = cto.OpPalettizerConfig(mode="kmeans", nbits=bits, granularity="per_tensor",
                                    weight_threshold=WEIGHT_THRESHOLD)
    else:
        op = cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8", granularity="per_channel",
                                         weight_threshold=WEIGHT_THRESHOLD)
    return cto.OptimizationConfig(global_config=op)


def compress_export(float16_folder: Path, out_dir: Path, variant: str) -> dict:
    """Write ``variant`` of the float16 export in ``float16_folder`` to ``out_dir``; returns its coreml.json."""
    import coremltools as ct
    import coremltools.optimize.coreml as cto

    if variant not in COMPRESSIONS:
        raise ModelError(f"coreml: unknown compression {variant!r} (known: {', '.join(COMPRESSIONS)})")
    info = json.loads((float16_folder / "coreml.json").read_text(encoding="utf-8"))
    if info.get("precision") != "float16":
        raise ModelError(f"{float16_folder}: compression starts from a float16 export, not {info.get('precision')}")
    kind, bits = COMPRESSIONS[variant]
    compress = cto.palettize_weights if kind == "palettize" else cto.linear_quantize_weights
    for package in PACKAGES:
        model = ct.models.MLModel(str(float16_folder / package), skip_model_load=True)
        compressed = compress(model, _config(variant))
        compressed.short_description = f"{model.short_description}, {variant}"
        compressed.save(str(out_dir / package))
    info |= {"compression": {"variant": variant, "kind": kind, "bits": bits, "weight_threshold": WEIGHT_THRESHOLD,
                             "coremltools": ct.__version__}}
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


def _expand(op: Any) -> np.ndarray:
    """The dense float16 tensor of a compressed constant, computed from the op's own inputs."""
    if op.op_type == "constexpr_lut_to_dense":
        lut, shape = op.lut.val, tuple(int(n) for n in op.shape.val)
        bits = int(np.log2(lut.shape[-1]))
        return lut[unpack_indices(op.indices.val, bits, int(np.prod(shape)))].reshape(shape)
    axis, data = int(op.axis.val), op.quantized_data.val
    shape = [1] * data.ndim
    shape[axis] = -1
    scale = np.asarray(op.scale.val, np.float32).reshape(shape if np.ndim(op.scale.val) else [])
    zero = np.asarray(op.zero_point.val, np.float32).reshape(shape if np.ndim(op.zero_point.val) else [])
    return ((data.astype(np.float32) - zero) * scale).astype(np.float16)


def _stored_name(op) -> str:
    """A constant's name as the float16 export wrote it (the compression's suffix removed)."""
    name = op.outputs[0].name
    for suffix in _SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def _dense_constants(operations) -> dict[str, np.ndarray]:
    return {_stored_name(op): op.outputs[0].val for op in operations
            if op.op_type == "const" and isinstance(op.outputs[0].val, np.ndarray)}


#: one package read once: every stored weight by name (compressed ones expanded), and the compressed ones' names
Package = tuple[dict[str, np.ndarray], list[tuple[str, str]]]


def read_package(package: Path) -> Package:
    operations = load_program(package).functions["main"].operations
    weights = _dense_constants(operations)
    compressed = [(op.op_type, _stored_name(op)) for op in operations if op.op_type in _COMPRESSED_OPS]
    weights.update({_stored_name(op): _expand(op) for op in operations if op.op_type in _COMPRESSED_OPS})
    return weights, compressed


def read_export(folder: Path) -> dict[str, Package]:
    """Both packages of an export, each read once (for :func:`compressed_state_dict` and :func:`check_decompression`)."""
    return {package: read_package(folder / package) for package in PACKAGES}


def program_weights(package: Path) -> dict[str, np.ndarray]:
    """Every stored weight of a package by its constant's name (compression suffix removed), expanded."""
    return read_package(package)[0]


def _compressed_names(package: Path) -> list[tuple[str, str]]:
    return read_package(package)[1]


def _constant_name(key: str, package: str) -> str:
    """The constant a state-dict tensor becomes (the decoder package is traced from the decoder alone)."""
    traced = key.removeprefix("decoder.") if package == "decoder.mlpackage" else key
    return traced.replace(".", "_") + "_to_fp16"


def compressed_state_dict(folder: Path, reference: dict,
                          programs: Optional[dict[str, Package]] = None) -> tuple[dict, dict]:
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
        found = [(p, _constant_name(key, p)) for p in PACKAGES if _constant_name(key, p) in programs[p][0]]
        if found:
            package, name = found[0]
            value = programs[package][0][name]
            used.add((package, name))
            from_program += 1
        else:
            value = tensor.numpy().astype(np.float16)
        if tuple(value.shape) != tuple(tensor.shape):
            raise ModelError(f"{folder}: {key} is stored with shape {value.shape}, the model has {tuple(tensor.shape)}")
        state[key] = torch.from_numpy(np.asarray(value, dtype=np.float32).copy())
    compressed = {(p, n) for p in PACKAGES for _, n in programs[p][1]}
    unmatched = sorted(n for p, n in compressed - used)
    if unmatched:
        raise ModelError(f"{folder}: compressed constants that match no model tensor: {', '.join(unmatched[:5])}")
    return state, {"tensors_from_program": from_program, "compressed_tensors": len(compressed),
                   "tensors_total": len(reference)}


def check_decompression(folder: Path, programs: Optional[dict[str, Package]] = None) -> int:
    """Compare :func:`program_weights` with coremltools' ``decompress_weights`` on every compressed constant;
    returns how many were compared, raises ModelError on the first difference."""
    import coremltools as ct
    import coremltools.optimize.coreml as cto

    programs = programs or read_export(folder)
    compared = 0
    for package in PACKAGES:
        ours, compressed = programs[package]
        dense = cto.decompress_weights(ct.models.MLModel(str(folder / package), skip_model_load=True))
        theirs = _dense_constants(dense._mil_program.functions["main"].operations)
        for _, name in compressed:
            if name not in theirs or not np.array_equal(ours[name], theirs[name]):
                raise ModelError(f"{folder / package}: {name} expands differently from coremltools' decompress_weights")
            compared += 1
    return compared
