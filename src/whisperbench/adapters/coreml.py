"""``coreml``: the exported Core ML packages run by Core ML (macOS only), on the Neural Engine by default.

The packages are ``converted(model, "coreml")`` (see :mod:`whisperbench.models.coreml`): the
ANE-layout Whisper built from the same checkpoint as every other adapter. Decoding is the greedy
key/value-cache loop of :mod:`whisperbench.models.greedy`, the same code the ``ane-pytorch``
adapter runs, so ``ane-pytorch`` vs ``openai-whisper`` isolates the layout and ``coreml`` vs
``ane-pytorch`` isolates Core ML (FP16, the compute units).

Options: ``compute_units`` ``CPU_AND_NE`` (default), ``ALL``, ``CPU_ONLY``, ``CPU_AND_GPU``;
``precision`` ``float16`` (default; what the Neural Engine runs), ``float32`` (CPU/GPU), or a compression
of the float16 export (``pal8`` … ``pal2``, the grouped ``pal8g16`` … ``pal4g32`` (macOS 15 / iOS 18),
``lin8``: :mod:`whisperbench.models.coreml_compress`).
``Transcript.timings`` holds ``mel_s``, ``encoder_s``, ``decoder_s`` and ``decoder_steps``; run.json
records the packages' load times. Core ML has no runtime outside macOS: elsewhere the adapter
refuses to run with that reason (the export itself works on Linux).
"""

from __future__ import annotations

import sys

import numpy as np

from ..errors import AdapterUnavailable, OptionError
from ..models.coreml import VARIANTS
from ..models.coreml_compress import COMPRESSIONS
from ..types import Example, Transcript
from .base import Adapter, DecodingOptions
from .options import Option

NOT_MACOS = "Core ML runs only on macOS (no Core ML runtime on {platform}); the export works everywhere"


class CoreMLAdapter(Adapter):
    """Core ML packages of the ANE-layout Whisper, run through coremltools on macOS (exported everywhere)."""

    name = "coreml"
    description = "Core ML packages of the ANE-layout Whisper (macOS only; compute units ALL / CPU_AND_NE / CPU_ONLY)"
    requires = ("coremltools", "whisper", "torch")
    extra = "coreml"
    distributions = ("coremltools", "openai-whisper", "torch")
    native_long_form = False
    long_form_algorithm = "none of its own: the harness's 30 s windows"
    no_word_timing = "the Core ML packages export no cross-attention weights to align words with"
    options = {
        "compute_units": Option("CPU_AND_NE", "Core ML compute units"),
        "precision": Option(
            "float16",
            "precision of the exported ML Programs, or a compression of the float16 "
            "export (pal8, pal6, pal4, pal2: palettized per tensor; pal8g16, "
            "pal6g16, pal4g16, pal4g32: per 16/32 output channels, macOS 15; "
            "lin8: 8-bit linear)",
            VARIANTS + tuple(COMPRESSIONS),
        ),
    }
    variants = {name: {"precision": name} for name in VARIANTS + tuple(COMPRESSIONS)}

    def __init__(self, model: str, decoding: DecodingOptions | None = None):
        super().__init__(model, decoding)
        from ..models.coreml import COMPUTE_UNITS
        from ..models.greedy import check_options

        check_options(self.decoding, self.name)
        if self.settings["compute_units"] not in COMPUTE_UNITS:
            raise OptionError(
                f"adapter coreml: compute_units {self.settings['compute_units']!r} is not one of "
                f"{', '.join(COMPUTE_UNITS)}"
            )

    @classmethod
    def ensure_available(cls) -> None:
        """The package check, then a refusal with the reason off macOS (Core ML predictions run only there)."""
        super().ensure_available()
        if sys.platform != "darwin":
            raise AdapterUnavailable(f"adapter coreml: {NOT_MACOS.format(platform=sys.platform)}")

    def load(self) -> None:
        self.ensure_available()
        from ..models import converted, resolve_source
        from ..models.coreml import CoreMLStepModel
        from ..models.greedy import GreedyDecoder

        multilingual = resolve_source(self.model).multilingual
        self.folder = self.weights_path = converted(self.model, "coreml", self.settings["precision"])
        self.step_model = CoreMLStepModel(self.folder, self.settings["compute_units"])
        self.decoder = GreedyDecoder(
            self.step_model, language=self.decoding.language_for(multilingual), task=self.decoding.task
        )

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        assert audio is not None  # needs_audio: the runner passes the decoded clip
        result = self.decoder.transcribe(
            audio,
            timestamps=not self.decoding.timestamps_off(long_form),
            language=self.decoding.language_for(True, example),
        )
        return Transcript(
            text=result.text.strip(), language=result.language, timings=result.timings, tokens=len(result.tokens)
        )

    def describe(self) -> dict:
        info = super().describe()
        if getattr(self, "step_model", None) is not None:
            info |= {"packages": str(self.folder), "package_load_s": self.step_model.load_s}
        return info

    def close(self) -> None:
        self.decoder = self.step_model = None  # type: ignore[assignment]  # released; never used after close


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = CoreMLAdapter
