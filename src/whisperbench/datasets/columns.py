"""Which column holds the audio, the transcript, the id and the language of an example.

Each role is found by its usual names (``audio``, ``path``, ``sentence``…) unless a
:class:`~whisperbench.types.ColumnMap` names its column. When a file's columns do not fit, :func:`check_columns`
raises one error (not one per row) naming the file, the columns it has and the options that would map them,
with a guess for each missing role from the column names and values.

>>> rows = [{"wav": "a/1.flac", "words": "hello there world", "spk": "x"}]
>>> try:
...     check_columns(["wav", "words", "spk"], rows, ColumnMap(), "qa.tsv")
... except DatasetError as exc:
...     print(str(exc).splitlines()[2])
  map them: --audio-column wav --text-column words  (Python: columns={'audio': 'wav', 'text': 'words'})
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple

from ..errors import DatasetError
from ..types import COLUMN_ROLES, ColumnMap

ID_KEYS = ("id", "utt_id", "key", "segment_id")
AUDIO_KEYS = ("audio", "audio_filepath", "file_name", "path", "audio_path", "file")
TEXT_KEYS = ("text", "transcription", "transcript", "sentence", "normalized_text")
#: a language column (ISO 639 code in any form, BCP 47 tag or English name; see whisperbench.core.languages)
LANGUAGE_KEYS = ("language", "lang", "locale", "language_code")
#: the example's words that matter (a list, or one string split on ``;`` or ``|``; docs/keywords.md)
KEYWORDS_KEYS = ("keywords",)

USUAL_NAMES = {
    "audio": AUDIO_KEYS,
    "text": TEXT_KEYS,
    "id": ID_KEYS,
    "language": LANGUAGE_KEYS,
    "keywords": KEYWORDS_KEYS,
}
REQUIRED = ("audio", "text")
ROLE_WORDS = {"audio": "audio", "text": "transcript", "id": "id", "language": "language", "keywords": "keywords"}

#: parts of a column name that suggest its role, for the guess in the error message
_NAME_HINTS = {
    "audio": ("audio", "wav", "flac", "mp3", "file", "path", "clip", "recording", "speech", "utterance_path"),
    "text": ("text", "sentence", "transcri", "label", "utterance", "words", "caption", "norm", "reference", "content"),
    "id": ("id", "utt", "key", "uid", "name"),
    "language": ("lang", "lng", "locale"),
    "keywords": ("keyword", "terms", "entities", "vocab"),
}
_AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a", ".webm", ".aac", ".aiff", ".sph")


@lru_cache(maxsize=256)
def keys_for(role: str, columns: ColumnMap) -> tuple[str, ...]:
    """The columns read for ``role``: the mapped one alone, else its usual names in order."""
    mapped = getattr(columns, role)
    return (mapped,) if mapped else USUAL_NAMES[role]


class RowKeys(NamedTuple):
    """The columns read for each role (:func:`keys_for`), looked up once for a whole dataset."""

    audio: tuple[str, ...]
    text: tuple[str, ...]
    id: tuple[str, ...]
    language: tuple[str, ...]
    keywords: tuple[str, ...]


def row_keys(columns: ColumnMap) -> RowKeys:
    """:func:`keys_for` of every role.

    >>> row_keys(ColumnMap(text="words")).text, row_keys(ColumnMap()).id[:2]
    (('words',), ('id', 'utt_id'))
    """
    return RowKeys(*(keys_for(role, columns) for role in RowKeys._fields))


def option_of(role: str) -> str:
    """The command-line option that maps ``role`` (``audio`` -> ``--audio-column``)."""
    return f"--{role}-column"


def columns_found(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Every column name of ``rows``, in order of first appearance (JSON lines need not share their keys)."""
    found: dict[str, None] = {}
    for row in rows:
        found.update(dict.fromkeys(row))
    return list(found)


def check_columns(found: list[str], rows: list[dict[str, Any]], columns: ColumnMap, source: str) -> None:
    """Raise one DatasetError when ``found`` (a file's columns) cannot give the audio and the transcript, or lacks
    a mapped column; ``rows`` (a sample) feed the guesses. Nothing to check without rows."""
    if not found:
        return
    absent = [role for role in COLUMN_ROLES if getattr(columns, role) and getattr(columns, role) not in found]
    missing = [role for role in REQUIRED if role not in absent and not set(keys_for(role, columns)) & set(found)]
    if not absent and not missing:
        return
    problems = [f"{option_of(r)} {getattr(columns, r)!r}: no such column" for r in absent]
    problems += [f"no {ROLE_WORDS[r]} column (one of {', '.join(USUAL_NAMES[r])})" for r in missing]
    unfound = [  # optional roles no column serves yet: suggested too when a column looks like one
        role
        for role in COLUMN_ROLES
        if role not in REQUIRED and role not in absent and not set(keys_for(role, columns)) & set(found)
    ]
    raise DatasetError(
        f"{source}: the columns do not fit: {'; '.join(problems)}\n"
        f"  columns found: {', '.join(found)}\n"
        f"  map them: {_suggestion(absent + missing, found, rows, columns, unfound)}"
    )


