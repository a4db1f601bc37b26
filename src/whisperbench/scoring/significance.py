"""Paired significance of a candidate against a reference on the same examples, and non-inferiority.

Everything here takes per-example counts of one comparison (joined by id, in one order): the reference's
and the candidate's errors and the reference's words (characters where CER is the headline). Three views:

- **sign test** (exact, two-sided): of the examples whose error count changed, how many improved against how
  many regressed, against a fair coin (``scipy.stats.binomtest``'s p-value); ties are left out.
- **MAPSSWE** (NIST sc_stats' matched-pair sentence-segment word error test) with whole utterances as the
  segments: ``Z_i`` = candidate errors − reference errors of example i, ``W = mean(Z) / (sd(Z) / √n)`` with
  the sample standard deviation, two-sided p from the standard normal. A normal approximation: trust it from
  some tens of examples on.
- **Wilcoxon signed-rank** (sc_stats' third test): the error differences of the changed examples ranked by size,
  the sum of the ranks of improvements against regressions (``scipy.stats.wilcoxon``'s p-value: exact up to 50
  changed examples without tied sizes, every sign pattern counted up to 13 with ties, else the normal
  approximation); it weighs how much an example changed, which the
  sign test ignores, without MAPSSWE's reliance on the mean.
- **paired bootstrap** (Bisani & Ney): the examples (or, with ``groups``, whole blocks such as a speaker's
  utterances) are resampled with replacement, and the pooled WER difference and the share of regressed
  examples recomputed on each draw; percentile intervals. Draws are made a bounded number of indices at a
  time (``chunk``): memory stays O(chunk + n), never O(n × resamples), and the result does not depend on
  ``chunk``.

The p-values are scipy.stats' (``binomtest``, ``norm``, ``wilcoxon``).

A non-inferiority decision compares an interval with a margin δ (see :func:`non_inferiority`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

DEFAULT_RESAMPLES = 2000
DEFAULT_CHUNK = 1 << 22  # resampled indices held at once (32 MB of int64)
#: above this many units (examples or blocks) the resampled sums are drawn from their normal limit, not by index:
#: the same intervals to within Monte-Carlo error, in O(n) instead of O(n x resamples) time
NORMAL_LIMIT_UNITS = 50_000

NON_INFERIOR = "non-inferior"
INCONCLUSIVE = "inconclusive (set too small)"
REGRESSION_SHOWN = "regression shown"


@dataclass(frozen=True)
class SignificanceSettings:
    """How a comparison's paired significance is computed: the intervals' confidence, the bootstrap's resamples,
    seed and chunk, and ``block_by``: the name of the example column whose values form the resampled blocks
    (None: single examples)."""

    confidence: float = 0.95
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0
    block_by: str | None = None
    chunk: int = DEFAULT_CHUNK

    def __post_init__(self) -> None:
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must lie between 0 and 1 (e.g. 0.95), not {self.confidence}")
        if self.resamples < 1 or self.chunk < 1:
            raise ValueError("resamples and chunk must be at least 1")


@dataclass(frozen=True)
class SignTest:
    """Exact two-sided sign test on the examples whose error count changed (ties left out)."""

    improved: int
    regressed: int
    ties: int
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        """The test as JSON-ready values."""
        return asdict(self)


@dataclass(frozen=True)
class Mapsswe:
    """NIST's matched-pair sentence-segment word error test, whole utterances as segments.

    ``mean_difference``: mean of candidate − reference errors per segment; ``std``: their sample standard
    deviation; ``z``: the test statistic W (infinite when every difference is the same non-zero number: None in
    :meth:`to_dict`, which is JSON); ``p_value``: two-sided, standard normal.
    """

    segments: int
    mean_difference: float
    std: float
    z: float
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        """The test as JSON-ready values."""
        return asdict(self) | {"z": self.z if math.isfinite(self.z) else None}


@dataclass(frozen=True)
class Wilcoxon:
    """Wilcoxon signed-rank test on the non-zero per-example error differences (zero differences left out).

    ``statistic``: the smaller of the rank sums of improvements and regressions; ``p_value``: two-sided."""

    changed: int
    statistic: float
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        """The test as JSON-ready values."""
        return asdict(self)


@dataclass(frozen=True)
class Resampling:
    """How a bootstrap resampled: whole examples, or blocks of examples sharing a value of ``block_by``."""

    method: str  # "examples" or "blocks"
    units: int  # examples or blocks drawn per resample
    resamples: int
    seed: int
    block_by: str | None = None

    def describe(self) -> str:
        """How examples were resampled, in words (printed beside every interval)."""
        limit = (
            f"; above {NORMAL_LIMIT_UNITS:,} units the resampled sums are drawn from their normal limit"
            if self.units > NORMAL_LIMIT_UNITS
            else ""
        )
        if self.method == "blocks":
            return (
                f"blocked bootstrap by {self.block_by} ({self.units} blocks, {self.resamples} resamples, "
                f"seed {self.seed}{limit})"
            )
        return f"bootstrap over {self.units} examples ({self.resamples} resamples, seed {self.seed}{limit})"

    def to_dict(self) -> dict[str, Any]:
        """The resampling as JSON-ready values."""
        return asdict(self) | {"description": self.describe()}


@dataclass(frozen=True)
class BootstrapInterval:
    """A statistic of the joined examples, its percentile interval and the resampling it came from.

    ``p_value`` (two-sided, where the statistic has a null value: the WER difference's 0) is twice the smaller
    share of resampled values on either side of it; None for the QoI drop (never below 0).
    """

    estimate: float
    low: float
    high: float
    confidence: float
    p_value: float | None
    resampling: Resampling

    def __str__(self) -> str:
        return f"{self.estimate:+.2f} [{self.low:+.2f}, {self.high:+.2f}]"

    def to_dict(self) -> dict[str, Any]:
        """The interval as JSON-ready values."""
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "p_value": self.p_value,
            "resampling": self.resampling.to_dict(),
        }


@dataclass(frozen=True)
class PairedSignificance:
    """Every paired view of one comparison: the sign test, MAPSSWE, and bootstrap intervals of the WER
    difference (candidate − reference, points) and of the QoI drop (% of examples that regressed)."""

    sign_test: SignTest
    mapsswe: Mapsswe | None
    wer_difference: BootstrapInterval | None
    qoi_drop: BootstrapInterval | None
    resampling: Resampling
    wilcoxon: Wilcoxon | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every test and interval as JSON-ready values (``compare --json``)."""
        return {
            "sign_test": self.sign_test.to_dict(),
            "mapsswe": self.mapsswe.to_dict() if self.mapsswe else None,
            "wilcoxon": self.wilcoxon.to_dict() if self.wilcoxon else None,
            "wer_difference": self.wer_difference.to_dict() if self.wer_difference else None,
            "qoi_drop": self.qoi_drop.to_dict() if self.qoi_drop else None,
            "resampling": self.resampling.to_dict(),
        }


def sign_test(reference_errors: ArrayLike, candidate_errors: ArrayLike) -> SignTest:
    """Exact two-sided sign test: improved (fewer errors) against regressed examples, p from ``binomtest``.

    >>> sign_test([3, 2, 5, 1], [1, 2, 6, 0])
    SignTest(improved=2, regressed=1, ties=1, p_value=1.0)
    """
    from scipy.stats import binomtest

    ref, cand = _counts(reference_errors), _counts(candidate_errors)
    improved, regressed = int((cand < ref).sum()), int((cand > ref).sum())
    changed = improved + regressed
    p_value = float(binomtest(improved, changed).pvalue) if changed else 1.0
    return SignTest(improved, regressed, len(ref) - changed, p_value)


def mapsswe(reference_errors: ArrayLike, candidate_errors: ArrayLike) -> Mapsswe | None:
    """MAPSSWE over whole utterances (None for fewer than two). With every difference equal, W is 0 (all
    zero: p = 1) or infinite (p = 0; SCTK's statdist.c says z = 0, p = 1 there: docs/statistics.md says why not)."""
    from scipy.stats import norm

    diff = _counts(candidate_errors) - _counts(reference_errors)
    n = len(diff)
    if n < 2:
        return None
    mean, std = float(diff.mean()), float(diff.std(ddof=1))
    no_spread = 0.0 if mean == 0.0 else math.copysign(math.inf, mean)  # every difference the same
    z = no_spread if std == 0.0 else mean / (std / math.sqrt(n))
    return Mapsswe(n, mean, std, z, 2.0 * float(norm.sf(abs(z))))


def wilcoxon(reference_errors: ArrayLike, candidate_errors: ArrayLike) -> Wilcoxon | None:
    """Wilcoxon signed-rank test of candidate − reference errors per example; None when nothing changed.

    >>> w = wilcoxon([3, 2, 5, 9, 4], [1, 3, 1, 1, 4])  # changes -2, +1, -4, -8: ranks 2, 1, 3, 4
    >>> w.changed, w.statistic, w.p_value  # W+ = 1; 2 of the 16 sign patterns have W+ <= 1, twice for two sides
    (4, 1.0, 0.25)
    """
    from scipy import stats

    diff = _counts(candidate_errors) - _counts(reference_errors)
    diff = diff[diff != 0]
    if len(diff) == 0:
        return None
    test = stats.wilcoxon(diff)  # two-sided: the statistic is min(W+, W-)
    return Wilcoxon(len(diff), float(test.statistic), float(test.pvalue))


def block_columns(columns: np.ndarray, groups: Sequence[Any]) -> np.ndarray:
    """Per-example columns (n × k) summed within each block (first-seen order of the labels): blocks × k."""
    labels = np.asarray(groups, dtype=object)
    if len(labels) != len(columns):
        raise ValueError(f"{len(labels)} block labels for {len(columns)} examples")
    _, first, inverse = np.unique(labels.astype(str), return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # block number by first appearance
    out = np.zeros((len(first), columns.shape[1]))
    np.add.at(out, order[inverse.ravel()], columns)
    return out


def normal_limit_sums(columns: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Column sums (resamples × k) drawn from the bootstrap's large-n limit: the sum of n draws with replacement
    from the rows is, by the central limit theorem, normal with mean n·mean and covariance n·Cov (the rows'
    population covariance). O(n·k²) once, then O(resamples·k); a constant column stays exactly n times its value.

    >>> cols = np.column_stack([np.arange(10.0), np.ones(10)])
    >>> sums = normal_limit_sums(cols, 4000, 0)
    >>> bool(np.all(sums[:, 1] == 10.0)), round(float(sums[:, 0].mean()) / 45, 1)
    (True, 1.0)
    """
    n = len(columns)
    mean = columns.mean(axis=0)
    cov = np.atleast_2d(np.cov(columns, rowvar=False, bias=True))
    rng = np.random.default_rng(seed)
    draws = rng.multivariate_normal(n * mean, n * cov, size=resamples, method="eigh", check_valid="ignore")
    constant = cov.diagonal() == 0.0
    draws[:, constant] = n * mean[constant]  # no noise where the rows never vary (e.g. a column of ones)
    return np.asarray(draws)


def resampled_sums(
    columns: np.ndarray, resamples: int, seed: int, chunk: int = DEFAULT_CHUNK, exact_up_to: int = NORMAL_LIMIT_UNITS
) -> np.ndarray:
    """Column sums (resamples × k) of ``resamples`` draws, with replacement, of the rows of ``columns`` (n × k).

    Draw r takes the r-th ``n`` integers of ``numpy.random.default_rng(seed)``; at most ``max(chunk, n)``
    indices are held at once, so the sums do not depend on ``chunk``. Above ``exact_up_to`` rows the sums are
    drawn from their normal limit (:func:`normal_limit_sums`): drawing indices would cost n × resamples.
    """
    n, k = columns.shape
    if n > exact_up_to:
        return normal_limit_sums(columns, resamples, seed)
    rng = np.random.default_rng(seed)
    out = np.empty((resamples, k))
    rows = max(1, chunk // max(n, 1))
    for start in range(0, resamples, rows):
        stop = min(start + rows, resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        for j in range(k):
            out[start:stop, j] = columns[:, j][idx].sum(axis=1)
    return out


def paired_significance(
    reference_errors: ArrayLike,
    candidate_errors: ArrayLike,
    transcript_words: ArrayLike,
    *,
    groups: Sequence[Any] | None = None,
    block_by: str | None = None,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    chunk: int = DEFAULT_CHUNK,
) -> PairedSignificance:
    """The sign test, MAPSSWE and the paired bootstrap of one comparison (see module doc).

    ``groups``: a block label per example (e.g. its speaker, named ``block_by``): whole blocks are resampled.
    """
    ref, cand, words = _counts(reference_errors), _counts(candidate_errors), _counts(transcript_words)
    columns = np.column_stack([cand - ref, words, (cand > ref).astype(float), np.ones(len(ref))])
    resampling = Resampling("examples", len(ref), resamples, seed)
    if groups is not None:
        columns = block_columns(columns, groups)
        resampling = Resampling("blocks", len(columns), resamples, seed, block_by or "group")
    wer, drop = None, None
    if len(columns) and columns[:, 1].sum() > 0:
        sums = resampled_sums(columns, resamples, seed, chunk)
        wer = _interval(_ratio(columns.sum(axis=0), 0, 1), _ratio(sums, 0, 1), confidence, resampling)
        drop = _interval(_ratio(columns.sum(axis=0), 2, 3), _ratio(sums, 2, 3), confidence, resampling, None)
    return PairedSignificance(sign_test(ref, cand), mapsswe(ref, cand), wer, drop, resampling, wilcoxon(ref, cand))


def non_inferiority(interval: BootstrapInterval, margin: float) -> str:
    """The verdict of an interval of a worsening (WER increase, QoI drop) against the margin ``margin``.

    ``non-inferior``: the whole interval lies below the margin (the worsening is shown to be smaller);
    ``regression shown``: the whole interval lies above it (shown to be larger); otherwise
    ``inconclusive (set too small)``: neither is shown — more examples would narrow the interval.

    >>> r = Resampling("examples", 100, 2000, 0)
    >>> [non_inferiority(BootstrapInterval(0.0, lo, hi, 0.95, 1.0, r), 1.0)
    ...  for lo, hi in ((-.5, .5), (-.5, 2), (1.5, 2))]
    ['non-inferior', 'inconclusive (set too small)', 'regression shown']
    """
    return verdict_of_bounds(interval.low, interval.high, margin)


def verdict_of_bounds(low: float, high: float, limit: float) -> str:
    """The three verdicts on an interval ``[low, high]`` of a worsening against ``limit`` (see
    :func:`non_inferiority`; the speed gate's slowdown uses it too).

    >>> verdict_of_bounds(2.0, 8.0, 10.0), verdict_of_bounds(12.0, 30.0, 10.0)
    ('non-inferior', 'regression shown')
    """
    if high < limit:
        return NON_INFERIOR
    if low > limit:
        return REGRESSION_SHOWN
    return INCONCLUSIVE


def holm(p_values: Sequence[float | None], alpha: float = 0.05) -> list[float | None]:
    """Holm-adjusted p-values of several comparisons against one reference (None stays None): a candidate's
    regression is significant over the whole family at level α when its adjusted p is ≤ α
    (``statsmodels.stats.multitest.multipletests(method="holm")``).

    >>> holm([0.01, 0.04, None, 0.03])
    [0.03, 0.06, None, 0.06]
    """
    from statsmodels.stats.multitest import multipletests

    known = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if known:
        adjusted = multipletests([p_values[i] for i in known], alpha=alpha, method="holm")[1]
        for i, value in zip(known, adjusted):
            out[i] = round(float(value), 12)
    return out


def _counts(values: ArrayLike) -> np.ndarray:
    return np.asarray(values, dtype=float).ravel()


def _ratio(sums: np.ndarray, top: int, bottom: int) -> np.ndarray:
    """100 × column ``top`` / column ``bottom`` (per row of a 2-D array; NaN where the bottom is 0)."""
    numerator, denominator = sums[..., top], sums[..., bottom]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(denominator > 0, 100.0 * numerator / denominator, np.nan))


def _interval(
    estimate: np.ndarray, values: np.ndarray, confidence: float, resampling: Resampling, null: float | None = 0.0
) -> BootstrapInterval:
    values = values[~np.isnan(values)]
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    p_value = (
        None if null is None else min(1.0, 2.0 * min(float((values <= null).mean()), float((values >= null).mean())))
    )
    return BootstrapInterval(float(estimate), float(low), float(high), confidence, p_value, resampling)
