"""Read JSONL, CSV and TSV manifests: one row per example, ``audio`` relative to the manifest's folder."""

from __future__ import annotations

import csv
import io
import json

from ..core.json_files import json_lines_parser
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
    """One JSON object per line; blank lines are skipped. Lines end at ``\n`` only: a transcript may hold U+2028 or
    another character ``str.splitlines`` would cut at (JSON writers leave them unescaped)."""
    with open(path, "rb") as fh:
        text = _decode(path, fh.read())
    records = []
    parse = json_lines_parser(text)
    for number, line in enumerate(text.split("\n"), start=1):  # a "\r" left at a line's end is JSON white space
        if not line.strip():
            continue
        try:
            fields = parse(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path} line {number}: invalid JSON: {exc.msg}") from exc
        if not isinstance(fields, dict):
            raise DatasetError(f"{path} line {number}: expected a JSON object, got {type(fields).__name__}")
        records.append(RawRecord(fields, f"{path} line {number}"))
    return records


def read_tsv(path: str) -> list[RawRecord]:
    """A tab-separated file with a header row (Common Voice's ``*.tsv``, Kaldi-style lists): one row per line,
    quotes kept as written (a transcript may hold ``"``), no tab inside a field."""
    with open(path, "rb") as fh:
        text = _decode(path, fh.read())
    lines = [line.removesuffix("\r") for line in text.split("\n")]  # not splitlines: U+2028 may be in a transcript
    header = lines[0].split("\t")
    if not any(name.strip() for name in header):
        raise DatasetError(f"{path}: empty TSV (no header row)")
    if len(header) == 1 and "," in header[0]:
        raise DatasetError(f"{path}: the header {header[0][:80]!r} has no tab but commas: a CSV? name it .csv")
    records = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        values = line.split("\t")
        if len(values) > len(header):
            raise DatasetError(
                f"{path} line {number}: {len(values)} tab-separated fields, the header has "
                f"{len(header)} ({', '.join(header)})"
            )
        records.append(
            RawRecord(dict(zip(header, values + [""] * (len(header) - len(values)))), f"{path} line {number}")
        )
    return records


def read_csv(path: str) -> list[RawRecord]:
    """A CSV with a header row; quoted fields may hold commas and newlines (RFC 4180).

    Read strictly: a quote left open (which would swallow the following rows into one transcript) is an
    error naming the line where its row starts, as is a field that holds lines shaped like whole rows.
    """
    with open(path, "rb") as fh:
        text = _decode(path, fh.read())
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    if not reader.fieldnames:
        raise DatasetError(f"{path}: empty CSV (no header row)")
    separator = next(
        (sep for sep in ("\t", ";", "|") if len(reader.fieldnames) == 1 and sep in reader.fieldnames[0]), None
    )
    if separator:
        raise DatasetError(
            f"{path}: the header {reader.fieldnames[0][:80]!r} has no comma but {separator!r}: "
            + ("a TSV? name it .tsv" if separator == "\t" else "save it with commas between fields")
        )
    records, start = [], reader.line_num + 1
    try:
        for row in reader:
            if None in row:
                raise DatasetError(f"{path} line {reader.line_num}: more fields than header columns")
            _check_no_embedded_rows(path, row, len(reader.fieldnames), start)
            records.append(RawRecord(dict(row), f"{path} row ending line {reader.line_num}"))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise DatasetError(f"{path}: the row starting at line {start}: {exc} (a quote left open?)") from exc
    return records


def _check_no_embedded_rows(path: str, row: dict, columns: int, start: int) -> None:
    for name, value in row.items():
        for offset, line in enumerate((value or "").splitlines()[1:], start=1):
            if columns > 1 and len(next(csv.reader([line]))) == columns:
                raise DatasetError(
                    f"{path}: the row starting at line {start} has, in its {name!r} field, a line shaped like a "
                    f"whole row ({line[:60]!r}, line {start + offset}): a quote left open swallowed the rows after "
                    "it; close the quote"
                )


def read_manifest(path: str) -> list[RawRecord]:
    """Read a manifest by its extension (.jsonl/.json lines or .csv/.tsv)."""
    lower = path.lower()
    if lower.endswith((".jsonl", ".ndjson", ".json")):
        return read_jsonl(path)
    if lower.endswith(".csv"):
        return read_csv(path)
    if lower.endswith(".tsv"):
        return read_tsv(path)
    raise DatasetError(f"{path}: unknown manifest type (expected .jsonl, .csv or .tsv)")
