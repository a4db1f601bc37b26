"""Ground-truth timing of an example: ``segments`` / ``words`` in its manifest row, or a timing file it names.

A manifest row may carry ``segments`` (``[{start, end, text?}]``, seconds) and ``words``
(``[{word, start, end}]``), or ``timing``: a file (relative to the manifest) in one of the formats people have:

- **CTM** (``.ctm``, NIST): ``utterance channel start duration word [confidence]`` per line; the lines whose
  utterance is the example's id (all lines when the file holds one utterance) become its ``words``;
- **TextGrid** (``.TextGrid``, Praat, long or short text format): an interval tier named ``words``/``word``
  becomes ``words``, one named ``utterances``/``segments``/``sentences``/``phrases`` ``segments``
  (empty intervals are silence and left out);
- **SRT** / **WebVTT** (``.srt``, ``.vtt``): cues become ``segments`` (a reference subtitle file).

Every time is checked (numbers, ``0 <= start <= end``); a problem is one :class:`DatasetError` naming the row.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

from ..errors import DatasetError

SEGMENT_TIERS = ("utterances", "utterance", "segments", "segment", "sentences", "sentence", "phrases", "phrase")
WORD_TIERS = ("words", "word")
_TIMING_KEYS = ("timing", "segments", "words")


def attach_timing(extra: dict[str, Any], base_dir: str | None, origin: str, example_id: str) -> None:
    """Check the row's ``segments`` / ``words`` and read its ``timing`` file into them (in place)."""
    if extra.keys().isdisjoint(_TIMING_KEYS):  # most rows: nothing to check
        return
    where = f"{origin} (id {example_id})"
    file = extra.pop("timing", None)
    if file:
        path = file if os.path.isabs(file) or not base_dir else os.path.join(base_dir, file)
        try:
            read = read_timing_file(path, example_id)
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{where}: timing file {path}: {exc}") from None
        for key, items in read.items():
            extra.setdefault(key, items)
    for key, label in (("segments", "text"), ("words", "word")):
        value = extra.get(key)
        if key == "segments" and value not in (None, "", []) and not _looks_timed(value):
            raise DatasetError(
                f"{where}: segments: expected a list of {{start, end, text}} records in seconds (the "
                f"true utterance times), got {type(value).__name__} {str(value)[:40]!r}"
            )
        if _looks_timed(value):
            try:
                extra[key] = checked(extra[key], label)
            except ValueError as exc:
                raise DatasetError(f"{where}: {key}: {exc}") from None


def _looks_timed(items: Any) -> bool:
    """Whether a column holds timed records (a ``words`` column of plain strings is someone else's data)."""
    return isinstance(items, list) and any(
        isinstance(item, dict) and ("start" in item or "end" in item) for item in items
    )


def checked(items: Any, label: str) -> list[dict[str, Any]]:
    """Timed records with float ``start <= end`` (>= 0), in order of start; a ValueError says which is wrong.

    >>> checked([{"start": "0.5", "end": 1, "word": "hi"}], "word")
    [{'start': 0.5, 'end': 1.0, 'word': 'hi'}]
    """
    if not isinstance(items, list):
        raise ValueError(f"expected a list of {{start, end, {label}}} records, got {type(items).__name__}")
    out = []
    for index, item in enumerate(items):
        try:
            start, end = float(item["start"]), float(item["end"])
        except (TypeError, KeyError, ValueError):
            raise ValueError(f"item {index} ({item!r}) has no numeric start and end (seconds)") from None
        if not (math.isfinite(start) and math.isfinite(end) and 0 <= start <= end):
            raise ValueError(f"item {index}: need 0 <= start <= end, got start {start}, end {end}")
        out.append(dict(item, start=start, end=end))
    return sorted(out, key=lambda item: item["start"])


def read_timing_file(path: str, example_id: str) -> dict[str, list[dict[str, Any]]]:
    """``{"words": ...}`` and/or ``{"segments": ...}`` from a CTM, TextGrid, SRT or VTT file."""
    with open(path, encoding="utf-8-sig") as fh:
        text = fh.read()
    lower = path.lower()
    if lower.endswith(".ctm"):
        return {"words": read_ctm(text, example_id)}
    if lower.endswith(".textgrid"):
        return read_textgrid(text)
    if lower.endswith((".srt", ".vtt")):
        return {"segments": read_subtitles(text)}
    raise ValueError("unknown timing file type (expected .ctm, .TextGrid, .srt or .vtt)")


