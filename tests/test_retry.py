"""One retry policy on every backend: an example whose worker process dies is tried the same number of times
in-process (``--isolate``), in a process pool (with or without ``--isolate``) and on Ray (tests/test_ray.py),
then stored as failed saying so; the policy is recorded in run.json. Each try is counted by the adapter
itself (a line appended to a file per try), not by the harness."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from whisperbench.adapters import DecodingOptions
from whisperbench.adapters.base import Adapter
from whisperbench.harness import RunRequest, open_run, run_evaluation
from whisperbench.harness.retry import DEFAULT_ATTEMPTS, RetryPolicy
from whisperbench.types import Transcript

from .conftest import REPO

ALWAYS, ONCE = "jfk", "LJ001-0003"


class CrashCounter(Adapter):
    """Fault injection only: echoes the transcript; notes each try in ``marks/<id>``; its process dies
    (``os._exit``) on every try of ``ALWAYS`` and on the first try of ``ONCE``."""

    name = "test-crash-counter"
    options = {"marks": ""}
    uses_weights = False

    def load(self):
        pass

    def transcribe(self, audio, example, *, long_form):
        marks = Path(self.settings["marks"]) / example.id
        with open(marks, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
        tries = len(marks.read_text(encoding="utf-8").splitlines())
        if example.id == ALWAYS or (example.id == ONCE and tries == 1):
            os._exit(3)
        return Transcript(text=example.text)


@pytest.fixture
def importable_tests(monkeypatch):
    """Pool workers and isolated children import CrashCounter by its module path."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def _tries(marks: Path, example_id: str) -> int:
    path = marks / example_id
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


#: every way an example's worker can die without ending the run; one pool worker, so that no other example is
#: in flight when a worker dies (a broken pool loses those too, and tries them again: bystanders, not culprits)
BACKENDS = {
    "in-process --isolate": {"backend": "in-process", "isolate": True},
    "process-pool": {"backend": "process-pool", "workers": 1},
    "process-pool --isolate": {"backend": "process-pool", "workers": 1, "isolate": True},
}


@pytest.mark.parametrize("where", BACKENDS)
@pytest.mark.parametrize("attempts", [DEFAULT_ATTEMPTS, 3])
def test_a_crashing_example_is_tried_the_same_number_of_times_everywhere(
    where, attempts, tmp_path, local_manifest, importable_tests
):
    marks = tmp_path / "marks"
    marks.mkdir()
    request = RunRequest(
        f"{__name__}:CrashCounter",
        "m",
        str(local_manifest()),
        runs_dir=str(tmp_path / "r"),
        name="crash",
        warmup=False,
        attempts=attempts,
        decoding=DecodingOptions(threads=1, extra={"marks": str(marks)}),
        **BACKENDS[where],
    )
    result = run_evaluation(request)
    preds = {p.id: p for p in open_run("crash", tmp_path / "r").predictions}
    assert _tries(marks, ALWAYS) == attempts, where  # counted by the adapter, one line per try
    poison = preds[ALWAYS]
    assert poison.status == "error" and f"on each of its {attempts} attempts" in poison.error, poison.error
    assert _tries(marks, ONCE) == 2 and preds[ONCE].status == "ok" and preds[ONCE].extra["attempts"] == 2
    others = [i for i in preds if i not in (ALWAYS, ONCE)]
    assert all(preds[i].status == "ok" and _tries(marks, i) == 1 and "attempts" not in preds[i].extra for i in others)
    assert result.summary.num_failed == 1
    assert result.info["execution"]["retry"] == RetryPolicy(attempts).to_json()


def test_the_policy_is_checked_and_said():
    from whisperbench.errors import OptionError

    with pytest.raises(OptionError, match="attempts 0"):
        RetryPolicy(0)
    with pytest.raises(OptionError, match="attempts 0"):
        RunRequest("recorded", "h.jsonl", "d", attempts=0)
    assert RetryPolicy(1).gave_up(1, "x").endswith("on its only attempt (last: x)")
    from whisperbench.process.child import WorkerCrashed, WorkerTimeout

    assert RetryPolicy.retried(WorkerCrashed("died")) and not RetryPolicy.retried(WorkerTimeout("no answer"))
    assert not RetryPolicy.retried(RuntimeError("bad audio"))
