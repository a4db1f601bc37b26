"""How one example's audio reaches an adapter: natively, or cut into 30 s windows by the harness.

Three strategies, chosen per run with ``--long-form`` and recorded in run.json:

``native``
    The implementation's own algorithm gets the whole audio (openai-whisper's sequential 30 s
    windows that seek by predicted timestamps, whisper.cpp's, the API's …). Short-form always
    runs this way.
``sequential``
    The harness cuts back-to-back 30 s windows (no overlap) and transcribes them one at a time;
    texts are joined. The baseline for implementations that only do 30 s.
``chunked``
    Whisper JAX / transformers-pipeline chunking: 30 s windows that overlap by ``2 * stride_s``
    (each window advances ``chunk_s - 2 * stride_s``), transcribed ``adapter.batch_size`` at a time
    with ``transcribe_batch`` and merged where consecutive windows agree inside the overlap.

Both harness strategies call ``adapter.transcribe_batch(..., timestamps=True)``: windows are decoded
with timestamp tokens (``-o without_timestamps=true`` turns them off), because without them Whisper
often stops after a word or two on a window that starts mid-sentence. They stream the audio window by window
(``stream_windows``), so memory does not
grow with the file's duration. Inference time is the time spent inside the adapter's calls only.
"""

from __future__ import annotations

import difflib
import io
import math
import re
import time
from collections.abc import Generator, Iterator
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from ..adapters.base import Adapter
from ..datasets.audio import SAMPLE_RATE, load_audio
from ..errors import AudioError, OptionError
from ..types import Example, Segment, Transcript, Word
from .choices import STRATEGIES

#: the seams of the harness's windowed strategies (``seams_from`` in a prediction's ``extra``)
SEAMS_FROM_HARNESS = "harness windows"
#: an unfinished last segment of the file's last window is transcribed again when it is this long
TAIL_MIN_S = 1.0
_READ_BLOCK_S = 10.0


@dataclass(frozen=True)
class LongFormConfig:
    """A long-form strategy and its window geometry (seconds)."""

    strategy: str = "native"
    chunk_s: float = 30.0
    stride_s: float = 5.0

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise OptionError(f"unknown long-form strategy {self.strategy!r}; choose one of {', '.join(STRATEGIES)}")
        if not 0 < self.chunk_s <= 30.0:
            raise OptionError(f"chunk_s must be in (0, 30] seconds (a Whisper window), got {self.chunk_s}")
        if self.strategy == "chunked" and not 0 <= 2 * self.stride_s < self.chunk_s:
            raise OptionError(f"stride_s must satisfy 0 <= 2 * stride_s < chunk_s, got stride_s={self.stride_s}")

    @property
    def step_s(self) -> float:
        """How far each window starts after the previous one."""
        return self.chunk_s - 2 * self.stride_s if self.strategy == "chunked" else self.chunk_s

    def resolved_for(self, adapter: type[Adapter] | Adapter) -> LongFormConfig:
        """``native`` falls back to ``chunked`` for adapters without a long-form algorithm of their own."""
        if self.strategy == "native" and not getattr(adapter, "native_long_form", True):
            return LongFormConfig("chunked", self.chunk_s, self.stride_s)
        return self

    def to_json(self) -> dict[str, Any]:
        """The configuration as run.json records it."""
        if self.strategy == "native":
            return {"strategy": "native"}
        data = asdict(self)
        if self.strategy == "sequential":
            data.pop("stride_s")
        return data

    def seams_source(self, adapter: Adapter) -> str:
        """Where the run's seams come from, as run.json's ``adapter_info.long_form_seams`` records it."""
        if self.strategy != "native":
            return SEAMS_FROM_HARNESS
        return adapter.native_seams or "not told (30 s marks)"

    def algorithm(self, adapter: Adapter) -> str:
        """The long-form algorithm as the leaderboard names it."""
        if self.strategy == "native":
            return adapter.long_form_algorithm
        if self.strategy == "sequential":
            return f"harness sequential: back-to-back {self.chunk_s:g} s windows, one at a time, texts joined"
        return (
            f"harness chunked: {self.chunk_s:g} s windows, {self.stride_s:g} s stride each side, "
            f"batch {adapter.batch_size}, merged at the overlaps"
        )


