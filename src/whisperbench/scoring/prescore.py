"""Scoring ahead: text pairs known before a run is written (recorded hypotheses: ``whisperbench score``) scored by a
forked helper process on the core the run leaves idle, for the scoring at the run's end to find.

Writing a recorded run is one process's work (reading the hypotheses, writing each prediction line, reading the
lines back); on a machine with two cores the other one waits until the scoring pool starts. The helper fills that
wait: it scores the pairs in order, a chunk at a time, until it is told to stop, which is when the end's scoring
begins (:func:`collect`, called before the pool forks, so the workers inherit what it did).

The pairs come from memory (known when the run starts) or from a source that the helper itself reads (the
manifest and the hypotheses file, before the dataset is loaded: the loading is one process's work too); each chunk
goes back with its pairs' keys (:func:`pair_key`), so the end's scoring finds a score by the texts alone.

What it gives is a memo of a pure function, ``kernel(transcript, hypothesis, language, normalizer, characters)``
(:func:`whisperbench.scoring.summary.score_texts`), keyed by every argument (the texts and language by a digest):
a prediction whose texts are not the ones expected (a failed example, a text the harness changed) is scored at the
end like any other. The figures are the same with or without it, to the last digit (tests/test_prescore.py).
"""

from __future__ import annotations

import gc
import hashlib
import logging
import multiprocessing
import os
import pickle
import tempfile
from typing import IO, Any, Callable, Iterable, Optional, Sequence

from ..supervise import die_with_parent, started_from_main_thread

log = logging.getLogger(__name__)

#: a pair scored ahead: (transcript, hypothesis, language label), as the prediction will hold them
Pair = tuple[str, str, Optional[str]]
#: pairs the helper scores between two looks at its stop signal (about 5 ms of work: the end's scoring waits for
#: the chunk under way, half of one on average)
CHUNK = 100
#: what a helper scores, read in the helper: chunks of (normalizer, pairs), each pair scored with that normalizer
Source = Callable[[], Iterable[tuple[str, Sequence[Pair]]]]

#: the scores taken in from the helper: ``{(normalizer, characters): {pair: packed score}}``
_MEMO: dict[tuple[str, bool], dict[bytes, tuple[Any, ...]]] = {}
#: the helper running now (one at a time), taken in by :func:`collect`
_RUNNING: Optional["ScoresAhead"] = None


def available() -> bool:
    """Whether this system can fork a helper that shares this process's memory (the pairs are not copied)."""
    return "fork" in multiprocessing.get_all_start_methods()


