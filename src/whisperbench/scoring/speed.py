"""Speed as a paired comparison: on the examples both runs transcribed, the candidate's time over the reference's.

Per example the ratio r = candidate time / reference time (wall time of the implementation's call, or the
process's CPU time during it: the ``basis``), compared on the log scale, where a 2× slowdown and a 2× speed-up
are equally far from 1. The run's figure is the **geometric mean** of r (exp of the mean log ratio); its interval
is a seeded bootstrap over examples (or over whole blocks, e.g. speakers, with ``groups``), and the sign test
counts the examples on which the candidate was slower against those on which it was faster. Slowdown is
``100 × (ratio − 1)`` percent (negative: faster). Pure functions of arrays; the run-level reading (which runs, which
machine, memory and load time) is :mod:`whisperbench.reports.speed`.

Anchors: open_asr_leaderboard's RTFx (Σ audio seconds / Σ transcription seconds), Picovoice's core-hour (CPU hours per
audio hour), here ``core_s_per_audio_s``.

>>> stats = paired_speed([1.0, 2.0, 4.0], [1.1, 2.2, 4.4], [10.0, 20.0, 40.0], basis="wall")
>>> round(stats.ratio, 3), round(stats.slowdown_pct, 1), stats.slower, stats.faster
(1.1, 10.0, 3, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .metrics import Metric, Pairing
from .significance import DEFAULT_RESAMPLES, block_columns, resampled_sums, verdict_of_bounds


@dataclass(frozen=True)
class SpeedStats:
    """The paired speed figures of one comparison (times in seconds; ratios candidate / reference)."""

    basis: str
    examples: int  # paired examples with a positive time on both sides
    ratio: float | None  # geometric mean of the per-example ratios
    low: float | None  # its bootstrap interval at ``confidence``
    high: float | None
    confidence: float
    slower: int  # examples on which the candidate took longer
    faster: int
    sign_p: float | None  # two-sided sign test (ties left out)
    reference_rtfx: float | None  # Σ audio / Σ time over the paired examples
    candidate_rtfx: float | None
    resampled: str = "examples"  # or "blocks of <column>", "<k> candidate runs and examples"
    runs: int = 1  # candidate runs pooled (``gate --repeat``)

    @property
    def slowdown_pct(self) -> float | None:
        """How much slower the candidate is, in percent of the reference's time (negative: faster)."""
        return None if self.ratio is None else 100.0 * (self.ratio - 1.0)

    @property
    def slowdown_interval(self) -> tuple[float, float] | None:
        """The slowdown's interval in percent."""
        if self.low is None or self.high is None:
            return None
        return 100.0 * (self.low - 1.0), 100.0 * (self.high - 1.0)

    def to_json(self) -> dict[str, Any]:
        """``compare --json``'s ``speed`` figures."""
        interval = self.slowdown_interval
        return asdict(self) | {
            "slowdown_pct": self.slowdown_pct,
            "slowdown_interval_pct": list(interval) if interval else None,
        }


def paired_speed(reference_s: ArrayLike, candidate_s: ArrayLike, audio_s: ArrayLike, **settings: Any) -> SpeedStats:
    """The paired speed figures of per-example times (same examples, same order); examples without a positive
    time on both sides are left out. ``settings``: those of :func:`pooled_speed`, of which this is the one-run case
    (``groups``: a block label per example, named ``block_by``, whose blocks are resampled whole)."""
    return pooled_speed(reference_s, [candidate_s], audio_s, **settings)


