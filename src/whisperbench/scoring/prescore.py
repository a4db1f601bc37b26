"""Scoring ahead: text pairs known before a run is written (recorded hypotheses: ``whisperbench score``) scored by a
forked helper process on the core the run leaves idle, for the scoring at the run's end to find.

Writing a recorded run is one process's work (reading the hypotheses, writing each prediction line, reading the
lines back); on a machine with two cores the other one waits until the scoring pool starts. The helper fills that
wait: it scores the pairs in order, a chunk at a time, until it is told to stop, which is when the end's scoring
begins (:func:`collect`, called before the pool forks, so the workers inherit what it did).

What it gives is a memo of a pure function, ``kernel(transcript, hypothesis, language, normalizer, characters)``
(:func:`whisperbench.scoring.summary.score_texts`), keyed by every argument: a prediction whose texts are not the
ones expected (a failed example, a text the harness changed) is scored at the end like any other. The figures are
the same with or without it, to the last digit (tests/test_prescore.py).
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import pickle
import tempfile
from typing import IO, Any, Callable, Optional, Sequence

from ..supervise import die_with_parent, started_from_main_thread

log = logging.getLogger(__name__)

#: a pair scored ahead: (transcript, hypothesis, language label), as the prediction will hold them
Pair = tuple[str, str, Optional[str]]
#: pairs the helper scores between two looks at its stop signal (about 50 ms of work)
CHUNK = 1000

#: the scores taken in from the helper: ``{(normalizer, characters): {pair: packed score}}``
_MEMO: dict[tuple[str, bool], dict[Pair, tuple[Any, ...]]] = {}
#: the helper running now (one at a time), taken in by :func:`collect`
_RUNNING: Optional["ScoresAhead"] = None


def available() -> bool:
    """Whether this system can fork a helper that shares this process's memory (the pairs are not copied)."""
    return "fork" in multiprocessing.get_all_start_methods()


class ScoresAhead:
    """A helper process scoring ``pairs`` with ``kernel`` (returning an object with ``packed()``), used as a context:
    on entry it starts; :func:`collect` (or the exit) stops it and keeps what it scored; the exit forgets it all.

    >>> from whisperbench.scoring.summary import score_texts
    >>> with ScoresAhead([("Hello there.", "hello bear", None)], "english", True, score_texts):
    ...     took = collect(finish=True)
    ...     lookup(("Hello there.", "hello bear", None), "english", True)[3]
    (1, 1, 0, 0)
    >>> took, lookup(("Hello there.", "hello bear", None), "english", True)
    (1, None)
    """

    def __init__(self, pairs: Sequence[Pair], normalizer: str, characters: bool, kernel: Callable[..., Any]) -> None:
        self.pairs, self.key, self.kernel = pairs, (normalizer, characters), kernel
        self._out: Optional[IO[bytes]] = None
        self._process: Any = None
        self._stop: Any = None

    def __enter__(self) -> "ScoresAhead":
        global _RUNNING
        context = multiprocessing.get_context("fork")
        self._out = tempfile.TemporaryFile()  # unlinked at once: nothing is left behind, whatever happens
        self._stop = context.Event()
        parent = (os.getpid(), started_from_main_thread())
        self._process = context.Process(target=self._work, args=parent, name="whisperbench-score-ahead", daemon=True)
        self._process.start()
        _RUNNING = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _RUNNING
        if _RUNNING is self:
            _RUNNING = None
        self.stop()  # its own helper, even where another one started since (runs in threads of one process)
        _MEMO.pop(self.key, None)

    def _work(self, parent_pid: int, by_signal: bool) -> None:
        """The helper: score the pairs in order, appending each chunk's packed scores to the shared file."""
        die_with_parent(parent_pid, by_signal)  # a killed run leaves no helper behind (holding its lock's file)
        gc.disable()  # nothing it makes lives in a cycle; it exits when told to stop
        normalizer, characters = self.key
        assert self._out is not None
        for start in range(0, len(self.pairs), CHUNK):
            if self._stop.is_set():
                break
            chunk = self.pairs[start : start + CHUNK]
            packed = [self.kernel(t, h, language, normalizer, characters).packed() for t, h, language in chunk]
            pickle.dump((start, packed), self._out, protocol=pickle.HIGHEST_PROTOCOL)
            self._out.flush()

    def stop(self, finish: bool = False) -> int:
        """Stop the helper (it ends the chunk it is on; ``finish``: it scores every pair first), keep what it
        scored; how many pairs that is."""
        if self._process is None or self._out is None:
            return 0
        if not finish:
            self._stop.set()
        self._process.join()
        if self._process.exitcode:  # killed (out of memory…) or failed: the end's scoring does the rest
            log.warning("the helper scoring ahead ended with exit code %s", self._process.exitcode)
        self._process = None
        self._out.seek(0)
        taken = read_scores(self._out, self.pairs, _MEMO.setdefault(self.key, {}))
        self._out.close()
        self._out = None
        log.debug("scored ahead: %d of %d pairs", taken, len(self.pairs))
        return taken


def read_scores(out: IO[bytes], pairs: Sequence[Pair], memo: dict[Pair, tuple[Any, ...]]) -> int:
    """Take the helper's chunks of packed scores from ``out`` into ``memo``; how many pairs they hold. A chunk cut
    short (the helper killed while it wrote) ends the reading: only whole chunks count.

    >>> import io
    >>> out, memo = io.BytesIO(), {}
    >>> pickle.dump((0, [("packed",)]), out); pickle.dump((1, [("cut",)]), out)
    >>> cut, start = out.truncate(out.tell() - 3), out.seek(0)
    >>> read_scores(out, [("a", "b", None), ("c", "d", None)], memo), memo
    (1, {('a', 'b', None): ('packed',)})
    """
    taken = 0
    while True:
        try:
            start, packed = pickle.load(out)
        except (EOFError, pickle.UnpicklingError):
            return taken
        memo.update(zip(pairs[start : start + len(packed)], packed))
        taken += len(packed)


def collect(finish: bool = False) -> int:
    """Stop the helper running now, if any (``finish``: once it has scored every pair), and keep its scores for
    :func:`lookup` (call it before forking the processes that score: they inherit them); how many pairs it
    scored."""
    global _RUNNING
    running, _RUNNING = _RUNNING, None
    return running.stop(finish) if running is not None else 0


def lookup(pair: Pair, normalizer: str, characters: bool) -> Optional[tuple[Any, ...]]:
    """The packed score of ``pair`` scored ahead with ``normalizer`` (and ``characters``), else None."""
    memo = _MEMO.get((normalizer, characters)) if _MEMO else None
    return memo.get(pair) if memo else None
