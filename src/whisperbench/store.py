"""The run store: ``<runs_dir>/<run>/{run.json, predictions.jsonl, summary.json}``.

Predictions are appended one complete line per example with a single ``write`` and flushed to disk,
so a killed process leaves at worst one partial last line, which readers ignore and the next append
cuts off. JSON files are replaced atomically (write to a temp file, then rename).
"""

from __future__ import annotations

import json
import os
import re
import socket
from contextlib import contextmanager
from functools import cached_property
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator, Optional

from .gcpause import paused_gc
from .errors import RunStoreError
from .files import write_json_atomic
from .redact import redact, redact_text
from .runinfo import RunInfo
from .types import Prediction

RUN_JSON = "run.json"
PREDICTIONS = "predictions.jsonl"
SUMMARY_JSON = "summary.json"
LOCK = ".lock"  # held (flock) by the one process writing the run; the kernel releases it when that process dies
OWNER = ".owner.json"  # who holds the lock: pid, host and since when (for the refusal message)


def safe_run_name(text: str) -> str:
    """A file-system-safe run name."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("._") or "run"


def _read_json(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise RunStoreError(f"cannot read {path}: {exc}") from exc


@dataclass
class RunStore:
    """One run's folder."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def predictions_path(self) -> Path:
        return self.path / PREDICTIONS

    def exists(self) -> bool:
        return (self.path / RUN_JSON).exists()

    def read_info(self) -> dict:
        return redact(_read_json(self.path / RUN_JSON))  # runs stored before redaction covered every field

    def read_run_info(self) -> RunInfo:
        return RunInfo.from_dict(self.read_info())

    def write_info(self, info: RunInfo | dict) -> None:
        write_json_atomic(self.path / RUN_JSON, redact(info.to_dict() if isinstance(info, RunInfo) else info))

    def read_summary(self) -> Optional[dict]:
        path = self.path / SUMMARY_JSON
        return _read_json(path) if path.exists() else None

    def write_summary(self, summary: dict) -> None:
        write_json_atomic(self.path / SUMMARY_JSON, redact(summary))

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
        with paused_gc():  # a million lines: see whisperbench.gcpause
            for number, raw in enumerate(complete.splitlines(), start=1):
                if not raw.strip():
                    continue
                try:
                    pred = Prediction.from_json(json.loads(raw))
                except (UnicodeDecodeError, json.JSONDecodeError, TypeError, AttributeError) as exc:
                    raise RunStoreError(f"{path} line {number}: malformed prediction ({exc})") from exc
                by_id[pred.id] = pred
        return list(by_id.values())

    def _cut_partial_line(self) -> None:
        path = self.predictions_path
        if not path.exists():
            return
        with open(path, "rb+") as fh:
            data = fh.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                fh.truncate(end)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run's writer lock: a second writer (same or another configuration) is refused with a
        clear error naming the holder; a lock left by a dead process is free again (an OS file lock)."""
        from filelock import FileLock, Timeout

        self.path.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.path / LOCK), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise RunStoreError(f"run {self.path} is being written by {self._owner()}: one writer per run; wait "
                                "for it to finish or pass --name for another run") from None
        try:
            owner = {"pid": os.getpid(), "host": socket.gethostname(),
                     "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            write_json_atomic(self.path / OWNER, owner)
            yield
        finally:
            (self.path / OWNER).unlink(missing_ok=True)
            lock.release()

    def _owner(self) -> str:
        try:
            owner = json.loads((self.path / OWNER).read_text(encoding="utf-8"))
            return f"pid {owner['pid']} on {owner['host']} (since {owner['since']})"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"

    def open_for_append(self) -> "PredictionWriter":
        self.path.mkdir(parents=True, exist_ok=True)
        self._cut_partial_line()
        return PredictionWriter(self.predictions_path)


@dataclass
class PredictionWriter:
    """Appends predictions as complete, flushed lines."""

    path: Path
    _fd: int = field(init=False, default=-1)

    def __post_init__(self) -> None:
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append(self, pred: Prediction) -> None:
        data = pred.to_json()
        if data.get("error"):  # an endpoint's error (and its traceback) can quote its URL
            data["error"] = redact_text(data["error"])
            data["extra"] = redact(data.get("extra") or {})
        line = json.dumps(data, ensure_ascii=False, default=str) + "\n"
        os.write(self._fd, line.encode("utf-8"))
        os.fsync(self._fd)

    def append_all(self, preds: Iterable[Prediction]) -> None:
        for pred in preds:
            self.append(pred)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "PredictionWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class StoredRun:
    """A finished (or partial) run as read back: what reports and the gate work from."""

    store: RunStore
    info: dict  # run.json as stored (raw)
    predictions: list[Prediction]
    summary: Optional[dict]

    @cached_property
    def meta(self) -> RunInfo:
        """run.json as a typed record."""
        return RunInfo.from_dict(self.info)

    @property
    def name(self) -> str:
        return self.store.name

    @property
    def dataset_hash(self) -> str:
        return self.meta.dataset.content_hash

    @property
    def form(self) -> str:
        return self.meta.dataset.form

    @property
    def normalizer(self) -> str:
        return self.meta.normalizer


def open_run(run: str, runs_dir: str | Path = "runs") -> StoredRun:
    """Read a run given as a folder path or as a name under ``runs_dir``."""
    candidates = [Path(run), Path(runs_dir) / run]
    for path in candidates:
        store = RunStore(path)
        if store.exists():
            return StoredRun(store, store.read_info(), store.read_predictions(), store.read_summary())
    raise RunStoreError(f"run {run!r} not found (looked in {', '.join(str(c) for c in candidates)})"
                        + _nearby(run, Path(runs_dir)))


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


def list_runs(runs_dir: str | Path) -> list[StoredRun]:
    """Every run under ``runs_dir``, sorted by name."""
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    runs = []
    for child in sorted(root.iterdir()):
        store = RunStore(child)
        if store.exists():
            runs.append(StoredRun(store, store.read_info(), store.read_predictions(), store.read_summary()))
    return runs
