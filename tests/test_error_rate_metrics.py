"""WER and CER are metrics of the protocol (``scoring/word_error_rate.py``, ``scoring/character_error_rate.py``): their
figures stay where summary.json has always had them, and through the registry alone the gate takes
``--max-increase wer.wer=N`` / ``cer.cer=N``, the leaderboard gets a "CER %" column, ``compare --json``, the export
and the trackers their values. Every figure is checked against jiwer run here on the normalized texts."""

from __future__ import annotations

import json
from pathlib import Path

import jiwer
import numpy as np
import pytest

from .conftest import BUNDLED

RECORDED = BUNDLED / "recorded" / "openai-whisper-base.jsonl"
MANIFEST = BUNDLED / "shortform" / "manifest.jsonl"


def _pairs(path: Path) -> tuple[list[str], list[str], list[str]]:
    """Ids, normalized transcripts and normalized hypotheses of a hypotheses file, normalized here."""
    from whisperbench.scoring.normalize import normalize

    truth = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        truth[row["id"]] = row["text"]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    ids = [r["id"] for r in rows]
    return ids, [normalize(truth[i], "english") for i in ids], [normalize(r["hypothesis"], "english") for r in rows]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The recorded base run as the reference; a candidate whose first three hypotheses lose their last two words
    and have an "e" made "a" (more word and character errors, by an amount jiwer counts below)."""
    from whisperbench import score

    tmp = tmp_path_factory.mktemp("error-rates")
    rows = [json.loads(line) for line in RECORDED.read_text(encoding="utf-8").splitlines()]
    cand = [
        dict(r, hypothesis=" ".join(r["hypothesis"].split()[:-2]).replace("e", "a", 1) if i < 3 else r["hypothesis"])
        for i, r in enumerate(rows)
    ]
    cand_path = tmp / "cand.jsonl"
    cand_path.write_text("".join(json.dumps(r) + "\n" for r in cand), encoding="utf-8")
    ref = score(RECORDED, MANIFEST, runs_dir=tmp / "runs", name="ref")
    candidate = score(cand_path, MANIFEST, runs_dir=tmp / "runs", name="cand")
    return ref, candidate, RECORDED, cand_path


def _jiwer_rates(path: Path) -> tuple[float, float]:
    _, truths, hyps = _pairs(path)
    return 100 * jiwer.wer(truths, hyps), 100 * jiwer.cer(truths, hyps)


def test_wer_and_cer_are_registered_metrics_whose_figures_stay_top_level(runs):
    from whisperbench.scoring.metrics import metric_named

    _, cand, _, cand_path = runs
    wer, cer = _jiwer_rates(cand_path)
    stored = json.loads((cand.store.path / "summary.json").read_text(encoding="utf-8"))
    assert stored["wer"] == pytest.approx(wer, abs=1e-9) and stored["cer"] == pytest.approx(cer, abs=1e-9)
    assert "metrics" not in stored and not isinstance(stored["wer"], dict)  # the layout scripts read is kept
    assert cand.summary.value_of(metric_named("wer")) == {
        "wer": stored["wer"],
        "transcript_words": stored["transcript_words"],
    }
    assert cand.summary.value_of(metric_named("cer"))["char_errors"] == stored["char_errors"]
    assert "wer" not in cand.summary.metrics and "cer" not in cand.summary.metrics


def test_the_gate_bounds_wer_and_cer_through_max_increase(runs, tmp_path):
    from whisperbench import gate

    ref, cand, ref_path, cand_path = runs
    (ref_wer, ref_cer), (cand_wer, cand_cer) = _jiwer_rates(ref_path), _jiwer_rates(cand_path)
    for key, delta in (("wer.wer", cand_wer - ref_wer), ("cer.cer", cand_cer - ref_cer)):
        assert delta > 0.5  # the check below can fail both ways
        exceeded = gate(ref, cand, max_increase={key: delta - 0.01}, max_failed_pct=100)
        held = gate(ref, cand, max_increase={key: delta + 0.01}, max_failed_pct=100)
        assert exceeded.code == 1 and held.code == 0, key
        check = next(c for c in exceeded.checks if c.name == f"{key} increase")
        assert f"{delta:+.4g}"[:5] in check.detail, check.detail
    paired = gate(ref, cand, max_increase={"wer.wer": 0.0}, max_failed_pct=100, confidence=0.9)
    detail = next(c for c in paired.checks if c.name == "wer.wer increase").detail
    assert "paired 90% CI" in detail  # a pooled rate: judged on its paired bootstrap interval


def test_the_leaderboard_shows_cer_and_wer_with_its_interval_from_the_metric(runs):
    from whisperbench.reports.leaderboard import leaderboard_frame
    from whisperbench.scoring import wer_interval

    ref, cand, _, cand_path = runs
    frame = leaderboard_frame([ref, cand], {ref.dataset_hash: ref}).set_index("Run")
    _, cer = _jiwer_rates(cand_path)
    assert frame.loc["cand", "CER %"] == pytest.approx(cer, abs=1e-9)
    assert "wer" not in frame.columns and "cer" not in frame.columns  # one column each, under its heading
    _, truths, hyps = _pairs(cand_path)
    measures = [jiwer.process_words(t, h) for t, h in zip(truths, hyps)]
    errors = np.array([m.substitutions + m.deletions + m.insertions for m in measures], dtype=float)
    words = np.array([m.hits + m.substitutions + m.deletions for m in measures], dtype=float)
    expected = wer_interval(errors, words, 0.95)
    assert (frame.loc["cand", "WER CI"].low, frame.loc["cand", "WER CI"].high) == pytest.approx(
        (expected.low, expected.high)
    )


def test_compare_and_the_export_carry_the_per_example_counts(runs):
    from whisperbench import compare
    from whisperbench.reports.export import example_frame

    ref, cand, _, cand_path = runs
    comparison = compare(ref, cand)
    wer, _ = _jiwer_rates(cand_path)
    assert comparison.metrics["wer"]["candidate"]["wer"] == pytest.approx(wer, abs=1e-9)
    assert comparison.to_json()["metrics"]["cer"]["headline"] == "cer"
    ids, truths, hyps = _pairs(cand_path)
    rows = example_frame(cand).set_index("id")
    for i, truth, hyp in zip(ids, truths, hyps):
        chars = jiwer.process_characters(truth, hyp)
        assert rows.loc[i, "char_errors"] == chars.substitutions + chars.deletions + chars.insertions, i


def test_cer_with_an_empty_reference_is_jiwers_pooled_and_undefined_per_example():
    """docs/measuring.md's exception: an empty normalized transcript has no per-example CER (jiwer.cer of that pair
    alone answers its inserted characters, 5), and pooled over pairs it adds its characters as insertions over no
    reference character, so the pooled CER is jiwer.cer's over the same list."""
    from whisperbench.scoring.wer import align_characters, pooled_rate

    truths, hyps = ["hello world", "", "abc"], ["hello word", "abc d", "abd"]
    counts = [align_characters(t, h) for t, h in zip(truths, hyps)]
    assert counts[1].error_rate() is None and jiwer.cer("", "abc d") == 5
    pooled = pooled_rate(sum(c.errors for c in counts), sum(c.transcript_words for c in counts))
    assert pooled == pytest.approx(100 * jiwer.cer(truths, hyps))
