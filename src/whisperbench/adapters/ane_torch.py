"""``ane-pytorch``: Whisper in the Apple Neural Engine layout, run by PyTorch on any OS.

The model is :mod:`whisperbench.models.ane` built from the same openai-whisper conversion as the
``openai-whisper`` adapter (channels-first tensors, 1x1 convolutions, per-head attention, channel
layer norm), driven by the greedy key/value-cache loop of :mod:`whisperbench.models.greedy` — the
loop the ``coreml`` adapter runs on the exported packages. Comparing this adapter with
``openai-whisper`` measures what the ANE rewrite alone changes; ``-o dtype=float16`` adds FP16
arithmetic (as the Neural Engine computes; slow on a CPU).

Greedy decoding only; windows of at most 30 s (long-form audio goes through the harness's
windows). ``Transcript.timings`` holds ``mel_s``, ``encoder_s``, ``decoder_s`` and ``decoder_steps``.
"""

from __future__ import annotations

import numpy as np

from ..errors import OptionError
from ..models.coreml_compress import COMPRESSIONS
from ..types import Example, Transcript
from .base import Adapter, DecodingOptions, window_transcript
from .options import Option

DTYPES = ("float32", "float16")


class AnePyTorchAdapter(Adapter):
    """openai-whisper's weights in the Apple Neural Engine layout, run with PyTorch (the numerical check of the layout
    Core ML exports)."""

    name = "ane-pytorch"
    description = "Whisper in the Apple Neural Engine layout (channels-first, 1x1 convs, split heads), PyTorch"
    requires = ("whisper", "torch")
    extra = "openai-whisper"
    distributions = ("openai-whisper", "torch")
    native_long_form = False
    long_form_algorithm = "none of its own: the harness's 30 s windows"
    no_word_timing = "the ANE-layout model returns no cross-attention weights to align words with"
    options = {
        "dtype": Option("float32", "torch dtype of the ANE-layout model"),
        "device": Option("cpu", "torch device"),
        "compression": Option(
            "",
            "run the weights of this compressed Core ML export (palettized per tensor "
            "pal8/6/4/2, per 16 or 32 output channels pal8g16/pal6g16/pal4g16/pal4g32, "
            "linear lin8), expanded as Core ML expands them",
            ("",) + tuple(COMPRESSIONS),
        ),
    }
    variants = {
        **{name: {"dtype": name} for name in ("float32", "float16")},
        **{f"coreml-{name}": {"compression": name} for name in COMPRESSIONS},
    }

    def __init__(self, model: str, decoding: DecodingOptions | None = None):
        super().__init__(model, decoding)
        from ..models.greedy import check_options

        check_options(self.decoding, self.name)
        if self.settings["dtype"] not in DTYPES:
            raise OptionError(
                f"adapter {self.name}: dtype {self.settings['dtype']!r} is not one of {', '.join(DTYPES)}"
            )

    def load(self) -> None:
        import torch

        from ..models import converted, resolve_source
        from ..models.ane import TorchStepModel, load_ane_model
        from ..models.greedy import GreedyDecoder

        torch.set_num_threads(self.decoding.threads)
        multilingual = resolve_source(self.model).multilingual
        model = load_ane_model(self.model)
        self.weights_path = converted(self.model, "openai-whisper")
        if self.settings["compression"]:
            self._load_compressed(model)
        step_model = TorchStepModel(model, self.settings["dtype"], self.settings["device"])
        self.decoder = GreedyDecoder(
            step_model, language=self.decoding.language_for(multilingual), task=self.decoding.task
        )

    def _load_compressed(self, model) -> None:
        """Put the weights of the compressed Core ML export into ``model``, expanded as Core ML expands them,
        after checking that expansion against coremltools' own ``decompress_weights``."""
        from ..models import converted
        from ..models.coreml_compress import check_decompression, compressed_state_dict, read_export

        folder = self.weights_path = converted(self.model, "coreml", self.settings["compression"])
        programs = read_export(folder)  # each package's program read once
        state, facts = compressed_state_dict(folder, model.state_dict(), programs)
        facts["checked_against_decompress_weights"] = check_decompression(folder, programs)
        model.load_state_dict(state, strict=True)
        self.compression_facts = facts

    def describe(self) -> dict:
        info = super().describe()
        if getattr(self, "compression_facts", None):
            info["compression"] = self.compression_facts
        return info

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        assert audio is not None  # needs_audio: the runner passes the decoded clip
        timestamps = not self.decoding.timestamps_off(long_form)
        result = self.decoder.transcribe(
            audio, timestamps=timestamps, language=self.decoding.language_for(True, example)
        )
        if timestamps:  # a window of the harness's long-form strategies: segments and where to resume
            return window_transcript(
                result.tokens, self.decoder.tokenizer, result.text, language=result.language, timings=result.timings
            )
        return Transcript(
            text=result.text.strip(), language=result.language, timings=result.timings, tokens=len(result.tokens)
        )

    def close(self) -> None:
        self.decoder = None  # type: ignore[assignment]  # released; never used after close


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = AnePyTorchAdapter
