"""Scoring from stored counts (the path that makes a million predictions fast) equals re-scoring from text.

Runs are real run stores written by the runner (``recorded`` hypotheses: random word edits, missing
ids as failures, an empty transcript, one transcript changed in the candidate's dataset).
"""

import dataclasses
import json
import random

import pytest

from whisperbench.scoring.record import MEASURED
from whisperbench.types import WordCounts

from whisperbench.harness import RunRequest, open_run, rescore, run_evaluation
from whisperbench.reports import compare_runs
from whisperbench.reports.export import example_frame
from whisperbench.scoring import qoi, rescored, score_prediction, summarize

from .conftest import BUNDLED, SHARED_DATA, read_manifest_rows, write_jsonl


def _unscored(predictions):
    """The predictions with their stored scores disowned: scoring them is scoring from text."""
    return [dataclasses.replace(p, score=None) for p in predictions]


def _rows():
    rows = [dict(r, audio=str(BUNDLED / "shortform" / r["audio"]))
            for r in read_manifest_rows(BUNDLED / "shortform" / "manifest.jsonl")]
    shared = SHARED_DATA / "shortform" / "manifest.jsonl"
    if shared.exists():  # more transcripts where the shared data is present
        known = {r["id"] for r in rows}
        rows += [dict(r, audio=str(shared.parent / r["audio"])) for r in read_manifest_rows(shared)
                 if r["id"] not in known]
    return rows


def _hypotheses(tmp_path, rows, seed, name):
    rng = random.Random(seed)
    vocabulary = sorted({w for r in rows for w in r["text"].split()}) + ["Mr.", "$20", "colour", "1,000"]
    lines = []
    for number, row in enumerate(rows):
        if rng.random() < 0.1 or number == 2:
            continue  # no hypothesis: a failed example (at least one, whatever the data)
        words = []
        for word in row["text"].split():
            roll = rng.random()
            if roll < 0.08:
                words.append(rng.choice(vocabulary))
            elif roll >= 0.16:
                words.append(word.lower() if roll < 0.5 else word)
            if 0.16 <= roll < 0.2:
                words.append(rng.choice(vocabulary))
        lines.append({"id": row["id"], "hypothesis": " ".join(words)})
    return write_jsonl(tmp_path / f"{name}.jsonl", lines)


@pytest.fixture
def stored_runs(tmp_path):
    rows = _rows()
    rows.append(dict(rows[0], id="empty-transcript", text="uh"))  # normalizes to nothing
    runs = str(tmp_path / "runs")
    reference_manifest = write_jsonl(tmp_path / "reference.jsonl", rows)
    changed = [dict(r, text=r["text"] + " and more") if i == 1 else r for i, r in enumerate(rows)]
    candidate_manifest = write_jsonl(tmp_path / "candidate.jsonl", changed)
    for name, manifest, seed in (("ref", reference_manifest, 1), ("cand", candidate_manifest, 2)):
        run_evaluation(RunRequest("recorded", str(_hypotheses(tmp_path, rows, seed, name)), str(manifest),
                                  runs_dir=runs, name=name, warmup=False))
    return open_run("ref", runs), open_run("cand", runs)


def test_stored_counts_give_the_same_summary_and_qoi(stored_runs):
    ref, cand = stored_runs
    assert any(p.status == "error" for p in cand.predictions)
    for run in (ref, cand):
        assert {p.scored().normalizer for p in run.predictions} == {run.normalizer}  # the runner keyed each score
        fast = summarize(run.predictions, run.normalizer, run.form)
        assert fast == summarize(_unscored(run.predictions), run.normalizer, run.form)
        assert fast.num_failed > 0 and fast.empty_references == 1
        scores = {k: v for k, v in fast.to_dict().items() if k not in MEASURED}
        assert {k: run.summary.to_dict()[k] for k in scores} == scores  # what the runner wrote
    slow = qoi(_unscored(ref.predictions), _unscored(cand.predictions), "english")
    fast = qoi(ref.predictions, cand.predictions, "english")
    assert fast.to_json(with_examples=True) == slow.to_json(with_examples=True)
    assert len(fast.text_mismatch) == 1 and fast.regressed > 0 and fast.improved > 0
    # the reports read stored counts: their numbers are those of the re-scoring path
    comparison = compare_runs(ref, cand)
    assert comparison.result.to_json(True) == slow.to_json(True)
    assert comparison.candidate_wer == summarize(_unscored(cand.predictions), "english", "short").wer
    frame = example_frame(cand, reference=ref).set_index("id")
    for example in slow.examples:
        assert frame.loc[example.id, "errors"] == example.candidate_errors
        assert frame.loc[example.id, "reference_run_errors"] == example.reference_errors


def test_stored_counts_are_not_used_for_another_normalizer(stored_runs):
    ref, cand = stored_runs
    basic = [score_prediction(p, "basic") for p in cand.predictions]
    by_text = summarize(basic, "basic", "short")
    assert by_text.reference_words == sum(p.scored().words.ref_words for p in basic)
    assert summarize(cand.predictions, "basic", "short") == by_text  # scored with english: scored afresh
    english = summarize(cand.predictions, "english", "short")
    assert (by_text.reference_words, by_text.wer) != (english.reference_words, english.wer)
    pred = next(p for p, b in zip(cand.predictions, basic) if p.status == "ok" and p.scored().words != b.scored().words)  # an example the two normalizers score differently
    assert rescored(pred, "english") is pred
    assert rescored(pred, "basic") == score_prediction(pred, "basic") != pred
    unscored = type(pred)(id=pred.id, reference=pred.reference, hypothesis=pred.hypothesis)
    assert rescored(unscored, "english") == score_prediction(unscored, "english")
    # a score whose key is not the normalizer asked for is never read, whatever its fields hold
    planted = dataclasses.replace(pred, score=dataclasses.replace(pred.scored(), normalizer="basic",
                                                                  words=WordCounts(0, 0, 0, 999)))
    assert rescored(planted, "english") == score_prediction(pred, "english")
    assert rescore(cand.store, "basic").wer == by_text.wer


def test_lines_stored_before_scores_named_their_normalizer_read_as_run_jsons(stored_runs):
    """A predictions.jsonl written before ``scored_with`` existed: its scores are the run's normalizer's."""
    ref, _ = stored_runs
    path = ref.store.predictions_path
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert all(line["scored_with"] == "english" for line in lines)
    path.write_text("".join(json.dumps({k: v for k, v in line.items() if k != "scored_with"}) + "\n"
                            for line in lines), encoding="utf-8")
    again = open_run(ref.store.path)
    assert {p.scored().normalizer for p in again.predictions} == {"english"}
    assert {p.scored().normalizer for chunk in again.store.prediction_chunks(size=3) for p in chunk} == {"english"}
    assert [p.score for p in again.predictions] == [p.score for p in ref.predictions]  # the same scores, read back
    assert summarize(again.predictions, "english", "short") == summarize(_unscored(again.predictions), "english",
                                                                          "short")
