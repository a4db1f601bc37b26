"""A pytest plugin: end the test process with pytest's own status once every report is written, without
the interpreter's teardown (``WHISPERBENCH_TEST_FULL_TEARDOWN=1`` keeps the teardown).

One pytest process here loads torch, JAX, CTranslate2, MLX, Ray and ggml side by side, as no user's run
does, and their exit-time destructors do not all survive one another: CI once aborted after a green summary
("682 passed ... malloc(): unsorted double linked list corrupted", exit 134), never during a test. The
handler is registered at configure time, before any runtime is imported, so it runs after theirs (atexit
is last in, first out): Ray still shuts its nodes down; only module teardown and C++ static destructors are
skipped. A failing test still fails the run, since the status is pytest's. tests/test_exit_guard.py plants
a crash in teardown and checks both ways.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys

import pytest

FULL_TEARDOWN_ENV = "WHISPERBENCH_TEST_FULL_TEARDOWN"
_finished: list[pytest.Session] = []  # the session, once pytest has finished it


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(FULL_TEARDOWN_ENV) != "1":
        atexit.register(_exit_without_teardown)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _finished.append(session)


def _exit_without_teardown() -> None:
    if not _finished:
        return
    status = int(_finished[-1].exitstatus)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