def read_ctm(text: str, example_id: str) -> list[dict[str, Any]]:
    """The words of ``example_id`` in a CTM text (all words when it names a single utterance).

    >>> read_ctm("u1 1 0.50 0.30 hello 0.9\\nu1 1 0.80 0.25 world\\n", "u1")
    [{'word': 'hello', 'start': 0.5, 'end': 0.8}, {'word': 'world', 'start': 0.8, 'end': 1.05}]
    """
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts or parts[0].startswith(";;"):
            continue
        if len(parts) < 5:
            raise ValueError(f"line {number}: expected 'utterance channel start duration word', got {line!r}")
        try:
            start, duration = float(parts[2]), float(parts[3])
        except ValueError:
            raise ValueError(f"line {number}: start and duration must be numbers, got {line!r}") from None
        rows.append((parts[0], {"word": parts[4], "start": round(start, 6), "end": round(start + duration, 6)}))
    utterances = {utterance for utterance, _ in rows}
    if example_id not in utterances and len(utterances) > 1:
        raise ValueError(f"no words of utterance {example_id!r} (it holds {', '.join(sorted(utterances)[:5])} …)")
    return [word for utterance, word in rows if utterance == example_id or len(utterances) == 1]


_FIELD = re.compile(r"^\s*(\w+)\s*=\s*(.*?)\s*$")


def read_textgrid(text: str) -> dict[str, list[dict[str, Any]]]:
    """The word and segment tiers of a Praat TextGrid (long or short text format)."""
    tiers = _textgrid_tiers(text)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, intervals in tiers.items():
        key = "words" if name.lower() in WORD_TIERS else "segments" if name.lower() in SEGMENT_TIERS else None
        if key and key not in out:
            label = "word" if key == "words" else "text"
            out[key] = [{label: mark, "start": start, "end": end} for start, end, mark in intervals if mark.strip()]
    if not out:
        raise ValueError(
            f"no tier named {WORD_TIERS[0]!r} or {SEGMENT_TIERS[0]!r} (tiers: {', '.join(tiers) or 'none'})"
        )
    return out


def _textgrid_tiers(text: str) -> dict[str, list[tuple[float, float, str]]]:
    """{tier name: [(xmin, xmax, text)]} of the interval tiers: the file's values in order (both formats list
    the same values; the long one names them), read as a stream of numbers and quoted strings."""
    values = [
        m.group(1).replace('""', '"') if m.group(1) is not None else m.group(2)
        for m in re.finditer(r'"((?:[^"]|"")*)"|(?<![\w.])(-?\d+(?:\.\d+)?(?:[eE]-?\d+)?)(?![\w.])', _strip_names(text))
    ]
    if len(values) < 4 or values[0] != "ooTextFile":
        raise ValueError("not a Praat TextGrid text file (no 'ooTextFile' header)")
    position = 5  # "ooTextFile", "TextGrid", xmin, xmax, tier count
    tiers: dict[str, list[tuple[float, float, str]]] = {}
    count = int(float(values[4]))
    for _ in range(count):
        kind, name, count_items = values[position], values[position + 1], int(float(values[position + 4]))
        position += 5
        width = 3 if kind == "IntervalTier" else 2
        items = [values[position + i * width : position + (i + 1) * width] for i in range(count_items)]
        position += count_items * width
        if kind == "IntervalTier":
            tiers[name] = [(float(a), float(b), str(mark)) for a, b, mark in items]
    return tiers


def _strip_names(text: str) -> str:
    """The long format's ``name = value`` lines reduced to their values, and ``item [n]:`` headers removed."""
    lines = []
    for line in text.splitlines():
        if re.match(r"^\s*(item|intervals|points)\s*\[\d*\]\s*:?\s*$", line) or line.strip() == "tiers? <exists>":
            continue
        match = _FIELD.match(line)
        lines.append(match.group(2) if match else line)
    return "\n".join(lines).replace("<exists>", "")


_CUE_TIME = re.compile(r"((?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3})\s*-->\s*((?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3})")


def read_subtitles(text: str) -> list[dict[str, Any]]:
    """SRT or WebVTT cues as segments ``{start, end, text}``.

    >>> read_subtitles("1\\n00:00:01,500 --> 00:00:03,000\\nHello there\\n")
    [{'start': 1.5, 'end': 3.0, 'text': 'Hello there'}]
    """
    segments: list[dict[str, Any]] = []
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):
        lines = block.strip().splitlines()
        for index, line in enumerate(lines):
            match = _CUE_TIME.search(line)
            if match:
                cue = " ".join(lines[index + 1 :]).strip()
                segments.append(
                    {
                        "start": _seconds(match.group(1)),
                        "end": _seconds(match.group(2)),
                        "text": re.sub(r"<[^>]+>", "", cue),
                    }
                )
                break
    return segments


def _seconds(stamp: str) -> float:
    parts = stamp.replace(",", ".").split(":")
    return round(sum(float(part) * 60**power for power, part in enumerate(reversed(parts))), 3)
