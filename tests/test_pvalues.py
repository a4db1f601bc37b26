"""The p-values, quantiles and root of whisperbench.scoring.pvalues equal scipy.stats' and scipy.optimize's to the
last bit (they replace them on the paths of gate and compare, which then import neither)."""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from whisperbench.scoring import power, pvalues
from whisperbench.scoring.pvalues import (
    binomial_cdf,
    binomial_isf,
    binomial_pmf,
    binomial_sf,
    binomial_test,
    brent_root,
    normal_isf,
    normal_ppf,
    normal_sf,
    signed_rank_test,
)

RNG_SEED = 20261128


def test_the_binomial_test_equals_scipys_binomtest_for_every_outcome_of_small_sets_and_samples_of_large_ones():
    rng = np.random.default_rng(RNG_SEED)
    cases = [(k, n, p) for n in range(1, 61) for k in range(n + 1) for p in (0.5, 0.3, 0.01)]
    cases += [(int(k), int(n), 0.5) for n in rng.integers(61, 300_000, 20) for k in rng.integers(0, n + 1, 10)]
    differ = [(k, n, p) for k, n, p in cases if binomial_test(k, n, p) != stats.binomtest(k, n, p).pvalue]
    assert not differ, differ[:5]
    with pytest.raises(ValueError, match="k=4 successes in n=3 trials"):
        binomial_test(4, 3)


def _differences(rng: np.random.Generator, n: int, kind: int) -> np.ndarray:
    if kind == 0:  # error-count differences: small integers, many tied sizes
        d = rng.integers(-3, 4, n)
    elif kind == 1:  # distinct sizes: the exact distribution
        d = rng.permutation(np.arange(1, n + 1)) * rng.choice([-1, 1], n)
    else:
        d = np.round(rng.normal(0, 5, n), 1)
    return d[d != 0]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 14, 20, 50, 51, 80, 300, 2000])
def test_the_signed_rank_test_equals_scipys_wilcoxon_exact_enumerated_and_normal(n):
    rng = np.random.default_rng(RNG_SEED + n)
    for trial in range(24):
        d = _differences(rng, n, trial % 3)
        if len(d) == 0:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy warns that small samples with ties are permuted
            expected = stats.wilcoxon(d.astype(float), zero_method="wilcox", alternative="two-sided")
        got = signed_rank_test(d)
        assert (got.statistic, got.p_value) == (float(expected.statistic), float(expected.pvalue)), d.tolist()
    with pytest.raises(ValueError, match="nonzero differences"):
        signed_rank_test([1, 0, -2])


def test_normal_tails_and_quantiles_equal_scipys_norm():
    rng = np.random.default_rng(RNG_SEED)
    for x in [*rng.normal(0, 3, 500), 0.0, 1.96, 40.0, -40.0, math.inf]:
        assert normal_sf(x) == stats.norm.sf(x)
    for q in rng.uniform(0, 1, 500):
        assert (normal_ppf(q), normal_isf(q)) == (stats.norm.ppf(q), stats.norm.isf(q))


@pytest.mark.parametrize("share", [0.001, 0.3, 0.77])
def test_binomial_functions_equal_scipys_binom_on_arrays_inside_and_outside_the_support(share):
    rng = np.random.default_rng(RNG_SEED)
    n = np.arange(1, 2000)
    k = rng.integers(-3, 2100, len(n))
    np.testing.assert_array_equal(binomial_pmf(k, n, share), stats.binom.pmf(k, n, share))
    np.testing.assert_array_equal(binomial_cdf(k, n, share), stats.binom.cdf(k, n, share))
    np.testing.assert_array_equal(binomial_sf(k, n, share), stats.binom.sf(k, n, share))
    for alpha in (0.05, 0.01, 0.2):
        np.testing.assert_array_equal(binomial_isf(alpha, n, share), stats.binom.isf(alpha, n, share))


def test_without_scipys_boost_kernels_the_binomial_comes_from_scipy_stats_with_the_same_values(monkeypatch):
    import scipy.special

    pvalues._kernels.cache_clear()
    monkeypatch.setattr(scipy.special, "_ufuncs", object(), raising=False)
    monkeypatch.setitem(sys.modules, "scipy.special._ufuncs", object())
    try:
        assert pvalues._kernels()[0] == stats.binom._pmf
        assert binomial_test(7, 30) == stats.binomtest(7, 30).pvalue
    finally:
        pvalues._kernels.cache_clear()


def test_brents_root_takes_scipys_brentq_steps():
    functions = [
        lambda x: x**3 - 2 * x - 5,
        lambda x: math.cos(x) - x,
        lambda x: math.exp(x) - 3,
        lambda x: math.atan(x - 0.3),
    ]
    for f in functions:
        for a, b in ((-3.0, 3.5), (0.0, 2.5), (-1.0, 4.0)):
            if f(a) * f(b) <= 0:
                assert brent_root(f, a, b) == optimize.brentq(f, a, b)
    for examples in (10, 100, 1000, 20000):
        for baseline, target in ((0.0, 0.8), (0.01, 0.9), (0.05, 0.5)):
            n = np.array([examples])

            def gap(p):
                return float(power._power(n, p, 0.05, baseline)[0]) - target

            assert brent_root(gap, baseline + 1e-12, 1 - 1e-12) == optimize.brentq(gap, baseline + 1e-12, 1 - 1e-12)
    with pytest.raises(ValueError, match="same sign"):
        brent_root(lambda x: x * x + 1, -1.0, 1.0)
