"""The p-values of ``compare`` and ``gate`` — the exact sign test, the Wilcoxon signed-rank test, the normal tail of
MAPSSWE — and the binomial and normal quantiles of the power calculations, computed as ``scipy.stats`` computes them
(scipy 1.17: the same algorithms on the same ``scipy.special`` kernels, so the same numbers to the last bit; tests
compare them on thousands of cases), without importing ``scipy.stats``: that import alone takes 0.6 s of CPU, half
of a ``gate`` on a QA set of a thousand examples. ``scipy.special`` takes about 0.1 s.

The binomial distribution comes from scipy's Boost-based kernels (``scipy.special._ufuncs._binom_*``, what
``scipy.stats.binom`` calls); where a scipy lacks them, ``scipy.stats.binom`` itself. The algorithms are those of
scipy 1.17 whatever scipy is installed (older ones chose the Wilcoxon method differently), so a figure does not
change with the scipy a machine has.

>>> binomial_test(2, 3)  # two-sided, p = 0.5: every outcome at most as likely as 2 of 3
1.0
>>> round(binomial_test(0, 10), 6), round(normal_sf(1.959963984540054) * 2, 6)
(0.001953, 0.05)
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import product
from typing import Any, Callable, NamedTuple

import numpy as np

#: the relative tolerance within which an outcome counts as "as likely as" the observed one (scipy's ``binomtest``)
_AS_LIKELY = 1 + 1e-7
#: the sizes below which the signed-rank test is exact (no ties), or enumerates every sign pattern (ties)
EXACT_MAX, ENUMERATED_MAX = 50, 13


def normal_sf(x: float) -> float:
    """P(Z > x) for a standard normal Z (``scipy.stats.norm.sf``)."""
    return float(_special().ndtr(-x))


def normal_ppf(q: float) -> float:
    """The standard normal quantile (``scipy.stats.norm.ppf``)."""
    return float(_special().ndtri(q))


def normal_isf(q: float) -> float:
    """The standard normal upper quantile (``scipy.stats.norm.isf``)."""
    return float(-_special().ndtri(q))


@lru_cache(maxsize=1)
def _special() -> Any:
    """``scipy.special``, imported on first use (0.1 s): every command loads this module with the metric registry's
    scan of the scoring package, and ``score`` computes no p-value."""
    from scipy import special

    return special


@lru_cache(maxsize=1)
def _kernels() -> tuple[Callable[..., Any], ...]:
    """(pmf, cdf, sf, isf) of the binomial distribution inside its support."""
    try:
        from scipy.special import _ufuncs

        return _ufuncs._binom_pmf, _ufuncs._binom_cdf, _ufuncs._binom_sf, _ufuncs._binom_isf
    except (ImportError, AttributeError):  # an older or newer scipy: its public distribution, slower to import
        from scipy.stats import binom

        return binom._pmf, binom._cdf, binom._sf, binom._isf


def binomial_pmf(k: Any, n: Any, p: float) -> Any:
    """P(X = k) for X ~ Binomial(n, p) (0 outside 0..n)."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    inside = (k >= 0) & (k <= n) & (np.floor(k) == k)
    return _placed(inside, 0.0, lambda: np.clip(_kernels()[0](k, n, p), 0, 1))


def binomial_cdf(k: Any, n: Any, p: float) -> Any:
    """P(X ≤ k) for X ~ Binomial(n, p)."""
    k, n = np.floor(np.asarray(k, dtype=float)), np.asarray(n, dtype=float)
    out = _placed((k >= 0) & (k < n), 0.0, lambda: np.clip(_kernels()[1](k, n, p), 0, 1))
    return np.where(k >= n, 1.0, out)[()]


def binomial_sf(k: Any, n: Any, p: float) -> Any:
    """P(X > k) for X ~ Binomial(n, p)."""
    k, n = np.floor(np.asarray(k, dtype=float)), np.asarray(n, dtype=float)
    out = _placed((k >= 0) & (k < n), 0.0, lambda: np.clip(_kernels()[2](k, n, p), 0, 1))
    return np.where(k < 0, 1.0, out)[()]


