"""Paired significance (scoring.significance): each p-value against scipy/statsmodels or a hand-worked example,
the bootstrap against a plain resampling, its memory bound, and the calibration of the verdicts by simulation."""

import tracemalloc

import numpy as np
import pytest
from scipy import stats

from whisperbench.scoring.significance import (
    INCONCLUSIVE,
    NON_INFERIOR,
    REGRESSION_SHOWN,
    block_columns,
    mapsswe,
    non_inferiority,
    paired_significance,
    resampled_sums,
    sign_test,
)

statsmodels = pytest.importorskip("statsmodels", reason="statsmodels is the independent check of the tests")
from statsmodels.stats.descriptivestats import sign_test as sm_sign_test  # noqa: E402
from statsmodels.stats.weightstats import ztest  # noqa: E402


def _pairs(seed=0, n=81, effect=0.0):
    rng = np.random.default_rng(seed)
    words = rng.integers(5, 30, n)
    difficulty = rng.beta(2, 18, n)
    return (rng.binomial(words, difficulty), rng.binomial(words, np.clip(difficulty + effect, 0, 1)), words)


@pytest.mark.parametrize("seed,effect", [(0, 0.0), (1, 0.05), (2, -0.03), (3, 0.2)])
def test_sign_test_matches_statsmodels_and_scipy(seed, effect):
    ref, cand, _ = _pairs(seed, effect=effect)
    result = sign_test(ref, cand)
    diff = cand - ref
    assert (result.improved, result.regressed, result.ties) == ((diff < 0).sum(), (diff > 0).sum(), (diff == 0).sum())
    _, sm_p = sm_sign_test(diff, mu0=0)
    assert result.p_value == pytest.approx(sm_p, rel=1e-9)
    assert result.p_value == pytest.approx(stats.binomtest(result.regressed, result.improved + result.regressed).pvalue)


def test_sign_test_without_changes_is_uninformative():
    assert sign_test([1, 2], [1, 2]).p_value == 1.0
    assert sign_test([], []).p_value == 1.0


def test_mapsswe_hand_worked():
    # reference errors 2 0 3 1 4, candidate 3 1 3 2 6: Z = 1 1 0 1 2, mean 1, Σ(Z - 1)² = 0+0+1+0+1 = 2,
    # s² = 2 / (5 - 1) = 0.5, s = 0.70711, s/√5 = 0.31623, W = 1 / 0.31623 = 3.1623,
    # p = 2 (1 - Φ(3.1623)) = 2 × 0.00078270 = 0.0015654
    result = mapsswe([2, 0, 3, 1, 4], [3, 1, 3, 2, 6])
    assert result.segments == 5 and result.mean_difference == 1.0
    assert result.std == pytest.approx(0.70711, abs=1e-5)
    assert result.z == pytest.approx(3.1623, abs=1e-4)
    assert result.p_value == pytest.approx(0.0015654, abs=1e-7)


@pytest.mark.parametrize("seed,effect", [(0, 0.0), (1, 0.05)])
def test_mapsswe_is_statsmodels_one_sample_ztest_of_the_differences(seed, effect):
    ref, cand, _ = _pairs(seed, effect=effect)
    z, p = ztest(cand - ref, value=0)
    result = mapsswe(ref, cand)
    assert result.z == pytest.approx(z) and result.p_value == pytest.approx(p)


def test_mapsswe_degenerate_cases():
    """Every difference 0: z = 0, p = 1 (as SCTK's sc_stats). Every difference the same non-zero count: z is the
    limit, infinite with the mean's sign, p = 0 — where SCTK's statdist.c reports z = 0, p = 1, a deliberate
    departure (docs/statistics.md): a candidate adding an error to every example is not "no difference"."""
    assert mapsswe([1], [2]) is None
    same = mapsswe([1, 2, 3], [1, 2, 3])
    assert (same.z, same.p_value) == (0.0, 1.0)
    worse, better = mapsswe([1, 2, 3], [2, 3, 4]), mapsswe([2, 3, 4], [1, 2, 3])
    assert (worse.z, worse.p_value) == (float("inf"), 0.0) and (better.z, better.p_value) == (float("-inf"), 0.0)


def test_bootstrap_matches_a_plain_resampling_of_the_same_draws():
    ref, cand, words = _pairs(4, n=40, effect=0.02)
    result = paired_significance(ref, cand, words, resamples=300, seed=7)
    idx = np.random.default_rng(7).integers(0, 40, size=(300, 40))
    plain = np.array([100 * (cand[row].sum() - ref[row].sum()) / words[row].sum() for row in idx])
    regressed = np.array([100 * (cand[row] > ref[row]).mean() for row in idx])
    wer, drop = result.wer_difference, result.qoi_drop
    assert wer.estimate == pytest.approx(100 * (cand.sum() - ref.sum()) / words.sum())
    assert (wer.low, wer.high) == pytest.approx(tuple(np.quantile(plain, [0.025, 0.975])))
    assert wer.p_value == pytest.approx(min(1, 2 * min((plain <= 0).mean(), (plain >= 0).mean())))
    assert (drop.low, drop.high) == pytest.approx(tuple(np.quantile(regressed, [0.025, 0.975])))
    assert drop.estimate == pytest.approx(100 * (cand > ref).mean()) and drop.p_value is None
    assert result.resampling.method == "examples" and result.resampling.units == 40


