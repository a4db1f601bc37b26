"""One loaded adapter turning examples into predictions (the raw output; scoring comes after the run): what every
backend (in-process, process
pool, Ray actor) runs, so timing, batching, long-form strategies and failure records are the same everywhere."""

from __future__ import annotations

import logging
import time
import traceback

import numpy as np

from ..adapters.base import Adapter
from ..datasets.audio import SAMPLE_RATE, load_audio
from ..types import Example, Prediction, storable_text, stored_output
from .longform import Clock, LongFormConfig, Outcome, strategy_for
from .retry import RetryPolicy

log = logging.getLogger(__name__)

WARMUP_AUDIO_S = 2.0
#: recorded hypotheses (no inference) are written this many at a time: one ``write`` a line cost more than the rest
RECORDED_GROUP = 512


def error_text(exc: BaseException) -> str:
    """One line naming an exception (its type and message), as a failed prediction records it."""
    return f"{type(exc).__name__}: {exc}".strip()


class ExampleRunner:
    """Holds one loaded adapter and turns examples into predictions (raw output, unscored)."""

    def __init__(
        self,
        adapter: Adapter,
        long_form: bool,
        long_form_config: LongFormConfig | None = None,
        one_language_per_batch: bool = False,
        retry: RetryPolicy | None = None,
    ):
        self.adapter = adapter
        self.retry = retry or RetryPolicy()  # an isolated adapter's dead child: the example is tried again
        self.one_language_per_batch = one_language_per_batch  # -o language=dataset: a batch decodes one language
        self.long_form = long_form
        self.strategy = strategy_for((long_form_config or LongFormConfig()).resolved_for(adapter), long_form)
        #: segment times are stored when the windows were decoded with timestamps (else they only span the clip)
        self.timed = adapter.segments_timed(long_form)
        self.load_s = 0.0
        self.warmup_s = 0.0

    def load(self, warmup: bool) -> None:
        """Load the adapter's model (and warm it up when asked); the load and warm-up seconds are recorded."""
        self.adapter.refuse_word_timing()
        start = time.perf_counter()
        self.adapter.load()
        self.load_s = time.perf_counter() - start
        if warmup and self.adapter.needs_audio:
            noise = np.random.default_rng(0).normal(0, 1e-3, int(WARMUP_AUDIO_S * SAMPLE_RATE)).astype(np.float32)
            probe = Example(id="__warmup__", audio=b"", text="")
            start = time.perf_counter()
            try:
                if self.adapter.batch_size > 1:
                    size = self.adapter.batch_size
                    self.adapter.transcribe_batch([noise] * size, [probe] * size)
                else:
                    self.adapter.transcribe(noise, probe, long_form=False)
            except Exception:  # a warm-up failure must not hide the real examples' results
                pass
            self.warmup_s = time.perf_counter() - start

    def reload(self) -> float | None:
        """Load the (closed) adapter's model once more and close it again: the seconds of that load — the library
        imported, the weights in the page cache — or None when the reload failed (logged; the run's results
        stand)."""
        start = time.perf_counter()
        try:
            self.adapter.load()
            seconds = time.perf_counter() - start
        except Exception as exc:  # a measurement after the results: it never fails the run
            log.warning("the warm reload of the model failed: %s: %s", type(exc).__name__, exc)
            seconds = None
        finally:
            self.adapter.close()
        return seconds

    @property
    def batch_size(self) -> int:
        """How many examples go to the adapter at once (short-form on batching adapters only)."""
        if self.long_form or not self.adapter.needs_audio:
            return 1
        return max(1, self.adapter.batch_size)

    @property
    def write_every(self) -> int:
        """How many examples' predictions are written at once: a batch's; one where the adapter infers one at a
        time (each result on disk as it finishes); recorded hypotheses, which cost microseconds, in groups."""
        return self.batch_size if self.adapter.needs_audio else RECORDED_GROUP

    def run(self, example: Example) -> Prediction:
        """One example, tried again while its (isolated) worker dies and the retry policy allows."""
        tries = 0
        while True:
            tries += 1
            pred = Prediction.for_example(example)
            try:
                _fill(pred, self.strategy.run(self.adapter, example, self.long_form), self.timed)
            except Exception as exc:  # recorded as a failed example, never dropped
                if self.retry.retried(exc) and self.retry.again(tries):
                    continue
                _fail(pred, exc, self.retry.gave_up(tries, str(exc)) if self.retry.retried(exc) else None)
            if tries > 1:
                pred.extra["attempts"] = tries
            return pred

    def run_batch(self, examples: list[Example]) -> list[Prediction]:
        """Short-form examples in one ``transcribe_batch`` call.

        Each example's inference time is the batch's time shared in proportion to audio duration
        (recorded with the batch size in ``extra.batch``). If the batch call fails, its examples
        run one by one so that only the faulty ones fail.
        """
        if len(examples) == 1 or self.batch_size == 1:
            return [self.run(example) for example in examples]
        if self.one_language_per_batch and len({example.language for example in examples}) > 1:
            done = {
                pred.id: pred
                for language in dict.fromkeys(example.language for example in examples)
                for pred in self.run_batch([example for example in examples if example.language == language])
            }
            return [done[example.id] for example in examples]
        preds = [Prediction.for_example(example) for example in examples]
        audios, ready = [], []
        for example, pred in zip(examples, preds):
            try:
                audios.append(load_audio(example.audio))
            except Exception as exc:
                _fail(pred, exc)
                continue
            pred.audio_s = len(audios[-1]) / SAMPLE_RATE
            ready.append((example, pred))
        if ready:
            clock = Clock()
            try:
                transcripts = self.adapter.transcribe_batch(audios, [example for example, _ in ready])
                if len(transcripts) != len(ready):
                    raise RuntimeError(f"transcribe_batch returned {len(transcripts)} results for {len(ready)} audios")
            except Exception:
                return [self.run(example) for example in examples]
            elapsed, cpu = clock.elapsed()
            total_s = sum(pred.audio_s for _, pred in ready)
            for (_, pred), transcript in zip(ready, transcripts):
                share = pred.audio_s / total_s if total_s > 0 else 1.0 / len(ready)
                cpu_s = cpu * share if self.adapter.cpu_in_process else None
                outcome = Outcome(
                    transcript,
                    pred.audio_s,
                    elapsed * share if transcript.infer_s is None else transcript.infer_s,
                    cpu_s if transcript.cpu_s is None else transcript.cpu_s,
                )
                _fill(pred, outcome, self.timed)
                pred.extra["batch"] = {"size": len(ready), "batch_s": round(elapsed, 6)}
        return preds