def binomial_isf(q: float, n: Any, p: float) -> Any:
    """The smallest k with P(X > k) ≤ q for X ~ Binomial(n, p) (``scipy.stats.binom.isf``; q in (0, 1))."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must lie strictly between 0 and 1, not {q}")
    return np.asarray(_kernels()[3](q, np.asarray(n, dtype=float), p))[()]


def _placed(inside: np.ndarray, outside: float, values: Callable[[], Any]) -> Any:
    """``values()`` where ``inside``, ``outside`` elsewhere (the kernel is called only when some value is inside)."""
    return np.where(inside, values() if np.any(inside) else outside, outside)[()]


def binomial_test(k: int, n: int, p: float = 0.5) -> float:
    """The two-sided exact binomial test of ``k`` successes in ``n`` trials (``scipy.stats.binomtest(k, n, p)``'s
    p-value): the probability of every outcome at most as likely as ``k``."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"k={k} successes in n={n} trials")
    d = float(binomial_pmf(k, n, p))
    if k == p * n:
        return 1.0
    if k < p * n:
        ix = _last_at_most(lambda x: -float(binomial_pmf(x, n, p)), -d * _AS_LIKELY, math.ceil(p * n), n)
        y = n - ix + int(d * _AS_LIKELY == float(binomial_pmf(ix, n, p)))
        p_value = float(binomial_cdf(k, n, p)) + float(binomial_sf(n - y, n, p))
    else:
        ix = _last_at_most(lambda x: float(binomial_pmf(x, n, p)), d * _AS_LIKELY, 0, math.floor(p * n))
        p_value = float(binomial_cdf(ix, n, p)) + float(binomial_sf(k - 1, n, p))
    return min(1.0, p_value)


def _last_at_most(value: Callable[[int], float], target: float, lo: int, hi: int) -> int:
    """The i in lo..hi with value(i) ≤ target < value(i + 1), ``value`` ascending there (a binary search)."""
    while lo < hi:
        mid = lo + (hi - lo) // 2
        at = value(mid)
        if at < target:
            lo = mid + 1
        elif at > target:
            hi = mid - 1
        else:
            return mid
    return lo if value(lo) <= target else lo - 1


class SignedRank(NamedTuple):
    """The Wilcoxon signed-rank test of nonzero differences: min(W+, W−) and its two-sided p-value."""

    statistic: float
    p_value: float


def signed_rank_test(differences: Any) -> SignedRank:
    """``scipy.stats.wilcoxon(differences)`` (two-sided, no continuity correction, method ``auto``) for nonzero
    differences: exact for at most 50 without tied magnitudes, every sign pattern counted for at most 13 with
    ties, else the normal approximation with the tie correction.

    >>> signed_rank_test([-2, 1, -4, -8])  # W+ = 1; 2 of the 16 sign patterns have W+ <= 1, twice for two sides
    SignedRank(statistic=1.0, p_value=0.25)
    """
    d = np.asarray(differences, dtype=np.float64)
    if len(d) == 0 or not np.all(d != 0):
        raise ValueError("the signed-rank test takes nonzero differences (zeros are dropped first)")
    ranks, ties = _average_ranks(np.abs(d))
    plus, minus = float(np.sum((d > 0) * ranks)), float(np.sum((d < 0) * ranks))
    n = len(d)
    if n <= EXACT_MAX and not np.any(ties > 1):
        p_value = _exact(n, plus)
    elif n <= ENUMERATED_MAX:
        p_value = _enumerated(ranks, plus)
    else:
        count = np.float64(n)
        mean = count * (count + 1.0) * 0.25
        spread = np.sqrt((count * (count + 1.0) * (2.0 * count + 1.0) - np.sum(ties**3 - ties) / 2) / 24)
        p_value = 2 * normal_sf(abs(float((plus - mean) / spread)))
    return SignedRank(min(plus, minus), float(p_value))


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based, ties share their mean rank) and, in sorted order, each tie group's size at its
    first position (zeros elsewhere): the layout whose sum of t³ − t scipy takes."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    first = np.concatenate([[True], ordered[:-1] != ordered[1:]])
    starts = np.flatnonzero(first)
    counts = np.diff(starts, append=len(values))
    mean_ranks = (starts + 1.0) + (counts.astype(np.float64) - 1) / 2
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(mean_ranks, counts)
    ties = np.zeros(len(values))
    ties[first] = counts
    return ranks, ties


