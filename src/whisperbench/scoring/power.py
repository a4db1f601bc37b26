"""Power and size of a paired gate: the smallest WER increase and QoI drop a set of n examples detects, and the
examples needed for a given one (``whisperbench plan``).

**WER** (normal approximation, the test of :func:`~whisperbench.scoring.significance.mapsswe`): the WER difference
is ``Σ D_i / Σ words`` with ``D_i`` the candidate's minus the reference's errors on example i, so its standard error
is ``sd(D) · √n / (n · w̄)`` (w̄: transcript words per example). A two-sided test at level α detects, with
probability ``power``, an increase of ``(z₁₋α/₂ + z_power) · 100 · sd(D) / (√n · w̄)`` points — which is
also the smallest non-inferiority margin that an equally good candidate proves with that probability. ``sd(D)``
comes from a comparison's paired differences when one is given; from the reference alone it is taken as Poisson
noise on each side, ``var(D_i) ≈ 2 · errors_i`` (errors of the two systems independent given the example).

**QoI** (exact binomial): the share of regressed examples against a baseline share ``p₀`` (what two runs of one
configuration regress on each other: 0 for a deterministic implementation); the gate detects a drop to ``p₁`` when
the one-sided binomial test at level α rejects ``p₀`` with probability ``power``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

MAX_EXAMPLES = 10_000_000


@dataclass(frozen=True)
class Plan:
    """What a set of ``examples`` can show (detectable effects, points) and what it needs (examples for the
    asked effects; None where none was asked)."""

    examples: int
    alpha: float
    power: float
    sd_difference: float  # per-example error difference
    words_per_example: float
    basis: str  # where sd_difference came from
    baseline_regressed: float  # % of examples regressed with no real change
    detectable_wer_increase: float
    detectable_qoi_drop: float
    wer_increase: float | None = None
    examples_for_wer_increase: int | None = None
    qoi_drop: float | None = None
    examples_for_qoi_drop: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready values (``whisperbench plan --json``)."""
        return asdict(self)


def _z(alpha: float, power: float) -> float:
    from scipy.stats import norm

    return float(norm.isf(alpha / 2.0)) + float(norm.ppf(power))


