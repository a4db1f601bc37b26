"""Bootstrap CIs and the paired test, checked against a plain-Python resampling of the same draws."""

import random

import numpy as np
import pytest

from whisperbench.scoring import paired_wer_test, qoi, qoi_interval, wer_interval
from whisperbench.types import Prediction


def _runs(seed=3, n=60, worse=0.0):
    rng = random.Random(seed)
    words = "one two three four five six seven eight".split()
    refs = [" ".join(rng.choices(words, k=rng.randint(3, 9))) for _ in range(n)]
    noisy = lambda s, p: " ".join(w if rng.random() > p else rng.choice(words) for w in s.split())  # noqa: E731
    reference = [Prediction(f"id{i}", r, noisy(r, 0.15)) for i, r in enumerate(refs)]
    candidate = [Prediction(f"id{i}", r, noisy(r, 0.15 + worse)) for i, r in enumerate(refs)]
    return reference, candidate


def test_wer_interval_matches_a_plain_resampling_and_contains_the_estimate():
    errors = [3, 0, 5, 1, 2, 0, 7, 1]
    words = [10, 8, 12, 9, 11, 7, 15, 6]
    ci = wer_interval(errors, words, resamples=500, seed=11)
    idx = np.random.default_rng(11).integers(0, len(errors), size=(500, len(errors)))
    plain = sorted(100 * sum(errors[i] for i in row) / sum(words[i] for i in row) for row in idx)
    assert ci.low == pytest.approx(np.quantile(plain, 0.025)) and ci.high == pytest.approx(np.quantile(plain, 0.975))
    assert ci.low <= 100 * sum(errors) / sum(words) <= ci.high
    assert wer_interval([], []) is None


def test_qoi_interval_and_paired_test_separate_same_from_worse():
    reference, candidate = _runs()
    same = qoi(reference, reference)
    assert qoi_interval(same).low == 100.0
    test_same = paired_wer_test(same)
    assert test_same.delta == 0 and test_same.p_value == 1.0
    reference, worse = _runs(worse=0.35)
    result = qoi(reference, worse)
    ci = qoi_interval(result, seed=1)
    assert ci.low < result.qoi < ci.high
    paired = paired_wer_test(result)
    assert paired.delta > 0 and paired.interval.low > 0 and paired.p_value < 0.01
    assert paired_wer_test(result, seed=1).interval != paired.interval  # seeded: a new seed, new draws
    assert paired_wer_test(result).interval == paired.interval  # same seed, same answer
