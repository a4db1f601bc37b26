"""``faster-whisper``: CTranslate2; compute type selectable (float32 default, int8, int8_float32 …)."""

from __future__ import annotations

import numpy as np

from ..types import Example, Segment, Transcript, Word
from .base import SEAMS_FROM_DECODER, Adapter, seam_extra, seams_from_seeks
from .options import Option
from .word_timing import APPEND_PUNCTUATIONS, PREPEND_PUNCTUATIONS, align_windows, last_word_end

#: CTranslate2 compute types whose weights are stored as integers (a conversion in that quantization)
INTEGER_TYPES = ("int8", "int8_float32", "int8_float16", "int16")
#: faster-whisper's feature frames per second (FeatureExtractor: hop 160 at 16 kHz), the unit of Segment.seek
FRAMES_PER_SECOND = 100
WORD_TIMING = (
    "WhisperModel.add_word_timestamps (DTW over the alignment heads, CTranslate2's align) on each decoding "
    "window's tokens, after decoding as without word timing"
)


class FasterWhisperAdapter(Adapter):
    """faster-whisper (CTranslate2): ``WhisperModel.transcribe`` on the model converted to, or given in, CTranslate2's
    format."""

    name = "faster-whisper"
    prompting = "initial_prompt"  # transcribe(initial_prompt=), per example
    description = "faster-whisper (CTranslate2), WhisperModel.transcribe"
    requires = ("faster_whisper", "ctranslate2")
    extra = "faster-whisper"
    distributions = ("faster-whisper", "ctranslate2")
    long_form_algorithm = "faster-whisper: sequential 30 s windows, seek by timestamps"
    no_word_timing = "with -o vad_filter=true its windows' offsets count the audio with the silences cut out"
    options = {
        "compute_type": Option(
            "float32", "CTranslate2 compute type (int8, int8_float32, int16, float16, default = as stored …)"
        ),
        "device": Option("cpu", "cpu or cuda"),
        "stored": Option(
            "as-is",
            "the weights' storage: as-is (the model's file; CTranslate2 converts to the "
            "compute type when loading, as faster-whisper users usually run int8) or "
            "compute-type (a conversion stored in an integer compute type: what ships, "
            "and its size)",
            ("as-is", "compute-type"),
        ),
        "vad_filter": Option(
            False,
            "faster-whisper's guard against non-speech: Silero VAD drops the audio "
            "it finds without speech before decoding (off: the harness's baseline)",
        ),
    }
    # the sweep measures what ships: integer variants stored as such (their size is the file's)
    variants = {
        name: {
            "compute_type": name,
            **({"stored": "compute-type"} if name in ("int16", "int8_float32", "int8") else {}),
        }
        for name in ("float32", "float16", "int16", "int8_float32", "int8")
    }

    @classmethod
    def variant_refused(cls, name: str) -> str | None:
        import ctranslate2

        supported = ctranslate2.get_supported_compute_types("cpu")
        if cls.variants[name]["compute_type"] not in supported:
            return (
                f"CTranslate2 {ctranslate2.__version__} computes in {', '.join(sorted(supported))} on this CPU "
                f"(ctranslate2.get_supported_compute_types('cpu')), not {name}"
            )
        return None

    def load(self) -> None:
        from faster_whisper import WhisperModel

        from ..models import converted, resolve_source

        source = resolve_source(self.model)
        self.multilingual = source.multilingual
        compute_type = self.settings["compute_type"]
        if source.quantized and source.format == "ctranslate2" and not self.options_set_by_user("compute_type"):
            compute_type = "default"  # run a quantized model as it is stored, not dequantized
        # stored=compute-type: an integer compute type runs on weights stored in it (their size is the model's);
        # a model already quantized is loaded as it is (CTranslate2 converts its types at load)
        asked = self.settings["stored"] == "compute-type" and compute_type in INTEGER_TYPES and not source.quantized
        stored = compute_type if asked else None
        self.weights_path = converted(self.model, "ctranslate2", stored)
        self.net = WhisperModel(
            str(self.weights_path),
            device=self.settings["device"],
            compute_type=compute_type,
            cpu_threads=self.decoding.threads,
            num_workers=1,
        )

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        d = self.decoding
        segments, info = self.net.transcribe(
            audio,
            language=d.language_for(self.multilingual, example),
            task=d.task,
            beam_size=d.beam_size,
            best_of=1,
            temperature=list(d.temperatures()),
            condition_on_previous_text=d.condition_on_previous_text,
            initial_prompt=d.prompt_for(example),
            without_timestamps=d.timestamps_off(long_form),
            vad_filter=self.settings["vad_filter"],
            no_speech_threshold=d.no_speech_threshold,
            log_prob_threshold=d.logprob_threshold,
            compression_ratio_threshold=d.compression_ratio_threshold,
            word_timestamps=False,
        )
        decoded = list(segments)  # the generator decodes here
        segs = [Segment(s.start, s.end, s.text) for s in decoded]
        words = self._words(decoded, audio, info.language) if d.word_timestamps and audio is not None else None
        detected = d.language_for(self.multilingual, example) is None  # faster-whisper reports 1.0 when forced
        extra = {"language_probability": info.language_probability} if detected else {}
        if long_form and self.native_seams:
            extra |= seam_extra(seams_from_seeks((s.seek for s in decoded), FRAMES_PER_SECOND), self.native_seams)
        return Transcript(
            text="".join(s.text for s in segs).strip(),
            segments=segs,
            words=words,
            language=info.language,
            extra=extra,
            tokens=sum(len(s.tokens) for s in decoded),
        )

    def _words(self, decoded: list, audio: np.ndarray, language: str) -> list[Word]:
        """faster-whisper's own word alignment on each decoding window's tokens (see adapters/word_timing.py)."""
        from faster_whisper.audio import pad_or_trim
        from faster_whisper.tokenizer import Tokenizer

        net = self.net
        features = net.feature_extractor(audio)
        tokenizer = Tokenizer(net.hf_tokenizer, net.model.is_multilingual, task=self.decoding.task, language=language)
        segments = [{"seek": s.seek, "start": s.start, "end": s.end, "tokens": s.tokens} for s in decoded]

        def align(window: list[dict], seek: int, frames: int, last_speech_s: float) -> float:
            encoded = net.encode(pad_or_trim(features[:, seek : seek + frames]))
            net.add_word_timestamps(
                [window], tokenizer, encoded, frames, PREPEND_PUNCTUATIONS, APPEND_PUNCTUATIONS, last_speech_s
            )
            return last_word_end(window, last_speech_s)

        window_frames = net.feature_extractor.nb_max_frames
        align_windows(segments, features.shape[-1] - 1, window_frames, align)
        return [
            Word(w["word"].strip(), float(w["start"]), float(w["end"])) for s in segments for w in s.get("words") or []
        ]

    @property
    def word_timing(self) -> str | None:  # type: ignore[override]
        """None with the VAD filter: the windows' offsets (``seek``) count frames of the cut audio."""
        return None if self.settings["vad_filter"] else WORD_TIMING

    @property
    def native_seams(self) -> str | None:  # type: ignore[override]
        """Each Segment's ``seek`` is its window's start in feature frames (hop 160 at 16 kHz: 100 a second); with
        the VAD filter, frames of the audio with the silences cut out, which it does not map back: not told."""
        return None if self.settings["vad_filter"] else SEAMS_FROM_DECODER


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = FasterWhisperAdapter
