"""The Python API with worker processes, as a user's script runs it: each case a fresh interpreter.

Spawned workers used to run the caller's script again: docs/python.md's ``evaluate(..., workers=2)`` saved as
a script without an ``if __name__ == "__main__":`` guard failed every example ("the process pool broke twice")
and returned QoI 0.0 with exit 0 (issue 70, item 1).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from whisperbench.process.start_method import _guarded

from .conftest import REPO

RUN = """
import whisperbench as wb
hyp = wb.api.RECORDED / "openai-whisper-base.jsonl"
run = wb.evaluate("recorded", str(hyp), "tiny-shortform", runs_dir="runs", workers=2, name="pooled")
print("failed", run.summary.num_failed, "of", len(run.predictions), "backend", run.meta.backend)
"""

OWN_ADAPTER = """
import whisperbench as wb
from whisperbench.adapters import ADAPTERS
from whisperbench.adapters.recorded import RecordedAdapter

class Mine(RecordedAdapter):
    name = "mine-from-the-script"

ADAPTERS.add(Mine)
"""


def _python(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])))
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, input=stdin, capture_output=True, text=True, timeout=240, env=env
    )


@pytest.mark.parametrize("how", ["script", "stdin", "command"])
def test_workers_in_a_script_without_a_main_guard_run_every_example(tmp_path, how):
    """``python nb.py``, ``python -`` and ``python -c`` (a main module without a file, as a notebook's kernel has)."""
    if how == "script":
        (tmp_path / "nb.py").write_text(RUN, encoding="utf-8")
        done = _python(tmp_path, "nb.py")
    elif how == "stdin":
        done = _python(tmp_path, "-", stdin=RUN)
    else:
        done = _python(tmp_path, "-c", RUN)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "failed 0 of 6 backend process-pool" in done.stdout, done.stdout + done.stderr[-2000:]


def test_an_adapter_defined_in_an_unguarded_script_is_refused_before_any_work(tmp_path):
    (tmp_path / "nb.py").write_text(OWN_ADAPTER + RUN.replace('"recorded"', '"mine-from-the-script"'), "utf-8")
    done = _python(tmp_path, "nb.py")
    assert done.returncode != 0
    assert 'if __name__ == "__main__":' in done.stderr and "nb.py" in done.stderr, done.stderr[-2000:]
    assert done.stderr.count("runs it again") == 1  # raised here, not in workers that ran the script again
    assert not list((tmp_path / "runs" / "pooled").glob("predictions*"))


def test_an_adapter_defined_in_a_guarded_script_reaches_the_workers(tmp_path):
    body = RUN.replace('"recorded"', '"mine-from-the-script"').replace("\n", "\n    ")
    (tmp_path / "nb.py").write_text(OWN_ADAPTER + 'if __name__ == "__main__":' + body, "utf-8")
    done = _python(tmp_path, "nb.py")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "failed 0 of 6 backend process-pool" in done.stdout


def test_the_guard_is_found_where_the_top_level_statement_runs(tmp_path):
    script = tmp_path / "s.py"
    script.write_text('x = 1\nif "__main__" == __name__:\n    run()\n    other()\nrun()\n', encoding="utf-8")
    assert [_guarded(script, line) for line in (1, 3, 4, 5)] == [False, True, True, False]


SCORE = """
from whisperbench.scoring import engine
from whisperbench.types import Prediction
engine.PARALLEL_MIN = 10  # a pool for a few predictions (20,000 or more by default)
preds = [Prediction(f"p{i}", "the cat sat on the mat", "the cat sat on a mat") for i in range(40)]
print("sent", __name__)  # printed again by every worker that ran this script
scored = engine.score_predictions(preds, "english", workers=2)
print("substitutions", sum(p.score.words.substitutions for p in scored))
"""


def test_the_scoring_pool_never_runs_the_callers_script_again(tmp_path):
    """``score_predictions(..., workers=2)`` at a script's top level, without a guard (scoring's pool is spawned
    too): the workers score without running the script, whose line is printed once."""
    (tmp_path / "score.py").write_text(SCORE, encoding="utf-8")
    done = _python(tmp_path, "score.py")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["sent __main__", "substitutions 40"], done.stdout + done.stderr[-2000:]
