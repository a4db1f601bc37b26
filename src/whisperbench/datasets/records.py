"""Turn raw manifest records into validated examples: one place for field aliases and checks."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.languages import LanguageError, language_code
from ..errors import AudioError, DatasetError
from ..types import WHISPER_WINDOW_S, ColumnMap, Dataset, Example, Form, storable_text, times_problem
from .audio_facts import AudioFacts, audio_facts, audio_facts_of
from .columns import (
    AUDIO_KEYS,
    ID_KEYS,
    LANGUAGE_KEYS,
    TEXT_KEYS,
    RowKeys,
    check_columns,
    columns_found,
    keys_for,
    row_keys,
)
from .keywords import terms_of
from .timing import attach_timing

__all__ = [
    "AUDIO_KEYS",
    "ID_KEYS",
    "LANGUAGE_KEYS",
    "TEXT_KEYS",
    "RawRecord",
    "Invalid",
    "Checked",
    "build_dataset",
    "record_to_example",
    "content_hash",
    "infer_form",
    "is_nonspeech",
]


@dataclass
class RawRecord:
    """One manifest row as read, with where it came from (for error messages)."""

    fields: dict[str, Any]
    origin: str  # e.g. "manifest.jsonl line 3"


@dataclass
class Invalid:
    """An example that failed validation: kept (with its transcript) and counted as a failed example."""

    id: str
    reason: str
    text: str = ""


@dataclass
class Checked:
    """A dataset whose examples passed validation, plus those that did not."""

    dataset: Dataset
    invalid: list[Invalid] = field(default_factory=list)


def _first(fields: dict[str, Any], keys: Iterable[str]) -> tuple[str | None, Any]:
    for key in keys:
        if key in fields and fields[key] not in (None, ""):
            return key, fields[key]
    return None, None


def record_id(record: RawRecord, columns: ColumnMap = ColumnMap()) -> str | None:
    """The example id a row gets (its id column, else its audio file's name), None when it has neither."""
    _, ex_id = _first(record.fields, keys_for("id", columns))
    if ex_id is not None:
        return str(ex_id)
    _, audio = _first(record.fields, keys_for("audio", columns))
    return os.path.splitext(os.path.basename(audio))[0] if isinstance(audio, str) else None


def record_to_example(record: RawRecord, base_dir: str | None, columns: ColumnMap = ColumnMap()) -> Example:
    """Map aliased (or ``columns``' mapped) columns onto an Example; raises DatasetError naming the row when a
    field is missing."""
    return _to_example(record, base_dir, row_keys(columns))


def _transcript(text: Any) -> str:
    """A row's transcript as an example holds it ("" for none)."""
    return "" if text is None else storable_text(str(text))


def _to_example(record: RawRecord, base_dir: str | None, keys: RowKeys) -> Example:
    """:func:`record_to_example` with each role's columns looked up once per dataset (``keys``), not per row."""
    fields = record.fields
    audio_key, audio = _first(fields, keys.audio)
    if audio is None:
        raise DatasetError(f"{record.origin}: no audio field (one of {', '.join(keys.audio)})")
    if isinstance(audio, dict):  # Hugging Face Audio(decode=False): {"bytes": ..., "path": ...}
        audio = audio.get("bytes") or audio.get("path")
    if isinstance(audio, str) and base_dir and not os.path.isabs(audio):
        audio = os.path.normpath(os.path.join(base_dir, audio))
    id_key, ex_id = _first(fields, keys.id)
    if ex_id is None:
        if not isinstance(audio, str):
            raise DatasetError(f"{record.origin}: no id field (one of {', '.join(keys.id)})")
        ex_id = os.path.splitext(os.path.basename(audio))[0]
    if storable_text(str(ex_id)) != str(ex_id):
        raise DatasetError(f"{record.origin}: id {ascii(ex_id)} holds a lone surrogate, which no file can store")
    text_key, text = _first(fields, keys.text)
    if text_key is None and not any(k in fields for k in keys.text):
        raise DatasetError(f"{record.origin} (id {ex_id}): no transcript field (one of {', '.join(keys.text)})")
    duration = fields.get("duration_s", fields.get("duration"))
    language_key, label = _first(fields, keys.language)
    try:
        language = language_code(label) if label is not None else None
    except LanguageError as exc:
        raise DatasetError(f"{record.origin} (id {ex_id}): {exc}") from None
    keywords_key, keywords = _first(fields, keys.keywords)
    used = {audio_key, id_key, text_key, language_key, keywords_key, "duration_s", "duration"}
    extra = {k: v for k, v in fields.items() if k not in used and k not in keys.text}
    if keywords is not None:  # the words that matter, checked: one list of terms (datasets/keywords.py)
        extra["keywords"] = terms_of(keywords, f"{record.origin} (id {ex_id})")
    attach_timing(extra, base_dir, record.origin, str(ex_id))  # ground-truth segments / words, checked
    return Example(
        id=str(ex_id),
        audio=audio,
        text=_transcript(text),
        duration_s=float(duration) if duration not in (None, "") else None,
        language=language,
        extra=extra | ({"language_as_written": label} if label is not None and str(label) != language else {}),
    )


NONSPEECH_KEY = "nonspeech"  # a manifest column: true for non-speech audio, whose transcript is empty on purpose


def is_nonspeech(example: Example) -> bool:
    """Whether the row is marked as non-speech audio (``"nonspeech": true``, or 1/yes/true as text in a CSV)."""
    value = example.extra.get(NONSPEECH_KEY)
    return value is True or str(value).strip().lower() in ("1", "true", "yes")


class _FileFacts:
    """Each distinct audio path's facts looked up once while one dataset loads (a 100k-row QA set that points at
    a few files stats them a few times, not 300k); encoded bytes are not kept (each row's own)."""

    def __init__(self) -> None:
        self._known: dict[str, AudioFacts | AudioError | None] = {}

    def prefetch(self, sources: Iterable[str | bytes]) -> None:
        """Look up the facts of every distinct existing file among ``sources`` at once (those not cached yet
        computed on every core: :func:`audio_facts_of`)."""
        paths = [s for s in dict.fromkeys(sources) if isinstance(s, str) and s not in self._known]
        self._known.update(audio_facts_of(paths))  # a missing file is left out: looked up (and named) one by one

    def __call__(self, audio: str | bytes) -> AudioFacts | None:
        """The facts of ``audio``; None for a path that does not exist; an unreadable file: AudioError."""
        if not isinstance(audio, str):
            return audio_facts(audio)
        if audio not in self._known:
            try:
                self._known[audio] = audio_facts(audio) if os.path.exists(audio) else None
            except AudioError as exc:
                self._known[audio] = exc
        found = self._known[audio]
        if isinstance(found, AudioError):
            raise found
        return found


def _check_example(example: Example, origin: str, facts: Callable[[str | bytes], AudioFacts | None]) -> str | None:
    """Return why an example is invalid, or None. Fills duration_s from the audio header (``facts``: a
    :class:`_FileFacts` of this load)."""
    if not example.text.strip() and not is_nonspeech(example):
        return (
            f"{origin} (id {example.id}): empty transcript (for non-speech audio, whose right transcript is "
            f'empty, mark the row "nonspeech": true)'
        )
    try:
        found = facts(example.audio)  # once per distinct file (datasets/audio_facts.py)
    except AudioError as exc:
        return f"{origin} (id {example.id}): unreadable audio: {exc}"
    if found is None:
        return f"{origin} (id {example.id}): audio file not found: {example.audio_label}"
    info = found.info
    if info.duration_s <= 0:
        return f"{origin} (id {example.id}): audio {example.audio_label} has no samples"
    example.duration_s = info.duration_s
    for key in ("segments", "words"):  # ground-truth times past the audio's end cannot be right
        items = example.extra.get(key)
        problem = times_problem(items, info.duration_s, key[:-1]) if items else None
        if problem:
            return f"{origin} (id {example.id}): true {key}: {problem}"
    return None


AUDIO_DIGEST = "audio_sha256"  # per example, in ``Example.extra``: what a resume re-checks each stored result against


def content_hash(examples: list[Example], facts: Callable[[str | bytes], AudioFacts | None] = audio_facts) -> str:
    """sha256 over (id, text, audio bytes) of every example, independent of example order.

    Each example's audio digest is kept in ``extra["audio_sha256"]`` (always computed here, never taken
    from the manifest; ``facts``: where the audio's facts come from, a :class:`_FileFacts` while a dataset
    loads)."""
    for ex in examples:
        found = facts(ex.audio)
        if found is None:
            raise DatasetError(f"example {ex.id}: audio file not found: {ex.audio!r}")
        ex.extra[AUDIO_DIGEST] = found.sha256
    lines = sorted(f"{ex.id}\t{ex.text}\t{ex.extra[AUDIO_DIGEST]}" for ex in examples)
    return "sha256:" + hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def infer_form(examples: list[Example]) -> Form:
    """Long-form when any example is longer than one 30 s Whisper window."""
    return "long" if any((ex.duration_s or 0.0) > WHISPER_WINDOW_S for ex in examples) else "short"


def build_dataset(
    records: list[RawRecord],
    *,
    name: str,
    source: str,
    base_dir: str | None,
    form: Form | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
    columns: ColumnMap = ColumnMap(),
) -> Checked:
    """Validate every record before any inference; raise one DatasetError listing all problems.

    With ``skip_invalid`` the bad examples are returned in ``Checked.invalid`` instead, so the runner
    records them as failed. Every occurrence of a duplicated id is invalid: none can be trusted. Columns that
    cannot give the audio and transcript are one error, whatever ``skip_invalid``.
    """
    # every row: an id column is suggested only when its values are unique in all of them
    check_columns(columns_found(r.fields for r in records), [r.fields for r in records], columns, source)
    if limit is not None:
        records = records[:limit]
    problems: list[str] = []
    invalid: list[Invalid] = []
    examples: list[Example] = []
    origins: list[str] = []  # each example's row (two lists, not a pair each: 100k rows stay 100k objects fewer)
    facts, keys = _FileFacts(), row_keys(columns)
    for record in records:
        try:
            examples.append(_to_example(record, base_dir, keys))
            origins.append(record.origin)
        except DatasetError as exc:
            problems.append(str(exc))
            _, row_id = _first(record.fields, keys_for("id", columns))
            _, text = _first(record.fields, keys_for("text", columns))
            invalid.append(
                Invalid(id=storable_text(str(row_id or record.origin)), reason=str(exc), text=str(text or ""))
            )
    counts = Counter(ex.id for ex in examples)
    rows_of: dict[str, list[str]] = {}  # the rows of each duplicated id
    for ex, origin in zip(examples, origins):
        if counts[ex.id] > 1:
            rows_of.setdefault(ex.id, []).append(origin)
    valid: list[Example] = []
    duplicates_reported: set[str] = set()
    facts.prefetch(ex.audio for ex in examples)  # a fresh machine's many files: on every core at once
    for example, origin in zip(examples, origins):
        if counts[example.id] > 1:
            if example.id not in duplicates_reported:
                duplicates_reported.add(example.id)
                reason = (
                    f"{source}: duplicate id {example.id!r} ({counts[example.id]} rows: "
                    f"{', '.join(rows_of[example.id])})"
                )
                problems.append(reason)
                invalid.append(Invalid(example.id, reason, example.text))
            continue
        problem = _check_example(example, origin, facts)
        if problem:
            problems.append(problem)
            invalid.append(Invalid(example.id, problem, example.text))
        else:
            valid.append(example)
    if problems and not skip_invalid:
        raise DatasetError(
            f"dataset {name} ({source}): {len(problems)} invalid example(s); fix them or pass --skip-invalid",
            problems,
        )
    if not valid and not invalid:
        raise DatasetError(f"dataset {name} ({source}) has no examples")
    explicit = {str(ex.extra.get("form")) for ex in valid if ex.extra.get("form")}
    if form is None and len(explicit) == 1:
        form = explicit.pop()  # type: ignore[assignment]
    if form not in (None, "short", "long"):
        raise DatasetError(f"dataset {name}: form must be 'short' or 'long', not {form!r}")
    dataset = Dataset(
        name=name,
        form=form or infer_form(valid),
        examples=valid,
        content_hash=content_hash(valid, facts) if valid else "sha256:empty",
        source=source,
    )
    return Checked(dataset=dataset, invalid=invalid)
