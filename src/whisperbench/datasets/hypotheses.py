"""A hypotheses file: outputs made elsewhere (a phone, another harness), one JSON line per example with ``id`` and
``hypothesis`` (or ``text``), optionally the ``language`` the implementation detected. What the ``recorded``
adapter scores (:mod:`whisperbench.adapters.recorded`, which also reads its timing, costs and streams), read here
without the adapters: ``whisperbench score`` checks the file before it runs the adapter.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from ..core.json_files import json_lines_parser
from ..core.languages import LanguageError, language_code
from ..errors import WhisperbenchError


def read_rows(path: str) -> Mapping[str, tuple[str, str | None]]:
    """``id -> (hypothesis, detected language or None)``; duplicate ids or bad lines are errors naming the line.
    Read once per process while the file is unchanged (``score`` checks it, warns about its ids and loads it)."""
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise WhisperbenchError(f"cannot read hypotheses file {path}: {exc}") from exc
    return _read_rows(os.path.abspath(path), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=4)
def _read_rows(path: str, size: int, mtime_ns: int) -> Mapping[str, tuple[str, str | None]]:
    table: dict[str, tuple[str, str | None]] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise WhisperbenchError(f"cannot read hypotheses file {path}: {exc}") from exc
    parse = json_lines_parser(text)
    for number, line in enumerate(text.split("\n"), start=1):  # the file's lines (newlines read as "\n")
        if not line.strip():
            continue
        try:
            row = parse(line)
            if isinstance(row, dict) and "device" in row and "id" not in row:
                continue  # the header row (the recorded adapter's read_device)
            ex_id = str(row["id"])
            text = row["hypothesis"] if "hypothesis" in row else row["text"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise WhisperbenchError(f"{path} line {number}: need a JSON object with id and hypothesis ({exc})") from exc
        if ex_id in table:
            raise WhisperbenchError(f"{path} line {number}: duplicate id {ex_id!r}")
        table[ex_id] = ("" if text is None else str(text), _language(row.get("language"), path, number))
    return MappingProxyType(table)  # shared by every caller: read-only


def _language(label: Any, path: str, number: int) -> str | None:
    """A line's detected language as a code (None: not given); a label no code is found for is an error naming the
    line."""
    if label in (None, ""):
        return None
    try:
        return language_code(label)
    except LanguageError as exc:
        raise WhisperbenchError(f"{path} line {number}: {exc}") from None
