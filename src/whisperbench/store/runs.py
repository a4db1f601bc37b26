"""The run store: ``<runs_dir>/<run>/{run.json, predictions.jsonl, summary.json}``.

Predictions are appended one complete line per example with a single ``write`` and flushed to disk,
so a killed process leaves at worst one partial last line, which readers ignore and the next append
cuts off. JSON files are replaced atomically (write to a temp file, then rename).
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from ..core.hashing import sha256_of
from ..core.json_files import json_line, json_lines_parser, parse_json, write_json_atomic
from ..core.redact import redact, redact_text
from ..errors import RunStoreError
from ..scoring.arrays import OK
from ..scoring.record import Summary, SummaryError
from ..types import Prediction
from .run_info import RunInfo, identity_differences
from .run_lock import LOCK, OWNER, TAKEOVER, RunLock, describe_owner, owner_alive, this_process  # noqa: F401
from .score_files import predictions_stamp, read_table, write_table

logger = logging.getLogger(__name__)

#: how many stored lines a verified run (:meth:`StoredRun.verified`: the gate's) scores again to check its table
VERIFY_SAMPLE = 64

RUN_JSON = "run.json"
PREDICTIONS = "predictions.jsonl"
SUMMARY_JSON = "summary.json"


def safe_run_name(text: str) -> str:
    """A file-system-safe run name."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("._") or "run"