def detectable_wer_increase(
    sd_difference: float, words_per_example: float, examples: int, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Smallest WER increase (points) a two-sided level-α paired test detects with probability ``power``.

    >>> round(detectable_wer_increase(2.0, 20.0, 100), 3)
    2.802
    """
    return _z(alpha, power) * 100.0 * sd_difference / (math.sqrt(examples) * words_per_example)


def examples_for_wer_increase(
    sd_difference: float, words_per_example: float, increase: float, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Examples needed to detect a WER increase of ``increase`` points (the inverse of the above).

    >>> examples_for_wer_increase(2.0, 20.0, 2.802)
    100
    """
    return max(2, math.ceil((_z(alpha, power) * 100.0 * sd_difference / (words_per_example * increase)) ** 2 - 1e-9))


def _critical(examples: np.ndarray, alpha: float, baseline: float) -> np.ndarray:
    """Smallest regressed count whose one-sided binomial p-value under ``baseline`` is ≤ α (per n)."""
    from scipy.stats import binom

    if baseline <= 0.0:
        return np.ones_like(examples)
    return np.asarray(binom.isf(alpha, examples, baseline), dtype=np.int64) + 1


def _power(examples: np.ndarray, share: float, alpha: float, baseline: float) -> np.ndarray:
    from scipy.stats import binom

    return np.asarray(binom.sf(_critical(examples, alpha, baseline) - 1, examples, share))


def detectable_qoi_drop(examples: int, alpha: float = 0.05, power: float = 0.8, baseline: float = 0.0) -> float:
    """Smallest QoI drop (points above the baseline's regressed %) an exact one-sided level-α binomial test of the
    regressed share detects with probability ``power``. ``baseline``: the regressed share with no change (0–1).

    >>> round(detectable_qoi_drop(100), 2)  # deterministic: one regression shows; 80 % chance to see one
    1.6
    """
    from scipy.optimize import brentq

    n = np.array([examples])
    share = brentq(lambda p: float(_power(n, p, alpha, baseline)[0]) - power, baseline + 1e-12, 1.0 - 1e-12)
    return float(100.0 * (share - baseline))


def examples_for_qoi_drop(drop: float, alpha: float = 0.05, power: float = 0.8, baseline: float = 0.0) -> int:
    """Fewest examples with which a drop of ``drop`` points (regressed share ``baseline + drop/100``) is detected with
    probability ``power`` (exact binomial; the first n that reaches it, searched in growing blocks)."""
    share = baseline + drop / 100.0
    if not baseline < share <= 1.0:
        raise ValueError(f"a drop of {drop} points above a baseline of {100 * baseline:g}% is not a share")
    start, size = 1, 4096
    while start <= MAX_EXAMPLES:
        n = np.arange(start, start + size)
        hit = np.flatnonzero(_power(n, share, alpha, baseline) >= power)
        if len(hit):
            return int(n[hit[0]])
        start, size = start + size, size * 4
    raise ValueError(f"more than {MAX_EXAMPLES} examples would be needed")


def paired_spread(reference_errors: ArrayLike, candidate_errors: ArrayLike | None = None) -> tuple[float, str]:
    """sd of the per-example error difference: observed when a candidate is given, else Poisson from the reference
    (``√(2 · mean errors)``); and a description of which."""
    ref = np.asarray(reference_errors, dtype=float)
    if candidate_errors is not None and len(ref) > 1:
        return float(np.std(np.asarray(candidate_errors, dtype=float) - ref, ddof=1)), "paired differences observed"
    return math.sqrt(2.0 * float(ref.mean())), "Poisson errors of the reference (var(D) ≈ 2 · errors)"


def plan(
    reference_errors: ArrayLike,
    transcript_words: ArrayLike,
    *,
    candidate_errors: ArrayLike | None = None,
    examples: int | None = None,
    wer_increase: float | None = None,
    qoi_drop: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    baseline_regressed: float = 0.0,
) -> Plan:
    """The plan for a set like the reference's (``examples``: another size; default the reference's own).

    ``baseline_regressed``: % of examples regressed with no real change (run-to-run noise).
    """
    bad = [
        f"{name} {value:g} (between 0 and 1, exclusive)"
        for name, value in (("alpha", alpha), ("power", power))
        if not 0.0 < value < 1.0
    ]
    bad += [
        f"{name} {value:g} (above 0)"
        for name, value in (("wer_increase", wer_increase), ("qoi_drop", qoi_drop), ("examples", examples))
        if value is not None and value <= 0
    ]
    bad += (
        [f"examples {examples:g} (at most {MAX_EXAMPLES:,})"]
        if examples is not None and examples > MAX_EXAMPLES
        else []
    )
    bad += [f"baseline_regressed {baseline_regressed:g} (0 to 100 %)"] if not 0.0 <= baseline_regressed < 100.0 else []
    if bad:
        raise ValueError(f"cannot plan with {', '.join(bad)}")
    words = np.asarray(transcript_words, dtype=float)
    if len(words) == 0 or words.sum() == 0:
        raise ValueError("the reference has no example with transcript words")
    sd, basis = paired_spread(reference_errors, candidate_errors)
    n, w, base = examples or len(words), float(words.mean()), baseline_regressed / 100.0
    return Plan(
        examples=n,
        alpha=alpha,
        power=power,
        sd_difference=sd,
        words_per_example=w,
        basis=basis,
        baseline_regressed=baseline_regressed,
        detectable_wer_increase=detectable_wer_increase(sd, w, n, alpha, power),
        detectable_qoi_drop=detectable_qoi_drop(n, alpha, power, base),
        wer_increase=wer_increase,
        examples_for_wer_increase=(
            examples_for_wer_increase(sd, w, wer_increase, alpha, power) if wer_increase else None
        ),
        qoi_drop=qoi_drop,
        examples_for_qoi_drop=examples_for_qoi_drop(qoi_drop, alpha, power, base) if qoi_drop else None,
    )