# --- windows ------------------------------------------------------------------------------------


def stream_windows(source: str | bytes, chunk_s: float, step_s: float) -> Generator[np.ndarray, int | None, None]:
    """Yield 16 kHz mono float32 windows of ``chunk_s`` every ``step_s``; the last one ends at the end.

    ``send(n)`` instead of ``next()`` makes the next window start ``n`` samples after the current
    one (openai-whisper's seek), also past the last window when it leaves audio untranscribed.
    Reads the file block by block (soundfile), mixes to mono and resamples incrementally (soxr),
    holding at most one window plus one read block in memory. Containers libsndfile cannot read
    are decoded whole (ffmpeg fallback of :func:`whisperbench.datasets.audio.load_audio`).
    """
    chunk, step = int(round(chunk_s * SAMPLE_RATE)), int(round(step_s * SAMPLE_RATE))
    buffer = np.zeros(0, dtype=np.float32)
    offset = 0  # absolute sample index of buffer[0]
    start = 0  # absolute sample index where the next window starts
    for block in _decoded_blocks(source):
        buffer = np.concatenate([buffer, block])
        while start + chunk < offset + len(buffer):  # a full window with audio after it
            advance = yield buffer[start - offset : start - offset + chunk].copy()
            start += step if advance is None else max(1, advance)
        if start > offset:  # samples before the next window are no longer needed
            buffer, offset = buffer[start - offset :], start
    end = offset + len(buffer)
    if end == 0:
        raise AudioError(f"audio {_label(source)} has no samples")
    while start < end:  # the window that reaches the end (and any a seek asks for after it)
        window = buffer[start - offset : start - offset + chunk]
        advance = yield window.copy()
        start += len(window) if advance is None else max(1, advance)


def _label(source: str | bytes) -> str:
    return source if isinstance(source, str) else f"<{len(source)} bytes>"


def _decoded_blocks(source: str | bytes) -> Iterator[np.ndarray]:
    import soundfile as sf

    try:
        handle = sf.SoundFile(io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source)
    except Exception:
        yield load_audio(source)  # ffmpeg fallback, or its clear AudioError
        return
    with handle:
        rate = handle.samplerate
        resampler = None
        if rate != SAMPLE_RATE:
            import soxr

            resampler = soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="float32", quality="HQ")
        frames = int(_READ_BLOCK_S * rate)
        while True:
            try:
                data = handle.read(frames, dtype="float32", always_2d=True)
            except Exception as exc:
                raise AudioError(f"cannot decode audio {_label(source)}: {exc}") from exc
            last = len(data) < frames
            mono = data.mean(axis=1, dtype=np.float32) if data.shape[1] > 1 else data[:, 0]
            if resampler is not None:
                mono = resampler.resample_chunk(mono, last=last)
            if len(mono):
                yield np.ascontiguousarray(mono, dtype=np.float32)
            if last:
                return


# --- merging --------------------------------------------------------------------------------------

_KEY = re.compile(r"[^\w']+")


def _key(word: str) -> str:
    return _KEY.sub("", word.lower())


def merge_overlapping(texts: list[str], window_s: list[float], overlap_s: float) -> str:
    """Join the texts of consecutive windows that overlap by ``overlap_s`` seconds.

    For each pair, the words that fall in the overlap are estimated from the speaking rate of each
    window; inside a generous search span around them, the longest run of words both windows agree
    on (case and punctuation ignored) is where they are joined: the left window's words up to the
    middle of that run, the right window's from there. Without any agreement the cut falls in the
    middle of the overlap by the same rate estimate. This is the idea of the transformers /
    Whisper JAX token merge, on words so that it works for any adapter's text.
    """
    merged: list[str] = []
    for index, text in enumerate(texts):
        words = text.split()
        if index == 0 or overlap_s <= 0:
            merged.extend(words)
            continue
        prev_rate = _words_per_s(texts[index - 1], window_s[index - 1])
        rate = _words_per_s(text, window_s[index])
        span_left = min(len(merged), int(math.ceil(prev_rate * overlap_s * 1.5)) + 2)
        span_right = min(len(words), int(math.ceil(rate * overlap_s * 1.5)) + 2)
        left = merged[len(merged) - span_left :]
        right = words[:span_right]
        match = difflib.SequenceMatcher(
            None, [_key(w) for w in left], [_key(w) for w in right], autojunk=False
        ).find_longest_match(0, len(left), 0, len(right))
        if match.size > 0:
            half = (match.size + 1) // 2
            cut_left = len(merged) - span_left + match.a + half
            cut_right = match.b + half
        else:
            cut_left = len(merged) - min(len(merged), int(round(prev_rate * overlap_s / 2)))
            cut_right = min(len(words), int(round(rate * overlap_s / 2)))
        del merged[cut_left:]
        merged.extend(words[cut_right:])
    return " ".join(merged)


