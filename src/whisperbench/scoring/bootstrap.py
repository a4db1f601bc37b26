"""Uncertainty by resampling examples (seeded bootstrap): CIs for WER and QoI, and a paired test.

Examples, not words, are resampled: words of one utterance are not independent. Each resample
recomputes the pooled WER = Σ errors / Σ transcript words of the drawn examples. Every statistic here is a ratio
of sums, drawn in bounded chunks by :func:`~whisperbench.scoring.significance.resampled_sums` (memory O(n), never
O(n × resamples)); the paired tests, blocks and non-inferiority are in :mod:`whisperbench.scoring.significance`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .qoi import QoiResult
from .significance import resampled_sums

DEFAULT_RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    """A confidence interval: low and high bounds (percent or points) at ``confidence`` (a fraction)."""

    low: float
    high: float
    confidence: float

    def __str__(self) -> str:
        return f"[{self.low:.2f}, {self.high:.2f}]"


@dataclass(frozen=True)
class PairedTest:
    """Candidate minus reference WER (points), its CI, and the two-sided bootstrap p-value."""

    delta: float
    interval: Interval
    p_value: float


def _sums(resamples: int, seed: int, *columns: np.ndarray) -> np.ndarray:
    """Resampled column sums (resamples × columns), drawn a bounded chunk at a time."""
    return resampled_sums(np.column_stack(columns).astype(float), resamples, seed)


def _quantiles(values: np.ndarray, confidence: float) -> Interval:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return Interval(float(low), float(high), confidence)


def wer_interval(
    errors: ArrayLike,
    transcript_words: ArrayLike,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Interval | None:
    """CI of the pooled WER (percent) from per-example error and transcript-word counts."""
    errors, transcript_words = np.asarray(errors, dtype=float), np.asarray(transcript_words, dtype=float)
    if len(errors) == 0 or transcript_words.sum() == 0:
        return None
    sums = _sums(resamples, seed, errors, transcript_words)
    words = sums[:, 1]
    values = 100.0 * sums[:, 0] / np.where(words > 0, words, np.nan)
    return _quantiles(values[~np.isnan(values)], confidence)


def qoi_interval(
    result: QoiResult, confidence: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Interval | None:
    """CI of QoI (percent) by resampling the joined examples."""
    if not len(result.examples):
        return None
    _, ref, cand, _ = result.examples.paired_counts()
    return share_interval(cand <= ref, confidence, resamples, seed)


def share_interval(
    hits: ArrayLike, confidence: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Interval | None:
    """CI of the share (percent) of examples where ``hits`` is true (QoI's: candidate no worse), examples
    resampled; None without examples.

    >>> share_interval([True, True, True]).low
    100.0
    """
    ok = np.asarray(hits, dtype=float)
    if not len(ok):
        return None
    return _quantiles(100.0 * _sums(resamples, seed, ok)[:, 0] / len(ok), confidence)


def paired_wer_test(
    result: QoiResult, confidence: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> PairedTest | None:
    """Paired bootstrap over joined examples: does the candidate's WER differ from the reference's?

    Both WERs are recomputed on the same drawn examples; the p-value is twice the smaller share of
    resampled differences on either side of zero (capped at 1).
    """
    _, ref, cand, words = result.examples.paired_counts()
    return paired_rate_test(ref, cand, words, confidence, resamples, seed)


def paired_rate_test(
    ref: np.ndarray,
    cand: np.ndarray,
    totals: np.ndarray,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedTest | None:
    """Paired bootstrap of any pooled error rate with one denominator for both sides (errors per transcript unit:
    WER over transcript words, PER over transcript marks): candidate minus reference in points, its CI, p-value;
    None without units.

    >>> t = paired_rate_test(np.array([1, 0, 2]), np.array([2, 1, 2]), np.array([10, 10, 10]), resamples=200)
    >>> round(t.delta, 2), t.interval.low <= t.delta <= t.interval.high
    (6.67, True)
    """
    words = np.asarray(totals, dtype=float)
    ref, cand = np.asarray(ref, dtype=float), np.asarray(cand, dtype=float)
    if not len(words) or words.sum() == 0:
        return None
    delta = 100.0 * (cand.sum() - ref.sum()) / words.sum()
    sums = _sums(resamples, seed, cand - ref, words)
    drawn_words = sums[:, 1]
    keep = drawn_words > 0
    deltas = 100.0 * sums[keep, 0] / drawn_words[keep]
    p_value = min(1.0, 2.0 * min((deltas <= 0).mean(), (deltas >= 0).mean()))
    return PairedTest(float(delta), _quantiles(deltas, confidence), float(p_value))
