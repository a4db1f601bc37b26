"""Read JSONL and CSV manifests: one row per example, ``audio`` relative to the manifest's folder."""

from __future__ import annotations

import csv
import io
import json

from ..errors import DatasetError
from .records import RawRecord


def _decode(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DatasetError(
            f"{path}: not valid UTF-8 at line {line} (byte {exc.start}); re-save the manifest as UTF-8"
        ) from exc


def read_jsonl(path: str) -> list[RawRecord]:
    """One JSON object per line; blank lines are skipped."""
    with open(path, "rb") as fh:
        text = _decode(path, fh.read())
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            fields = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path} line {number}: invalid JSON: {exc.msg}") from exc
        if not isinstance(fields, dict):
            raise DatasetError(f"{path} line {number}: expected a JSON object, got {type(fields).__name__}")
        records.append(RawRecord(fields, f"{path} line {number}"))
    return records


def read_csv(path: str) -> list[RawRecord]:
    """A CSV with a header row; quoted fields may hold commas and newlines (RFC 4180)."""
    with open(path, "rb") as fh:
        text = _decode(path, fh.read())
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames:
        raise DatasetError(f"{path}: empty CSV (no header row)")
    records = []
    try:
        for row in reader:
            if None in row:
                raise DatasetError(f"{path} line {reader.line_num}: more fields than header columns")
            records.append(RawRecord(dict(row), f"{path} row ending line {reader.line_num}"))
    except csv.Error as exc:
        raise DatasetError(f"{path} line {reader.line_num}: {exc}") from exc
    return records


def read_manifest(path: str) -> list[RawRecord]:
    """Read a manifest by its extension (.jsonl/.json lines or .csv/.tsv)."""
    lower = path.lower()
    if lower.endswith((".jsonl", ".ndjson", ".json")):
        return read_jsonl(path)
    if lower.endswith(".csv"):
        return read_csv(path)
    raise DatasetError(f"{path}: unknown manifest type (expected .jsonl or .csv)")