def _words_per_s(text: str, seconds: float) -> float:
    return len(text.split()) / seconds if seconds > 0 else 0.0


# --- running an example ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """One example's transcript with the audio duration and the time spent inside the adapter."""

    transcript: Transcript
    audio_s: float
    infer_s: float | None
    cpu_s: float | None = None  # the process's CPU seconds during the calls (None: not measured)


class Clock:
    """Wall and process-CPU seconds since it was made (CPU: every thread of this process, what a model's thread
    pool burns; a busy machine disturbs it less than the wall clock)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def elapsed(self) -> tuple[float, float]:
        """(wall seconds, CPU seconds) since the clock was made."""
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def _own(measured: float, known: float | None) -> float:
    """The adapter's own figure where it knows better (a device's recorded time), else the harness's."""
    return measured if known is None else known


def _reported_cpu(transcripts: list[Transcript]) -> float | None:
    """The CPU seconds the transcripts report between them (None when one does not)."""
    reported = [t.cpu_s for t in transcripts]
    return None if not reported or None in reported else sum(r for r in reported if r is not None)


class Strategy:
    """Turns an example into adapter calls; subclasses are registered in ``_STRATEGIES`` by name."""

    name: ClassVar[str]

    def __init__(self, config: LongFormConfig):
        self.config = config

    def run(self, adapter: Adapter, example: Example, long_form: bool) -> Outcome:
        """Transcribe one example with this strategy: its transcript, or the error that failed it."""
        raise NotImplementedError


class NativeStrategy(Strategy):
    """Long-form audio handed whole to the implementation's own long-form decoding (its windows, its seams)."""

    name = "native"

    def run(self, adapter: Adapter, example: Example, long_form: bool) -> Outcome:
        if not adapter.needs_audio:  # a recorded hypothesis: the device's times when its file carries them
            transcript = adapter.transcribe(None, example, long_form=long_form)
            return Outcome(transcript, example.duration_s or 0.0, _own(0.0, transcript.infer_s), transcript.cpu_s)
        audio = load_audio(example.audio)
        audio_s = len(audio) / SAMPLE_RATE
        clock = Clock()
        transcript = adapter.transcribe(audio, example, long_form=long_form)
        wall, cpu = clock.elapsed()
        cpu_s = _own(cpu, transcript.cpu_s) if adapter.cpu_in_process or transcript.cpu_s is not None else None
        return Outcome(transcript, audio_s, _own(wall, transcript.infer_s), cpu_s)


