"""Dataset loading: a spec string -> validated :class:`~whisperbench.types.Dataset`.

Specs, in the order they are tried (the sources of :data:`DATASET_SOURCES`; an installed package adds one in the
entry-point group ``whisperbench.datasets``):

- ``hf:NAME[:CONFIG]:SPLIT`` — a Hugging Face dataset (hub id or local folder).
- a ``.jsonl``/``.csv``/``.tsv`` manifest file — ``audio`` paths relative to the manifest.
- a folder with ``manifest.jsonl``/``manifest.csv``/``manifest.tsv`` — that manifest.
- a folder with ``metadata.jsonl``/``metadata.csv``/``metadata.tsv`` — the HF "audiofolder" convention
  (``file_name`` column, relative to the folder).
- a bundled dataset name (``whisperbench datasets`` lists them), e.g. ``tiny-shortform``.

Columns are found by their usual names (see ``datasets/columns.py``) unless a
:class:`~whisperbench.types.ColumnMap` maps them (``--audio-column`` …).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.registry import Registry
from ..errors import DatasetError
from ..types import ColumnMap, Form
from .huggingface import hf_records, read_hf
from .manifest import read_manifest
from .records import (
    Checked,
    Invalid,
    RawRecord,
    build_dataset,
    content_hash,
    infer_form,
    record_id,
)

__all__ = [
    "load_dataset",
    "column_values",
    "from_hf_dataset",
    "bundled_datasets",
    "Checked",
    "Invalid",
    "content_hash",
    "infer_form",
]

MANIFEST_NAMES = ("manifest.jsonl", "manifest.csv", "manifest.tsv")
AUDIOFOLDER_NAMES = ("metadata.jsonl", "metadata.csv", "metadata.tsv")


def _bundled_roots() -> list[Path]:
    here = Path(__file__).resolve().parent.parent
    return [here / "_bundled", here.parent.parent / "datasets", Path.cwd() / "datasets"]


def bundled_datasets() -> dict[str, Path]:
    """Bundled dataset names -> manifest path (``<set>-<subset>``, e.g. ``tiny-shortform``)."""
    found: dict[str, Path] = {}
    for root in _bundled_roots():
        if not root.is_dir():
            continue
        for manifest in sorted(root.glob("*/*/manifest.jsonl")):
            found.setdefault(f"{manifest.parent.parent.name}-{manifest.parent.name}", manifest)
    return found


def _default_name(path: str) -> str:
    p = Path(path).resolve()
    if p.is_file():
        if p.stem in ("manifest", "metadata"):
            return f"{p.parent.parent.name}-{p.parent.name}"
        return p.stem
    return f"{p.parent.name}-{p.name}"


def from_hf_dataset(
    table: Any,
    *,
    name: str = "datasets",
    form: Form | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
    columns: ColumnMap | dict[str, str] | None = None,
) -> Checked:
    """Validate a ``datasets.Dataset`` already in memory (an audio column and a transcript column, as for ``hf:``)."""
    columns = ColumnMap.of(columns)
    return build_dataset(
        hf_records(table, f"dataset {name}", columns),
        name=name,
        source=f"datasets.Dataset {name}",
        base_dir=None,
        form=form,
        limit=limit,
        skip_invalid=skip_invalid,
        columns=columns,
    )


def _manifest_path(spec: str) -> str:
    """The manifest file a (non-``hf:``) spec names: a file, a folder holding one, or a bundled name."""
    path = spec
    if not os.path.exists(path):
        bundled = bundled_datasets()
        if spec in bundled:
            path = str(bundled[spec])
        else:
            known = ", ".join(sorted(bundled)) or "none found"
            raise DatasetError(f"dataset {spec!r} not found: not a file, folder, hf: spec or bundled name ({known})")
    if os.path.isdir(path):
        candidates = [os.path.join(path, n) for n in MANIFEST_NAMES + AUDIOFOLDER_NAMES]
        existing = [c for c in candidates if os.path.exists(c)]
        if not existing:
            raise DatasetError(f"{path}: folder has none of {', '.join(MANIFEST_NAMES + AUDIOFOLDER_NAMES)}")
        return existing[0]
    return path


@dataclass(frozen=True)
class Opened:
    """A dataset spec opened: its raw records, the dataset's default name, where it was read from and the folder
    its audio paths are relative to (None: they are not paths)."""

    records: list[RawRecord]
    name: str
    source: str
    base_dir: str | None


@dataclass(frozen=True)
class DatasetSource:
    """Where a dataset spec's records come from: a name, a one-line description, whether it takes a spec
    (``claims``) and ``open(spec, columns) -> Opened``; sources are tried by ``rank`` (the manifest, which takes
    every other spec, last)."""

    name: str
    description: str
    claims: Callable[[str], bool]
    open: Callable[[str, ColumnMap], Opened]
    rank: int = 0


def _open_hf(spec: str, columns: ColumnMap) -> Opened:
    records, default = read_hf(spec, columns)
    return Opened(records, default, spec, None)


def _open_manifest(spec: str, columns: ColumnMap) -> Opened:
    manifest = os.path.abspath(_manifest_path(spec))
    return Opened(read_manifest(manifest), _default_name(manifest), manifest, os.path.dirname(manifest))


#: where datasets come from, tried in this order; installed packages add theirs in the entry-point group
#: whisperbench.datasets
DATASET_SOURCES: Registry[DatasetSource] = Registry(
    "dataset source",
    builtin=lambda: [
        DatasetSource("huggingface", "hf:NAME[:CONFIG]:SPLIT", lambda spec: spec.startswith("hf:"), _open_hf),
        DatasetSource("manifest", "a manifest, a folder, a bundled name", lambda spec: True, _open_manifest, rank=1),
    ],
    kind=DatasetSource,
    group="whisperbench.datasets",
    order=lambda source: source.rank,
    error=DatasetError,
)


def open_spec(spec: str, columns: ColumnMap) -> Opened:
    """``spec`` opened by the first source that takes it."""
    return next(source for source in DATASET_SOURCES.items() if source.claims(spec)).open(spec, columns)


def column_values(spec: str, column: str) -> dict[str, Any]:
    """Example id -> the value of one column (e.g. ``speaker``) of a dataset's rows, read without validating or
    hashing audio; rows without the column are left out. For resampling blocks (``--block-by``).

    >>> column_values("tiny-shortform", "speaker")["1998-15444-0000"]
    '1998'
    """
    records = open_spec(spec, ColumnMap()).records
    return {
        ex_id: record.fields[column]
        for record in records
        if (ex_id := record_id(record)) is not None and record.fields.get(column) not in (None, "")
    }


def load_dataset(
    spec: str,
    *,
    name: str | None = None,
    form: Form | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
    columns: ColumnMap | dict[str, str] | None = None,
) -> Checked:
    """Load and validate a dataset; raise DatasetError naming each bad example (see module doc), or once when its
    columns cannot give the audio and transcript (``columns`` maps them)."""
    columns = ColumnMap.of(columns)
    opened = open_spec(spec, columns)
    return build_dataset(
        opened.records,
        name=name or opened.name,
        source=opened.source,
        base_dir=opened.base_dir,
        form=form,
        limit=limit,
        skip_invalid=skip_invalid,
        columns=columns,
    )
