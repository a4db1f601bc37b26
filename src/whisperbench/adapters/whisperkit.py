"""``whisperkit``: Argmax's WhisperKit through its command-line tool (macOS 14+ on Apple silicon).

WhisperKit runs its own Core ML conversion of the OpenAI checkpoints (``--model`` downloads
``openai_whisper-<model>`` from the hub; ``-o model_path=DIR`` uses a local WhisperKit model folder):
the weights are OpenAI's but not this harness's conversion, so run.json records the folder or name
rather than a source hash. The CLI is run once per batch of clips (``batch_size``, default 8) so
that model loading is paid once per batch, not per clip; its time is still inside the measured
inference time, so compare WhisperKit's RTFx with care (or serve it: ``whisperkit-cli serve`` speaks
the OpenAI transcription route, which the ``openai-api`` adapter can call with ``-o base_url=...``).

Decoding follows the harness's defaults: temperature 0 without fallback, the no-speech / log-prob /
compression-ratio heuristics off unless set (WhisperKit's own defaults turn them on), timestamps
off for short-form, ``--word-timestamps`` when the run asks for word timing. Long-form audio goes to
WhisperKit whole (its own windowing).

What is read from each clip's ``--report`` JSON, and why (read in argmaxinc/WhisperKit's source):

- ``Sources/WhisperKit/Core/ResultWriter.swift`` (``WriteJSON``): the report is a ``TranscriptionResult``
  encoded by a plain ``JSONEncoder`` (pretty-printed, no key strategy), so the keys are the Swift property names;
- ``Sources/WhisperKit/Core/Models.swift``: ``TranscriptionResult`` {``text``, ``segments``, ``language``,
  ``timings``, ``seekTime``?}; ``TranscriptionSegment`` {``id``, ``seek``, ``start``, ``end``, ``text``,
  ``tokens``, ``tokenLogProbs``, ``temperature``, ``avgLogprob``, ``compressionRatio``, ``noSpeechProb``,
  ``words``?}; ``WordTiming`` {``word``, ``tokens``, ``start``, ``end``, ``probability``}. ``words`` is optional
  (nil, so left out of the JSON, unless word timestamps were asked for); ``start``/``end`` are Float seconds;
- ``Sources/WhisperKit/Core/Text/SegmentSeeker.swift``: a segment's ``start`` is ``seek / sampleRate`` plus its
  timestamp tokens (seconds from the start of the audio); ``seek`` counts *samples* at 16 kHz
  (``WhisperKit.sampleRate``), not mel frames; with ``skipSpecialTokens`` a segment's ``text`` and each word
  are decoded from the tokens below ``specialTokenBegin`` only (no ``<|...|>`` left in them); word times are
  rounded to 0.01 s and carry Whisper's leading space. ``updateSegmentTimings`` (Utils) moves ``seek``,
  ``start``, ``end`` and the words of a VAD chunk's segments by the chunk's offset, so all are file times;
- ``Sources/WhisperKitCLI/TranscribeCLIArguments.swift``: the flags (``--word-timestamps``,
  ``--skip-special-tokens``, ``--report``, ``--report-path``, ...).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..core.ranges import Range
from ..datasets.audio import SAMPLE_RATE
from ..errors import AdapterUnavailable, OptionError, WhisperbenchError
from ..types import Example, Segment, Transcript, Word
from .base import SEAMS_FROM_DECODER, Adapter, DecodingOptions, seam_extra, seams_from_seeks
from .options import Option

COMPUTE_UNITS = ("all", "cpuOnly", "cpuAndGPU", "cpuAndNeuralEngine")
# values that switch WhisperKit's heuristics off (it has no "none" for them)
HEURISTICS_OFF = {"no_speech_threshold": 1.0, "logprob_threshold": -1e9, "compression_ratio_threshold": 1e9}
CLI_FLAGS = {
    "no_speech_threshold": "--no-speech-threshold",
    "logprob_threshold": "--logprob-threshold",
    "compression_ratio_threshold": "--compression-ratio-threshold",
}
#: the unit of a report segment's ``seek``: audio samples (``WhisperKit.sampleRate``, SegmentSeeker.swift)
SEEK_PER_SECOND = 16000


def whisperkit_command(
    cli: str,
    audio_paths: list[str],
    report_dir: str,
    model: str,
    model_path: str,
    decoding: DecodingOptions,
    long_form: bool,
    encoder_units: str,
    decoder_units: str,
) -> list[str]:
    """The ``whisperkit-cli transcribe`` command line for these clips and the harness's decoding options."""
    command = [cli, "transcribe"]
    for path in audio_paths:
        command += ["--audio-path", path]
    command += ["--model-path", model_path] if model_path else ["--model", model]
    command += [
        "--task",
        decoding.task,
        "--temperature",
        str(decoding.temperature),
        "--temperature-fallback-count",
        "5" if decoding.temperature_fallback else "0",
        "--audio-encoder-compute-units",
        encoder_units,
        "--text-decoder-compute-units",
        decoder_units,
        "--skip-special-tokens",
        "--report",
        "--report-path",
        report_dir,
    ]
    if decoding.language:
        command += ["--language", decoding.language]
    if decoding.timestamps_off(long_form):
        command.append("--without-timestamps")
    if decoding.word_timestamps:
        command.append("--word-timestamps")
    for option, flag in CLI_FLAGS.items():
        value = getattr(decoding, option)
        command += [flag, str(HEURISTICS_OFF[option] if value is None else value)]
    if decoding.initial_prompt:
        command += ["--prompt", decoding.initial_prompt]
    return command