class WindowedStrategy(Strategy):
    """``sequential`` and ``chunked``: windows streamed from the file, ``batch`` at a time."""

    name = "windowed"

    def batch(self, adapter: Adapter) -> int:
        """How many 30 s windows go to the adapter at once: its batch size when chunked, one when sequential."""
        return max(1, adapter.batch_size) if self.config.strategy == "chunked" else 1

    @staticmethod
    def timestamps(adapter: Adapter) -> bool:
        """Windows are decoded with timestamp tokens unless ``without_timestamps`` says otherwise."""
        return not adapter.decoding.timestamps_off(True)

    def run(self, adapter: Adapter, example: Example, long_form: bool) -> Outcome:
        if not adapter.needs_audio:
            raise OptionError(f"adapter {adapter.name} takes no audio: use --long-form native")
        timestamps, infer_s, count = self.timestamps(adapter), 0.0, 0
        cpu_s: float | None = 0.0
        tokens: list[int | None] = []

        def transcribe(windows: list[np.ndarray]) -> list[Transcript]:
            nonlocal infer_s, cpu_s, count
            probes = [Example(id=f"{example.id}@{count + i}", audio=b"", text="") for i in range(len(windows))]
            count += len(windows)
            clock = Clock()
            out = adapter.transcribe_batch(windows, probes, timestamps=timestamps)
            wall, cpu = clock.elapsed()
            infer_s += wall
            # out of this process (whisper.cpp's worker), each window's transcript says its CPU seconds
            own = cpu if adapter.cpu_in_process else _reported_cpu(out)
            cpu_s = None if cpu_s is None or own is None else cpu_s + own
            tokens.extend(t.tokens for t in out)  # every window decoded, overlaps too: what the time was spent on
            return out

        windows = stream_windows(example.audio, self.config.chunk_s, self.config.step_s)
        if self.config.strategy == "sequential":
            texts, audio_s, timed = self._sequential(windows, transcribe)
            text = " ".join(t for t in texts if t)
        else:
            texts, lengths, timed = self._chunked(windows, transcribe, self.batch(adapter))
            audio_s = self.config.step_s * (len(lengths) - 1) + lengths[-1]
            text = merge_overlapping(texts, lengths, 2 * self.config.stride_s)
            timed = [
                _central(part, self.config.stride_s, index == 0, index >= len(lengths) - 1)
                for index, part in enumerate(timed)
            ]
        segments, words = stitch_timing(timed)
        extra = {
            "windows": len(texts),
            "window_texts": texts,
            "seams_s": self._seams(timed),
            "seams_from": SEAMS_FROM_HARNESS,
        }
        decoded = None if not tokens or None in tokens else sum(t for t in tokens if t is not None)
        transcript = Transcript(text=text, segments=segments, words=words, extra=extra, tokens=decoded)
        return Outcome(transcript, audio_s, infer_s, cpu_s)

    def _seams(self, timed: list[TimedPart]) -> list[float]:
        """Where one window's text gives way to the next, in seconds into the file: each later window's start
        (sequential), or the middle of each overlap, where the central parts meet (chunked)."""
        starts = [round(part.offset_s, 3) for part in timed[1:]]
        if self.config.strategy == "sequential":
            return starts
        return [round(start + self.config.stride_s, 3) for start in starts]

    @staticmethod
    def _sequential(windows, transcribe) -> tuple[list[str], float, list[TimedPart]]:
        """One window at a time; the next starts where an unfinished last segment starts, if any."""
        texts, start, window, timed = [], 0, next(windows), []
        while True:
            result = transcribe([window])[0]
            texts.append(result.text.strip())
            timed.append(TimedPart(result, start / SAMPLE_RATE, len(window) / SAMPLE_RATE))
            advance = _resume_samples(result, len(window))
            step = advance if advance is not None else len(window)
            try:
                window = windows.send(advance)
            except StopIteration:
                return texts, (start + step) / SAMPLE_RATE, timed
            start += step

    def _chunked(self, windows, transcribe, batch: int) -> tuple[list[str], list[float], list[TimedPart]]:
        """Overlapping windows, ``batch`` at a time; texts, window lengths (s) and timed results, in order."""
        results: list[Transcript] = []
        lengths: list[float] = []
        pending: list[np.ndarray] = []
        for window in windows:
            lengths.append(len(window) / SAMPLE_RATE)
            pending.append(window)
            if len(pending) == batch:
                results.extend(transcribe(pending))
                last, pending = pending[-1], []
        if pending:
            results.extend(transcribe(pending))
            last = pending[-1]
        texts = [r.text.strip() for r in results]
        step = self.config.step_s
        timed = [TimedPart(r, i * step, length) for i, (r, length) in enumerate(zip(results, lengths))]
        # The file's last window has no successor to cover an unfinished last segment: like
        # openai-whisper's loop, transcribe the audio from where that segment starts.
        advance = _resume_samples(results[-1], len(last))
        if advance is not None:
            tail = transcribe([last[advance:]])[0]
            texts[-1] = f"{texts[-1]} {tail.text.strip()}".strip()
            timed[-1] = timed[-1].extended(tail, advance / SAMPLE_RATE)
        return texts, lengths, timed


