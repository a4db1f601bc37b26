"""``recorded``: hypotheses produced elsewhere (an iPhone, a Mac with WhisperKit, another harness).

The model argument is a JSONL file with ``id`` and ``hypothesis`` (or ``text``) per line. Dataset
ids missing from the file fail with a clear error, so they count as failed examples.
"""

from __future__ import annotations

import json
from typing import Optional

import numpy as np

from ..digest import sha256_of
from ..errors import WhisperbenchError
from ..types import Example, Transcript
from . import register
from .base import Adapter
from .options import Option


def read_hypotheses(path: str) -> dict[str, str]:
    """``id -> hypothesis`` from a JSONL file; duplicate ids or bad lines are errors naming the line."""
    table: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            lines = list(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise WhisperbenchError(f"cannot read hypotheses file {path}: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            ex_id = str(row["id"])
            text = row["hypothesis"] if "hypothesis" in row else row["text"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise WhisperbenchError(f"{path} line {number}: need a JSON object with id and hypothesis ({exc})") from exc
        if ex_id in table:
            raise WhisperbenchError(f"{path} line {number}: duplicate id {ex_id!r}")
        table[ex_id] = "" if text is None else str(text)
    return table


@register
class RecordedAdapter(Adapter):
    name = "recorded"
    description = "hypotheses from a JSONL file (id, hypothesis): results made on a device or elsewhere"
    needs_audio = False
    uses_weights = False
    options = {"label": Option(None, "the implementation's name in reports")}

    def load(self) -> None:
        self.hypotheses = read_hypotheses(self.model)

    def source_digest(self) -> Optional[str]:
        """The hypotheses file's sha256: an edited file makes a resumed ``score`` redo every example."""
        try:
            return "sha256:" + sha256_of(self.model)
        except OSError as exc:
            raise WhisperbenchError(f"cannot read hypotheses file {self.model}: {exc}") from exc

    def unknown_ids(self, dataset_ids: set[str]) -> list[str]:
        """Ids in the file that the dataset does not have (reported, never scored)."""
        return sorted(set(self.hypotheses) - dataset_ids)

    def transcribe(self, audio: Optional[np.ndarray], example: Example, *, long_form: bool) -> Transcript:
        if example.id not in self.hypotheses:
            raise WhisperbenchError(f"no hypothesis for id {example.id!r} in {self.model}")
        return Transcript(text=self.hypotheses[example.id])

    def describe(self) -> dict:
        return super().describe() | {"hypotheses_file": self.model}
