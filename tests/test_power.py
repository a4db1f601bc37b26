"""Power and size (scoring.power, `whisperbench plan`): the formulas against statsmodels and scipy, and the
planned power checked by simulating paired gates at the planned effect."""

import numpy as np
import pytest
from scipy import stats

from whisperbench.scoring.power import (
    detectable_qoi_drop,
    detectable_wer_increase,
    examples_for_qoi_drop,
    examples_for_wer_increase,
    plan,
)
from whisperbench.scoring.significance import mapsswe

statsmodels = pytest.importorskip("statsmodels", reason="statsmodels is the independent check of the tests")
from statsmodels.stats.power import NormalIndPower  # noqa: E402


@pytest.mark.parametrize("n,sd,words", [(49, 1.5, 18.0), (400, 3.0, 25.0), (2000, 2.0, 12.0)])
def test_detectable_wer_increase_matches_statsmodels_one_sample_normal_power(n, sd, words):
    effect = NormalIndPower().solve_power(nobs1=n, alpha=0.05, power=0.8, ratio=0)  # (mean D) / sd(D)
    assert detectable_wer_increase(sd, words, n) == pytest.approx(100 * effect * sd / words, rel=1e-3)
    needed = examples_for_wer_increase(sd, words, detectable_wer_increase(sd, words, n))
    assert needed == pytest.approx(n, abs=1)


def _exact_power(n, share, baseline, alpha=0.05):
    """Power of the one-sided exact binomial test, summed over every count ``scipy.stats.binomtest`` rejects."""
    rejects = [k for k in range(n + 1) if stats.binomtest(k, n, baseline, alternative="greater").pvalue <= alpha]
    return sum(stats.binom.pmf(k, n, share) for k in rejects)


@pytest.mark.parametrize("n,baseline", [(49, 0.0), (49, 0.05), (300, 0.1)])
def test_detectable_qoi_drop_is_where_the_exact_binomial_test_reaches_the_power(n, baseline):
    drop = detectable_qoi_drop(n, baseline=baseline)
    share = baseline + drop / 100
    assert _exact_power(n, share, baseline) == pytest.approx(0.8, abs=1e-6)
    assert _exact_power(n, share + 0.002, baseline) >= 0.8 > _exact_power(n, share - 0.002, baseline)
    needed = examples_for_qoi_drop(drop + 0.01, baseline=baseline)
    assert needed <= n and _exact_power(needed, share + 0.0001, baseline) >= 0.8


def test_qoi_drop_of_a_deterministic_implementation():
    # no regression expected: one regressed example fails the gate; 80 % chance to see one: 1 - 0.2^(1/n)
    assert detectable_qoi_drop(49) == pytest.approx(100 * (1 - 0.2 ** (1 / 49)), rel=1e-6)
    assert examples_for_qoi_drop(5.0) == int(np.ceil(np.log(0.2) / np.log(0.95)))


def test_plan_from_a_reference_and_from_a_comparison():
    ref_errors, words = [2, 0, 3, 1, 4, 2, 0, 1], [20, 10, 25, 15, 30, 20, 12, 18]
    alone = plan(ref_errors, words, wer_increase=1.0, qoi_drop=5.0)
    assert alone.sd_difference == pytest.approx(np.sqrt(2 * np.mean(ref_errors))) and "Poisson" in alone.basis
    assert alone.examples == 8 and alone.words_per_example == pytest.approx(np.mean(words))
    assert alone.examples_for_wer_increase == examples_for_wer_increase(alone.sd_difference, np.mean(words), 1.0)
    paired = plan(ref_errors, words, candidate_errors=[3, 0, 3, 2, 4, 1, 0, 1], examples=1000)
    assert paired.sd_difference == pytest.approx(np.std([1, 0, 0, 1, 0, -1, 0, 0], ddof=1))
    assert paired.examples == 1000 and paired.examples_for_wer_increase is None
    assert paired.detectable_wer_increase < alone.detectable_wer_increase


def test_calibration_power_at_the_planned_wer_increase_is_the_planned_power():
    gates, n, words = 2000, 200, 20
    rng = np.random.default_rng(21)
    rate = rng.uniform(0.5, 3.0, (gates, n))  # expected errors per example, varying with the example
    sd = np.sqrt(2 * 1.75)
    for _ in range(3):  # the sd at the alternative: var(D) = 2 λ + shift
        shift = detectable_wer_increase(sd, words, n) * words / 100
        sd = np.sqrt(2 * 1.75 + shift)
    ref, cand = rng.poisson(rate), rng.poisson(rate + shift)
    detected = np.mean([mapsswe(r, c).p_value <= 0.05 for r, c in zip(ref, cand)])
    assert abs(detected - 0.8) < 3 * np.sqrt(0.8 * 0.2 / gates), detected


def test_calibration_power_at_the_planned_qoi_drop_is_the_planned_power():
    gates, n, baseline = 4000, 150, 0.05
    share = baseline + detectable_qoi_drop(n, baseline=baseline) / 100
    regressed = np.random.default_rng(22).binomial(n, share, gates)
    critical = int(stats.binom.isf(0.05, n, baseline)) + 1
    detected = (regressed >= critical).mean()
    assert abs(detected - 0.8) < 3 * np.sqrt(0.8 * 0.2 / gates), detected
