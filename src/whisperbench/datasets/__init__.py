"""Dataset loading: a spec string -> validated :class:`~whisperbench.types.Dataset`.

Specs, in the order they are tried:

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
from pathlib import Path
from typing import Any, Optional

from ..errors import DatasetError
from ..types import ColumnMap, Form
from .huggingface import hf_records, read_hf
from .manifest import read_manifest
from .records import (
    Checked,
    Invalid,
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
    form: Optional[Form] = None,
    limit: Optional[int] = None,
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


def column_values(spec: str, column: str) -> dict[str, Any]:
    """Example id -> the value of one column (e.g. ``speaker``) of a dataset's rows, read without validating or
    hashing audio; rows without the column are left out. For resampling blocks (``--block-by``).

    >>> column_values("tiny-shortform", "speaker")["1998-15444-0000"]
    '1998'
    """
    records = read_hf(spec)[0] if spec.startswith("hf:") else read_manifest(_manifest_path(spec))
    return {
        ex_id: record.fields[column]
        for record in records
        if (ex_id := record_id(record)) is not None and record.fields.get(column) not in (None, "")
    }


def load_dataset(
    spec: str,
    *,
    name: Optional[str] = None,
    form: Optional[Form] = None,
    limit: Optional[int] = None,
    skip_invalid: bool = False,
    columns: ColumnMap | dict[str, str] | None = None,
) -> Checked:
    """Load and validate a dataset; raise DatasetError naming each bad example (see module doc), or once when its
    columns cannot give the audio and transcript (``columns`` maps them)."""
    columns = ColumnMap.of(columns)
    if spec.startswith("hf:"):
        records, default = read_hf(spec, columns)
        return build_dataset(
            records,
            name=name or default,
            source=spec,
            base_dir=None,
            form=form,
            limit=limit,
            skip_invalid=skip_invalid,
            columns=columns,
        )
    manifest = _manifest_path(spec)
    return build_dataset(
        read_manifest(manifest),
        name=name or _default_name(manifest),
        source=os.path.abspath(manifest),
        base_dir=os.path.dirname(os.path.abspath(manifest)),
        form=form,
        limit=limit,
        skip_invalid=skip_invalid,
        columns=columns,
    )
