"""``openai-whisper``: the original PyTorch implementation (the offline stand-in for the reference)."""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..types import Example, Transcript
from . import register
from .base import Adapter, transcript_from_whisper_result


@register
class OpenAIWhisperAdapter(Adapter):
    name = "openai-whisper"
    description = "openai-whisper (PyTorch), whisper.transcribe"
    requires = ("whisper", "torch")
    extra = "openai-whisper"
    distributions = ("openai-whisper", "torch")
    long_form_algorithm = "openai-whisper: sequential 30 s windows, seek by timestamps"
    options = {"device": "cpu"}

    def load(self) -> None:
        import torch

        from ..models import converted, resolve_source
        from ..models.convert import OPENAI_WHISPER_FILE, load_openai_whisper

        torch.set_num_threads(self.decoding.threads)
        self.multilingual = resolve_source(self.model).multilingual
        checkpoint = converted(self.model, "openai-whisper") / OPENAI_WHISPER_FILE
        self.net = load_openai_whisper(checkpoint).to(self.settings["device"])

    def transcribe(self, audio: Optional[np.ndarray], example: Example, *, long_form: bool) -> Transcript:
        import torch
        import whisper

        d = self.decoding
        with torch.inference_mode():
            result = whisper.transcribe(
                self.net, audio, verbose=None, fp16=False, best_of=None,
                beam_size=d.beam_size if d.beam_size > 1 else None,
                **d.whisper_transcribe_kwargs(self.multilingual, long_form),
            )
        return transcript_from_whisper_result(result)