@pytest.mark.parametrize("chunk", [1, 37, 40 * 7, 10**9])
def test_bootstrap_does_not_depend_on_the_chunk(chunk):
    ref, cand, words = _pairs(5, n=40)
    whole = paired_significance(ref, cand, words, resamples=250, seed=3, chunk=10**9)
    assert paired_significance(ref, cand, words, resamples=250, seed=3, chunk=chunk) == whole


def test_bootstrap_memory_is_bounded_by_the_chunk():
    n, resamples = 100_000, 100  # a whole index matrix: 80 MB
    columns = np.ones((n, 2))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        sums = resampled_sums(columns, resamples, seed=0, chunk=1 << 16)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (sums == n).all()
    assert peak < 8 * 1024 * 1024, f"peak {peak / 2**20:.1f} MB"


def test_blocked_bootstrap_resamples_whole_blocks():
    ref, cand, words = _pairs(6, n=30, effect=0.02)
    groups = [f"spk{i // 3}" for i in range(30)]
    result = paired_significance(ref, cand, words, groups=groups, block_by="speaker", resamples=200, seed=2)
    assert result.resampling.method == "blocks" and result.resampling.units == 10
    assert "speaker" in result.resampling.describe()
    # by hand: sums per speaker, then whole speakers drawn
    blocks = np.array(
        [[sum(cand[i] - ref[i] for i in range(b * 3, b * 3 + 3)), sum(words[b * 3 : b * 3 + 3])] for b in range(10)]
    )
    idx = np.random.default_rng(2).integers(0, 10, size=(200, 10))
    plain = 100 * blocks[idx, 0].sum(axis=1) / blocks[idx, 1].sum(axis=1)
    wer = result.wer_difference
    assert (wer.low, wer.high) == pytest.approx(tuple(np.quantile(plain, [0.025, 0.975])))
    # one example per block is the plain bootstrap
    singles = paired_significance(ref, cand, words, groups=[str(i) for i in range(30)], resamples=200, seed=2)
    plain_result = paired_significance(ref, cand, words, resamples=200, seed=2)
    assert singles.wer_difference.low == plain_result.wer_difference.low
    assert singles.wer_difference.high == plain_result.wer_difference.high


def test_block_columns_keeps_first_seen_order():
    out = block_columns(np.array([[1.0], [2.0], [3.0], [4.0]]), ["b", "a", "b", "c"])
    assert out.ravel().tolist() == [4.0, 2.0, 4.0]
    with pytest.raises(ValueError):
        block_columns(np.ones((2, 1)), ["a"])


def test_blocked_interval_is_wider_when_blocks_are_correlated():
    rng = np.random.default_rng(8)
    speakers = np.repeat(np.arange(12), 10)
    words = rng.integers(10, 30, 120)
    ref = rng.binomial(words, 0.1)
    shift = rng.normal(0, 0.08, 12)[speakers]  # the candidate is better for some speakers, worse for others
    cand = rng.binomial(words, np.clip(0.1 + shift, 0, 1))
    plain = paired_significance(ref, cand, words, seed=1).wer_difference
    blocked = paired_significance(ref, cand, words, groups=speakers, block_by="speaker", seed=1).wer_difference
    assert blocked.high - blocked.low > 1.5 * (plain.high - plain.low)


def test_non_inferiority_verdicts():
    ref, cand, words = _pairs(9, n=400, effect=0.0)
    interval = paired_significance(ref, cand, words).wer_difference
    assert non_inferiority(interval, interval.high + 0.01) == NON_INFERIOR
    assert non_inferiority(interval, interval.low - 0.01) == REGRESSION_SHOWN
    assert non_inferiority(interval, (interval.low + interval.high) / 2) == INCONCLUSIVE


# --- calibration: simulated paired gates with a known effect ---------------------------------------------------
GATES, N, ALPHA = 2000, 100, 0.05


def _simulated(effect, seed, gates=GATES, n=N):
    rng = np.random.default_rng(seed)
    words = rng.integers(5, 30, (gates, n))
    difficulty = rng.beta(2, 18, (gates, n))
    return (rng.binomial(words, difficulty), rng.binomial(words, np.clip(difficulty + effect, 0, 1)), words)


def _mc_band(rate, gates=GATES):
    """Three Monte-Carlo standard errors of a rejection rate over ``gates`` simulated gates."""
    return 3 * np.sqrt(rate * (1 - rate) / gates)


@pytest.fixture(scope="module")
def no_effect():
    ref, cand, words = _simulated(0.0, seed=11)
    return [paired_significance(r, c, w, resamples=400, seed=i) for i, (r, c, w) in enumerate(zip(ref, cand, words))]