class ScoresAhead:
    """A helper process scoring ``pairs`` with ``kernel`` (returning an object with ``packed()``), used as a context:
    on entry it starts; :func:`collect` (or the exit) stops it and keeps what it scored; the exit forgets it all.
    :meth:`reading` makes one whose pairs the helper reads itself.

    >>> from whisperbench.scoring.summary import score_texts
    >>> with ScoresAhead([("Hello there.", "hello bear", None)], "english", True, score_texts):
    ...     took = collect(finish=True)
    ...     lookup(("Hello there.", "hello bear", None), "english", True)[3]
    (1, 1, 0, 0)
    >>> took, lookup(("Hello there.", "hello bear", None), "english", True)
    (1, None)
    """

    def __init__(self, pairs: Sequence[Pair], normalizer: str, characters: bool, kernel: Callable[..., Any]) -> None:
        self.source: Source = lambda: ((normalizer, pairs[i : i + CHUNK]) for i in range(0, len(pairs), CHUNK))
        self.characters, self.kernel = characters, kernel
        self._out: Optional[IO[bytes]] = None
        self._process: Any = None
        self._stop: Any = None
        self._normalizers: set[str] = set()

    @classmethod
    def reading(cls, source: Source, characters: bool, kernel: Callable[..., Any]) -> "ScoresAhead":
        """A helper whose pairs ``source`` gives, called in the helper (it may read files: this process goes on
        meanwhile); a source that fails ends the helper quietly (the end's scoring does the rest)."""
        ahead = cls([], "", characters, kernel)
        ahead.source = source
        return ahead

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
        self.stop(now=exc[0] is not None)  # its own, even where another started since (threads of one process)
        for normalizer in self._normalizers:
            _MEMO.pop((normalizer, self.characters), None)

    def _work(self, parent_pid: int, by_signal: bool) -> None:
        """The helper: score the source's pairs in order, appending each chunk (its normalizer, the pairs' keys and
        their packed scores) to the shared file."""
        die_with_parent(parent_pid, by_signal)  # a killed run leaves no helper behind (holding its lock's file)
        gc.disable()  # nothing it makes lives in a cycle; it exits when told to stop
        assert self._out is not None
        try:
            for normalizer, pairs in self.source():
                if self._stop.is_set():
                    break
                packed = [self.kernel(t, h, lang, normalizer, self.characters).packed() for t, h, lang in pairs]
                keys = [pair_key(pair) for pair in pairs]
                pickle.dump((normalizer, keys, packed), self._out, protocol=pickle.HIGHEST_PROTOCOL)
                self._out.flush()
        except Exception as exc:  # a source that cannot be read: the run itself says why, the end scores it all
            log.debug("scoring ahead stopped: %s: %s", type(exc).__name__, exc)

    def stop(self, finish: bool = False, now: bool = False) -> int:
        """Stop the helper (it ends the chunk it is on; ``finish``: it scores every pair first; ``now``: killed,
        the run failed), keep what it scored; how many pairs that is."""
        if self._process is None or self._out is None:
            return 0
        if now:
            self._process.kill()
        elif not finish:
            self._stop.set()
        self._process.join()
        if self._process.exitcode and not now:  # killed (out of memory…) or failed: the end's scoring does the rest
            log.warning("the helper scoring ahead ended with exit code %s", self._process.exitcode)
        self._process = None
        self._out.seek(0)
        taken = read_scores(self._out, self.characters, self._normalizers)
        self._out.close()
        self._out = None
        log.debug("scored ahead: %d pairs", taken)
        return taken


def read_scores(out: IO[bytes], characters: bool, normalizers: Optional[set[str]] = None) -> int:
    """Take the helper's chunks of packed scores from ``out`` into the memo (``normalizers`` gets each chunk's);
    how many pairs they hold. A chunk cut short (the helper killed while it wrote) ends the reading: only whole
    chunks count.

    >>> import io
    >>> out, a, c = io.BytesIO(), ("a", "b", None), ("c", "d", None)
    >>> pickle.dump(("basic", [pair_key(a)], [("packed",)]), out)
    >>> pickle.dump(("basic", [pair_key(c)], [("cut",)]), out)
    >>> cut, start = out.truncate(out.tell() - 3), out.seek(0)
    >>> read_scores(out, True), lookup(a, "basic", True), lookup(c, "basic", True)
    (1, ('packed',), None)
    >>> _MEMO.clear()
    """
    taken = 0
    while True:
        try:
            normalizer, keys, packed = pickle.load(out)
        except (EOFError, pickle.UnpicklingError):
            return taken
        _MEMO.setdefault((normalizer, characters), {}).update(zip(keys, packed))
        if normalizers is not None:
            normalizers.add(normalizer)
        taken += len(packed)


def pair_key(pair: Pair) -> bytes:
    """A pair's key in the memo: 128 bits of BLAKE2b over its texts, each after its length, and its language (two
    pairs of a million share one with a chance of about 10^-27), sent back by the helper instead of the texts: the
    memo then holds 16 bytes a pair besides its score, not a second copy of both texts.

    >>> pair_key(("a b", "c", None)) == pair_key(("a", "b c", None)), len(pair_key(("a", "b", "en")))
    (False, 16)
    """
    transcript, hypothesis, language = pair
    text = f"{len(transcript)}:{transcript}{len(hypothesis)}:{hypothesis}{language!r}"
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def running() -> bool:
    """Whether a helper is scoring ahead now (a second one would only share its core)."""
    return _RUNNING is not None


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
    return memo.get(pair_key(pair)) if memo else None
