"""WER and QoI checked against independent computations with jiwer directly."""

import random

import jiwer
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whisperbench.scoring import align, normalize, qoi, summarize
from whisperbench.types import Prediction, WordCounts

PAIRS = [
    ("the cat sat on the mat", "the cat sat on mat"),
    ("hello world", "hello big world"),
    ("a b c d", "x b c y z"),
    ("Mr. Smith paid $20 million", "mister smith paid twenty million dollars"),
    ("one two three", ""),
]


def test_align_matches_jiwer():
    for ref, hyp in PAIRS:
        counts = align(ref, hyp)
        if hyp:
            out = jiwer.process_words(ref, hyp)
            assert (counts.hits, counts.substitutions, counts.deletions, counts.insertions) == (
                out.hits,
                out.substitutions,
                out.deletions,
                out.insertions,
            )
        else:
            assert counts.deletions == len(ref.split()) and counts.errors == len(ref.split())


def test_empty_reference_rule():
    counts = align("", "uh huh")
    assert counts.insertions == 2 and counts.transcript_words == 0
    assert align("", "").errors == 0


def _preds(pairs, prefix="ex"):
    return [Prediction(id=f"{prefix}{i}", transcript=r, hypothesis=h) for i, (r, h) in enumerate(pairs)]


def test_corpus_wer_is_pooled_not_mean_and_matches_jiwer():
    pairs = [p for p in PAIRS if p[1]]
    summary = summarize(_preds(pairs), "english", "short")
    refs = [normalize(r) for r, _ in pairs]
    hyps = [normalize(h) for _, h in pairs]
    assert summary.wer == pytest.approx(100 * jiwer.wer(refs, hyps))
    mean_of_examples = sum(100 * jiwer.wer(r, h) for r, h in zip(refs, hyps)) / len(refs)
    assert summary.wer != pytest.approx(mean_of_examples)


def test_failed_examples_count_as_empty_hypotheses():
    preds = _preds([("a b c d", "a b c d"), ("e f g h", "e f g h")])
    preds[1].status, preds[1].error, preds[1].hypothesis = "error", "boom", ""
    summary = summarize(preds, "english", "short")
    assert summary.num_failed == 1 and summary.deletions == 4
    assert summary.wer == pytest.approx(50.0) and summary.wer_ok == pytest.approx(0.0)


def _independent_qoi(ref_preds, cand_preds):
    cand = {p.id: p for p in cand_preds}
    flags = []
    for p in ref_preds:
        r = normalize(p.transcript)
        ref_wer = jiwer.wer(r, normalize(p.hypothesis) or "<empty>")
        c = cand[p.id]
        cand_wer = jiwer.wer(r, normalize(c.hypothesis) or "<empty>") if c.status == "ok" else float("inf")
        flags.append(cand_wer <= ref_wer)
    return 100.0 * sum(flags) / len(flags)


def test_qoi_joins_by_id_under_shuffling_and_matches_independent_computation():
    rng = random.Random(7)
    words = "alpha beta gamma delta epsilon zeta eta theta".split()
    refs = [" ".join(rng.choices(words, k=6)) for _ in range(40)]
    noisy = lambda s: " ".join(w if rng.random() > 0.3 else rng.choice(words) for w in s.split())  # noqa: E731
    reference = [Prediction(f"id{i}", r, noisy(r)) for i, r in enumerate(refs)]
    candidate = [Prediction(f"id{i}", r, noisy(r)) for i, r in enumerate(refs)]
    expected = _independent_qoi(reference, candidate)
    shuffled = candidate[:]
    rng.shuffle(shuffled)
    result = qoi(reference, shuffled)
    assert result.qoi == pytest.approx(expected)
    assert result.improved + result.unchanged + result.regressed == result.joined == 40
    assert 0 < result.qoi < 100  # the data must exercise both outcomes
    assert qoi(reference, reference).qoi == 100.0


