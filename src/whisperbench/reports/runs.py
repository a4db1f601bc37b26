"""The runs in a store, one row each (``whisperbench runs``): what each is, how far it got, how much disk it holds.

Failed, stopped and empty runs show up here as what they are, so they can be removed (``runs remove``) before a
report picks them up. A run whose files cannot be read is listed too, with why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import RunStoreError, WhisperbenchError
from ..store.runs import RunStore, StoredRun, find_run, read_run, run_folders
from .escape import one_line


@dataclass
class RunRow:
    """One run as ``whisperbench runs`` lists it."""

    name: str
    status: str  # finished, incomplete, running (a live writer), stopped, empty (no example succeeded), unreadable
    stored: int  # examples with a stored result (failed ones included)
    expected: int  # examples in its dataset
    failed: int
    model: str
    adapter: str
    label: str
    dataset: str
    date: str  # when it finished, else when it last started (UTC, to the minute)
    size_bytes: int
    writer: str | None = None  # who writes it now, when someone does
    problem: str | None = None  # why it could not be read

    @property
    def coverage(self) -> str:
        """e.g. "12 of 49"."""
        return f"{self.stored} of {self.expected}"

    def to_json(self) -> dict:
        """The row as JSON (``runs --json``)."""
        return asdict(self) | {"coverage": self.coverage}


def run_rows(runs_dir: str | Path, names: Iterable[str] | None = None) -> list[RunRow]:
    """Every run under ``runs_dir``, sorted by name (an unreadable one too, with its problem); with ``names``
    (names under ``runs_dir`` or folders) those runs, in that order (one that does not exist is an error)."""
    stores = run_folders(runs_dir) if names is None else [find_run(name, runs_dir) for name in names]
    return [run_row(store) for store in stores]


def remove_runs(names: Iterable[str], runs_dir: str | Path) -> list[Path]:
    """Delete the named runs (names under ``runs_dir`` or folders); return their folders. Every one is checked
    first: when one does not exist or another process writes it, none is removed."""
    stores = [find_run(name, runs_dir) for name in names]
    busy = [f"{store.name} (being written by {writer})" for store in stores if (writer := store.live_writer())]
    if busy:
        raise RunStoreError(f"not removing anything: {'; '.join(busy)}; stop those first or leave them out")
    for store in stores:
        store.remove()
    return [store.path for store in stores]


def run_row(store: RunStore) -> RunRow:
    """The row of the run in ``store``."""
    try:
        return _row_of(read_run(store), store)
    except WhisperbenchError as exc:
        return RunRow(
            store.name,
            "unreadable",
            0,
            0,
            0,
            "?",
            "?",
            "?",
            "?",
            "",
            store.size_bytes(),
            store.live_writer(),
            one_line(str(exc)),
        )


def _row_of(run: StoredRun, store: RunStore) -> RunRow:
    meta, coverage = run.meta, run.coverage
    status = "empty" if coverage.empty and coverage.state != "running" else coverage.state
    when = (meta.finished_at or meta.started_at or "")[:16].replace("T", " ")
    return RunRow(
        run.name,
        status,
        coverage.stored,
        coverage.expected,
        coverage.stored - coverage.ok,
        Path(meta.model).name or meta.model,
        meta.adapter,
        meta.label or meta.adapter,
        meta.dataset.name,
        when,
        store.size_bytes(),
        store.live_writer(),
    )


def human_size(size: int) -> str:
    """Bytes as people read them: ``human_size(2_500_000)`` is "2.4 MB".

    >>> human_size(512), human_size(2_500_000), human_size(3 * 1024 ** 3)
    ('512 B', '2.4 MB', '3.0 GB')
    """
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"  # pragma: no cover (the loop returns)


_HEADER = ("run", "status", "coverage", "failed", "model", "implementation", "dataset", "date", "size")


def render_runs(rows: list[RunRow]) -> str:
    """The rows as an aligned plain-text table (a line per run, then the total size); problems under their row."""
    cells = [_HEADER] + [
        (r.name, r.status, r.coverage, str(r.failed), r.model, r.label, r.dataset, r.date, human_size(r.size_bytes))
        for r in rows
    ]
    widths = [max(len(one_line(row[i])) for row in cells) for i in range(len(_HEADER))]
    lines = []
    for index, row in enumerate(cells):
        lines.append("  ".join(one_line(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
        extra = rows[index - 1] if index else None
        if extra is not None and (extra.problem or extra.writer):
            lines.append(f"    {extra.problem or 'being written by ' + str(extra.writer)}")
    lines.append(f"{len(rows)} run(s), {human_size(sum(r.size_bytes for r in rows))}")
    return "\n".join(lines)
