"""The scoring engine: the kernel that scores one example (the normalized texts and the word and character alignment
counts: :class:`~whisperbench.types.ExampleScore`) and the pool of spawned worker processes that scores many
(:func:`map_ranges`, :func:`worker_pool`). No I/O; the run's figures are :mod:`whisperbench.scoring.figures`'."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from ..core.languages import cer_text, headline_metric
from ..process.child import die_with_parent
from ..process.host import idle_cpus
from ..process.start_method import worker_context
from ..types import ExampleScore, Prediction, UnscoredError, WordCounts
from .normalize import normalize
from .wer import align, align_characters

#: fewest predictions scored on several processes (below it a pool costs more than it saves: each worker is a fresh
#: interpreter that imports the scoring modules first, about 0.4 s of one core: docs/benchmarks.md)
PARALLEL_MIN = 20_000


def score_prediction(pred: Prediction, normalizer: str, characters: bool = True) -> Prediction:
    """Return a copy of ``pred`` with its :class:`~whisperbench.types.ExampleScore` with ``normalizer``: the
    normalized texts, S/D/I/hits and WER over words, the same over characters (CER; spaces left out for languages
    written without them). The raw output is not changed.

    A failed example is scored as an empty hypothesis (every transcript word deleted), so a failure
    can never lower a run's WER or CER. With ``characters=False`` the character alignment is skipped
    (the score's ``chars`` stay None: the caller asks for WER only).
    """
    return pred.with_score(score_example(pred, normalizer, characters))


def score_example(pred: Prediction, normalizer: str, characters: bool = True) -> ExampleScore:
    """The score of ``pred``'s raw output with ``normalizer`` (a pure function of its texts and language).

    >>> score = score_example(Prediction("a", "Hello, world!", "hello word"), "basic")
    >>> score.words, round(score.wer, 1), score.normalizer
    (WordCounts(hits=1, substitutions=1, deletions=0, insertions=0), 50.0, 'basic')
    """
    return score_texts(
        pred.transcript, pred.hypothesis if pred.status == "ok" else None, pred.language_label, normalizer, characters
    )


def score_texts(
    transcript: str, hypothesis: str | None, language: str | None, normalizer: str, characters: bool
) -> ExampleScore:
    """The score of one text pair; ``hypothesis`` None: the example failed (an empty hypothesis).

    >>> score_texts("Hello there.", "hello bear", None, "english", True).words
    WordCounts(hits=1, substitutions=1, deletions=0, insertions=0)
    """
    transcript_norm = normalize(transcript, normalizer)
    hyp_norm = normalize(hypothesis, normalizer) if hypothesis is not None else ""
    chars = align_characters(cer_text(transcript_norm, language), cer_text(hyp_norm, language)) if characters else None
    return ExampleScore(normalizer, transcript_norm, hyp_norm, align(transcript_norm, hyp_norm), chars)


def _score_range(rows: Rows, start: int, stop: int) -> list[tuple[Any, ...]]:
    normalizer, characters = rows.settings
    return [score_example(pred, normalizer, characters).packed() for pred in rows.items[start:stop]]


def score_predictions(
    predictions: Sequence[Prediction], normalizer: str, characters: bool = True, workers: int | None = None
) -> list[Prediction]:
    """:func:`score_prediction` over many predictions, in order; on ``workers`` processes (default: the idle cores
    this process may use, :func:`pool_size`) when there are at least ``PARALLEL_MIN`` of them, else in this process
    (:func:`map_ranges`)."""
    parts = map_ranges(_score_range, Rows(predictions, (normalizer, characters)), len(predictions), workers)
    return with_packed(predictions, (packed for part in parts for packed in part))


def with_packed(predictions: Iterable[Prediction], packed: Iterable[tuple[Any, ...]]) -> list[Prediction]:
    """``predictions`` in order, each with the score a worker sent back packed (:meth:`ExampleScore.packed`)."""
    return [pred.with_score(ExampleScore.unpacked(values)) for pred, values in zip(predictions, packed)]


def raw(scored: Sequence[Prediction]) -> Sequence[Prediction]:
    """The predictions of ``scored`` as stored, their raw fields the same, in the same order (without making each
    scored copy where ``scored`` makes them on read: :class:`~whisperbench.scoring.table.ScoredOnRead`); for
    picking the few a metric reads."""
    return getattr(scored, "raw", scored)


def pool_size(
    count: int, workers: int | None, minimum: int | None = None, since: dict[str, float] | None = None
) -> int:
    """How many processes score ``count`` items: 1 (this one) below ``minimum`` (default ``PARALLEL_MIN``), else
    ``workers``, by default the cores this process may use that other processes leave idle
    (:func:`~whisperbench.process.host.idle_cpus`, measured from the counters ``since`` where given): on a machine
    whose cores others already take, a pool's own costs (its workers' start, parsing there, sending results back)
    are not paid back, and one process is faster (docs/benchmarks.md)."""
    if count < (PARALLEL_MIN if minimum is None else minimum):
        return 1
    return workers or idle_cpus(since)


def in_parallel(count: int, workers: int | None, minimum: int | None = None) -> bool:
    """Whether ``count`` items call for a pool (:func:`pool_size` of at least 2)."""
    return pool_size(count, workers, minimum) >= 2


#: the most items one worker call takes (a part is pickled to its worker and its result back: smaller parts keep
#: both workers busy to the end and the memory of one part small)
RANGE_MAX = 25_000


def _ranges(count: int, workers: int) -> list[tuple[int, int]]:
    """Consecutive ``(start, stop)`` ranges covering ``range(count)``, four per worker, at most ``RANGE_MAX`` long.

    >>> _ranges(10, 2)
    [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    >>> len(_ranges(1_000_000, 2)), _ranges(1_000_000, 2)[-1]
    (40, (975000, 1000000))
    """
    size = max(1, min(RANGE_MAX, -(-count // (workers * 4))))
    return [(start, min(start + size, count)) for start in range(0, count, size)]


class Rows:
    """Items and the settings every range of them is scored with; sliced, the settings go with each part."""

    def __init__(self, items: Sequence[Any], settings: Any) -> None:
        self.items, self.settings = items, settings

    def __getitem__(self, part: slice) -> Rows:
        return Rows(self.items[part], self.settings)


def map_ranges(
    fn: Callable[[Any, int, int], Any],
    shared: Any,
    count: int,
    workers: int | None = None,
    minimum: int | None = None,
    backwards: bool = False,
) -> list[Any]:
    """``fn(shared, start, stop)`` over consecutive ranges of ``range(count)`` (:func:`_ranges`), results in order;
    on a pool of :func:`pool_size` processes (``workers``, by default the idle cores this process may use) when
    that is 2 or more, else one call here.

    A worker gets only its part: ``shared[start:stop]`` (``shared`` slices itself: a list, or an object that keeps
    what every part needs), pickled, and calls ``fn(part, 0, stop - start)``; ``fn`` is a module-level function. The
    workers are fresh interpreters (:func:`whisperbench.process.start_method.worker_context`: spawned, so safe from
    any thread of any process, and never running the caller's script again), end with this
    process however it ends (:func:`_worker_start`), and are gone when this returns or raises (a range that
    raises raises here; the ranges not started are dropped). ``backwards``: the last range is handed out first (the
    costly ones are last in a run's order; the range a worker starts last should be a cheap one), the results
    still in order.

    >>> map_ranges(_items, list("abcdefghij"), 10, workers=2, minimum=1, backwards=True)
    ['ab', 'cd', 'ef', 'gh', 'ij']
    """
    workers = pool_size(count, workers, minimum)
    if workers < 2:
        return [fn(shared, 0, count)]
    spans = _ranges(count, workers)
    order = spans[::-1] if backwards else spans
    calls = [(fn, shared[start:stop], stop - start) for start, stop in order]
    pool = worker_pool(min(workers, len(calls)))
    try:
        results = list(pool.map(range_call, calls))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results[::-1] if backwards else results


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` fresh interpreters (spawned: safe from any thread of any process) that end with this
    process however it ends (:func:`_worker_start`); each call is ``(fn, part, count)`` through :func:`range_call`."""
    return ProcessPoolExecutor(workers, mp_context=worker_context(), initializer=_worker_start, initargs=(os.getpid(),))


def _worker_start(parent_pid: int) -> None:
    """A pool worker's first step: end when ``parent_pid`` ends, even killed with SIGKILL (the kernel's
    parent-death signal: the pool starts its workers from the calling thread, which waits in :func:`map_ranges`
    until they are gone; and a watch of the parent where the kernel has no such signal)."""
    die_with_parent(parent_pid, by_signal=True)


def _items(shared: Sequence[str], start: int, stop: int) -> str:
    """A range's items joined (the doctest of :func:`map_ranges`)."""
    return "".join(shared[start:stop])


def range_call(args: tuple[Callable[[Any, int, int], Any], Any, int]) -> Any:
    """``fn(part, 0, count)`` of ``args``: what a pool worker runs."""
    fn, part, count = args
    return fn(part, 0, count)


def counts_of(pred: Prediction) -> WordCounts:
    """Word counts of an already-scored prediction (:func:`score_prediction`); unscored: UnscoredError."""
    return pred.scored().words


def char_counts_of(pred: Prediction) -> WordCounts:
    """Character counts of an already-scored prediction (scored with ``characters=True``); else UnscoredError."""
    if pred.score is None or pred.score.chars is None:
        raise UnscoredError(f"example {pred.id!r} has no character counts: score it with characters=True")
    return pred.score.chars


def headline_counts(pred: Prediction) -> WordCounts:
    """The counts QoI compares: characters for languages written without spaces, else words."""
    return char_counts_of(pred) if headline_metric(pred.language_label) == "cer" else counts_of(pred)


def rescored(pred: Prediction, normalizer: str) -> Prediction:
    """``pred`` scored with ``normalizer``, reusing its stored score when it fits.

    A score names the normalizer it was computed with. When it is ``normalizer`` and holds character counts too,
    ``pred`` is returned as it is (no normalizing, no alignment); otherwise it is scored afresh: a score is never
    read for another normalizer.

    >>> pred = score_prediction(Prediction("a", "Hello, world.", "hello world"), "basic")
    >>> rescored(pred, "basic") is pred, rescored(pred, "english").score.normalizer
    (True, 'english')
    """
    return pred if _fits(pred, normalizer) else score_prediction(pred, normalizer)


def _fits(pred: Prediction, normalizer: str) -> bool:
    """Whether ``pred``'s stored score was computed with ``normalizer`` and is whole (runs before CER: not)."""
    return pred.score is not None and pred.score.normalizer == normalizer and pred.score.chars is not None


def rescored_all(predictions: Iterable[Prediction], normalizer: str) -> list[Prediction]:
    """:func:`rescored` over many predictions, in order; those scored afresh go through
    :func:`score_predictions` (all cores for large sets)."""
    preds = list(predictions)
    stale = [i for i, pred in enumerate(preds) if not _fits(pred, normalizer)]
    if stale:
        for i, pred in zip(stale, score_predictions([preds[i] for i in stale], normalizer)):
            preds[i] = pred
    return preds
