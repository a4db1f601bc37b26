"""``recorded``: hypotheses produced elsewhere (an iPhone, a Mac with WhisperKit, another harness).

The model argument is a JSONL file with ``id`` and ``hypothesis`` (or ``text``) per line, and optionally
the ``language`` the implementation detected (scored as language identification) and its timing:
``segments`` (``[{start, end, text}]``) and ``words`` (``[{word, start, end}]``), in seconds. Dataset ids missing
from the file fail with a clear error, so they count as failed examples.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..core.hashing import sha256_of
from ..core.json_files import parse_json
from ..datasets.hypotheses import read_rows
from ..errors import WhisperbenchError
from ..types import Emission, Example, Segment, Transcript, Word
from .base import Adapter
from .options import Option
from .streaming import CLOCKS


def _rows_with(path: str, keys: tuple[str, ...]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row) of the lines of ``path`` that mention one of ``keys`` (as JSON writers spell a key);
    the others are not parsed."""
    needles = [f'"{key}"' for key in keys]
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if not any(needle in text for needle in needles):  # the usual file: hypotheses only, no line to parse
        return
    for number, line in enumerate(text.split("\n"), start=1):  # as the file's lines (splitlines also cuts at U+2028)
        if any(needle in line for needle in needles):
            row = parse_json(line)
            if isinstance(row, dict) and "id" in row:
                yield number, row
            elif isinstance(row, dict) and "device" in row:
                said = ", ".join(key for key in keys if key in row)
                header = ", ".join(("name",) + DEVICE_FIGURES)
                raise WhisperbenchError(
                    f"{path} line {number}: the device header row holds {said}, a figure of one example: give it on "
                    f"that example's line (the header's device takes {header})"
                )
            else:
                raise WhisperbenchError(f"{path} line {number}: need a JSON object with an id")


def read_timing(path: str) -> dict[str, tuple[list[Segment], list[Word] | None]]:
    """``id -> (segments, words or None)`` for the lines that carry times; bad times are errors naming the line."""
    table = {}
    for number, row in _rows_with(path, ("segments", "words")):
        if not row.get("segments") and row.get("words") is None:
            continue
        try:
            segments = [
                Segment(float(s["start"]), float(s["end"]), str(s.get("text", ""))) for s in row.get("segments") or []
            ]
            words = (
                None
                if row.get("words") is None
                else [Word(str(w["word"]), float(w["start"]), float(w["end"])) for w in row["words"]]
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise WhisperbenchError(
                f"{path} line {number}: segments need start, end (and text), words need "
                f"word, start, end, in seconds ({type(exc).__name__}: {exc})"
            ) from None
        table[str(row["id"])] = (segments, words)
    return table


def read_streams(path: str) -> dict[str, tuple[list[Emission], dict[str, Any]]]:
    """``id -> (emissions, streaming facts)`` for the lines that carry a ``stream`` (a streaming implementation's
    outputs recorded elsewhere: ``[{audio_s, wall_s, committed, interim}]``, docs/streaming.md) and optionally
    ``streaming`` (``{"policy", "chunk_s", "clock"}``; the clock ``simulated`` when unsaid). Times must be numbers
    ≥ 0 with neither the audio cursor nor the wall time going back; a bad one is an error naming the line."""
    table = {}
    for number, row in _rows_with(path, ("stream",)):
        stream, facts = row.get("stream"), row.get("streaming") or {}
        if stream is None:
            continue
        try:
            emissions = [Emission.from_json(e) for e in stream]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise WhisperbenchError(
                f"{path} line {number}: stream must be a list of {{audio_s, wall_s, committed, interim}} "
                f"({type(exc).__name__}: {exc})"
            ) from None
        last = {"audio_s": 0.0, "wall_s": 0.0}
        for e in emissions:
            for key in ("audio_s", "wall_s"):
                _non_negative(getattr(e, key), f"stream {key}", path, number)
                if getattr(e, key) < last[key]:
                    raise WhisperbenchError(
                        f"{path} line {number}: stream {key} goes back ({last[key]:g} s, then {getattr(e, key):g} s)"
                    )
                last[key] = getattr(e, key)
        if not isinstance(facts, dict) or facts.get("clock", "simulated") not in CLOCKS:
            raise WhisperbenchError(f"{path} line {number}: streaming.clock must be one of {', '.join(CLOCKS)}")
        table[str(row["id"])] = (emissions, {"clock": "simulated"} | facts)
    return table


#: what the header row of a hypotheses file may say of the device the model ran on (besides its ``name``)
DEVICE_FIGURES = ("load_s", "peak_rss_mb")


def read_device(path: str) -> dict[str, Any]:
    """The device a hypotheses file was recorded on, from its optional header row
    ``{"device": {"name": "iPhone 15 Pro", "load_s": 1.9, "peak_rss_mb": 412}}`` (every key optional; figures are
    numbers ≥ 0); {} without one. A bad figure is an error naming the line."""
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not (isinstance(row, dict) and "device" in row and "id" not in row):
                return {}  # the first line is an example: no header
            device = row["device"]
            if not isinstance(device, dict):
                raise WhisperbenchError(f'{path} line {number}: device must be an object, e.g. {{"name": "…"}}')
            figures = {key: _non_negative(device.get(key), key, path, number) for key in DEVICE_FIGURES}
            return {"name": str(device.get("name") or "a device")} | {k: v for k, v in figures.items() if v is not None}
    return {}


#: per-example costs a hypotheses line may carry, measured where the model ran (a phone, a Mac, a server): seconds,
#: and the tokens the decoder produced (for ms per token)
COST_KEYS = ("infer_s", "cpu_s", "tokens")


def read_costs(path: str) -> dict[str, tuple[float | None, float | None, int | None]]:
    """``id -> (infer_s, cpu_s, tokens)`` for the lines that carry any (seconds finite and not negative, tokens a
    whole number ≥ 0); a bad value is an error naming the line."""
    table = {}
    for number, row in _rows_with(path, COST_KEYS):
        infer_s, cpu_s = (_non_negative(row.get(key), key, path, number) for key in COST_KEYS[:2])
        tokens = _whole(row.get("tokens"), "tokens", path, number)
        if (infer_s, cpu_s, tokens) != (None, None, None):
            table[str(row["id"])] = (infer_s, cpu_s, tokens)
    return table


def _whole(value: Any, key: str, path: str, number: int) -> int | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not value >= 0
        or not float(value).is_integer()
    ):
        raise WhisperbenchError(f"{path} line {number}: {key} must be a whole number ≥ 0, not {value!r}")
    return int(value)


