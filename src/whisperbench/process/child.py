"""Run an object in a child process: a crash or a hang fails one call, never the caller.

:class:`ChildProcess` starts ``python -c`` (not multiprocessing: the child never re-imports the
caller's main module), builds one object there with ``factory(config)`` and answers method calls on
it over a socket pair. The child's stdout/stderr, where native libraries log, go to a file whose
last lines are quoted when the child dies. Every reply carries the child's peak RSS and the CPU seconds the
call took there (``last_cpu_s``: the process's own accounting, its native threads included). Used by
``--isolate`` (:mod:`whisperbench.harness.isolation`) and by whisper.cpp's worker.

:func:`die_with_parent` makes every process the harness starts (this child, a process-pool worker, a sweep's
variant process) end when the process that started it does, even one killed with SIGKILL: an orphan would go
on writing its run and holding the run's lock, and the resume would be refused.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from .host import peak_rss_mb

_LOG_TAIL_LINES = 6
# Python stack lines (a fault handler's dump under PYTHONFAULTHANDLER=1, a traceback's frames): left out of the
# excerpt, where they would push out the native message (a GGML_ASSERT) or the exception's own line
_FAULT_DUMP = re.compile(
    r'(Fatal Python error|Current thread 0x|Thread 0x|File "|Extension modules:|<no Python frame>'
    r"|Python runtime state:|Stack \(most recent call first\))"
)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_CHECK_S = 0.5  # how often a child looks whether its parent is still there


def die_with_parent(parent_pid: int, by_signal: bool = True) -> None:
    """End this process when ``parent_pid`` (the process that started it) ends, however it ends.

    On Linux the kernel sends SIGKILL at once (``prctl(PR_SET_PDEATHSIG)``; only when ``by_signal``: the
    kernel ties it to the parent's *thread* that started the child, so a child started from a short-lived
    thread must not ask for it); everywhere a daemon thread checks every ``PARENT_CHECK_S`` whether this
    process's parent is still ``parent_pid`` and exits when it is not (its parent died and it was re-parented).
    """
    if by_signal and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no prctl here: the check below still holds
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent_pid:  # it died before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="whisperbench-parent-watch", daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def started_from_main_thread() -> bool:
    """Whether a child started now may ask for the kernel's parent-death signal (see `die_with_parent`)."""
    return threading.current_thread() is threading.main_thread()


class WorkerCrashed(RuntimeError):
    """The child process died (native crash) or was killed while serving a request."""


class WorkerTimeout(WorkerCrashed):
    """The child did not answer within the time limit and was killed."""


class RemoteError(RuntimeError):
    """The call raised a Python exception in the child (the child lives on)."""


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


class ChildProcess:
    """One child process holding ``factory(config)``; ``call(method, *args)`` runs a method there."""

    def __init__(
        self, factory: str, config: Any, log_path: Path, label: str = "worker", load_timeout_s: float | None = None
    ):
        self.label, self.log_path, self.peak_rss_mb = label, log_path, 0.0
        self.last_cpu_s: float | None = None  # the child's CPU seconds (all its threads) in the last call
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])  # the folder holding whisperbench/
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    f"from {__name__} import serve; serve({theirs.fileno()}, {factory!r}, "
                    f"{os.getpid()}, {started_from_main_thread()})",
                ],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        theirs.close()
        self.conn = Connection(ours.detach())
        try:
            self.info = self._request(("load", config), load_timeout_s)
        except RemoteError:  # the factory raised: the caller words the error
            self.stop()
            raise

    def call(self, method: str, *args: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """The method's return value; RemoteError, WorkerCrashed or WorkerTimeout otherwise."""
        return self._request((method, args, kwargs), timeout_s)

    def _request(self, request: tuple, timeout_s: float | None) -> Any:
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        try:
            self.conn.send(request)
            if timeout_s is not None and not self.conn.poll(timeout_s):
                self.process.kill()
                self.process.wait()
                raise WorkerTimeout(
                    f"{self.label} (pid {self.process.pid}) gave no answer to {request[0]!r} within "
                    f"{timeout_s:g} s and was killed{self._log_tail(log_start)}"
                )
            reply = self.conn.recv()
        except (EOFError, OSError):
            try:
                code: int | None = self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            raise WorkerCrashed(
                f"{self.label} (pid {self.process.pid}) {_exit_reason(code)} "
                f"during {request[0]!r}{self._log_tail(log_start)}"
            ) from None
        except WorkerTimeout:
            raise
        except BaseException:  # interrupted mid-request (Ctrl-C): its reply would answer the next request instead
            self.process.kill()
            self.process.wait()
            raise
        self.peak_rss_mb = max(self.peak_rss_mb, reply["peak_rss_mb"])
        self.last_cpu_s = reply.get("cpu_s")
        if "error" in reply:
            raise RemoteError(reply["error"])
        return reply["result"]

    def _log_tail(self, start: int) -> str:
        """The last lines the child logged during the failed request (e.g. a GGML_ASSERT message)."""
        try:
            with open(self.log_path, errors="replace") as fh:
                fh.seek(start)
                lines = [line.strip() for line in fh.read().splitlines() if line.strip()]
        except OSError:
            return ""
        lines = [line for line in lines if not _FAULT_DUMP.match(line)] or lines
        return "; it logged: " + " | ".join(lines[-_LOG_TAIL_LINES:]) if lines else ""

    def stop(self) -> None:
        """Stop the child: ask it to close, and kill it if it has not ended 10 s later."""
        try:
            self.conn.send(("close", (), {}))
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        self.conn.close()


def serve(fd: int, factory: str, parent_pid: int | None = None, by_signal: bool = True) -> None:
    """Child main loop: build the object, then answer calls until ``close`` or a closed socket (or until the
    parent is gone)."""
    if parent_pid is not None:
        die_with_parent(parent_pid, by_signal)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops this child
    conn = Connection(fd)
    _, config = conn.recv()
    module, _, name = factory.partition(":")
    try:
        target = getattr(importlib.import_module(module), name)(config)
        info = target.info() if hasattr(target, "info") else None
        conn.send({"result": info, "peak_rss_mb": peak_rss_mb()})
    except Exception as exc:
        conn.send({"error": f"{type(exc).__name__}: {exc}", "peak_rss_mb": peak_rss_mb()})
        return
    while True:
        try:
            method, args, kwargs = conn.recv()
        except EOFError:  # the harness went away
            return
        if method == "close":
            return
        cpu = time.process_time()  # every thread of this process: a native library's own threads too
        try:
            result = None if method == "stats" else getattr(target, method)(*args, **kwargs)
            conn.send({"result": result, "peak_rss_mb": peak_rss_mb(), "cpu_s": time.process_time() - cpu})
        except Exception as exc:
            conn.send({"error": f"{type(exc).__name__}: {exc}", "peak_rss_mb": peak_rss_mb()})