def pooled_speed(
    reference_s: ArrayLike,
    candidate_runs_s: Sequence[ArrayLike],
    audio_s: ArrayLike,
    *,
    basis: str,
    groups: Sequence[Any] | None = None,
    block_by: str | None = None,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> SpeedStats:
    """The speed figures of repeated candidate runs (``gate --repeat``) against one reference run, each run's times
    on the reference's examples (NaN where untimed). The ratio is the geometric mean over every timed (run, example)
    pair; the interval is a two-stage bootstrap: examples (or blocks) resampled, then the candidate runs drawn with
    replacement, so a shift of a whole run (a busier minute, another CPU frequency) widens it as it should; the
    sign test counts examples by their mean log ratio over the runs. One run: the paired bootstrap over examples.

    >>> one = pooled_speed([1.0, 2.0, 4.0], [[1.1, 2.2, 4.4]], [10.0, 20.0, 40.0], basis="wall")
    >>> two = pooled_speed([1.0, 2.0, 4.0], [[1.1, 2.2, 4.4], [1.0, 2.0, 4.0]], [10.0, 20.0, 40.0], basis="wall")
    >>> round(one.ratio, 3), (round(one.low, 3), round(one.high, 3))  # every example 10 % slower: no spread
    (1.1, (1.1, 1.1))
    >>> round(two.ratio ** 2, 3), two.runs, (round(two.low, 3), round(two.high, 3))  # a repeat as fast: it widens
    (1.1, 2, (1.0, 1.1))
    """
    ref = np.asarray(reference_s, dtype=np.float64)
    cand = np.atleast_2d(np.asarray(candidate_runs_s, dtype=np.float64))
    audio = np.asarray(audio_s, dtype=np.float64)
    timed = np.isfinite(ref) & (ref > 0) & np.isfinite(cand) & (cand > 0)  # runs × examples
    keep = timed.any(axis=0)
    ref, cand, audio, timed = ref[keep], cand[:, keep], audio[keep], timed[:, keep]
    resampled = "examples" if groups is None else f"blocks of {block_by or 'group'}"
    runs = len(cand)
    if runs > 1:
        resampled = f"{runs} candidate runs and {resampled}"
    if not keep.any():
        return SpeedStats(basis, 0, None, None, None, confidence, 0, 0, None, None, None, resampled, runs)
    log_ratio = np.where(timed, np.log(np.where(timed, cand, 1.0) / np.where(timed, ref, 1.0)), 0.0)
    columns = np.column_stack([part for r in range(runs) for part in (log_ratio[r], timed[r].astype(np.float64))])
    if groups is not None:
        columns = block_columns(columns, list(np.asarray(groups, dtype=object)[keep]))
    sums = resampled_sums(columns, resamples, seed)
    logs, counts = sums[:, 0::2], sums[:, 1::2]
    if runs > 1:  # second stage: draw the runs too
        picks = np.random.default_rng(seed + 1).integers(0, runs, size=(resamples, runs))
        logs, counts = np.take_along_axis(logs, picks, 1), np.take_along_axis(counts, picks, 1)
    means = logs.sum(axis=1) / np.maximum(counts.sum(axis=1), 1e-12)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.exp(np.quantile(means, [alpha, 1.0 - alpha]))
    per_example = log_ratio.sum(axis=0) / np.maximum(timed.sum(axis=0), 1)
    slower, faster = int((per_example > 0).sum()), int((per_example < 0).sum())
    return SpeedStats(
        basis=basis,
        examples=int(keep.sum()),
        ratio=float(np.exp(log_ratio.sum() / timed.sum())),
        low=float(low),
        high=float(high),
        confidence=confidence,
        slower=slower,
        faster=faster,
        sign_p=_sign_p(slower, faster),
        reference_rtfx=float(audio.sum() / ref.sum()),
        candidate_rtfx=float((audio * timed).sum() / np.where(timed, cand, 0.0).sum()),
        resampled=resampled,
        runs=runs,
    )


def _sign_p(slower: int, faster: int) -> float | None:
    """Two-sided exact binomial test of ``slower`` against a fair coin over the untied examples."""
    if not slower + faster:
        return None
    from scipy.stats import binomtest

    return float(binomtest(slower, slower + faster).pvalue)


def increase_pct(reference: float | None, candidate: float | None) -> float | None:
    """How much larger ``candidate`` is than ``reference``, in percent (None when either is unknown or the
    reference is not positive).

    >>> increase_pct(100.0, 150.0), increase_pct(None, 3.0)
    (50.0, None)
    """
    if reference is None or candidate is None or reference <= 0:
        return None
    return 100.0 * (candidate / reference - 1.0)


def speed_verdict(interval: tuple[float, float], max_slowdown: float) -> str:
    """The three verdicts the quality gate has, on the slowdown's interval (percent): non-inferior when its upper
    bound is below ``max_slowdown``, a regression shown when its lower bound is above it, else inconclusive.

    >>> speed_verdict((2.0, 8.0), 10.0), speed_verdict((12.0, 30.0), 10.0), speed_verdict((5.0, 15.0), 10.0)
    ('non-inferior', 'regression shown', 'inconclusive (set too small)')
    """
    return verdict_of_bounds(interval[0], interval[1], max_slowdown)


#: speed is a paired figure only (a run's own RTFx and latencies are summary.json's): the slowdown, and the change
#: in peak memory and load time (each judged only on one machine)
METRIC = Metric(
    "speed",
    "the candidate's paired per-example time ratio against the reference's, as a slowdown in % (geometric mean, "
    "bootstrap interval; reports/speed.py reads the runs' times)",
    pairings=(
        Pairing("slowdown", "speed", heading="Slowdown %", flag="max_slowdown"),
        Pairing("memory", "resource", "memory", heading="Peak memory Δ %", flag="max_memory_increase"),
        Pairing("load", "resource", "load", heading="Load time Δ %", flag="max_load_increase"),
    ),
)