@dataclass
class TimedPart:
    """One window's transcript and where the window starts (and lasts) in the file, in seconds."""

    transcript: Transcript
    offset_s: float
    length_s: float

    def extended(self, tail: Transcript, at_s: float) -> TimedPart:
        """This window with the transcript of its re-decoded tail (which starts ``at_s`` into the window)."""
        moved = shift_transcript(tail, at_s)
        words = None if self.transcript.words is None or moved.words is None else self.transcript.words + moved.words
        joined = Transcript(text=self.transcript.text, segments=self.transcript.segments + moved.segments, words=words)
        return TimedPart(joined, self.offset_s, self.length_s)


def shift_transcript(transcript: Transcript, offset_s: float) -> Transcript:
    """``transcript``'s segments and words moved ``offset_s`` seconds later (window times -> file times)."""
    segments = [Segment(s.start + offset_s, s.end + offset_s, s.text) for s in transcript.segments]
    words = (
        None
        if transcript.words is None
        else [Word(w.word, w.start + offset_s, w.end + offset_s) for w in transcript.words]
    )
    return Transcript(text=transcript.text, segments=segments, words=words)


def _central(part: TimedPart, stride_s: float, first: bool, last: bool) -> TimedPart:
    """A chunked window's segments and words whose middle lies outside its strides (the parts its neighbours
    do not also cover): the first window keeps its start, the last its end."""
    low = -math.inf if first else stride_s
    high = math.inf if last else part.length_s - stride_s

    def inside(start: float, end: float) -> bool:
        return low <= (start + end) / 2 < high

    t = part.transcript
    words = None if t.words is None else [w for w in t.words if inside(w.start, w.end)]
    kept = Transcript(text=t.text, segments=[s for s in t.segments if inside(s.start, s.end)], words=words)
    return TimedPart(kept, part.offset_s, part.length_s)


def stitch_timing(parts: list[TimedPart]) -> tuple[list[Segment], list[Word] | None]:
    """The windows' segments and words in file times, in order; words only when every window had them. A time past
    its window's audio (Whisper times a short last window as if its padding were speech) ends at the window's end:
    the harness's own merging never writes times past the audio.

    >>> a = TimedPart(Transcript("a", [Segment(0.0, 1.0, "a")], [Word("a", 0.2, 0.8)]), 0.0, 30.0)
    >>> b = TimedPart(Transcript("b", [Segment(0.5, 2.0, "b")], [Word("b", 0.6, 1.0)]), 30.0, 30.0)
    >>> segments, words = stitch_timing([a, b])
    >>> segments
    [Segment(start=0.0, end=1.0, text='a'), Segment(start=30.5, end=32.0, text='b')]
    >>> stitch_timing([TimedPart(Transcript("c", [Segment(1.0, 29.0, "c")]), 60.0, 4.28)])[0]
    [Segment(start=61.0, end=64.28, text='c')]
    >>> words
    [Word(word='a', start=0.2, end=0.8), Word(word='b', start=30.6, end=31.0)]
    """
    moved = [(shift_transcript(part.transcript, part.offset_s), part.offset_s + part.length_s) for part in parts]
    segments = [Segment(*_within(x.start, x.end, end), x.text) for t, end in moved for x in t.segments]
    words = (
        None
        if any(t.words is None for t, _ in moved)
        else [Word(w.word, *_within(w.start, w.end, end)) for t, end in moved for w in t.words or []]
    )
    return segments, words


def _within(start: float, end: float, limit: float) -> tuple[float, float]:
    """``start``–``end`` ending by ``limit`` at the latest."""
    return min(start, limit), min(end, limit)


def _resume_samples(result: Transcript, window_samples: int) -> int | None:
    """Where to resume after a window whose last segment was unfinished; None: it was finished."""
    if result.resume_s is None:
        return None
    resume = int(result.resume_s * SAMPLE_RATE)
    return resume if window_samples - resume >= TAIL_MIN_S * SAMPLE_RATE and resume > 0 else None


def strategy_for(config: LongFormConfig, long_form: bool) -> Strategy:
    """The strategy that runs examples of a dataset of this form."""
    if not long_form or config.strategy == "native":
        return NativeStrategy(config)
    return WindowedStrategy(config)
