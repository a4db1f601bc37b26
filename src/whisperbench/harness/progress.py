"""Progress of a run: a tqdm bar on a terminal; in a CI log (no terminal) one line per phase.

Without a terminal nothing would be printed while models load (a minute or more): the log says what
is being done — which implementation, loading, then each quarter of the examples with the time taken.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

log = logging.getLogger(__name__)


class LogProgress:
    """tqdm's ``update``/context-manager interface, logging plain lines at INFO (``--quiet`` hides them)."""

    def __init__(self, total: int, desc: str, starting: str = "loading the model and warming up"):
        self.total, self.desc, self.starting = total, desc.strip(), starting
        self.done, self.start, self.next_mark, self.announced = 0, time.monotonic(), 1, False

    def __enter__(self) -> LogProgress:
        return self

    def begin(self) -> None:
        """The model loads now (the runner calls it when it has examples to compute: a resume with none loads
        nothing and says nothing of loading)."""
        if not self.announced:
            self.announced = True
            self._say(f"{self.total} example(s): {self.starting}")

    def update(self, count: int = 1) -> None:
        """Count ``count`` more examples done; log a line when enough time has passed."""
        self.begin()
        self.done += count
        if self.done == count:
            self._say(f"first result after {time.monotonic() - self.start:.0f} s")
        passed = False
        while self.total and self.next_mark <= 4 and self.done >= self.next_mark * self.total / 4:
            self.next_mark, passed = self.next_mark + 1, True
        if passed:  # once per update, however many quarters it crossed
            self._say(f"{self.done}/{self.total} done ({time.monotonic() - self.start:.0f} s)")

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None and self.done == 0:  # refused before any example (bad input): its error says why
            return
        took = f"{time.monotonic() - self.start:.0f} s"
        if exc_type is not None:
            self._say(f"stopped at {self.done}/{self.total} ({took})")
        elif self.done < self.total:  # a resume: the others were stored already (the run says how many)
            self._say(f"{self.done} computed, {self.total - self.done} stored already ({took})")

    def _say(self, text: str) -> None:
        log.info("%s: %s", self.desc, text)


def progress(total: int, desc: str, stream: TextIO | None = None, starting: str = "loading the model and warming up"):
    """A tqdm bar with ETA on a terminal (``stream``, default stderr), logged phase lines otherwise (the first says
    what happens before the first result: ``starting``)."""
    stream = stream or sys.stderr
    if stream.isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit="ex", file=stream, dynamic_ncols=True)
    return LogProgress(total, desc, starting)