@lru_cache(maxsize=64)
def _signed_rank_pmf(n: int) -> np.ndarray:
    """P(W+ = w), w = 0..n(n+1)/2, without ties: each rank in or out with probability one half."""
    pmf = np.ones(1)
    for k in range(1, n + 1):
        before, pmf = pmf, np.zeros(k * (k + 1) // 2 + 1)
        pmf[: len(before)] = before * 0.5
        pmf[-len(before) :] += before * 0.5
    return pmf


def _exact(n: int, plus: float) -> float:
    pmf, mean = _signed_rank_pmf(n), n * (n + 1) / 4
    lower, upper = math.floor(plus), math.ceil(plus)
    sf = pmf[lower:].sum() if lower <= mean else 1 - pmf[:lower].sum()
    cdf = pmf[: upper + 1].sum() if upper <= mean else 1 - pmf[upper + 1 :].sum()
    return float(np.clip(2 * min(sf, cdf), 0, 1))


def _enumerated(ranks: np.ndarray, plus: float) -> float:
    """Two-sided p of W+ among all 2^n sign patterns (scipy's exact permutation test, as it counts them)."""
    patterns = np.array(list(product((0.0, 1.0), repeat=len(ranks))))
    null = patterns @ ranks
    slack = abs(np.finfo(np.float64).eps * 100 * plus)
    below, above = np.count_nonzero(null <= plus + slack), np.count_nonzero(null >= plus - slack)
    return float(np.clip(min(below, above) / len(null) * 2, 0, 1))


def brent_root(f: Callable[[float], float], a: float, b: float, xtol: float = 2e-12, iterations: int = 100) -> float:
    """A root of ``f`` between ``a`` and ``b`` (where ``f`` changes sign) by Brent's method, step for step as
    ``scipy.optimize.brentq`` takes it with its default tolerances (importing scipy.optimize takes 0.3 s).

    >>> round(brent_root(lambda x: x * x - 2.0, 0.0, 2.0), 12)
    1.414213562373
    """
    rtol = 4 * np.finfo(float).eps
    x_before, x_now = a, b
    f_before, f_now = f(x_before), f(x_now)
    if f_before * f_now > 0:
        raise ValueError(f"f({a}) and f({b}) have the same sign: no root is bracketed")
    if f_before == 0:
        return x_before
    if f_now == 0:
        return x_now
    x_far = f_far = step_before = step = 0.0
    for _ in range(iterations):
        if f_before * f_now < 0:  # the far end of the bracket: the previous estimate
            x_far, f_far = x_before, f_before
            step_before = step = x_now - x_before
        if abs(f_far) < abs(f_now):  # the better end becomes the estimate
            x_before, x_now, x_far = x_now, x_far, x_now
            f_before, f_now, f_far = f_now, f_far, f_now
        delta = (xtol + rtol * abs(x_now)) / 2
        half = (x_far - x_now) / 2
        if f_now == 0 or abs(half) < delta:
            return x_now
        if abs(step_before) > delta and abs(f_now) < abs(f_before):
            if x_before == x_far:  # secant
                trial = -f_now * (x_now - x_before) / (f_now - f_before)
            else:  # inverse quadratic
                slope_before = (f_before - f_now) / (x_before - x_now)
                slope_far = (f_far - f_now) / (x_far - x_now)
                trial = (
                    -f_now
                    * (f_far * slope_far - f_before * slope_before)
                    / (slope_far * slope_before * (f_far - f_before))
                )
            step_before, step = (
                (step, trial) if 2 * abs(trial) < min(abs(step_before), 3 * abs(half) - delta) else (half, half)
            )
        else:
            step_before = step = half
        x_before, f_before = x_now, f_now
        x_now += step if abs(step) > delta else (delta if half > 0 else -delta)
        f_now = f(x_now)
    raise RuntimeError(f"no root within {iterations} iterations")
