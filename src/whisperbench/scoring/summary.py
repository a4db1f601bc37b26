"""Score stored predictions, one example at a time: the normalized texts and the word and character alignment
counts of each (:class:`~whisperbench.types.ExampleScore`). Pure functions, no I/O; the run's figures are
:mod:`whisperbench.scoring.figures`'."""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Sequence as SequenceABC
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from ..languages import cer_text, headline_metric
from ..types import ExampleScore, Prediction, UnscoredError, WordCounts
from . import prescore
from .normalize import normalize
from .wer import align, align_characters

#: fewest predictions scored afresh on several cores (below it a pool costs more than it saves: on 2 cores, measured
#: 2026-11-28, 2,000 pairs take as long either way, 5,000 take 0.33 s against 0.46 s in one process)
PARALLEL_MIN = 5_000
#: how scoring workers start: a fork shares the loaded modules (no second import), where the system has it
_START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


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
    transcript: str, hypothesis: Optional[str], language: Optional[str], normalizer: str, characters: bool
) -> ExampleScore:
    """The score of one text pair; ``hypothesis`` None: the example failed (an empty hypothesis). A pair scored
    ahead (:mod:`whisperbench.scoring.prescore`) is taken as it was scored.

    >>> score_texts("Hello there.", "hello bear", None, "english", True).words
    WordCounts(hits=1, substitutions=1, deletions=0, insertions=0)
    """
    if hypothesis is not None:
        ahead = prescore.lookup((transcript, hypothesis, language), normalizer, characters)
        if ahead is not None:
            return ExampleScore.unpacked(ahead)
    transcript_norm = normalize(transcript, normalizer)
    hyp_norm = normalize(hypothesis, normalizer) if hypothesis is not None else ""
    chars = align_characters(cer_text(transcript_norm, language), cer_text(hyp_norm, language)) if characters else None
    return ExampleScore(normalizer, transcript_norm, hyp_norm, align(transcript_norm, hyp_norm), chars)


def _score_range(shared: tuple[Sequence[Prediction], str, bool], start: int, stop: int) -> list[tuple[Any, ...]]:
    predictions, normalizer, characters = shared
    return [score_example(pred, normalizer, characters).packed() for pred in predictions[start:stop]]


def score_predictions(
    predictions: Sequence[Prediction], normalizer: str, characters: bool = True, workers: Optional[int] = None
) -> list[Prediction]:
    """:func:`score_prediction` over many predictions, in order; on all cores (``workers``, default the
    machine's) when there are at least ``PARALLEL_MIN`` of them, else in this process (forked workers read the
    predictions they inherit and give back scores: :func:`map_ranges`)."""
    prescore.collect()  # what a helper scored ahead, taken in before the workers fork (they inherit it)
    parts = map_ranges(_score_range, (predictions, normalizer, characters), len(predictions), workers)
    return with_packed(predictions, (packed for part in parts for packed in part))


def with_packed(predictions: Iterable[Prediction], packed: Iterable[tuple[Any, ...]]) -> list[Prediction]:
    """``predictions`` in order, each with the score a worker sent back packed (:meth:`ExampleScore.packed`)."""
    return [pred.with_score(ExampleScore.unpacked(values)) for pred, values in zip(predictions, packed)]


class ScoredOnRead(SequenceABC[Prediction]):
    """Predictions and the scores workers sent back packed, as the sequence of scored predictions
    :func:`with_packed` would make, each made when it is read (most never are: the run-level metrics read the
    score table, or pick a few predictions by their raw fields first: :func:`raw`). Reading an item twice makes
    two equal objects.

    >>> scored = ScoredOnRead([Prediction("a", "Hi.", "hi")], [("basic", "hi", "hi", (1, 0, 0, 0), None)])
    >>> len(scored), scored[0].scored().words.hits, [p.id for p in scored], raw(scored)[0].score is None
    (1, 1, ['a'], True)
    """

    def __init__(self, predictions: Sequence[Prediction], packed: Sequence[tuple[Any, ...]]) -> None:
        if len(predictions) != len(packed):
            raise ValueError(f"{len(predictions)} predictions and {len(packed)} scores")
        self.raw, self._packed = predictions, packed

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self.raw[index].with_score(ExampleScore.unpacked(self._packed[index]))

    def __iter__(self) -> Iterator[Prediction]:
        for pred, values in zip(self.raw, self._packed):
            yield pred.with_score(ExampleScore.unpacked(values))