def _non_negative(value: Any, key: str, path: str, number: int) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not math.isfinite(seconds) or seconds < 0 or isinstance(value, bool):
        raise WhisperbenchError(f"{path} line {number}: {key} must be a number ≥ 0, not {value!r}")
    return seconds


class RecordedAdapter(Adapter):
    """Hypotheses made elsewhere (a JSONL file of id and hypothesis): a phone's, a Mac's or another tool's results
    scored like any run."""

    name = "recorded"
    description = "hypotheses from a JSONL file (id, hypothesis): results made on a device or elsewhere"
    word_timing = "the words of the hypotheses file's lines, as recorded"
    needs_audio = False
    uses_weights = False
    computes = False
    starting = "reading the hypotheses file"
    options = {"label": Option(None, "the implementation's name in reports")}

    def dataset_warnings(self, ids: set[str]) -> list[str]:
        """The hypotheses file's ids that the dataset lacks: they are ignored (missing ones fail, counted)."""
        unknown = sorted(set(read_rows(self.model)) - ids)
        if not unknown:
            return []
        return [
            f"{len(unknown)} id(s) in {self.model} are not in the dataset and are ignored: "
            f"{', '.join(unknown[:10])}{' …' if len(unknown) > 10 else ''}"
        ]

    def load(self) -> None:
        self.rows = read_rows(self.model)
        self.timing = read_timing(self.model)
        self.costs = read_costs(self.model)
        self.streams = read_streams(self.model)
        self.device = read_device(self.model)

    def segments_timed(self, long_form: bool) -> bool:
        """A recorded file's segments are the implementation's own times."""
        return True

    def source_digest(self) -> str | None:
        """The hypotheses file's sha256: an edited file makes a resumed ``score`` redo every example."""
        try:
            return "sha256:" + sha256_of(self.model)
        except OSError as exc:
            raise WhisperbenchError(f"cannot read hypotheses file {self.model}: {exc}") from exc

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        if example.id not in self.rows:
            raise WhisperbenchError(f"no hypothesis for id {example.id!r} in {self.model}")
        text, language = self.rows[example.id]
        segments, words = self.timing.get(example.id, ([], None))
        infer_s, cpu_s, tokens = self.costs.get(example.id, (None, None, None))
        stream, facts = self.streams.get(example.id, (None, None))
        return Transcript(
            text=text,
            language=language,
            segments=segments,
            words=words,
            infer_s=infer_s,
            cpu_s=cpu_s,
            tokens=tokens,
            stream=stream,
            extra={"streaming": facts} if facts else {},
        )

    def describe(self) -> dict:
        device = getattr(self, "device", {})
        where = f"recorded on {device['name']} ({self.model})" if device else f"recorded in {self.model}"
        recorded = {"timings_from": where} if getattr(self, "costs", None) or device else {}
        figures = {f"device_{key}": device[key] for key in ("name", *DEVICE_FIGURES) if key in device}
        return super().describe() | {"hypotheses_file": self.model} | recorded | figures


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = RecordedAdapter
