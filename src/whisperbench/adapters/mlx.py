"""``mlx``: Apple's mlx-whisper on MLX (Metal on Apple silicon, the CPU elsewhere via ``mlx[cpu]``).

The model is the converted folder from ``whisperbench.models`` (config.json + weights.safetensors),
passed to mlx-whisper as an existing local path, so it never calls the Hugging Face hub.

Options: ``dtype`` float32 (default, as the other adapters' baseline) or float16 (mlx-whisper's own
default, the usual choice on Apple silicon); ``quantization`` "" (none), q4 or q8 (affine, groups of
64, on top of ``dtype``). On the Linux CPU backend float16 is emulated: quantized float16 is about 30x
slower than float32 there, while quantized float32 runs at float32's speed or better.
mlx-whisper has no beam search (beam_size > 1 is refused) and no thread setting: on Linux, mlx[cpu]
does its matmuls in the BLAS it bundles (reference BLAS, one thread), so ``threads`` has no effect.
MLX is native code: an abort inside it ends the run's process; the run store keeps the finished
examples, and running the same command again resumes after them.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import ModelError, OptionError
from ..types import Example, Transcript
from . import register
from .base import Adapter, DecodingOptions, transcript_from_whisper_result


@register
class MLXAdapter(Adapter):
    name = "mlx"
    description = "mlx-whisper (MLX: Metal on Apple silicon, CPU on Linux), mlx_whisper.transcribe"
    requires = ("mlx_whisper", "mlx")
    extra = "mlx"
    distributions = ("mlx-whisper", "mlx", "mlx-cpu", "mlx-metal")
    long_form_algorithm = "mlx-whisper: sequential 30 s windows, seek by timestamps (openai-whisper's loop)"
    options = {"dtype": "float32", "quantization": ""}

    def __init__(self, model: str, decoding: Optional[DecodingOptions] = None):
        super().__init__(model, decoding)
        if self.decoding.beam_size > 1:
            raise OptionError(f"adapter mlx: mlx-whisper has no beam search (beam_size={self.decoding.beam_size}); "
                              "use beam_size=1")
        from ..models.mlx import variant_name

        try:
            self.variant = variant_name(self.settings["dtype"], self.settings["quantization"])
        except ModelError as exc:
            raise OptionError(f"adapter {exc}") from exc

    def load(self) -> None:
        import mlx.core as mx
        from mlx_whisper.transcribe import ModelHolder

        from ..models import converted, resolve_source

        self.multilingual = resolve_source(self.model).multilingual
        folder = converted(self.model, "mlx", self.variant)
        if not (folder / "config.json").is_file():  # mlx-whisper would take a missing path for a hub repo
            raise ModelError(f"adapter mlx: {folder} holds no config.json")
        self.path = str(folder.resolve())
        self.fp16 = self.settings["dtype"] == "float16"
        # mlx-whisper keeps one model per process, keyed by path; loading it here keeps load time out of RTFx
        ModelHolder.get_model(self.path, mx.float16 if self.fp16 else mx.float32)

    def transcribe(self, audio: Optional[np.ndarray], example: Example, *, long_form: bool) -> Transcript:
        import mlx_whisper

        d = self.decoding
        result = mlx_whisper.transcribe(audio, path_or_hf_repo=self.path, verbose=None, fp16=self.fp16,
                                        **d.whisper_transcribe_kwargs(self.multilingual, long_form))
        return transcript_from_whisper_result(result)

    def close(self) -> None:
        import mlx.core as mx
        from mlx_whisper.transcribe import ModelHolder

        if ModelHolder.model_path == getattr(self, "path", None):
            ModelHolder.model, ModelHolder.model_path = None, None
        mx.clear_cache()
