"""The test process's exit status is pytest's, whatever a native library does in interpreter teardown
(tests/exit_guard.py): a planted abort in teardown, with and without the guard."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.exit_guard import FULL_TEARDOWN_ENV

# a module-level object whose finalizer aborts the process, as a native destructor that corrupts the heap does
PLANTED = """
import os

class _AbortsInTeardown:
    def __del__(self):
        os.abort()

_bomb = _AbortsInTeardown()

def test_passes():
    assert True

def test_may_fail():
    assert os.environ.get("PLANTED_FAILURE") != "1"
"""


def run_planted(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_planted.py").write_text(PLANTED)
    environment = {k: v for k, v in os.environ.items() if k != FULL_TEARDOWN_ENV}
    environment.update(PYTHONPATH=str(REPO), **env)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tests.exit_guard",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_planted.py"),
        ],
        check=False,
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_the_guard_the_planted_teardown_abort_fails_a_green_run(tmp_path):
    done = run_planted(tmp_path, **{FULL_TEARDOWN_ENV: "1"})
    assert "2 passed" in done.stdout
    assert done.returncode == -signal.SIGABRT, done.stdout + done.stderr


@pytest.mark.parametrize("failure, status", [("0", 0), ("1", 1)])
def test_with_the_guard_the_status_is_pytests(tmp_path, failure, status):
    done = run_planted(tmp_path, PLANTED_FAILURE=failure)
    assert done.returncode == status, done.stdout + done.stderr
    assert ("1 failed" in done.stdout) == (status == 1)
