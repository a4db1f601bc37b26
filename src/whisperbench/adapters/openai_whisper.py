"""``openai-whisper``: the original PyTorch implementation (the offline stand-in for the reference)."""

from __future__ import annotations

import numpy as np

from ..core.ranges import Range
from ..errors import OptionError
from ..types import Example, Transcript
from .base import SEAMS_FROM_DECODER, Adapter, transcript_from_whisper_result, window_transcript
from .options import Option
from .word_timing import APPEND_PUNCTUATIONS, PREPEND_PUNCTUATIONS, align_windows, last_word_end


class OpenAIWhisperAdapter(Adapter):
    """openai-whisper (PyTorch): ``whisper.transcribe``, the reference implementation."""

    name = "openai-whisper"
    prompting = "initial_prompt"  # transcribe(initial_prompt=); a batch: DecodingOptions(prompt=)
    description = "openai-whisper (PyTorch), whisper.transcribe"
    requires = ("whisper", "torch")
    extra = "openai-whisper"
    distributions = ("openai-whisper", "torch")
    long_form_algorithm = "openai-whisper: sequential 30 s windows, seek by timestamps"
    native_seams = SEAMS_FROM_DECODER  # each segment's ``seek``: its window's start in mel frames
    word_timing = (
        "whisper.timing.add_word_timestamps (DTW over the checkpoint's alignment heads) on each decoding "
        "window's tokens, after decoding as without word timing"
    )
    options = {
        "device": Option("cpu", "torch device"),
        "batch_size": Option(
            1, "short clips (and chunked long-form windows) decoded together", range=Range(1, integer=True)
        ),
        "pad": Option(
            "mel",
            "short clips: mel = the clip's log-mel zero-padded to 30 s (whisper.transcribe); "
            "audio = the clip zero-padded to 30 s, then its log-mel (transformers' feature "
            "extractor, whisper.cpp): a near-tie can decode differently",
            choices=("mel", "audio"),
        ),
    }

    def load(self) -> None:
        import torch

        from ..models import converted, resolve_source
        from ..models.convert import load_openai_whisper

        torch.set_num_threads(self.decoding.threads)
        self.multilingual = resolve_source(self.model).multilingual
        checkpoint = self.weights_path = converted(self.model, "openai-whisper")
        self.net = load_openai_whisper(checkpoint).to(self.settings["device"])

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        import torch
        import whisper

        d = self.decoding
        if self.settings["pad"] == "audio" and not long_form and audio is not None:
            audio = whisper.pad_or_trim(audio)
        with torch.inference_mode():
            result = whisper.transcribe(
                self.net,
                audio,
                verbose=None,
                fp16=False,
                best_of=None,
                beam_size=d.beam_size if d.beam_size > 1 else None,
                **d.whisper_transcribe_kwargs(self.multilingual, long_form, example),
            )
        if d.word_timestamps:
            assert audio is not None  # needs_audio: the harness decodes it
            self._add_words(result, audio)
        return transcript_from_whisper_result(result, long_form, d.word_timestamps)

    def _add_words(self, result: dict, audio: np.ndarray) -> None:
        """openai-whisper's own word alignment on each decoding window's tokens (see adapters/word_timing.py)."""
        import torch
        from whisper.audio import N_FRAMES, N_SAMPLES, log_mel_spectrogram, pad_or_trim
        from whisper.timing import add_word_timestamps
        from whisper.tokenizer import get_tokenizer

        mel = log_mel_spectrogram(audio, self.net.dims.n_mels, padding=N_SAMPLES).to(self.net.device)
        tokenizer = get_tokenizer(
            self.net.is_multilingual,
            num_languages=self.net.num_languages,
            language=result.get("language"),
            task=self.decoding.task,
        )

        def align(window: list[dict], seek: int, frames: int, last_speech_s: float) -> float:
            with torch.inference_mode():
                add_word_timestamps(
                    segments=window,
                    model=self.net,
                    tokenizer=tokenizer,
                    mel=pad_or_trim(mel[:, seek : seek + frames], N_FRAMES),
                    num_frames=frames,
                    prepend_punctuations=PREPEND_PUNCTUATIONS,
                    append_punctuations=APPEND_PUNCTUATIONS,
                    last_speech_timestamp=last_speech_s,
                )
            return last_word_end(window, last_speech_s)

        align_windows(result["segments"], mel.shape[-1] - N_FRAMES, N_FRAMES, align)

    @property
    def batch_size(self) -> int:
        return int(self.settings["batch_size"])

    def transcribe_batch(
        self, audios: list[np.ndarray], examples: list[Example], *, timestamps: bool = False
    ) -> list[Transcript]:
        """``whisper.decode`` on a batch of log-mels prepared exactly as ``transcribe`` prepares a
        single window of <= 30 s (log-mel of the audio, then zero-padded to 3000 frames). Windows with word
        timing go one by one through ``transcribe`` (and its word alignment pass)."""
        import torch
        import whisper
        from whisper.audio import N_FRAMES, N_SAMPLES, log_mel_spectrogram, pad_or_trim

        d = self.decoding
        if d.word_timestamps:  # word times need the alignment pass, window by window
            return [self.transcribe(audio, example, long_form=True) for audio, example in zip(audios, examples)]
        if d.temperature_fallback:
            raise OptionError("openai-whisper batch_size > 1 decodes once per window: turn temperature_fallback off")
        mels = []
        for audio in audios:
            if self.settings["pad"] == "audio":
                audio = pad_or_trim(audio)
            mel = log_mel_spectrogram(audio, self.net.dims.n_mels, padding=N_SAMPLES)
            mels.append(pad_or_trim(mel[:, : mel.shape[-1] - N_FRAMES], N_FRAMES))
        options = whisper.DecodingOptions(
            task=d.task,
            language=d.language_for(self.multilingual, examples[0]),
            temperature=d.temperature,
            beam_size=d.beam_size if d.beam_size > 1 else None,
            prompt=d.prompt_for(examples[0]),  # one prompt per batch (refuse_prompt: the same for each)
            without_timestamps=not timestamps,
            fp16=False,
        )
        with torch.inference_mode():
            results = whisper.decode(self.net, torch.stack(mels).to(self.net.device), options)
        if not timestamps:
            return [Transcript(text=r.text.strip(), language=r.language, tokens=len(r.tokens)) for r in results]
        from whisper.tokenizer import get_tokenizer

        tokenizer = get_tokenizer(
            self.net.is_multilingual, num_languages=self.net.num_languages, language=options.language, task=d.task
        )
        return [window_transcript(r.tokens, tokenizer, r.text, language=r.language) for r in results]


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = OpenAIWhisperAdapter