def read_report(report_dir: str, stem: str) -> dict:
    """The JSON report WhisperKit writes for one clip (``<stem>.json``, a TranscriptionResult)."""
    path = Path(report_dir) / f"{stem}.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WhisperbenchError(f"whisperkit-cli wrote no readable report {path.name}: {exc}") from exc
    if not isinstance(report, dict) or not isinstance(report.get("text"), str):
        raise WhisperbenchError(f"whisperkit-cli report {path.name} has no text field")
    return report


def transcript_from_report(report: dict, word_timing: bool, long_form: bool) -> Transcript:
    """A Transcript from one clip's report (a TranscriptionResult): its segments as WhisperKit wrote them
    (seconds), its words where word timing was asked and every segment carries ``words`` (else None: not
    offered, never zeros; a word keeps WhisperKit's text less the leading space, as every adapter stores it),
    and, long-form, the seams of its decoding windows from the segments' ``seek`` (samples at 16 kHz)."""
    raw = report.get("segments") or []
    segments = [Segment(float(s["start"]), float(s["end"]), s["text"]) for s in raw]
    timed = word_timing and bool(raw) and all(isinstance(s.get("words"), list) for s in raw)
    words = (
        [Word(w["word"].strip(), float(w["start"]), float(w["end"])) for s in raw for w in s["words"]]
        if timed
        else None
    )
    extra: dict[str, Any] = {}
    if long_form and raw and all("seek" in s for s in raw):
        seeks = [s["seek"] for s in raw if s["text"].strip()]
        extra = seam_extra(seams_from_seeks(seeks, SEEK_PER_SECOND), SEAMS_FROM_DECODER)
    timings = {k: float(v) for k, v in (report.get("timings") or {}).items() if isinstance(v, (int, float))}
    return Transcript(
        text=report["text"].strip(),
        segments=segments,
        words=words,
        language=report.get("language"),
        timings=timings,
        extra=extra,
    )


