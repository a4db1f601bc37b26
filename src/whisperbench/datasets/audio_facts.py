"""What a dataset needs to know of each audio file — duration, sample rate, channels, sha256 — computed once per
file: per distinct file within a process, and across processes by (path, size, modification time in ns) in a
small SQLite table beside the converted weights (``$WHISPERBENCH_CACHE/audio-facts.sqlite``).

A 10,000-row QA set that points at one file opens and hashes it once, and a second command on the same set
reads the facts back instead of hashing every file again. A set of many files not cached yet (a fresh CI runner)
has them computed on every core (:func:`audio_facts_of`) and stored in one transaction. A file rewritten in place
changes its modification time (and usually its size): its facts are computed afresh. Encoded bytes (a Hugging
Face dataset's audio) have no path: they are read and hashed each time. The cache is an optimisation only: when
it cannot be opened or written, the facts are computed as if it were empty.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.hashing import sha256_of
from ..core.json_files import cache_dir
from ..errors import AudioError
from ..scoring.engine import map_ranges
from ..types import AudioInfo

if TYPE_CHECKING:
    import sqlite3

log = logging.getLogger(__name__)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS facts (path TEXT, size INTEGER, mtime_ns INTEGER, duration_s REAL, "
    "sample_rate INTEGER, channels INTEGER, sha256 TEXT, PRIMARY KEY (path, size, mtime_ns))"
)


_COLUMNS = "path, size, mtime_ns, duration_s, sample_rate, channels, sha256"


@dataclass(frozen=True)
class AudioFacts:
    """One audio file's header facts and content digest."""

    info: AudioInfo
    sha256: str


_memo: dict[tuple[str, int, int], AudioFacts] = {}
_lock = threading.Lock()


def audio_facts(source: str | bytes) -> AudioFacts:
    """The facts of a file path (memoized, then cached on disk) or of encoded bytes (computed).

    >>> from whisperbench.datasets import bundled_datasets
    >>> facts = audio_facts(str(bundled_datasets()["tiny-shortform"].parent / "audio" / "jfk.flac"))
    >>> round(facts.info.duration_s, 1), facts.sha256[:12]
    (11.0, '9f8c69b992e8')
    """
    if not isinstance(source, str):
        return AudioFacts(_header(source), sha256_of(source))
    key = _key(source)
    with _lock:
        found = _memo.get(key)
    if found is None:
        found = _read_many([key]).get(key)
        if found is None:
            found = AudioFacts(_header(source), sha256_of(source))
            _write_many([(key, found)])
        with _lock:
            _memo[key] = found
    return found


#: fewest files to compute on a pool of processes: below it, starting the spawned workers costs more CPU than
#: reading, hashing and the header of every file in this process
POOL_MIN = 5_000


def audio_facts_of(paths: Iterable[str], workers: int | None = None) -> dict[str, AudioFacts | AudioError]:
    """The facts of many existing files at once, as :func:`audio_facts` gives each (an unreadable file: its
    AudioError): memoized and cached ones read back, the others computed on ``workers`` processes (default: the
    idle cores this process may use, ``pool_size``; from :data:`POOL_MIN` files) and cached in one transaction.

    >>> from whisperbench.datasets import bundled_datasets
    >>> jfk = str(bundled_datasets()["tiny-shortform"].parent / "audio" / "jfk.flac")
    >>> audio_facts_of([jfk])[jfk] == audio_facts(jfk)
    True
    """
    keys: dict[str, tuple[str, int, int]] = {}
    refused: dict[str, AudioFacts | AudioError] = {}
    for path in dict.fromkeys(paths):
        try:
            keys[path] = _key(path)
        except FileNotFoundError:
            continue  # left out: the caller says it is missing
        except AudioError as exc:
            refused[path] = exc
    with _lock:
        known = {key: _memo[key] for key in keys.values() if key in _memo}
    known |= _read_many([key for key in keys.values() if key not in known])
    found: dict[str, AudioFacts | AudioError] = {path: known[key] for path, key in keys.items() if key in known}
    with _lock:
        _memo.update(known)
    todo = {path: key for path, key in keys.items() if key not in known}
    names = list(todo)
    parts = map_ranges(_facts_part, names, len(names), workers, minimum=POOL_MIN)
    computed = dict(zip(names, (_unpacked(packed) for part in parts for packed in part)))
    made = [(todo[path], facts) for path, facts in computed.items() if isinstance(facts, AudioFacts)]
    _write_many(made)
    with _lock:
        _memo.update(made)
    return found | computed | refused


