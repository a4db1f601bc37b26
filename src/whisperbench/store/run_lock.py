"""The writer lock of a run folder: one process writes a run at a time, and a lock its writer can no longer
release is taken over.

The lock is an ``flock`` on ``.lock`` (the kernel releases it when the holder dies); ``.owner.json`` records the
writer (pid, host, process start time), so a refusal names it and a lock held by a process that is not the
recorded writer (an orphaned child that inherited the descriptor) is recognised and taken over, one process
deciding at a time (``.lock.takeover``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.json_files import write_json_atomic
from ..errors import RunStoreError

logger = logging.getLogger(__name__)

LOCK = ".lock"  # held (flock) by the one process writing the run; the kernel releases it when that process dies
TAKEOVER = ".lock.takeover"  # held while one process decides whether a lock whose writer is gone is taken over
OWNER = ".owner.json"  # who holds the lock: pid, host, start time, since when (refusals; a dead writer's is taken over)


@dataclass(frozen=True)
class RunLock:
    """The writer lock of the run folder ``path``."""

    path: Path

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the run's writer lock: a second writer (same or another configuration) is refused with a
        clear error naming the holder. A lock whose recorded writer is no longer running is taken over, saying
        so: the OS releases a dead writer's lock, and one still held after its writer died is held by a
        process that inherited it (an orphaned child), not by a writer of this run."""
        self.path.mkdir(parents=True, exist_ok=True)
        lock = self.acquire()
        try:
            write_json_atomic(self.path / OWNER, this_process())
            yield
        finally:
            (self.path / OWNER).unlink(missing_ok=True)
            lock.release()

    def acquire(self) -> Any:
        """The run's lock, acquired (a ``filelock.FileLock``; release it): free, left by a dead writer, or held
        by an orphan of one (taken over, saying so); a live writer's: RunStoreError naming it."""
        from filelock import FileLock, Timeout

        lock = FileLock(str(self.path / LOCK), timeout=0)
        owner = self.owner()
        try:
            lock.acquire()
        except Timeout:
            return self._take_over()
        if owner is not None and not owner_alive(owner):
            logger.warning(
                "run %s: took over its lock from %s, which stopped without releasing it",
                self.path,
                describe_owner(owner),
            )
        return lock

    def _take_over(self) -> Any:
        """The run's lock when the process holding it is not its recorded writer (that writer is gone: an
        orphan that inherited the lock holds it), else RunStoreError naming the writer. One process at a time
        decides (a second lock file): the first takes over and records itself, the next finds it alive."""
        from filelock import FileLock, Timeout

        with FileLock(str(self.path / TAKEOVER), timeout=30):
            owner = self.owner()
            lock = FileLock(str(self.path / LOCK), timeout=0)
            try:
                lock.acquire()  # released meanwhile
                return lock
            except Timeout:
                if owner is None or owner_alive(owner):
                    raise RunStoreError(
                        f"run {self.path} is being written by {describe_owner(owner)}: one writer per "
                        "run; wait for it to finish or pass --name for another run"
                    ) from None
            (self.path / LOCK).unlink(missing_ok=True)  # the holder keeps a lock on a file no writer opens again
            lock = FileLock(str(self.path / LOCK), timeout=0)
            lock.acquire()
            write_json_atomic(self.path / OWNER, this_process())  # before the next one may decide
            logger.warning(
                "run %s: took over its lock from %s, which is no longer running (a process it left "
                "behind still held the lock)",
                self.path,
                describe_owner(owner),
            )
            return lock

    def owner(self) -> dict | None:
        """The lock owner's record (:func:`this_process` of the writer), None when no writer left one."""
        try:
            owner = json.loads((self.path / OWNER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return owner if isinstance(owner, dict) else None


def this_process() -> dict:
    """The lock owner's record: pid, host, since when, and the process's start time (a pid can be reused)."""
    import psutil

    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": psutil.Process().create_time(),
        "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def owner_alive(owner: dict) -> bool:
    """Whether the process an owner record names still runs (the same process: same pid and start time).
    A writer on another host is taken to be alive (its processes cannot be seen from here)."""
    import psutil

    if owner.get("host") != socket.gethostname():
        return True
    try:
        process = psutil.Process(int(owner["pid"]))
        started = owner.get("started")
        return process.status() != psutil.STATUS_ZOMBIE and (
            started is None or abs(process.create_time() - float(started)) < 1.0
        )
    except (psutil.NoSuchProcess, KeyError, TypeError, ValueError):
        return False
    except psutil.AccessDenied:
        return True


def describe_owner(owner: dict | None) -> str:
    """The writer an owner record names, in words (``pid 12 on host (since …)``), or ``another process``."""
    if not owner:
        return "another process"
    return f"pid {owner.get('pid')} on {owner.get('host')} (since {owner.get('since')})"