def _read_json(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise RunStoreError(f"cannot read {path}: {exc}") from exc


def _parse_line(raw: bytes, path: Path, number: int, parse: Callable[[bytes], Any] = parse_json) -> Prediction:
    try:
        return Prediction.from_json(parse(raw))
    except (UnicodeDecodeError, json.JSONDecodeError, TypeError, AttributeError, KeyError) as exc:
        raise RunStoreError(f"{path} line {number}: malformed prediction ({exc})") from exc


@dataclass
class RunStore:
    """One run's folder."""

    path: Path

    @property
    def name(self) -> str:
        """The run's name (its folder's name)."""
        return self.path.name

    @property
    def predictions_path(self) -> Path:
        """Where the run's raw outputs are: predictions.jsonl, one line per example."""
        return self.path / PREDICTIONS

    def exists(self) -> bool:
        """Whether the folder holds a run (a run.json)."""
        return (self.path / RUN_JSON).exists()

    def read_info(self) -> dict:
        """run.json as stored (credentials redacted, also in runs stored before redaction covered every field)."""
        return redact(_read_json(self.path / RUN_JSON))  # runs stored before redaction covered every field

    def read_run_info(self) -> RunInfo:
        """run.json as the typed record :class:`~whisperbench.store.run_info.RunInfo`."""
        return RunInfo.from_dict(self.read_info())

    def write_info(self, info: RunInfo | dict) -> None:
        """Write run.json atomically, redacted."""
        write_json_atomic(self.path / RUN_JSON, redact(info.to_dict() if isinstance(info, RunInfo) else info))

    def read_summary(self) -> Summary | None:
        """The run's ``summary.json`` (any schema version: :meth:`Summary.from_dict` migrates it); None: none yet."""
        path = self.path / SUMMARY_JSON
        if not path.exists():
            return None
        try:
            return Summary.from_dict(_read_json(path), str(path))
        except (SummaryError, TypeError) as exc:
            raise RunStoreError(f"{path}: {exc}") from exc

    def write_summary(self, summary: Summary) -> None:
        """Write summary.json atomically, redacted (:meth:`Summary.to_dict`)."""
        write_json_atomic(self.path / SUMMARY_JSON, redact(summary.to_dict()))

    def prediction_chunks(self, size: int = 50_000) -> Iterator[list[Prediction]]:
        """The stored lines as predictions, ``size`` at a time, in file order (an id may come again later:
        the later line wins, as in :meth:`read_predictions`); the same errors as it."""
        path = self.predictions_path
        if not path.exists():
            return
        chunk: list[Prediction] = []
        with open(path, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                if not raw.endswith(b"\n"):
                    break  # a write cut short
                if raw.strip():
                    chunk.append(_parse_line(raw, path, number))
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
        if chunk:
            yield chunk

    def sample_predictions(self, count: int, rng: random.Random) -> list[Prediction]:
        """About ``count`` stored lines picked at random, as predictions (:func:`sampled_lines`)."""
        return sampled_lines(self, count, rng)

    def read_predictions(self) -> list[Prediction]:
        """Stored predictions, one per id (a later line for an id replaces an earlier one).

        A last line without its newline (a write cut short) is ignored; a malformed complete line
        is an error naming the file and line.
        """
        path = self.predictions_path
        if not path.exists():
            return []
        with open(path, "rb") as fh:
            data = fh.read()
        complete = data[: data.rfind(b"\n") + 1]
        by_id: dict[str, Prediction] = {}
        parse = json_lines_parser(complete)
        for number, raw in enumerate(complete.splitlines(), start=1):
            if not raw.strip():
                continue
            pred = _parse_line(raw, path, number, parse)
            by_id[pred.id] = pred
        return list(by_id.values())

    def scores_path(self, normalizer: str) -> Path:
        """Where the run's score table with ``normalizer`` lives (Arrow IPC, beside predictions.jsonl)."""
        return self.path / f"scores-{safe_run_name(normalizer)}.arrow"

    def predictions_stamp(self) -> str:
        """What a score table records of predictions.jsonl to tell it is stale (:func:`scorefile.predictions_stamp`)."""
        return predictions_stamp(self.predictions_path)

    def read_score_table(self, normalizer: str) -> Any:
        """The stored score table with ``normalizer`` (:func:`whisperbench.store.score_files.read_table`); None when
        it is missing, unreadable, of another version, normalizer or metric code, or stale."""
        path = self.predictions_path
        return read_table(self.scores_path(normalizer), normalizer, self.predictions_stamp(), path)

    def write_score_table(self, table: Any, normalizer: str, stamp: str) -> None:
        """Store ``table`` (scored with ``normalizer`` from predictions.jsonl as it was at ``stamp``), atomically
        (:func:`whisperbench.store.score_files.write_table`)."""
        write_table(self.scores_path(normalizer), table, normalizer, stamp, self.predictions_path)

    def _cut_partial_line(self) -> None:
        path = self.predictions_path
        if not path.exists():
            return
        with open(path, "rb+") as fh:
            data = fh.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                fh.truncate(end)

    def lock(self) -> AbstractContextManager[None]:
        """Hold the run's writer lock (:meth:`whisperbench.store.run_lock.RunLock.hold`): one writer per run, a dead
        writer's lock taken over, saying so."""
        return RunLock(self.path).hold()

    def live_writer(self) -> str | None:
        """Who writes this run now ("pid 12 on host (since …)"), or None: no running process is its recorded
        writer (a lock left by a dead writer, or held by an orphan it left behind, is free). Creates nothing."""
        owner = self.owner()
        return describe_owner(owner) if owner is not None and owner_alive(owner) else None

    def size_bytes(self) -> int:
        """Bytes the run's folder holds on disk (every file in it)."""
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file() and not f.is_symlink())

    def remove(self) -> None:
        """Delete the run's folder, holding its writer lock so no writer starts meanwhile; a run another process
        is writing is refused (RunStoreError naming it), as is a folder that holds no run."""
        import shutil

        if not (self.path / RUN_JSON).exists() and not self.predictions_path.exists():
            raise RunStoreError(f"{self.path} holds no run (no {RUN_JSON}): not removed")
        try:
            lock = RunLock(self.path).acquire()
        except RunStoreError:
            raise RunStoreError(
                f"run {self.name} is being written by {describe_owner(self.owner())}: not "
                "removed; stop it first (Ctrl-C) or wait for it to finish"
            ) from None
        try:
            if self.path.is_symlink():  # the link is the run in this folder; what it points at is someone else's
                self.path.unlink()
            else:
                shutil.rmtree(self.path)
        finally:
            lock.release()

    def owner(self) -> dict | None:
        """The lock owner's record (``runlock.this_process`` of the writer), None when no writer left one."""
        return RunLock(self.path).owner()

    def open_for_append(self) -> PredictionWriter:
        """A writer appending predictions to predictions.jsonl (a partial last line left by a crash is cut first)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._cut_partial_line()
        return PredictionWriter(self.predictions_path)


#: ``predictions.jsonl`` is made durable (fsync) after this many lines or seconds, and when the writer closes
SYNC_EVERY_LINES = 256
SYNC_EVERY_S = 1.0


def _line(pred: Prediction) -> bytes:
    """``pred``'s line of predictions.jsonl, UTF-8 (an error's text and extra redacted: an endpoint's error can quote
    its URL)."""
    data = pred.to_json()
    if data.get("error"):
        data["error"] = redact_text(data["error"])
        data["extra"] = redact(data.get("extra") or {})
    return json_line(data)


@dataclass
class PredictionWriter:
    """Appends predictions as complete lines, each append (a line, or a group's lines) in one ``write`` call: a
    killed process loses nothing it appended (the kernel holds the lines). The file is synced to the disk every
    :data:`SYNC_EVERY_LINES` lines or :data:`SYNC_EVERY_S` seconds, and on close: a power cut loses at most that
    much, which a resume recomputes."""

    path: Path
    _fd: int = field(init=False, default=-1)
    _unsynced: int = field(init=False, default=0)
    _synced_at: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._synced_at = time.monotonic()

    def append(self, pred: Prediction) -> None:
        """Append one prediction as a line (a finished result is never lost; durable within a second)."""
        self.append_all([pred])

    def append_all(self, preds: Iterable[Prediction]) -> bytes:
        """Append several predictions, their lines in one ``write`` call (recorded hypotheses are written so, a
        group at a time: one system call a line cost more than reading them). Returns the lines written."""
        lines = b"".join(_line(pred) for pred in preds)
        data = memoryview(lines)
        while data:  # a regular file takes it whole; a short write (a full disk's last bytes) is finished
            data = data[os.write(self._fd, data) :]
        self._unsynced += lines.count(b"\n")
        if self._unsynced >= SYNC_EVERY_LINES or time.monotonic() - self._synced_at >= SYNC_EVERY_S:
            self.sync()
        return lines

    def sync(self) -> None:
        """Make every appended line durable (fsync)."""
        if self._fd >= 0 and self._unsynced:
            os.fsync(self._fd)
        self._unsynced, self._synced_at = 0, time.monotonic()

    def close(self) -> None:
        """Sync and close the file."""
        if self._fd >= 0:
            self.sync()
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> PredictionWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def sampled_lines(store: RunStore, count: int, rng: random.Random) -> list[Prediction]:
    """About ``count`` lines of ``store``'s predictions.jsonl picked at random (every line of a small file), as
    predictions: each the line that starts after a random byte offset (the whole file is not read: a million lines
    stay cheap). A malformed line is an error naming the file, as on any read."""
    path = store.predictions_path
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return []
    if size <= count * 1024:
        lines = store.read_predictions()
        return rng.sample(lines, min(count, len(lines)))
    picked = []
    with open(path, "rb") as fh:
        for offset in sorted(rng.randrange(size) for _ in range(count)):
            fh.seek(max(offset - 1, 0))
            if offset:
                fh.readline()  # the rest of the line holding byte offset - 1: the next one starts at or after it
            raw = fh.readline()
            if raw.endswith(b"\n") and raw.strip():
                picked.append(_parse_line(raw, path, 0))
    return picked


@dataclass
class StoredRun:
    """A finished (or partial) run as read back: what reports and the gate work from.

    ``predictions`` are read from ``predictions.jsonl`` when first asked for; ``score_table`` gives the
    scores as columns without them when the run's table is fresh.
    """

    store: RunStore
    info: dict  # run.json as stored (raw)
    _predictions: list[Prediction] | None = field(default=None, repr=False)
    summary: Summary | None = None
    _tables: dict = field(default_factory=dict, repr=False)
    _verify: bool = field(default=False, repr=False)

    @property
    def predictions(self) -> list[Prediction]:
        """Every stored prediction (read once)."""
        if self._predictions is None:
            self._predictions = self.store.read_predictions()
        return self._predictions

    def scored(self, normalizer: str | None = None) -> list[Prediction]:
        """Every stored prediction scored with ``normalizer`` (default the run's): the raw output holds no score."""
        from ..scoring.engine import rescored_all

        return rescored_all(self.predictions, normalizer or self.normalizer)

    @property
    def num_predictions(self) -> int:
        """How many predictions the run holds (from a score table already read, else from the predictions)."""
        for table in self._tables.values():
            return table.num_rows
        return len(self.predictions)

    def score_table(self, normalizer: str | None = None):
        """The run's scores with ``normalizer`` (default the run's) as a pyarrow table: the stored table
        when it is fresh, else built from the predictions and stored beside them (see ``RunStore.scores_path``).
        On a run :meth:`verified`, a stored table is verified against the predictions first."""
        normalizer = normalizer or self.normalizer
        if normalizer not in self._tables:
            table = self._with_lacking_metrics(self.store.read_score_table(normalizer), normalizer)
            if table is not None and self._verify:
                table = self._checked(table, normalizer)
            self._tables[normalizer] = table if table is not None else self._build_score_table(normalizer)
        return self._tables[normalizer]

    def _with_lacking_metrics(self, table: Any, normalizer: str) -> Any:
        """``table`` (a stored one, or None) with the columns of every metric it lacks — installed since it was
        built, or whose code changed (:func:`whisperbench.scoring.table.lacking_metrics`) — computed from the
        predictions and the table's own columns and stored, the other columns kept as they are; None where it
        cannot be (rebuild it whole)."""
        from ..scoring.table import lacking_metrics, with_metrics

        lacking = lacking_metrics(table) if table is not None else ()
        if not lacking:
            return table
        logger.info("run %s: computing the metrics its score table lacks: %s", self.name, [m.name for m in lacking])
        stamp = self.store.predictions_stamp()
        updated = with_metrics(table, self.predictions, normalizer, lacking)
        if updated is None:
            return None
        self.store.write_score_table(updated, normalizer, stamp)
        return self.store.read_score_table(normalizer) or updated  # memory-mapped: the built copy is freed

    def verified(self) -> StoredRun:
        """This run with every score table it reads verified against predictions.jsonl, not only by its checks (which
        anyone can recompute): a random sample of :data:`VERIFY_SAMPLE` stored lines is scored again and compared
        with their rows; a table that differs is rebuilt from the predictions (a warning names the run and why).
        What the gate reads: a forged table (its check recomputed) cannot give the verdict."""
        self._verify = True
        held, self._tables = list(self._tables), {}
        for normalizer in held:
            self.score_table(normalizer)
        return self

    def _checked(self, table: Any, normalizer: str) -> Any:
        """``table`` where a random sample of the stored lines scores as its rows say, else None (rebuild it)."""
        from ..scoring.table import rows_differ

        problem = rows_differ(table, self.store.sample_predictions(VERIFY_SAMPLE, random.Random()), normalizer)
        if problem is None:
            return table
        logger.warning("run %s: its score table is not its predictions' (%s): rebuilding it", self.name, problem)
        return None

    def _build_score_table(self, normalizer: str):
        """Build the score table from the predictions, store it beside them and return it (memory-mapped)."""
        from ..scoring.table import score_table_of_chunks

        stamp = self.store.predictions_stamp()
        chunks = [self.predictions] if self._predictions is not None else self.store.prediction_chunks()
        table = score_table_of_chunks(chunks, normalizer)
        self.store.write_score_table(table, normalizer, stamp)
        return self.store.read_score_table(normalizer) or table  # memory-mapped: the built copy is freed

    @cached_property
    def meta(self) -> RunInfo:
        """run.json as a typed record."""
        return RunInfo.from_dict(self.info)

    @property
    def name(self) -> str:
        """The run's name (its folder's name)."""
        return self.store.name

    @property
    def dataset_hash(self) -> str:
        """The content hash of the dataset the run ran on (runs on the same data are compared)."""
        return self.meta.dataset.content_hash

    @property
    def form(self) -> str:
        """``short`` or ``long``: the run's dataset form."""
        return self.meta.dataset.form

    @property
    def normalizer(self) -> str:
        """The normalizer the run was scored with (run.json)."""
        return self.meta.normalizer

    @property
    def coverage(self) -> Coverage:
        """How far the run got: its status and how many of its dataset's examples it stored and finished."""
        expected = self.meta.dataset.num_examples
        # the columnar score table counts without building a million Prediction objects
        table = self.score_table() if self.store.predictions_path.exists() else None
        stored = table.num_rows if table is not None else 0
        ok = int(pc.sum(pc.equal(table["status"], OK)).as_py() or 0) if table is not None and stored else 0
        status = self.meta.status
        if status == "running":  # run.json says running: a live writer holds the lock, else it was stopped
            owner = self.store.owner()
            status = "running" if owner is not None and owner_alive(owner) else "stopped"
        return Coverage(status, stored, ok, int(expected) if expected is not None else stored)

    def predictions_digest(self) -> str:
        """sha256 of predictions.jsonl as stored (byte for byte), or "" when there is none."""
        path = self.store.predictions_path
        return sha256_of(path) if path.exists() else ""  # read in blocks: a 1M-prediction file is ~1 GB


@dataclass(frozen=True)
class Coverage:
    """A run's status and coverage, as every report shows it: ``str()`` is e.g. "12 of 49, stopped"."""

    status: str  # finished, running (a live writer), stopped (run.json says running, nobody writes it), ...
    stored: int  # examples with a stored prediction (failed ones included)
    ok: int  # of those, examples that did not fail
    expected: int  # examples in the run's dataset (as recorded when it ran)

    @property
    def finished(self) -> bool:
        """Finished, with a prediction for every example of its dataset."""
        return self.status == "finished" and self.stored >= self.expected

    @property
    def empty(self) -> bool:
        """No example has a result (nothing stored, or every stored one failed)."""
        return self.ok == 0

    @property
    def state(self) -> str:
        """The status as reports say it: a run that says finished yet lacks examples is "incomplete"."""
        return self.status if self.finished or self.status != "finished" else "incomplete"

    def __str__(self) -> str:
        return f"{self.stored} of {self.expected}, {self.state}"


def repeat_problem(first: StoredRun, other: StoredRun) -> str | None:
    """Why ``other`` is not a repeat of ``first`` (another run of the same configuration on the same dataset), or
    None: one run reached twice (the same folder, predictions file or run id), another configuration (its resume
    identity differs) or another dataset (its content hash differs)."""
    a, b = first.store.path.resolve(), other.store.path.resolve()
    pa, pb = first.store.predictions_path, other.store.predictions_path
    same = (
        a == b
        or (pa.exists() and pb.exists() and pa.resolve() == pb.resolve())
        or (bool(first.meta.run_id) and first.meta.run_id == other.meta.run_id)
    )
    if same:
        return f"{other.name} is {first.name} itself ({b}): a repeat is another run of the same configuration"
    if first.meta.identity() != other.meta.identity():
        said = "; ".join(identity_differences(first.meta, other.meta, first.name))
        return f"{other.name} is not a repeat of {first.name}: another configuration ({said})"
    if first.dataset_hash != other.dataset_hash:
        return f"{other.name} is not a repeat of {first.name}: another dataset (content hashes differ)"
    return None


def same_run_reason(reference: StoredRun, candidate: StoredRun) -> str | None:
    """Why ``reference`` and ``candidate`` are one run (so comparing them proves nothing), or None.

    One run: the same folder (however reached: a symlink, a relative path), the same predictions file
    (a symlinked predictions.jsonl), the same run id (a copied folder), or byte-identical predictions from
    the same model and settings.
    """
    a, b = reference.store.path.resolve(), candidate.store.path.resolve()
    if a == b:
        return f"both name the run folder {a}"
    pa, pb = reference.store.predictions_path, candidate.store.predictions_path
    if pa.exists() and pb.exists() and (pa.resolve() == pb.resolve() or os.path.samefile(pa, pb)):
        return f"both read the predictions file {pa.resolve()} (one file, however linked)"
    if reference.meta.run_id and reference.meta.run_id == candidate.meta.run_id:
        return f"both carry run id {reference.meta.run_id} (a copied run folder?): {a} and {b}"
    if (
        reference.meta.identity() == candidate.meta.identity()
        and _same_size(pa, pb)
        and reference.predictions_digest() == candidate.predictions_digest() != ""
    ):
        return (
            f"{a} and {b} hold byte-identical predictions from the same model and settings "
            f"({reference.meta.adapter} {reference.meta.model})"
        )
    return None


def _same_size(a: Path, b: Path) -> bool:
    """Whether two files exist with the same size (byte-identical files do; the others need no hashing)."""
    return a.exists() and b.exists() and a.stat().st_size == b.stat().st_size


def open_run(run: str, runs_dir: str | Path = "runs") -> StoredRun:
    """Read a run given as a folder path or as a name under ``runs_dir``."""
    candidates = [Path(run), Path(runs_dir) / run]
    for path in candidates:
        store = RunStore(path)
        if store.exists():
            return _stored_run(store)
    raise RunStoreError(
        f"run {run!r} not found (looked in {', '.join(str(c) for c in candidates)})" + _nearby(run, Path(runs_dir))
    )


def _stored_run(store: RunStore) -> StoredRun:
    """The run in ``store``; its predictions are read now (a malformed line is an error here) unless a fresh
    score table with the run's normalizer shows they were read whole since they last changed."""
    run = StoredRun(store, store.read_info(), None, store.read_summary())
    normalizer = run.info.get("normalizer")
    if isinstance(normalizer, str):
        fresh = run._with_lacking_metrics(store.read_score_table(normalizer), normalizer)
        # a stale table is rebuilt now: every line read, in bounded memory (a malformed one is an error here)
        run._tables[normalizer] = fresh if fresh is not None else run._build_score_table(normalizer)
    else:
        run.predictions  # noqa: B018 (read now)
    return run


def _nearby(run: str, runs_dir: Path) -> str:
    """A hint naming the runs that do exist: the same name in a sub-folder, close names, or what is there."""
    import difflib

    folders = [runs_dir] + (sorted(c for c in runs_dir.iterdir() if c.is_dir()) if runs_dir.is_dir() else [])
    found: dict[str, Path] = {}  # run name -> the runs folder holding it
    for folder in folders:
        for child in sorted(folder.iterdir()) if folder.is_dir() else []:
            if (child / RUN_JSON).exists():
                found.setdefault(child.name, folder)
    name = Path(run).name
    if name in found and found[name] != runs_dir:
        return f"; it is in {found[name]}: pass --runs-dir {found[name]}"
    close = difflib.get_close_matches(name, list(found), n=3, cutoff=0.6)
    if close:
        return "; did you mean " + ", ".join(f"{c} (in {found[c]})" for c in close) + "?"
    if found:
        shown = sorted(found)[:8]
        return f"; runs there: {', '.join(shown)}{' …' if len(found) > len(shown) else ''}"
    return f"; {runs_dir} holds no runs"


def run_folders(runs_dir: str | Path) -> list[RunStore]:
    """The run folders under ``runs_dir`` (those with a run.json or predictions), sorted by name; none are read."""
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    return [
        RunStore(c)
        for c in sorted(root.iterdir())
        if c.is_dir() and ((c / RUN_JSON).exists() or (c / PREDICTIONS).exists())
    ]


def read_run(store: RunStore) -> StoredRun:
    """The run in ``store`` (as :func:`open_run` reads it)."""
    return _stored_run(store)


def find_run(run: str, runs_dir: str | Path = "runs") -> RunStore:
    """The folder of a run given as a name under ``runs_dir`` or a folder path (as :func:`open_run` looks), even
    when its run.json is unreadable; RunStoreError (with the runs that exist) when there is none."""
    root = Path(runs_dir).resolve()
    for path in (Path(runs_dir) / run, Path(run)):
        if path.resolve() == root or path.resolve() in root.parents:  # "..", ".": the runs folder, never a run
            continue
        if path.is_dir() and ((path / RUN_JSON).exists() or (path / PREDICTIONS).exists()):
            return RunStore(path)
    raise RunStoreError(
        f"run {run!r} not found (looked in {Path(runs_dir) / run} and {Path(run)})" + _nearby(run, Path(runs_dir))
    )


def readable_runs(runs_dir: str | Path) -> tuple[list[StoredRun], list[str]]:
    """Every run under ``runs_dir`` that can be read, sorted by name, and one line for each that cannot (its name
    and why): one broken run never hides the others."""
    root = Path(runs_dir)
    if not root.is_dir():
        return [], []
    runs, unreadable = [], []
    for child in sorted(root.iterdir()):
        store = RunStore(child)
        if store.exists():
            try:
                runs.append(_stored_run(store))
            except RunStoreError as exc:
                unreadable.append(f"{child.name}: {exc}")
    return runs, unreadable


def list_runs(runs_dir: str | Path) -> list[StoredRun]:
    """Every run under ``runs_dir``, sorted by name."""
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    runs = []
    for child in sorted(root.iterdir()):
        store = RunStore(child)
        if store.exists():
            runs.append(_stored_run(store))
    return runs
