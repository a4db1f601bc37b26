"""Export the ANE-layout Whisper to Core ML packages (ML Program), one per stage.

``converted(model, "coreml")`` writes (cached like every other format):

- ``encoder.mlpackage``: ``melspectrogram_features`` ``(1, n_mels, 1, 3000)`` (a fixed 30 s
  window) -> ``encoder_output_embeds`` ``(1, n_audio_state, 1, 1500)`` and the decoder's
  cross-attention ``cross_key_cache`` / ``cross_value_cache`` ``(1, n_text_state * n_text_layer, 1, 1500)``,
  so they are projected once per window rather than at every token;
- ``decoder.mlpackage``: one token per call with the key/value cache as inputs and outputs, as
  WhisperKit's TextDecoder: ``input_ids`` / ``cache_length`` ``(1,)`` int32, ``key_cache`` /
  ``value_cache`` ``(1, n_text_state * n_text_layer, 1, n_text_ctx)``, ``kv_cache_update_mask`` and
  ``decoder_key_padding_mask`` ``(1, n_text_ctx)``, the two cross caches -> ``logits``
  ``(1, 1, n_vocab)``, ``key_cache_updates`` / ``value_cache_updates``
  ``(1, n_text_state * n_text_layer, 1, 1)`` that the host writes into its caches at ``cache_length``;
- ``coreml.json``: model dimensions, precision, input/output names and shapes, versions.

Variants: ``float16`` (``""``, the default: FP16 compute and FP16 inputs/outputs, what the Neural
Engine runs) and ``float32`` (FP32 compute: CPU/GPU only, for numerical comparison). The deployment
target is macOS 13 / iOS 16 (FP16 multi-array inputs need it). ``float16-ios18`` is the float16 export
at a macOS 15 / iOS 18 target, what the per-grouped-channel palettizations start from (coremltools
allows them only there); coreml.json records the target of every export.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.ane import (
    DECODER_INPUTS,
    DECODER_OUTPUTS,
    ENCODER_INPUTS,
    ENCODER_OUTPUTS,
    MASK_VALUE,
    from_stock,
)
from whisperbench.models.resolve import SourceModel

VARIANTS = ("float16", "float32")  # and the compressions of the float16 export (models/coreml_compress.py)
IOS18_FLOAT16 = "float16-ios18"  # the float16 export at an iOS 18 target: the base of the grouped palettizations
#: deployment target name -> (coreml.json label, ``coremltools.target`` attribute)
TARGETS = {"iOS16": ("macOS13/iOS16", "macOS13"), "iOS18": ("macOS15/iOS18", "macOS15")}
ENCODER_PACKAGE = "encoder.mlpackage"
DECODER_PACKAGE = "decoder.mlpackage"
INFO_FILE = "coreml.json"
N_FRAMES = 3000  # 30 s of 10 ms mel frames


def parse_variant(variant: str) -> str:
    """The precision of a variant name (``""`` is float16)."""
    from whisperbench.models.coreml_compress import COMPRESSIONS

    precision = variant or "float16"
    if precision not in VARIANTS + (IOS18_FLOAT16,) + tuple(COMPRESSIONS):
        raise ModelError(
            f"coreml: unknown variant {variant!r} (float16, float32, {IOS18_FLOAT16}, {', '.join(COMPRESSIONS)})"
        )
    return precision


def io_shapes(dims: dict) -> dict[str, dict[str, tuple[int, ...]]]:
    """Shapes of every package input and output for model dimensions ``dims``."""
    cache = (1, dims["n_text_state"] * dims["n_text_layer"], 1, dims["n_text_ctx"])
    cross = (1, dims["n_text_state"] * dims["n_text_layer"], 1, dims["n_audio_ctx"])
    return {
        "encoder_inputs": {"melspectrogram_features": (1, dims["n_mels"], 1, N_FRAMES)},
        "encoder_outputs": {
            "encoder_output_embeds": (1, dims["n_audio_state"], 1, dims["n_audio_ctx"]),
            "cross_key_cache": cross,
            "cross_value_cache": cross,
        },
        "decoder_inputs": {
            "input_ids": (1,),
            "cache_length": (1,),
            "key_cache": cache,
            "value_cache": cache,
            "kv_cache_update_mask": (1, dims["n_text_ctx"]),
            "decoder_key_padding_mask": (1, dims["n_text_ctx"]),
            "cross_key_cache": cross,
            "cross_value_cache": cross,
        },
        "decoder_outputs": {
            "logits": (1, 1, dims["n_vocab"]),
            "key_cache_updates": cache[:3] + (1,),
            "value_cache_updates": cache[:3] + (1,),
        },
    }


def _example_decoder_inputs(dims: dict, float_dtype) -> dict:
    """Valid decoder inputs for tracing: token SOT at position 2 of an otherwise empty cache."""
    import torch

    shapes = io_shapes(dims)["decoder_inputs"]
    position = 2
    inputs = {name: torch.randn(shape, dtype=float_dtype) * 0.1 for name, shape in shapes.items()}
    inputs["input_ids"] = torch.tensor([50257], dtype=torch.int32)
    inputs["cache_length"] = torch.tensor([position], dtype=torch.int32)
    inputs["kv_cache_update_mask"] = torch.zeros(shapes["kv_cache_update_mask"], dtype=float_dtype)
    inputs["kv_cache_update_mask"][0, position] = 1
    inputs["decoder_key_padding_mask"] = torch.full(shapes["decoder_key_padding_mask"], MASK_VALUE, dtype=float_dtype)
    inputs["decoder_key_padding_mask"][0, : position + 1] = 0
    return {name: inputs[name] for name in DECODER_INPUTS}


def export_coreml(model, out_dir: str | Path, precision: str = "float16", target: str = "iOS16") -> dict:
    """Convert a float32 ``WhisperANE`` to the two packages in ``out_dir``; returns the coreml.json dict.

    ``target``: the minimum deployment target, ``iOS16`` (macOS 13) or ``iOS18`` (macOS 15, which
    per-grouped-channel palettization needs)."""
    import coremltools as ct
    import torch

    out_dir = Path(out_dir)
    dims = model.dims
    shapes = io_shapes(dims)
    io_dtype = np.float16 if precision == "float16" else np.float32
    compute = ct.precision.FLOAT16 if precision == "float16" else ct.precision.FLOAT32
    if target not in TARGETS:
        raise ModelError(f"coreml: unknown deployment target {target!r} (known: {', '.join(TARGETS)})")
    label, attribute = TARGETS[target]
    common = dict(
        convert_to="mlprogram", compute_precision=compute, minimum_deployment_target=getattr(ct.target, attribute)
    )
    model = model.float().eval()

    class EncoderStage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder, self.decoder = model.encoder, model.decoder

        def forward(self, mel):
            features = self.encoder(mel)
            return (features, *self.decoder.cross_kv(features))

    with torch.inference_mode(False), torch.no_grad():
        mel = torch.randn(shapes["encoder_inputs"]["melspectrogram_features"])
        traced = torch.jit.trace(EncoderStage().eval(), (mel,))
        encoder = ct.convert(
            traced,
            inputs=[
                ct.TensorType(name, shape=shapes["encoder_inputs"][name], dtype=io_dtype) for name in ENCODER_INPUTS
            ],
            outputs=[ct.TensorType(name, dtype=io_dtype) for name in ENCODER_OUTPUTS],
            **common,
        )
        example = _example_decoder_inputs(dims, torch.float32)
        traced = torch.jit.trace(model.decoder, tuple(example.values()))
        decoder = ct.convert(
            traced,
            inputs=[
                ct.TensorType(
                    name,
                    shape=tuple(tensor.shape),
                    dtype=np.int32 if name in ("input_ids", "cache_length") else io_dtype,
                )
                for name, tensor in example.items()
            ],
            outputs=[ct.TensorType(name, dtype=io_dtype) for name in DECODER_OUTPUTS],
            **common,
        )
    for package, name in ((encoder, ENCODER_PACKAGE), (decoder, DECODER_PACKAGE)):
        package.short_description = f"Whisper {name.split('.')[0]}, ANE layout (whisperbench), {precision}"
        package.save(str(out_dir / name))
    info = {
        "format": "whisperbench-coreml",
        "precision": precision,
        "dims": dims,
        "coremltools": ct.__version__,
        "torch": torch.__version__,
        "deployment_target": label,
        "mask_value": MASK_VALUE,
        "shapes": {group: {k: list(v) for k, v in table.items()} for group, table in shapes.items()},
    }
    (out_dir / INFO_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def read_info(folder: str | Path) -> dict:
    """coreml.json of an exported folder, with a clear error when the folder is not one."""
    path = Path(folder) / INFO_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"{folder}: not a whisperbench Core ML export (cannot read {INFO_FILE}: {exc})") from exc
    for package in (ENCODER_PACKAGE, DECODER_PACKAGE):
        if not (Path(folder) / package).is_dir():
            raise ModelError(f"{folder}: {package} is missing")
    return info


def to_coreml(source: SourceModel, out_dir: Path, variant: str) -> None:
    """The converter of its Format: ``source`` as Core ML packages (``variant``: a compression) into ``out_dir``."""
    from whisperbench.models.convert import load_openai_whisper, read_checkpoint
    from whisperbench.models.coreml_compress import COMPRESSIONS, compress_export
    from whisperbench.models.resolve import converted_source

    precision = parse_variant(variant)
    if precision in COMPRESSIONS:  # compressed from the (cached) float16 export at the target it needs
        base = IOS18_FLOAT16 if COMPRESSIONS[precision].target == "iOS18" else ""
        compress_export(converted_source(source, "coreml", base), out_dir, precision)
        return
    model = from_stock(load_openai_whisper(read_checkpoint(source)))
    if precision == IOS18_FLOAT16:
        export_coreml(model, out_dir, "float16", target="iOS18")
    else:
        export_coreml(model, out_dir, precision)


COMPUTE_UNITS = ("ALL", "CPU_AND_NE", "CPU_ONLY", "CPU_AND_GPU")


class CoreMLStepModel:
    """The exported packages behind the interface of :class:`whisperbench.models.greedy.StepModel` (macOS).

    ``compute_units`` is a ``coremltools.ComputeUnit`` name: ``CPU_AND_NE`` (the Neural Engine,
    CPU fallback), ``ALL``, ``CPU_ONLY`` or ``CPU_AND_GPU``. ``load_s`` records how long each package
    took to load (the first load on a Mac includes Core ML's on-device compilation).
    """

    def __init__(self, folder: str | Path, compute_units: str = "CPU_AND_NE"):
        import time

        import coremltools as ct

        if compute_units not in COMPUTE_UNITS:
            raise ModelError(f"coreml: compute_units {compute_units!r} is not one of {', '.join(COMPUTE_UNITS)}")
        folder = Path(folder)
        info = read_info(folder)
        self.dims = info["dims"]
        self.float_dtype = np.float16 if info["precision"] == "float16" else np.float32
        units = getattr(ct.ComputeUnit, compute_units)
        self.load_s = {}
        start = time.perf_counter()
        self.encoder = ct.models.MLModel(str(folder / ENCODER_PACKAGE), compute_units=units)
        self.load_s["encoder"] = time.perf_counter() - start
        start = time.perf_counter()
        self.decoder = ct.models.MLModel(str(folder / DECODER_PACKAGE), compute_units=units)
        self.load_s["decoder"] = time.perf_counter() - start

    def encode(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the Core ML encoder on its inputs and return its outputs by name."""
        return self.encoder.predict(inputs)

    def decode(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one Core ML decoder step on its inputs and return its outputs by name."""
        return self.decoder.predict(inputs)
