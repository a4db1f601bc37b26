"""The process around a command (issue 69, item 5): a closed stdout or stderr keeps the verdict's exit code and
writes the run; a FIFO (or another special file) given as audio is refused, never waited on."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import BUNDLED, REPO

MANIFEST = BUNDLED / "shortform" / "manifest.jsonl"
RECORDED = BUNDLED / "recorded"


def _shell(command: list[str], redirect: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m whisperbench COMMAND`` run by a shell with ``redirect`` (``>&-``: stdout closed)."""
    line = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "whisperbench", *command]) + " " + redirect
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _score(name: str, file: str, runs: Path, cwd: Path, redirect: str = "") -> subprocess.CompletedProcess:
    args = ["score", "--dataset", str(MANIFEST), "--hypotheses", str(RECORDED / file), "--name", name]
    return _shell([*args, "--runs-dir", str(runs)], redirect, cwd)


def test_a_closed_stderr_still_scores_and_writes_the_run(tmp_path):
    runs = tmp_path / "runs"
    done = _score("ref", "openai-whisper-base.jsonl", runs, tmp_path, "2>&-")
    assert done.returncode == 0, done.stdout
    assert "WER" in done.stdout
    assert json.loads((runs / "ref" / "summary.json").read_text(encoding="utf-8"))["num_examples"] == 6


@pytest.mark.parametrize("redirect", [">&-", ">&- 2>&-"])
def test_a_closed_stdout_keeps_the_gates_verdict(tmp_path, redirect):
    runs = tmp_path / "runs"
    for name, file in (("ref", "openai-whisper-base.jsonl"), ("cand", "openai-whisper-tiny.en.jsonl")):
        assert _score(name, file, runs, tmp_path).returncode == 0
    gate = ["gate", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--max-wer-increase"]
    junit = ["--junit", str(tmp_path / "gate.xml")]
    failed = _shell([*gate, "0", *junit], redirect, tmp_path)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr  # the regression, not 120
    assert "failures=" in (tmp_path / "gate.xml").read_text(encoding="utf-8")
    passed = _shell([*gate, "100", "--max-failed-pct", "100"], redirect, tmp_path)
    assert passed.returncode == 0, passed.stderr


def test_a_fifo_given_as_audio_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "audio.wav"
    os.mkfifo(fifo)
    rows = [json.loads(line) for line in MANIFEST.read_text(encoding="utf-8").splitlines()][:2]
    rows[0]["audio"] = str(fifo)
    rows[1]["audio"] = str(MANIFEST.parent / rows[1]["audio"])
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["score", "--dataset", str(manifest), "--hypotheses", str(RECORDED / "openai-whisper-base.jsonl")]
    done = _shell([*args, "--name", "f", "--runs-dir", str(tmp_path / "runs")], "", tmp_path)  # at a5cdb39: hangs
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "not a regular file (a FIFO)" in done.stderr and str(fifo) in done.stderr