def test_calibration_at_no_effect_false_fail_rate_is_alpha(no_effect):
    # the gate fails ("regression shown" at margin 0) when the 95 % interval lies wholly above 0: one-sided α/2
    fails = np.mean([non_inferiority(s.wer_difference, 0.0) == REGRESSION_SHOWN for s in no_effect])
    assert abs(fails - ALPHA / 2) < _mc_band(ALPHA / 2), fails
    bootstrap = np.mean([s.wer_difference.p_value <= ALPHA for s in no_effect])
    assert abs(bootstrap - ALPHA) < _mc_band(ALPHA), bootstrap
    z_test = np.mean([s.mapsswe.p_value <= ALPHA for s in no_effect])
    assert abs(z_test - ALPHA) < _mc_band(ALPHA), z_test
    # the exact sign test is conservative (discrete): never above α, and not far below it
    sign = np.mean([s.sign_test.p_value <= ALPHA for s in no_effect])
    assert ALPHA / 2 < sign < ALPHA + _mc_band(ALPHA), sign


def test_calibration_at_the_margin_passes_alpha_over_two():
    # the true WER increase equals the margin (2 points): "non-inferior" must be rare, one-sided α/2. The percentile
    # interval is a little narrow on small sets (at 100 examples about 3 % per tail instead of 2.5 %:
    # docs/statistics.md),
    # so this runs at 300 examples
    gates = 1000
    ref, cand, words = _simulated(0.02, seed=12, gates=gates, n=300)
    margin = 100 * (cand.sum() / words.sum() - ref.sum() / words.sum())  # the simulated effect, measured over all
    assert margin == pytest.approx(2.0, abs=0.1)
    passes = np.mean(
        [
            non_inferiority(paired_significance(r, c, w, resamples=400, seed=i).wer_difference, 2.0) == NON_INFERIOR
            for i, (r, c, w) in enumerate(zip(ref, cand, words))
        ]
    )
    assert abs(passes - ALPHA / 2) < _mc_band(ALPHA / 2, gates), passes


def test_holm_matches_a_hand_computation():
    from whisperbench.scoring.significance import holm

    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([None, 0.2]) == [None, 0.2] and holm([]) == []


def test_mapsswe_with_identical_differences_stays_valid_json():
    import json

    result = mapsswe([1, 2, 3], [2, 3, 4])
    assert result.z == float("inf") and json.loads(json.dumps(result.to_dict(), allow_nan=False))["z"] is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wilcoxon_exact_p_equals_an_enumeration_of_sign_patterns(seed):
    """Without tied sizes and below 50 changed examples the p-value is exact: the share of the 2^n sign patterns
    of the ranks whose positive rank sum is at least as extreme as the one observed (counted here by brute force)."""
    import itertools

    from whisperbench.scoring.significance import wilcoxon

    rng = np.random.default_rng(seed)
    n = 9
    sizes = rng.permutation(np.arange(1, n + 1))  # distinct sizes: no ties
    signs = rng.choice([-1, 1], size=n)
    ref = rng.integers(10, 20, size=n + 3)
    cand = ref.copy()
    cand[:n] += signs * sizes  # 3 unchanged examples at the end are left out
    result = wilcoxon(ref, cand)
    ranks = np.argsort(np.argsort(sizes)) + 1
    observed = ranks[signs > 0].sum()
    mean = n * (n + 1) / 4
    extreme = sum(
        abs(sum(r for r, s in zip(ranks, pattern) if s) - mean) >= abs(observed - mean) - 1e-9
        for pattern in itertools.product([0, 1], repeat=n)
    )
    assert result.changed == n and result.statistic == min(observed, n * (n + 1) / 2 - observed)
    assert result.p_value == pytest.approx(extreme / 2**n, rel=1e-9)
    assert wilcoxon([1, 2], [1, 2]) is None


def test_normal_limit_gives_the_bootstraps_intervals():
    """Above the limit the resampled sums come from their normal limit: the WER difference's and the regressed
    share's percentile intervals agree with drawing indices on the same data (within Monte-Carlo error), and the
    description says which was used."""
    from whisperbench.scoring.significance import Resampling, normal_limit_sums

    ref, cand, words = _pairs(seed=5, n=20_000, effect=0.01)  # below the limit: both paths can run
    columns = np.column_stack([cand - ref, words, (cand > ref).astype(float), np.ones(len(ref))]).astype(float)
    exact = resampled_sums(columns, 2000, 0, exact_up_to=10**9)
    limit = resampled_sums(columns, 2000, 0, exact_up_to=10_000)
    assert np.array_equal(limit, normal_limit_sums(columns, 2000, 0))
    for top, bottom in ((0, 1), (2, 3)):
        a, b = exact[:, top] / exact[:, bottom], limit[:, top] / limit[:, bottom]
        width = np.quantile(a, 0.975) - np.quantile(a, 0.025)
        for q in (0.025, 0.5, 0.975):
            assert abs(np.quantile(a, q) - np.quantile(b, q)) < 0.1 * width, (top, q)
    assert "normal limit" in Resampling("examples", 300_000, 2000, 0).describe()
    assert "normal limit" not in Resampling("examples", 1000, 2000, 0).describe()
