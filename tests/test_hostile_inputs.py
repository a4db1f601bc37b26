"""Inputs that crashed or stalled at a5cdb39 (issue 69, item 6): each is now a one-line error naming the file (and
line) — for a stored run, that run's alone, the rest of the folder reported — and loop detection is linear in the
text's length."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import BUNDLED, REPO

MANIFEST = BUNDLED / "shortform" / "manifest.jsonl"
RECORDED = BUNDLED / "recorded" / "openai-whisper-base.jsonl"


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run(
        [sys.executable, "-m", "whisperbench", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _one_line_error(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    line = next(line for line in done.stderr.splitlines() if all(n in line for n in needles))
    assert line


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    folder = tmp / "runs"
    done = _cli(
        [
            "score",
            "--dataset",
            str(MANIFEST),
            "--hypotheses",
            str(RECORDED),
            "--name",
            "ref",
            "--runs-dir",
            str(folder),
        ],
        tmp,
    )
    assert done.returncode == 0, done.stderr
    return folder


@pytest.mark.parametrize("field, value", [("infer_s", "fast"), ("language_label", 5), ("id", 7)])
def test_a_stored_line_of_the_wrong_type_fails_that_run_only(runs, tmp_path, field, value):
    folder = tmp_path / "runs"
    shutil.copytree(runs, folder)
    shutil.copytree(folder / "ref", folder / "bad")
    for table in (folder / "bad").glob("scores-*"):
        table.unlink()
    path = folder / "bad" / "predictions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[1])
    row[field] = value
    lines[1] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    listed = _cli(["runs", "--runs-dir", str(folder)], tmp_path)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    assert "ref" in listed.stdout and f"line 2: malformed prediction (field {field}" in listed.stdout + listed.stderr
    report = _cli(["report", "--runs-dir", str(folder), "--out", "board.md", "--quiet"], tmp_path)
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    assert "ref" in (tmp_path / "board.md").read_text(encoding="utf-8")
    gate = _cli(
        ["gate", "--reference", "ref", "--candidate", "bad", "--runs-dir", str(folder), "--max-wer-increase", "1"],
        tmp_path,
    )
    _one_line_error(gate, "bad", "line 2", field)  # cannot judge (2), never read as a regression (1)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _score(tmp_path: Path, manifest: Path, hypotheses: Path) -> subprocess.CompletedProcess:
    args = ["score", "--dataset", str(manifest), "--hypotheses", str(hypotheses), "--name", "x"]
    return _cli([*args, "--runs-dir", str(tmp_path / "runs")], tmp_path)


def _manifest(tmp_path: Path) -> list[dict]:
    rows = _rows(MANIFEST)
    for row in rows:
        row["audio"] = str(MANIFEST.parent / row["audio"])
    return rows


def test_a_lone_surrogate_in_a_manifest_id_is_that_rows_error(tmp_path):
    rows = _manifest(tmp_path)
    rows[1]["id"] = "x\ud83d"
    done = _score(tmp_path, _write(tmp_path / "m.jsonl", rows), RECORDED)
    _one_line_error(done, "line 2", "lone surrogate")
    skipped = _cli(
        ["score", "--dataset", str(tmp_path / "m.jsonl"), "--hypotheses", str(RECORDED), "--name", "y"]
        + ["--runs-dir", str(tmp_path / "runs"), "--skip-invalid"],
        tmp_path,
    )
    assert skipped.returncode == 0 and "1 invalid" in skipped.stdout + skipped.stderr, skipped.stderr


def test_a_lone_surrogate_as_a_hypotheses_language_is_that_lines_error(tmp_path):
    rows = _rows(RECORDED)
    rows[0]["language"] = "\ud800"
    done = _score(tmp_path, MANIFEST, _write(tmp_path / "h.jsonl", rows))
    _one_line_error(done, "h.jsonl line 1", "lone surrogate")


def test_a_device_header_row_with_an_example_figure_is_refused(tmp_path):
    header = {"device": {"name": "Pixel 8"}, "infer_s": 0.5}
    done = _score(tmp_path, MANIFEST, _write(tmp_path / "h.jsonl", [header, *_rows(RECORDED)]))
    _one_line_error(done, "h.jsonl line 1", "device header row holds infer_s")


@pytest.mark.parametrize("where", ["hypotheses", "manifest"])
def test_a_line_nested_a_hundred_thousand_deep_is_a_malformed_line(tmp_path, where):
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "\n", encoding="utf-8")
    done = _score(tmp_path, deep, RECORDED) if where == "manifest" else _score(tmp_path, MANIFEST, deep)
    _one_line_error(done, "deep.jsonl line 1", "nested too deeply")


def _slowest_of(texts: tuple[str, str], repeat: int = 3) -> float:
    from whisperbench.scoring.hallucination import loop_of

    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        loop_of(*texts)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("kind", ["one word", "a phrase in the transcript too", "spread"])
def test_loop_detection_is_linear_in_the_texts_length(kind):
    """Four times the words take about four times as long (a quadratic search: sixteen; at a5cdb39 10,000 copies of
    one word in both texts took 91 s), and a million-word loop ends."""

    def texts(n: int) -> tuple[str, str]:
        if kind == "one word":
            return "a b", " ".join(["a"] * n)
        if kind == "a phrase in the transcript too":
            return " ".join(["thank", "you"] * (n // 2)), " ".join(["thank", "you", "so", "much"] * (n // 4))
        return "hello world", " ".join(f"w{i % 97} x" for i in range(n // 2))

    small, large = _slowest_of(texts(50_000), 5), _slowest_of(texts(200_000), 5)
    assert large / small < 8, (small, large)
    from whisperbench.scoring.hallucination import loop_of

    if kind == "one word":
        found = loop_of("a b", " ".join(["a"] * 1_000_000))
        assert found is not None and found.phrase == ("a",) and found.copies == 1_000_000