def _suggestion(
    roles: list[str], found: list[str], rows: list[dict[str, Any]], columns: ColumnMap, optional: Iterable[str] = ()
) -> str:
    """The options mapping ``roles`` (a guess each, else COLUMN), then those of the ``optional`` roles a column
    looks like (ids from a column rather than from file names; a language column for the per-language tables)."""
    taken = {c for role in COLUMN_ROLES if role not in roles for c in [getattr(columns, role)] if c}
    taken |= {
        c
        for role in COLUMN_ROLES
        if role not in roles and not getattr(columns, role)
        for c in USUAL_NAMES[role]
        if c in found
    }
    options, mapping, notes = [], {}, []
    for role in [*roles, *optional]:
        guess = guess_column(role, [c for c in found if c not in taken], rows)
        if guess:
            taken.add(guess)
            mapping[role] = guess
        if guess or role in roles:
            options.append(f"{option_of(role)} {_quoted(guess) if guess else 'COLUMN'}")
        elif role == "id":
            notes += _no_id_note([c for c in found if c not in taken], rows)
    python = f"  (Python: columns={mapping!r})" if mapping else ""
    return " ".join(options) + python + "".join(notes)


def _quoted(column: str) -> str:
    return column if re.fullmatch(r"[\w.+-]+", column) else repr(column)


def guess_column(role: str, candidates: list[str], rows: list[dict[str, Any]]) -> str | None:
    """The column of ``candidates`` most likely to hold ``role``: audio by its values (file names with an audio
    suffix) or name, text by its name or by holding the most words, language by name, id by name among the columns
    whose value is present and unique in every one of ``rows`` (a speaker's or client's id repeats: as ids they
    would be refused as duplicates); None when nothing looks like it.

    >>> rows = [{"speaker_id": "1688", "utt_key": "a"}, {"speaker_id": "1688", "utt_key": "b"}]
    >>> guess_column("id", ["speaker_id", "utt_key"], rows), guess_column("id", ["speaker_id"], rows)
    ('utt_key', None)
    """
    if role == "id":
        candidates = [c for c in candidates if _unique(rows, c)]
    values = {c: [str(row.get(c)) for row in rows[:50] if row.get(c) not in (None, "")] for c in candidates}
    if role == "audio":
        by_value = [c for c in candidates if values[c] and all(_looks_like_audio(v) for v in values[c])]
        if by_value:
            return by_value[0]
    named = [
        c
        for c in candidates
        if any(hint in c.lower() for hint in _NAME_HINTS[role])
        and (role == "id" or not re.search(r"(^|_)id$", c.lower()))
    ]
    if named:
        return named[0]
    if role == "text":
        words = {c: sum(len(v.split()) for v in vs) / len(vs) for c, vs in values.items() if vs}
        wordy = [c for c, n in words.items() if n >= 2 and not all(_looks_like_audio(v) for v in values[c])]
        return max(wordy, key=lambda c: words[c]) if wordy else None
    return None


def _no_id_note(candidates: list[str], rows: list[dict[str, Any]]) -> list[str]:
    """Why no column named like an id is suggested as one (its values repeat), and where the ids come from then."""
    named = [c for c in candidates if any(hint in c.lower() for hint in _NAME_HINTS["id"])]
    if not named:
        return []
    return [
        f"  (no column has a unique value per row to be --id-column — {', '.join(named)} "
        f"{'repeats' if len(named) == 1 else 'repeat'} — so the ids come from the audio file names)"
    ]


def _unique(rows: list[dict[str, Any]], column: str) -> bool:
    """Whether every row has a value in ``column`` and no two rows the same."""
    values = [row.get(column) for row in rows]
    return bool(values) and None not in values and "" not in values and len(set(map(str, values))) == len(values)


def _looks_like_audio(value: str) -> bool:
    return os.path.splitext(value.strip().lower())[1] in _AUDIO_SUFFIXES
