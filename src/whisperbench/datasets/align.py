"""Word times where a short-form dataset has none: forced alignment of each row's *transcript* with
openai-whisper's cross-attention DTW (``whisper.timing``), the algorithm its own ``word_timestamps`` runs, here on
the human transcript's tokens instead of decoded ones.

It runs offline on packaged weights. It is not human-marked truth: it is Whisper's own aligner on another model
(``base`` by default, not the ``tiny.en`` most runs test), so it favours implementations of the same algorithm,
and DTW over 20 ms encoder steps cannot place a word closer than one step. Read errors against it as distances
from a reference aligner, and prefer CTM or TextGrid files from a dedicated aligner where a dataset has them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DatasetError
from ..types import WHISPER_WINDOW_S, Word

log = logging.getLogger(__name__)

#: what a manifest row written by :func:`align_manifest` says of its words (``words_source``)
SOURCE = "forced alignment of the transcript: openai-whisper cross-attention DTW (whisper.timing), model {model}"


class TranscriptAligner:
    """openai-whisper's word aligner on one loaded checkpoint (``base``, a path, any ``--model`` form)."""

    def __init__(self, model: str = "base", threads: int = 2):
        import torch

        from ..models import converted
        from ..models.convert import load_openai_whisper

        torch.set_num_threads(threads)
        self.model_name = model
        self.net = load_openai_whisper(converted(model, "openai-whisper"))

    def words(self, audio: np.ndarray, text: str, language: str | None = "en") -> list[Word]:
        """The transcript's words with the times the aligner gives them (an all-capitals transcript, as
        LibriSpeech's, is aligned in lower case: Whisper rarely writes capitals, and its tokens for them are rarer)."""
        import torch
        from whisper.audio import N_FRAMES, N_SAMPLES, log_mel_spectrogram, pad_or_trim
        from whisper.timing import add_word_timestamps
        from whisper.tokenizer import get_tokenizer

        if len(audio) / 16000 > WHISPER_WINDOW_S:
            raise DatasetError(f"forced alignment takes clips of at most {WHISPER_WINDOW_S:g} s")
        spoken = text.strip().lower() if text.isupper() else text.strip()
        tokenizer = get_tokenizer(
            self.net.is_multilingual,
            num_languages=self.net.num_languages,
            language=language if self.net.is_multilingual else "en",
            task="transcribe",
        )
        mel = log_mel_spectrogram(audio, self.net.dims.n_mels, padding=N_SAMPLES)
        frames = mel.shape[-1] - N_FRAMES
        segment: dict[str, Any] = {
            "seek": 0,
            "start": 0.0,
            "end": frames / 100,
            "text": spoken,
            "tokens": tokenizer.encode(" " + spoken),
        }
        with torch.inference_mode():
            add_word_timestamps(
                segments=[segment],
                model=self.net,
                tokenizer=tokenizer,
                mel=pad_or_trim(mel[:, :frames], N_FRAMES),
                num_frames=frames,
                last_speech_timestamp=0.0,
            )
        return [Word(w["word"].strip(), float(w["start"]), float(w["end"])) for w in segment.get("words") or []]


def align_manifest(dataset: str, out: str | Path, model: str = "base", limit: int | None = None) -> int:
    """Write ``out``: the rows of a short-form manifest (or any dataset ``load_dataset`` reads), each with the
    forced-aligned ``words`` of its transcript and ``words_source``, audio paths absolute. Returns the rows
    written; a row that cannot be aligned is written without words, with ``words_error``, and logged."""
    from . import load_dataset
    from .audio import load_audio

    examples = load_dataset(dataset, limit=limit).dataset.examples
    aligner = TranscriptAligner(model)
    rows = []
    for example in examples:
        row: dict[str, Any] = {
            "id": example.id,
            "audio": example.audio if isinstance(example.audio, str) else None,
            "text": example.text,
            "duration_s": example.duration_s,
        }
        if example.language:
            row["language"] = example.language
        try:
            words = aligner.words(load_audio(example.audio), example.text, example.language or "en")
            row |= {
                "words": [{"word": w.word, "start": round(w.start, 3), "end": round(w.end, 3)} for w in words],
                "words_source": SOURCE.format(model=model),
            }
        except Exception as exc:  # recorded, never dropped
            row["words_error"] = f"{type(exc).__name__}: {exc}"
            log.warning("example %s: no forced alignment: %s", example.id, row["words_error"])
        rows.append(row)
    Path(out).write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return len(rows)
