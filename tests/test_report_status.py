"""Reports tell a stopped or empty run from a finished one, and small things the console said are true
(issue 33, items 5 and 9). Runs are recorded hypotheses on the bundled clips (no model)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from whisperbench.cli import main

from .conftest import record_run, write_jsonl


def _stop(runs, source: str, name: str, keep: int, label: str) -> None:
    """``name``: a copy of run ``source`` killed after ``keep`` examples (run.json still says running)."""
    shutil.copytree(runs / source, runs / name)
    lines = (runs / name / "predictions.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (runs / name / "predictions.jsonl").write_text("".join(lines[:keep]), encoding="utf-8")
    (runs / name / "summary.json").unlink()
    info = json.loads((runs / name / "run.json").read_text(encoding="utf-8"))
    (runs / name / "run.json").write_text(json.dumps(dict(info, status="running", label=label, run_id=name)))


@pytest.fixture
def mixed_runs(tmp_path, tiny_rows, tiny_short):
    """A finished reference and candidate, a run stopped after 2 of 6 examples and one stopped before any; the two
    unfinished ones carry the shortest labels, so a choice by plainness alone would take one as the reference."""
    runs = tmp_path / "runs"
    record_run(runs, tiny_short, tiny_rows, "ref", lambda r: r["text"])
    record_run(runs, tiny_short, tiny_rows, "cand", lambda r: r["text"].lower())
    _stop(runs, "cand", "partial", 2, "p")
    _stop(runs, "cand", "empty", 0, "e")
    return runs


def test_every_report_format_shows_status_and_coverage_and_survives_an_empty_run(mixed_runs, capsys):
    runs = mixed_runs
    expected = {
        "ref": "6 of 6, finished",
        "cand": "6 of 6, finished",
        "partial": "2 of 6, stopped",
        "empty": "0 of 6, stopped",
    }
    capsys.readouterr()
    for fmt in ("md", "html", "csv", "hf"):
        assert main(["report", "--runs-dir", str(runs), "--format", fmt, "--reference-adapter", "recorded"]) == 0, fmt
        captured = capsys.readouterr()
        # without --reference: a finished run of the adapter, the plainest label among those, said on stderr
        assert "reference for tiny-shortform: ref (recorded ref, 6 of 6, finished)" in captured.err, captured.err
        if fmt in ("md", "hf"):  # printed on the terminal too
            for status in expected.values():
                assert status in captured.out, (fmt, status)
    rows = {line.split("`")[1]: line for line in (runs / "leaderboard.md").read_text().splitlines() if "| `" in line}
    assert {name: status in rows[name] for name, status in expected.items()} == dict.fromkeys(expected, True)
    assert "**recorded ref** (reference)" in rows["ref"]
    page = (runs / "leaderboard.html").read_text()
    # the status of an unfinished run beside its implementation, every run's in its details
    assert '<span class="status unfinished">(2 of 6, stopped)</span>' in page and "<dt>Status</dt>" in page
    table = pd.read_csv(runs / "leaderboard.csv")
    assert dict(zip(table["Run"], table["Status"])) == expected
    card = (runs / "model-card.md").read_text()
    head, body = card.split("\n---\n", 1)
    assert "WER recorded cand" in head and "WER e (" not in head and "WER p (" not in head  # finished runs only
    assert "| e | cand.jsonl | – | – | – | 0 of 6, stopped |" in body


def test_coverage_counts_what_is_stored_against_the_dataset(mixed_runs):
    from whisperbench.store.runs import open_run

    lines = (mixed_runs / "partial" / "predictions.jsonl").read_text().splitlines()
    coverage = open_run("partial", mixed_runs).coverage
    assert (coverage.status, coverage.stored, coverage.expected, coverage.finished) == ("stopped", len(lines), 6, False)
    assert open_run("ref", mixed_runs).coverage.finished and open_run("empty", mixed_runs).coverage.empty


def test_compare_names_the_compute_type_of_same_weights():
    from whisperbench.reports.weights import weights_relation
    from whisperbench.store.run_info import RunInfo

    weights = {"weights": {"source_sha256": "abc", "fingerprint": "f", "dtype": "float16"}}
    openai_whisper = RunInfo(adapter="openai-whisper", adapter_info=weights)
    int8 = RunInfo(adapter="faster-whisper", adapter_info=dict(weights, settings={"compute_type": "int8"}))
    assert weights_relation(openai_whisper, int8) == "same weights, int8 compute"
    assert weights_relation(int8, openai_whisper) == "same weights, the reference in int8 compute"
    assert weights_relation(openai_whisper, openai_whisper) == "same weights"


def test_score_says_nothing_of_speed_it_did_not_measure(tmp_path, tiny_rows, tiny_short, monkeypatch, capsys):
    """Given hypotheses have no RTFx: a busy machine (injected) is no reason to call it unreliable."""
    import whisperbench.harness.environment as environment

    monkeypatch.setattr(environment, "others_busy_cpus", lambda before, after: 8.0)  # as if 8 CPUs were busy
    record_run(tmp_path / "runs", tiny_short, tiny_rows, "given", lambda r: r["text"])
    out = capsys.readouterr().out
    assert "RTFx n/a" in out and "RTFx unreliable" not in out


def test_an_input_error_before_any_example_is_not_announced_as_stopped_at_zero(tmp_path, tiny_rows, tiny_short, capsys):
    runs = tmp_path / "runs"
    record_run(runs, tiny_short, tiny_rows, "taken", lambda r: r["text"])
    other = write_jsonl(tmp_path / "other.jsonl", [{"id": r["id"], "hypothesis": "x"} for r in tiny_rows])
    capsys.readouterr()
    assert (
        main(
            [
                "score",
                "--dataset",
                str(tiny_short),
                "--hypotheses",
                str(other),
                "--name",
                "taken",
                "--runs-dir",
                str(runs),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "exists with a different model" in err and "stopped at" not in err, err


def test_mlflow_prints_a_well_formed_sqlite_uri(recorded_runs, tmp_path, monkeypatch, capsys):
    pytest.importorskip("mlflow", reason="pip install 'whisperbench[mlflow]'")
    from whisperbench.core.redact import redact_text

    assert redact_text("at sqlite:///mlflow.db") == "at sqlite:///mlflow.db"
    assert redact_text("sqlite:////abs/mlflow.db") == "sqlite:////abs/mlflow.db"
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            [
                "export",
                "ref",
                "--runs-dir",
                str(recorded_runs),
                "--to",
                "mlflow",
                "--tracking-uri",
                "sqlite:///mlflow.db",
            ]
        )
        == 0
    )
    assert "at sqlite:///mlflow.db" in capsys.readouterr().out


def test_the_by_language_tables_mark_an_unfinished_run(tmp_path, tiny_rows, local_manifest, capsys):
    manifest = local_manifest([dict(r, language=lang) for r, lang in zip(tiny_rows, ["en"] * 3 + ["de"] * 3)])
    runs = tmp_path / "runs"
    record_run(runs, manifest, tiny_rows, "ref", lambda r: r["text"])
    record_run(runs, manifest, tiny_rows, "cand", lambda r: r["text"].lower())
    _stop(runs, "cand", "partial", 2, "p")
    for fmt in ("md", "html"):
        assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--format", fmt, "--quiet"]) == 0
    markdown = (runs / "leaderboard.md").read_text()
    by_language = markdown[markdown.index("## By language") :]
    assert "| p (2 of 6, stopped) " in by_language and "| recorded cand " in by_language
    page = (runs / "leaderboard.html").read_text()
    assert page.count('<span class="status unfinished">(2 of 6, stopped)</span>') >= 2  # By language, explorer


def test_one_unreadable_run_is_listed_and_the_others_reported(tmp_path, capsys):
    """A run whose run.json cannot be read no longer makes `report` refuse the whole folder: the others are reported
    and the broken one is named, with why, in the warnings and under the markdown leaderboard."""
    from whisperbench.cli import main

    from .conftest import BUNDLED

    for name, model in (("b", "openai-whisper-base"), ("t", "openai-whisper-tiny.en")):
        hyp = BUNDLED / "recorded" / f"{model}.jsonl"
        args = ["score", "--dataset", "tiny-shortform", "--hypotheses", str(hyp), "--name", name]
        assert main(args + ["--runs-dir", str(tmp_path)]) == 0
    (tmp_path / "t" / "run.json").write_text("{broken", encoding="utf-8")
    capsys.readouterr()
    assert main(["report", "--runs-dir", str(tmp_path), "--quiet"]) == 0
    err = capsys.readouterr().err
    board = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    assert "`b`" in board and "`t`" not in board.split("## Left out")[0]
    assert "## Left out (unreadable)" in board and "t: cannot read" in board and "left out of the report" in err


def test_a_stopped_run_never_tops_the_leaderboard(tmp_path):
    """A run killed after 2 of 6 examples (WER 0.00 on what it stored) comes after the finished runs of its dataset,
    marked unfinished."""
    import whisperbench as wb
    from whisperbench.reports import leaderboard_frame
    from whisperbench.store.runs import list_runs

    from .conftest import BUNDLED

    for name, model in (("b", "openai-whisper-base"), ("t", "openai-whisper-tiny.en")):
        wb.score(BUNDLED / "recorded" / f"{model}.jsonl", "tiny-shortform", runs_dir=tmp_path, name=name)
    perfect = tmp_path / "perfect.jsonl"
    rows = [json.loads(line) for line in (BUNDLED / "shortform" / "manifest.jsonl").read_text().splitlines()]
    perfect.write_text("".join(json.dumps({"id": r["id"], "hypothesis": r["text"]}) + "\n" for r in rows))
    stopped = wb.score(perfect, "tiny-shortform", runs_dir=tmp_path, name="stopped")
    lines = stopped.store.predictions_path.read_text().splitlines(keepends=True)
    stopped.store.predictions_path.write_text("".join(lines[:2]))
    frame = leaderboard_frame(list_runs(tmp_path), {})
    assert list(frame["Run"])[-1] == "stopped" and frame.iloc[-1]["WER %"] == 0.0
    assert not frame.iloc[-1]["Finished"] and frame.iloc[0]["WER %"] > 0
