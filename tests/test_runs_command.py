"""`whisperbench runs` lists runs (status, coverage, model, size) and `runs remove` deletes them, never one that
another process is writing (issue 39, item 4). Runs are recorded hypotheses on the bundled clips (no model)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import whisperbench as wb
from whisperbench.cli import main
from whisperbench.errors import RunStoreError

from .conftest import BUNDLED, REPO, record_run


def _stop(runs, source: str, name: str, keep: int) -> None:
    """``name``: a copy of ``source`` killed after ``keep`` examples (run.json still says running)."""
    shutil.copytree(runs / source, runs / name)
    lines = (runs / name / "predictions.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (runs / name / "predictions.jsonl").write_text("".join(lines[:keep]), encoding="utf-8")
    (runs / name / "summary.json").unlink()
    info = json.loads((runs / name / "run.json").read_text(encoding="utf-8"))
    (runs / name / "run.json").write_text(json.dumps(dict(info, status="running", run_id=name)))


@pytest.fixture
def runs(tmp_path, tiny_rows, tiny_short):
    runs = tmp_path / "runs"
    record_run(runs, tiny_short, tiny_rows, "ref", lambda r: r["text"])
    record_run(runs, tiny_short, tiny_rows, "cand", lambda r: r["text"].lower())
    _stop(
        runs,
        "cand",
        "partial",
        2,
    )
    _stop(runs, "cand", "empty", 0)
    (runs / "broken").mkdir()
    (runs / "broken" / "run.json").write_text("{not json")
    (runs / "not-a-run").mkdir()  # a folder without run files is no run
    return runs


def _du(path) -> int:
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)


@pytest.fixture
def holder(runs):
    """A live process holding run ``partial``'s writer lock (as a run being written does)."""
    code = (
        "import sys, time, pathlib; sys.path.insert(0, {!r})\nfrom whisperbench.store.runs import RunStore\n"
        "with RunStore(pathlib.Path({!r})).lock():\n    print('locked', flush=True); time.sleep(120)".format(
            str(REPO / "src"), str(runs / "partial")
        )
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "locked"
        yield process
    finally:
        process.kill()
        process.wait()


def test_runs_lists_status_coverage_model_and_size(runs):
    rows = {row.name: row for row in wb.runs(runs)}
    assert sorted(rows) == ["broken", "cand", "empty", "partial", "ref"]
    assert {n: (r.status, r.coverage) for n, r in rows.items() if n != "broken"} == {
        "ref": ("finished", "6 of 6"),
        "cand": ("finished", "6 of 6"),
        "partial": ("stopped", "2 of 6"),
        "empty": ("empty", "0 of 6"),
    }
    assert rows["broken"].status == "unreadable" and "run.json" in rows["broken"].problem
    assert rows["ref"].adapter == "recorded" and rows["ref"].model == "ref.jsonl"
    assert rows["ref"].dataset == "tiny-shortform" and rows["ref"].date[:2] == "20"
    for name, row in rows.items():
        assert row.size_bytes == _du(runs / name), name


def test_runs_prints_a_table_and_json(runs, capsys):
    assert main(["runs", "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "run",
        "status",
        "coverage",
        "failed",
        "model",
        "implementation",
        "dataset",
        "date",
        "size",
    ]
    partial = next(line for line in out if line.startswith("partial"))
    assert "stopped" in partial and "2 of 6" in partial and "ref.jsonl" not in partial
    assert out[-1].startswith("5 run(s), ")
    assert main(["runs", "--runs-dir", str(runs), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in listed] == ["broken", "cand", "empty", "partial", "ref"]
    assert listed[3]["coverage"] == "2 of 6" and listed[3]["stored"] == 2


def test_remove_asks_and_yes_removes(runs, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)  # a script, a CI job: nobody to ask
    assert main(["runs", "remove", "empty", "--runs-dir", str(runs)]) == 2
    assert "add --yes" in capsys.readouterr().err and (runs / "empty").exists()
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["runs", "remove", "empty", "broken", "--runs-dir", str(runs)]) == 1
    assert (runs / "empty").exists() and "nothing removed" in capsys.readouterr().out
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert main(["runs", "remove", "empty", "broken", "--runs-dir", str(runs)]) == 0
    assert not (runs / "empty").exists() and not (runs / "broken").exists()
    assert main(["runs", "remove", "partial", "--runs-dir", str(runs), "--yes"]) == 0
    assert sorted(r.name for r in wb.runs(runs)) == ["cand", "ref"]


def test_remove_refuses_what_is_not_a_run_and_names_what_is(runs, capsys):
    assert main(["runs", "remove", "not-a-run", "--runs-dir", str(runs), "--yes"]) == 2
    assert "not found" in capsys.readouterr().err and (runs / "not-a-run").exists()
    assert main(["runs", "remove", "ref", "nope", "--runs-dir", str(runs), "--yes"]) == 2  # one missing: none removed
    assert (runs / "ref").exists()
    shutil.copy(runs / "ref" / "run.json", runs / "run.json")  # a runs folder that looks like a run itself
    for name in (".", "..", str(runs)):
        assert main(["runs", "remove", name, "--runs-dir", str(runs), "--yes"]) == 2, name
    assert (runs / "ref").exists() and (runs / "run.json").exists()


def test_a_run_another_process_writes_is_never_removed(runs, holder, capsys):
    rows = {row.name: row for row in wb.runs(runs)}
    assert rows["partial"].status == "running" and f"pid {holder.pid}" in rows["partial"].writer
    with pytest.raises(RunStoreError, match=f"partial .being written by pid {holder.pid}"):
        wb.remove_runs(["empty", "partial"], runs)
    assert (runs / "empty").exists() and (runs / "partial" / "predictions.jsonl").exists()  # nothing removed
    assert main(["runs", "remove", "partial", "--runs-dir", str(runs), "--yes"]) == 2
    assert "being written by" in capsys.readouterr().err
    holder.kill()
    holder.wait()  # a dead writer's lock is free: the run shows stopped and can go
    assert {r.name: r.status for r in wb.runs(runs)}["partial"] == "stopped"
    assert wb.remove_runs(["partial"], runs) == [runs / "partial"] and not (runs / "partial").exists()


def test_a_rerun_that_computes_nothing_keeps_the_runs_dates(tmp_path):
    """``evaluate``/``score`` again on a finished run: nothing recomputed, and `runs` still shows when it was made."""
    runs = tmp_path / "runs"
    hyps = BUNDLED / "recorded" / "openai-whisper-base.jsonl"
    wb.score(hyps, "tiny-shortform", runs_dir=runs, name="done")
    info_path = runs / "done" / "run.json"
    info = json.loads(info_path.read_text())
    info["started_at"], info["finished_at"] = "2020-01-01T00:00:00+00:00", "2020-01-01T00:01:00+00:00"
    info_path.write_text(json.dumps(info))
    wb.score(hyps, "tiny-shortform", runs_dir=runs, name="done")  # every example stored already
    again = json.loads(info_path.read_text())
    assert (again["started_at"], again["finished_at"]) == (info["started_at"], info["finished_at"])
    assert next(r for r in wb.runs(runs) if r.name == "done").date.startswith("2020-01-01")
