"""summary.json as a typed record: the round trip, a store written by an older whisperbench, a newer schema."""

import json
import shutil

import pytest

from whisperbench.errors import RunStoreError
from whisperbench.harness import rescore
from whisperbench.scoring.record import MEASURED, RENAMED_IN_3, SCHEMA_VERSION, Summary
from whisperbench.store.runs import open_run

from .conftest import BUNDLED, REPO

OLD_STORE = REPO / "tests" / "data" / "store-6d53f73"  # written by commit 6d53f73 (schema 1, no hallucination)


@pytest.fixture
def old_runs(tmp_path):
    shutil.copytree(OLD_STORE, tmp_path / "runs")
    return tmp_path / "runs"


def test_round_trip_keeps_every_key_of_summary_json(old_runs):
    stored = json.loads((old_runs / "old-tiny" / "summary.json").read_text())
    again = Summary.from_dict(stored).to_dict()
    renamed = {RENAMED_IN_3.get(k, k): v for k, v in stored.items()}  # "transcript" for the human text
    assert again.pop("schema_version") == SCHEMA_VERSION and again == renamed  # same keys, same values
    assert {"reference_words", "empty_references"} <= stored.keys() and "reference_words" not in again
    extra = dict(stored, cost_estimate_usd=0.01, hallucination={"loops": 1})
    record = Summary.from_dict(extra)
    assert record.extra == {"cost_estimate_usd": 0.01} and record.metrics == {"hallucination": {"loops": 1}}
    assert Summary.from_dict(record.to_dict()) == record


def test_a_store_written_by_an_older_version_reads_reports_and_rescores(old_runs, capsys):
    from whisperbench.cli import main

    run = open_run("old-tiny", old_runs)
    old = json.loads((old_runs / "old-tiny" / "summary.json").read_text())
    assert "schema_version" not in old  # schema 1
    assert (run.summary.wer, run.summary.num_failed, run.summary.metrics) == (old["wer"], 0, {})
    assert main(["report", "--runs-dir", str(old_runs), "--out", str(old_runs / "board.md"), "--quiet"]) == 0
    assert "old-tiny" in (old_runs / "board.md").read_text()
    # today's scoring of the same raw outputs gives the same figures, and the same hypotheses scored afresh
    assert (
        main(
            [
                "score",
                "--dataset",
                str(BUNDLED / "shortform" / "manifest.jsonl"),
                "--hypotheses",
                str(REPO / "datasets/tiny/recorded/openai-whisper-tiny.en.jsonl"),
                "--name",
                "new",
                "--runs-dir",
                str(old_runs),
            ]
        )
        == 0
    )
    new = open_run("new", old_runs).summary
    assert new.wer == pytest.approx(old["wer"], abs=1e-9) and new.cer == pytest.approx(old["cer"], abs=1e-9)
    again = rescore(open_run("old-tiny", old_runs).store)
    written = json.loads((old_runs / "old-tiny" / "summary.json").read_text())
    assert written["schema_version"] == SCHEMA_VERSION and "hallucination" in written
    assert again.wer == pytest.approx(old["wer"], abs=1e-9) and written["peak_rss_mb"] == old["peak_rss_mb"]
    capsys.readouterr()
    assert (
        main(["compare", "--runs-dir", str(old_runs), "--reference", "old-tiny", "--candidate", "new", "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)[0]["qoi"] == 100.0


def test_a_newer_schema_is_refused_with_the_file_named(old_runs):
    path = old_runs / "old-tiny" / "summary.json"
    path.write_text(json.dumps(dict(json.loads(path.read_text()), schema_version=SCHEMA_VERSION + 1)))
    with pytest.raises(
        RunStoreError, match=rf"summary.json: schema version {SCHEMA_VERSION + 1} is newer than this whisperbench reads"
    ):
        open_run("old-tiny", old_runs)


STORE_A758 = REPO / "tests" / "data" / "store-a758ad9"  # written by commit a758ad9 (scores inside predictions.jsonl)


def _close(old, new, path=""):
    """Every number of ``old`` equal in ``new`` to 1e-9 (recursively; keys ``new`` adds are allowed)."""
    if isinstance(old, dict):
        assert isinstance(new, dict), path
        for key, value in old.items():
            assert key in new, f"{path}.{key} missing"
            _close(value, new[key], f"{path}.{key}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), path
        for i, (a, b) in enumerate(zip(old, new)):
            _close(a, b, f"{path}[{i}]")
    elif isinstance(old, float):
        assert new == pytest.approx(old, abs=1e-9, rel=0), path
    else:
        assert new == old, path


def test_a_store_written_by_a758ad9_rescores_to_the_same_figures(tmp_path, capsys):
    """81 shared short-form utterances (openai-whisper tiny.en's outputs as the reference, an edited copy with
    dropped words, loops and failures as the candidate), stored and compared by a758ad9: read today (the score
    fields in its lines dropped, every score derived again), every figure — WER, CER, counts, hallucination, QoI,
    paired tests and intervals — equals what a758ad9 wrote, to 1e-9."""
    from whisperbench.cli import main

    runs = tmp_path / "runs"
    shutil.copytree(STORE_A758, runs)
    for name in ("ref", "cand"):
        old = json.loads((runs / name / "summary.json").read_text())
        new = rescore(open_run(name, runs).store).to_dict()
        new.pop("schema_version")  # 3 today: the renamed keys
        _close({RENAMED_IN_3.get(k, k): v for k, v in old.items() if k not in (*MEASURED, "schema_version")}, new, name)
    capsys.readouterr()
    assert main(["compare", "--runs-dir", str(runs), "--reference", "ref", "--candidate", "cand", "--json"]) == 0
    now = json.loads(capsys.readouterr().out)[0]
    then = json.loads((runs / "compare.json").read_text())[0]
    assert then["qoi"] < 100 and then["regressed"] > 0
    # the WER difference a758ad9 wrote as "wer_difference" is today the WER's pairing, its one key
    wer = now["paired"]["wer.increase"]
    low, high = wer.pop("interval")
    _close(then.pop("wer_difference"), dict(wer, low=low, high=high), "compare.paired.wer.increase")
    _close(then, now, "compare")
