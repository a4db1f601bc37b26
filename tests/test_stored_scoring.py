"""The raw output is the only record: predictions.jsonl holds no score, every figure is derived from it once (the
score table, rebuilt when missing, stale or corrupt), and the figures equal scoring from text.

Runs are real run stores written by the runner (``recorded`` hypotheses: random word edits, missing
ids as failures, an empty transcript, one transcript changed in the candidate's dataset).
"""

import dataclasses
import json
import random

import pytest

from whisperbench.harness import RunRequest, open_run, rescore, run_evaluation
from whisperbench.reports import compare_runs
from whisperbench.reports.export import example_frame
from whisperbench.scoring import qoi, rescored, score_prediction, summarize
from whisperbench.scoring.record import MEASURED
from whisperbench.types import SCORE_FIELDS, WordCounts

from .conftest import BUNDLED, SHARED_DATA, read_manifest_rows, write_jsonl


def _unscored(predictions):
    """The predictions with their stored scores disowned: scoring them is scoring from text."""
    return [dataclasses.replace(p, score=None) for p in predictions]


def _rows():
    rows = [
        dict(r, audio=str(BUNDLED / "shortform" / r["audio"]))
        for r in read_manifest_rows(BUNDLED / "shortform" / "manifest.jsonl")
    ]
    shared = SHARED_DATA / "shortform" / "manifest.jsonl"
    if shared.exists():  # more transcripts where the shared data is present
        known = {r["id"] for r in rows}
        rows += [
            dict(r, audio=str(shared.parent / r["audio"])) for r in read_manifest_rows(shared) if r["id"] not in known
        ]
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
        run_evaluation(
            RunRequest(
                "recorded",
                str(_hypotheses(tmp_path, rows, seed, name)),
                str(manifest),
                runs_dir=runs,
                name=name,
                warmup=False,
            )
        )
    return open_run("ref", runs), open_run("cand", runs)


def test_stored_counts_give_the_same_summary_and_qoi(stored_runs):
    ref, cand = stored_runs
    assert any(p.status == "error" for p in cand.predictions)
    for run in (ref, cand):
        lines = [json.loads(line) for line in run.store.predictions_path.read_text(encoding="utf-8").splitlines()]
        assert lines and not any(SCORE_FIELDS & line.keys() for line in lines)  # the raw output only
        assert all(p.score is None for p in run.predictions)
        fast = summarize(run.scored(), run.normalizer, run.form)
        assert fast == summarize(_unscored(run.predictions), run.normalizer, run.form)
        assert fast.num_failed > 0 and fast.empty_transcripts == 1
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


def test_a_score_is_never_read_for_another_normalizer(stored_runs):
    ref, cand = stored_runs
    basic = [score_prediction(p, "basic") for p in cand.predictions]
    by_text = summarize(basic, "basic", "short")
    assert by_text.transcript_words == sum(p.scored().words.transcript_words for p in basic)
    english_scored = cand.scored("english")
    assert summarize(english_scored, "basic", "short") == by_text  # scored with english: scored afresh
    english = summarize(english_scored, "english", "short")
    assert (by_text.transcript_words, by_text.wer) != (english.transcript_words, english.wer)
    pred = next(
        p for p, b in zip(english_scored, basic) if p.status == "ok" and p.scored().words != b.scored().words
    )  # the two normalizers differ on it
    assert rescored(pred, "english") is pred
    assert rescored(pred, "basic") == score_prediction(pred, "basic") != pred
    unscored = type(pred)(id=pred.id, transcript=pred.transcript, hypothesis=pred.hypothesis)
    assert rescored(unscored, "english") == score_prediction(unscored, "english")
    # a score whose key is not the normalizer asked for is never read, whatever its fields hold
    planted = dataclasses.replace(
        pred, score=dataclasses.replace(pred.scored(), normalizer="basic", words=WordCounts(0, 0, 0, 999))
    )
    assert rescored(planted, "english") == score_prediction(pred, "english")
    assert rescore(cand.store, "basic").wer == by_text.wer


def test_scores_stored_by_earlier_versions_are_never_trusted(stored_runs):
    """Lines written before scores left predictions.jsonl carry flat score fields: they are read as raw output, a
    planted wrong count changes nothing, and the run reads, reports and rescores as before."""
    ref, cand = stored_runs
    before = compare_runs(ref, cand).to_json(with_examples=True)
    path = ref.store.predictions_path
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    planted = [
        dict(
            line,
            transcript_norm="x",
            hypothesis_norm="y",
            hits=0,
            substitutions=999,
            deletions=0,
            insertions=0,
            wer=99900.0,
            scored_with="english",
        )
        for line in lines
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in planted), encoding="utf-8")
    again = open_run(ref.store.path)
    assert all(p.score is None for p in again.predictions)
    assert {k: v for k, v in compare_runs(again, open_run(cand.store.path)).to_json(True).items()} == before
    assert rescore(again.store).wer == ref.summary.wer


@pytest.mark.parametrize("damage", ["delete", "truncate", "garbage", "stale"])
def test_a_missing_corrupt_or_stale_score_table_is_rebuilt_with_the_same_figures(stored_runs, damage):
    ref, cand = stored_runs
    before = compare_runs(ref, cand).to_json(with_examples=True)
    table = cand.store.scores_path(cand.normalizer)
    assert table.exists()
    if damage == "delete":
        table.unlink()
    elif damage == "truncate":
        table.write_bytes(table.read_bytes()[:200])
    elif damage == "garbage":
        table.write_bytes(b"ARROW1" + bytes(range(256)) * 8)
    else:  # predictions.jsonl touched after the table was written: its stamp no longer matches
        path = cand.store.predictions_path
        path.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    assert compare_runs(open_run(ref.store.path), open_run(cand.store.path)).to_json(with_examples=True) == before
    assert open_run(cand.store.path).store.read_score_table(cand.normalizer) is not None  # rebuilt and stored


