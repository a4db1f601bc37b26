"""Hugging Face ``datasets``: ``hf:NAME[:CONFIG]:SPLIT`` with NAME a hub id or a local folder.

Audio columns are read undecoded (``Audio(decode=False)``) and decoded by whisperbench itself, so
every loader yields the same samples and no torchcodec/ffmpeg is needed for FLAC/WAV.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import DatasetError
from ..types import ColumnMap
from .columns import check_columns, keys_for
from .records import RawRecord


def parse_spec(spec: str) -> tuple[str, str | None, str]:
    """``hf:NAME:SPLIT`` or ``hf:NAME:CONFIG:SPLIT`` -> (name, config, split)."""
    body = spec[len("hf:") :]
    parts = body.split(":")
    if len(parts) == 2:
        return parts[0], None, parts[1]
    if len(parts) == 3:
        return parts[0], parts[1] or None, parts[2]
    raise DatasetError(f"bad Hugging Face dataset spec {spec!r}: use hf:NAME[:CONFIG]:SPLIT")


def _load(name: str, config: str | None, split: str):
    import datasets as hf

    if os.path.isdir(name) and (
        os.path.exists(os.path.join(name, "dataset_dict.json")) or os.path.exists(os.path.join(name, "state.json"))
    ):
        loaded = hf.load_from_disk(name)  # a folder written by save_to_disk
        if isinstance(loaded, hf.DatasetDict):
            if split not in loaded:
                raise DatasetError(f"{name}: no split {split!r} (has {', '.join(loaded)})")
            return loaded[split]
        return loaded
    try:
        return hf.load_dataset(name, config, split=split)
    except Exception as exc:  # network, missing config/split, bad files: say which dataset
        raise DatasetError(
            f"cannot load Hugging Face dataset {name!r} (config {config}, split {split}): {exc}"
        ) from exc


def read_hf(spec: str, columns: ColumnMap = ColumnMap()) -> tuple[list[RawRecord], str]:
    """Rows of the dataset as raw records, and a default dataset name."""
    try:
        # only whether it is installed
        import datasets as hf  # noqa: F401
    except ImportError as exc:  # pragma: no cover - datasets is a core dependency
        raise DatasetError("Hugging Face datasets are not installed: pip install datasets") from exc
    name, config, split = parse_spec(spec)
    records = hf_records(_load(name, config, split), spec, columns)
    label = os.path.basename(os.path.normpath(name)) if os.path.isdir(name) else name.replace("/", "_")
    return records, "-".join(p for p in (label, config, split) if p)


def hf_records(table: Any, origin: str, columns: ColumnMap = ColumnMap()) -> list[RawRecord]:
    """Rows of a loaded ``datasets.Dataset`` as raw records (``origin`` names it in errors; ``columns`` maps its
    columns; when they do not fit, one error names them)."""
    import datasets as hf

    for name, feature in table.features.items():  # every audio column undecoded (the guess reads a few rows)
        if isinstance(feature, hf.Audio):
            table = table.cast_column(name, hf.Audio(decode=False))
    sample = [dict(row) for row in table.select(range(min(len(table), 20)))]
    check_columns(list(table.column_names), sample, columns, origin)
    audio_cols = [c for c in keys_for("audio", columns) if c in table.column_names]
    records = []
    for index, row in enumerate(table):
        fields = dict(row)
        if not any(key in fields for key in keys_for("id", columns)):
            fields[columns.id or "id"] = _row_id(fields.get(audio_cols[0]), index)
        records.append(RawRecord(fields, f"{origin} row {index}"))
    return records


def _row_id(audio, index: int) -> str:
    path = audio.get("path") if isinstance(audio, dict) else audio if isinstance(audio, str) else None
    return os.path.splitext(os.path.basename(path))[0] if path else f"row-{index}"