def _fill(pred: Prediction, outcome: Outcome, timed: bool = True) -> None:
    """Copy an adapter's outcome into a prediction (its segment times only when ``timed``); times that cannot be
    right are refused, with the reason, and the text still scores (``Prediction.refuse_bad_times``)."""
    transcript = outcome.transcript
    pred.audio_s = outcome.audio_s
    if timed and transcript.segments:
        pred.segments = [
            {"start": round(s.start, 3), "end": round(s.end, 3), "text": storable_text(s.text)}
            for s in transcript.segments
        ]
    if transcript.words is not None:
        pred.words = [
            {"word": storable_text(w.word), "start": round(w.start, 3), "end": round(w.end, 3)}
            for w in transcript.words
        ]
    for reason in pred.refuse_bad_times():
        log.warning("%s", reason)
    if outcome.infer_s is not None:
        pred.infer_s = outcome.infer_s
    pred.cpu_s = outcome.cpu_s
    pred.tokens = transcript.tokens
    if transcript.stream is not None:
        pred.stream = [
            emission.to_json()
            | {"committed": storable_text(emission.committed), "interim": storable_text(emission.interim)}
            for emission in transcript.stream
        ]
    pred.hypothesis = stored_output(transcript.text)  # a lone surrogate would stop the store mid-line
    pred.extra.update(transcript.extra)
    if transcript.cached:
        pred.extra["cached"] = True
    if transcript.language:
        pred.detected_language = transcript.language
    if transcript.timings:
        pred.extra["timings"] = transcript.timings


def _fail(pred: Prediction, exc: BaseException, why: str | None = None) -> None:
    pred.status = "error"
    pred.error = f"example {pred.id}: {why or error_text(exc)}"
    pred.extra["traceback"] = traceback.format_exc(limit=5)


def batches(items: list, size: int) -> list[list]:
    """``items`` in consecutive lists of ``size`` (at least 1)."""
    return [items[i : i + size] for i in range(0, len(items), max(1, size))]