def test_a_score_table_with_one_flipped_bit_is_not_trusted(stored_runs):
    """A table that still parses after a bit flipped in one of its counts would change the gate's verdict: its
    checksum no longer matches, so it is rebuilt from predictions.jsonl and the figures stay what they were."""
    ref, cand = stored_runs
    before = compare_runs(ref, cand).to_json(with_examples=True)
    path = ref.store.scores_path(ref.normalizer)
    data = bytearray(path.read_bytes())
    table = ref.score_table()
    original = table["substitutions"].to_pylist()  # a copy: the table itself is memory-mapped from that file
    import pyarrow as pa

    needle = bytes(table["substitutions"].chunk(0).buffers()[1])[:64]  # the column's first values, as stored
    tampered = None
    for at in (i for i in range(len(data)) if data.startswith(needle, i)):
        flipped = bytearray(data)
        flipped[at] ^= 0x10  # still a valid Arrow file, one count changed
        path.write_bytes(bytes(flipped))
        tampered = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        if tampered["substitutions"].to_pylist() != original:
            break
    assert tampered is not None and tampered["substitutions"].to_pylist() != original  # it parses, and lies
    again = open_run(ref.store.path)
    assert compare_runs(again, open_run(cand.store.path)).to_json(with_examples=True) == before
    assert again.score_table()["substitutions"].to_pylist() == original  # rebuilt from the raw output


def test_a_score_table_made_by_other_scoring_code_is_rebuilt(stored_runs, monkeypatch):
    from whisperbench.store import score_files as scorefile

    ref, _ = stored_runs
    assert ref.store.read_score_table(ref.normalizer) is not None
    monkeypatch.setattr(scorefile, "scorer_digest", lambda: "another-scorer")
    assert ref.store.read_score_table(ref.normalizer) is None


def test_the_run_writes_its_score_table_when_it_ends(tmp_path):
    """Scoring happens once, when the run is finalized: the table (and its check) is there before any report reads
    the run, and a report reads it as it is (predictions.jsonl is not read again)."""
    rows = _rows()[:6]
    manifest = write_jsonl(tmp_path / "m.jsonl", rows)
    request = RunRequest(
        "recorded",
        str(_hypotheses(tmp_path, rows, 3, "h")),
        str(manifest),
        runs_dir=str(tmp_path),
        name="r",
        warmup=False,
    )
    result = run_evaluation(request)
    table = result.store.read_score_table(result.summary.normalizer)
    assert table is not None and table.num_rows == 6
    assert open_run(str(result.store.path))._predictions is None  # opened from the table alone


def test_a_run_scored_while_it_is_written_has_the_figures_and_table_of_one_scored_at_the_end(tmp_path, monkeypatch):
    """Recorded hypotheses (no speed measured while the run goes): a run large enough for a pool is scored in
    parts by a pool as its lines are written (here from 3 lines, parts of 2: several parts and a short last
    one). Its summary.json scores and score table equal those of the same run scored after it was written (the
    adapter marked as computing: no pool while writing), a failed example and an empty transcript included; and
    the parts were used (not scored again at the end). With no idle core: no pool, the same figures."""
    from whisperbench.adapters.recorded import RecordedAdapter
    from whisperbench.scoring import engine
    from whisperbench.scoring import table as tables

    rows = _rows()
    rows.append(dict(rows[0], id="empty-transcript", text="uh"))
    manifest = write_jsonl(tmp_path / "m.jsonl", rows)
    hypotheses = _hypotheses(tmp_path, rows, 5, "h")
    monkeypatch.setattr(engine, "PARALLEL_MIN", 3)
    monkeypatch.setattr(engine, "idle_cpus", lambda since=None: 2)  # the other xdist worker may be busy
    monkeypatch.setattr(tables, "WRITTEN_PART", 2)
    used = []
    original = tables.ScoredWhileWritten.result

    def spy(self, stored):
        got = original(self, stored)
        used.append(got is not None and len(self._parts))
        return got

    monkeypatch.setattr(tables.ScoredWhileWritten, "result", spy)

    def scored(name):
        request = RunRequest(
            "recorded", str(hypotheses), str(manifest), runs_dir=str(tmp_path), name=name, warmup=False
        )
        result = run_evaluation(request)
        figures = {k: v for k, v in result.summary.to_dict().items() if k not in MEASURED}
        return figures, open_run(str(result.store.path)).score_table()

    streamed, streamed_table = scored("while-written")
    assert used and used[0] >= 3
    monkeypatch.setattr(engine, "idle_cpus", lambda since=None: 1)  # other processes take the cores
    busy, busy_table = scored("busy")
    monkeypatch.setattr(RecordedAdapter, "computes", True)
    at_end, at_end_table = scored("at-end")
    assert len(used) == 1  # no pool while writing these two times
    assert streamed == at_end == busy and streamed["num_failed"] > 0 and streamed["empty_transcripts"] == 1
    assert streamed_table.equals(at_end_table) and busy_table.equals(at_end_table)
    assert streamed_table.num_rows == len(rows)