def _header(source: str | bytes) -> AudioInfo:
    """What the audio's header says (:func:`whisperbench.datasets.audio.audio_info`, imported on the first file
    read: the datasets package loads no numpy, so a helper reading a manifest's texts starts without it)."""
    from .audio import audio_info

    return audio_info(source)


def _key(path: str) -> tuple[str, int, int]:
    """A file's key in the memo and the cache: its absolute path, size and modification time (ns). Anything but a
    regular file (a FIFO, a device, a socket, a folder) is an AudioError: reading a FIFO would wait for a writer
    for ever."""
    found = os.stat(path)
    if not stat.S_ISREG(found.st_mode):
        raise AudioError(f"{path}: not a regular file ({_kind(found.st_mode)}): give an audio file")
    return os.path.abspath(path), found.st_size, found.st_mtime_ns


def _kind(mode: int) -> str:
    """What a file that is no regular file is, in a word."""
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "a device or other special file")


def _facts_part(paths: Sequence[str], start: int, stop: int) -> list[tuple[Any, ...]]:
    """One worker's files' facts, packed as plain values (an unreadable file: its error's message)."""
    packed: list[tuple[Any, ...]] = []
    for path in paths[start:stop]:
        try:
            info = _header(path)
            packed.append((info.duration_s, info.sample_rate, info.channels, sha256_of(path)))
        except AudioError as exc:
            packed.append((str(exc),))
    return packed


def _unpacked(packed: tuple[Any, ...]) -> AudioFacts | AudioError:
    if len(packed) == 1:
        return AudioError(packed[0])
    duration_s, sample_rate, channels, sha256 = packed
    return AudioFacts(AudioInfo(duration_s, sample_rate, channels), sha256)


_connection: sqlite3.Connection | None = None
_unavailable = False


def _database() -> sqlite3.Connection | None:
    """The process's one connection to the cache (opened on first use; None when it cannot be)."""
    global _connection, _unavailable
    if _connection is None and not _unavailable:
        import sqlite3

        try:
            folder = cache_dir()
            folder.mkdir(parents=True, exist_ok=True)
            _connection = sqlite3.connect(Path(folder) / "audio-facts.sqlite", timeout=5.0, check_same_thread=False)
            _connection.execute("PRAGMA journal_mode=WAL")  # no fsync per insert: a cache, not a record
            _connection.execute("PRAGMA synchronous=NORMAL")
            _connection.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            log.debug("audio facts cache unavailable: %s", exc)
            _connection, _unavailable = None, True
    return _connection


def _read_many(keys: list[tuple[str, int, int]]) -> dict[tuple[str, int, int], AudioFacts]:
    """The cached facts of many files, read a few hundred paths a query (one query a file cost more than the rest
    of a warm load)."""
    wanted, found = set(keys), dict[tuple[str, int, int], AudioFacts]()
    paths = list(dict.fromkeys(key[0] for key in keys))
    import sqlite3

    with _lock:
        connection = _database()
        for start in range(0, len(paths) if connection is not None else 0, 500):
            chunk = paths[start : start + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT {_COLUMNS} FROM facts WHERE path IN ({marks})"
            try:
                rows = connection.execute(query, chunk).fetchall()  # type: ignore[union-attr]
            except sqlite3.Error:
                return found
            for path, size, mtime_ns, duration_s, rate, channels, sha256 in rows:
                if (path, size, mtime_ns) in wanted:
                    found[(path, size, mtime_ns)] = AudioFacts(
                        AudioInfo(float(duration_s), int(rate), int(channels)), str(sha256)
                    )
    return found


def _write_many(items: list[tuple[tuple[str, int, int], AudioFacts]]) -> None:
    """Cache the facts of several files in one transaction."""
    if not items:
        return
    rows = [(*key, f.info.duration_s, f.info.sample_rate, f.info.channels, f.sha256) for key, f in items]
    import sqlite3

    with _lock:
        connection = _database()
        if connection is None:
            return
        try:
            with connection:
                connection.executemany("INSERT OR REPLACE INTO facts VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        except sqlite3.Error as exc:
            log.debug("audio facts cache not written: %s", exc)