def test_qoi_counts_failures_and_lists_unjoined_ids():
    reference = _preds([("a b", "a b"), ("c d", "c x"), ("e f", "e f"), ("g h", "g h")])
    candidate = _preds([("a b", "a b"), ("c d", "c d"), ("e f", "")])
    candidate[2].status = "error"
    candidate.append(Prediction("extra", "z", "z"))
    reference[3].status = "error"
    del candidate[1:2]
    candidate.append(Prediction("ex1", "c d", "c d"))
    result = qoi(reference, candidate)
    assert result.only_in_candidate == ["extra"]
    assert result.reference_failed == []  # ex3 is not in the candidate at all
    assert result.only_in_reference == ["ex3"]
    assert result.joined == 3 and result.improved == 1 and result.unchanged == 1 and result.regressed == 1
    assert result.candidate_failed == 1
    assert result.qoi == pytest.approx(200 / 3)
    assert [e.id for e in result.worst()] == ["ex2"]


def test_qoi_rejects_duplicate_ids():
    with pytest.raises(ValueError, match="more than once"):
        qoi(_preds([("a", "a")]) * 2, _preds([("a", "a")]))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)
        | st.sampled_from([0.1, 0.2, 0.30000000000000004, 1e-9, 5.5]),
        min_size=1,
        max_size=300,
    ),
    st.lists(st.floats(min_value=0, max_value=100) | st.sampled_from([0, 2.5, 50, 90, 97.5, 99, 100]), max_size=6),
)
def test_percentiles_are_numpys_to_the_last_bit(values, qs):
    """summary.json's latency percentiles: the same floats as numpy.percentile's default method, each q alone,
    duplicates, one value and both ends included."""
    import numpy as np

    from whisperbench.scoring.figures import percentiles

    assert percentiles(values, qs) == [float(np.percentile(values, q)) for q in qs]


# jiwer's own published cases (jitsi/jiwer tests/test_wer.py and tests/test_measures.py, the latter's known values
# taken from the "From WER and RIL to MER and WIL" paper): the WER each expects, as a fraction
JIWER_CASES = [
    ("This is a test", "This is a test", 0.0),
    ("This is a test", "", 1.0),
    ("This is a test", "This test", 0.5),
    ("i am a short ground truth", "i am a considerably longer and very much incorrect hypothesis", 7 / 6),
    ("X", "X", 0.0),
    ("X", "X X Y Y", 3.0),
    ("X Y X", "X Z", 2 / 3),
    ("X", "Y", 1.0),
    ("X", "Y Z", 2.0),
]


@pytest.mark.parametrize("reference, hypothesis, expected", JIWER_CASES)
def test_word_counts_give_the_wer_jiwers_own_tests_expect(reference, hypothesis, expected):
    from whisperbench.scoring.wer import count_edits

    counts = count_edits(reference.split(), hypothesis.split())
    assert counts.error_rate() == pytest.approx(100 * expected, abs=1e-12)


# jiwer's own CER cases (jitsi/jiwer tests/test_cer.py; spaces are characters): (references, hypotheses, CER)
JIWER_CER_CASES = [
    (["This is a test"], ["This is a test"], 0 / 14),
    (["This is a test"], [""], 14 / 14),
    (["This is a test"], ["This test"], 5 / 14),
    (["X"], ["X"], 0.0),
    (["X"], ["X X Y Y"], 6.0),
    (["X Y X"], ["X Z"], 3 / 5),
    (["X"], ["Y"], 1.0),
    (["X"], ["Y Z"], 3.0),
    (["i", "am i good"], ["i am", "i good"], 0.6),
    (["am i good", "i"], ["i good", "i am"], 0.6),
]


@pytest.mark.parametrize("references, hypotheses, expected", JIWER_CER_CASES)
def test_character_counts_give_the_cer_jiwers_own_tests_expect(references, hypotheses, expected):
    from whisperbench.scoring.wer import align_characters

    total = sum((align_characters(r, h) for r, h in zip(references, hypotheses)), WordCounts())
    assert total.error_rate() == pytest.approx(100 * expected, abs=1e-12)


def test_character_counts_are_jiwers_return_dict():
    """jiwer's tests/test_cer.py::test_return_dict: ["i", "am i good"] against ["i am", "y good"]."""
    from whisperbench.scoring.wer import align_characters

    total = align_characters("i", "i am") + align_characters("am i good", "y good")
    assert (total.hits, total.substitutions, total.deletions, total.insertions) == (6, 1, 3, 3)