class WhisperKitAdapter(Adapter):
    """Argmax's WhisperKit CLI (Core ML Whisper) on macOS 14+ with Apple silicon."""

    name = "whisperkit"
    prompting = "--prompt"  # whisperkit-cli --prompt, one command per batch
    prompts_each_example = False
    description = "WhisperKit CLI (Argmax's Core ML Whisper; macOS 14+ on Apple silicon)"
    uses_weights = False
    cpu_in_process = False  # a whisperkit-cli process computes
    long_form_algorithm = "WhisperKit: its own 30 s windowing"
    word_timing = "WhisperKit's report words (--word-timestamps: its own DTW over the alignment heads)"
    native_seams = SEAMS_FROM_DECODER  # each report segment's ``seek``: its window's start in 16 kHz samples
    options = {
        "cli": Option("whisperkit-cli", "the WhisperKit command line"),
        "model_path": Option("", "a local WhisperKit model folder (else --model is downloaded by WhisperKit)"),
        "audio_encoder_compute_units": Option("cpuAndNeuralEngine", "WhisperKit compute units of the encoder"),
        "text_decoder_compute_units": Option("cpuAndNeuralEngine", "WhisperKit compute units of the decoder"),
        "batch_size": Option(8, "files per whisperkit-cli call", range=Range(1, integer=True)),
        "timeout_s": Option(1800.0, "seconds per whisperkit-cli call", range=Range(0, open_low=True)),
    }

    def __init__(self, model: str, decoding: DecodingOptions | None = None):
        super().__init__(model, decoding)
        if self.decoding.beam_size != 1:
            raise OptionError("adapter whisperkit: WhisperKit decodes greedily (beam_size must be 1)")
        for key in ("audio_encoder_compute_units", "text_decoder_compute_units"):
            if self.settings[key] not in COMPUTE_UNITS:
                raise OptionError(
                    f"adapter whisperkit: {key} {self.settings[key]!r} is not one of {', '.join(COMPUTE_UNITS)}"
                )

    @classmethod
    def ensure_available(cls) -> None:
        """Refuse with the reason off macOS (WhisperKit runs only there; ``load`` then looks for whisperkit-cli)."""
        if sys.platform != "darwin":
            raise AdapterUnavailable(f"adapter whisperkit: WhisperKit runs only on macOS (this is {sys.platform})")

    def load(self) -> None:
        self.ensure_available()
        self.cli = shutil.which(self.settings["cli"])
        if self.cli is None:
            raise AdapterUnavailable(
                f"adapter whisperkit: {self.settings['cli']} not found on PATH "
                "(brew install whisperkit-cli, or build it from github.com/argmaxinc/WhisperKit)"
            )

    @property
    def batch_size(self) -> int:
        return int(self.settings["batch_size"])

    def _run(self, audios: list[np.ndarray], examples: list[Example], long_form: bool) -> list[Transcript]:
        import soundfile as sf

        with tempfile.TemporaryDirectory(prefix="whisperbench-whisperkit-") as tmp:
            paths = []
            for index, audio in enumerate(audios):
                paths.append(str(Path(tmp) / f"clip{index:04d}.wav"))
                sf.write(paths[-1], audio, SAMPLE_RATE, subtype="FLOAT")
            # one language per call (the harness batches -o language=dataset by language)
            decoding = dataclasses.replace(self.decoding, language=self.decoding.language_for(True, examples[0]))
            command = whisperkit_command(
                self.cli,
                paths,
                tmp,
                self.model,
                self.settings["model_path"],
                decoding,
                long_form,
                self.settings["audio_encoder_compute_units"],
                self.settings["text_decoder_compute_units"],
            )
            done = subprocess.run(command, capture_output=True, text=True, timeout=float(self.settings["timeout_s"]))
            if done.returncode != 0:
                raise WhisperbenchError(f"whisperkit-cli exited with {done.returncode}: {done.stderr.strip()[-500:]}")
            reports = [read_report(tmp, Path(path).stem) for path in paths]
        return [transcript_from_report(r, self.decoding.word_timestamps, long_form) for r in reports]

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        assert audio is not None  # needs_audio: the runner passes the decoded clip
        return self._run([audio], [example], long_form)[0]

    def transcribe_batch(
        self, audios: list[np.ndarray], examples: list[Example], *, timestamps: bool = False
    ) -> list[Transcript]:
        return self._run(audios, examples, long_form=timestamps)

    def describe(self) -> dict:
        return super().describe() | {"whisperkit_model": self.settings["model_path"] or f"openai_whisper-{self.model}"}


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = WhisperKitAdapter