def raw(scored: Sequence[Prediction]) -> Sequence[Prediction]:
    """The predictions of ``scored`` as stored, their raw fields the same, in the same order (without making each
    scored copy where ``scored`` makes them on read: :class:`ScoredOnRead`); for picking the few a metric reads."""
    return getattr(scored, "raw", scored)


def in_parallel(count: int, workers: Optional[int], minimum: int = PARALLEL_MIN) -> bool:
    """Whether ``count`` items (at least ``minimum`` are worth it) call for a pool of ``workers`` processes (default:
    one per core)."""
    return (workers or os.cpu_count() or 1) >= 2 and count >= minimum


#: the most items one worker call takes: a forked worker scoring ranges of 125,000 predictions slowed from 86 to
#: 115 µs a prediction as it went on (a million predictions, 2 workers, 2026-11-28); ranges of 25,000 stayed at 85
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


#: what forked :func:`map_ranges` workers read (set in the parent just before they are forked)
_SHARED: Any = None


def map_ranges(
    fn: Callable[[Any, int, int], Any],
    shared: Any,
    count: int,
    workers: Optional[int] = None,
    minimum: int = PARALLEL_MIN,
    backwards: bool = False,
) -> list[Any]:
    """``fn(shared, start, stop)`` over consecutive ranges of ``range(count)`` (:func:`_ranges`), results in order;
    on ``workers`` processes when ``count`` is worth it (:func:`in_parallel` with ``minimum``), else one call here.
    Forked workers read ``shared`` from the memory they inherit (nothing pickled: e.g. memory-mapped tables and row
    indices); spawned ones (where the system cannot fork) get it pickled with each range. ``backwards``: the last
    range is handed out first (where the costly ones are last: the helper scoring ahead goes from the front, and
    the range a worker starts last should be a cheap one), the results still in order.

    >>> map_ranges(_span, None, 10, workers=2, minimum=1, backwards=True)
    [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    """
    if not in_parallel(count, workers, minimum):
        return [fn(shared, 0, count)]
    global _SHARED
    workers = workers or os.cpu_count() or 1
    forked = _START_METHOD == "fork"
    calls = [(fn, None if forked else shared, start, stop) for start, stop in _ranges(count, workers)]
    if backwards:
        calls.reverse()
    _SHARED = shared if forked else None
    gc.freeze()  # what the workers inherit is never traced by their collector (nor its pages copied on write)
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(_START_METHOD))
    done = False
    try:
        results = list(pool.map(_range_call, calls))
        done = True
        return results[::-1] if backwards else results
    finally:
        # every result is in: the idle workers end while this process goes on (their exit took 10 ms of a 1 s
        # score); on a failure the ranges not started are dropped and the workers waited for
        pool.shutdown(wait=not done, cancel_futures=not done)
        gc.unfreeze()
        _SHARED = None


def _span(shared: Any, start: int, stop: int) -> tuple[int, int]:
    """A range as it is given (the doctest of :func:`map_ranges`)."""
    return start, stop


def _range_call(args: tuple[Callable[[Any, int, int], Any], Any, int, int]) -> Any:
    fn, shared, start, stop = args
    gc.disable()  # a range's objects live until it returns: tracing them again and again would only cost time
    try:
        return fn(_SHARED if shared is None else shared, start, stop)
    finally:
        gc.enable()


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
