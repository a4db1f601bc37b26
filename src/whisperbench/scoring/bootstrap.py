"""Uncertainty by resampling examples (seeded bootstrap): CIs for WER and QoI, and a paired test.

Examples, not words, are resampled: words of one utterance are not independent. Each resample
recomputes the pooled WER = Σ errors / Σ reference words of the drawn examples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from numpy.typing import ArrayLike

from .qoi import QoiResult

DEFAULT_RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
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


def _draws(n: int, resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _quantiles(values: np.ndarray, confidence: float) -> Interval:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return Interval(float(low), float(high), confidence)


def wer_interval(errors: ArrayLike, ref_words: ArrayLike, confidence: float = 0.95, resamples: int = DEFAULT_RESAMPLES,
                 seed: int = 0) -> Optional[Interval]:
    """CI of the pooled WER (percent) from per-example error and reference-word counts."""
    errors, ref_words = np.asarray(errors, dtype=float), np.asarray(ref_words, dtype=float)
    if len(errors) == 0 or ref_words.sum() == 0:
        return None
    idx = _draws(len(errors), resamples, seed)
    words = ref_words[idx].sum(axis=1)
    values = 100.0 * errors[idx].sum(axis=1) / np.where(words > 0, words, np.nan)
    return _quantiles(values[~np.isnan(values)], confidence)


def qoi_interval(result: QoiResult, confidence: float = 0.95, resamples: int = DEFAULT_RESAMPLES,
                 seed: int = 0) -> Optional[Interval]:
    """CI of QoI (percent) by resampling the joined examples."""
    if not result.examples:
        return None
    ok = np.array([not e.regressed for e in result.examples], dtype=float)
    return _quantiles(100.0 * ok[_draws(len(ok), resamples, seed)].mean(axis=1), confidence)


def paired_wer_test(result: QoiResult, confidence: float = 0.95, resamples: int = DEFAULT_RESAMPLES,
                    seed: int = 0) -> Optional[PairedTest]:
    """Paired bootstrap over joined examples: does the candidate's WER differ from the reference's?

    Both WERs are recomputed on the same drawn examples; the p-value is twice the smaller share of
    resampled differences on either side of zero (capped at 1).
    """
    examples = result.examples
    words = np.array([e.reference_words for e in examples], dtype=float)
    if not examples or words.sum() == 0:
        return None
    ref = np.array([e.reference_errors for e in examples], dtype=float)
    cand = np.array([e.candidate_errors for e in examples], dtype=float)
    delta = 100.0 * (cand.sum() - ref.sum()) / words.sum()
    idx = _draws(len(examples), resamples, seed)
    drawn_words = words[idx].sum(axis=1)
    keep = drawn_words > 0
    deltas = 100.0 * (cand[idx].sum(axis=1) - ref[idx].sum(axis=1))[keep] / drawn_words[keep]
    p_value = min(1.0, 2.0 * min((deltas <= 0).mean(), (deltas >= 0).mean()))
    return PairedTest(float(delta), _quantiles(deltas, confidence), float(p_value))
