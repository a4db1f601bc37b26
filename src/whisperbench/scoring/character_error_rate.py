"""CER as a metric of the protocol: per example the character errors and transcript characters of the run's
normalized texts (spaces left out for languages written without them: ``languages.cer_text``), pooled over the run.
Its figures stay where summary.json has always had them (``cer``, ``char_errors``, ``transcript_characters`` at the
top level); through the registry the leaderboard shows a "CER %" column, the gate takes ``--max-increase
cer.cer=N``, ``compare --json``, the trackers and the per-example export get it.

>>> from whisperbench.types import WordCounts
>>> from .metrics import ScoredExample
>>> e = ScoredExample("a", "ok", "abc", "abd", "abc", "abd", WordCounts(0, 1, 0, 0), chars=WordCounts(2, 1, 0, 0))
>>> METRIC.value_of(METRIC.columns_of([e]))
{'cer': 33.333333333333336, 'char_errors': 1, 'transcript_characters': 3}
"""

from __future__ import annotations

from typing import Any

from .metrics import Metric, ScoredExample
from .wer import pooled_rate


def character_errors(example: ScoredExample) -> dict[str, float]:
    """One example's character errors and transcript characters; nothing where characters were not aligned."""
    if example.chars is None:
        return {}
    return {"char_errors": float(example.chars.errors), "transcript_characters": float(example.chars.transcript_words)}


def _value(sums: dict[str, Any]) -> dict[str, Any]:
    """The run's CER, its errors and its denominator from the summed columns."""
    return {
        "cer": pooled_rate(sums.get("char_errors"), sums.get("transcript_characters")),
        "char_errors": int(sums.get("char_errors") or 0),
        "transcript_characters": int(sums.get("transcript_characters") or 0),
    }


METRIC = Metric(
    "cer",
    "character error rate: Σ character errors / Σ transcript characters over normalized text",
    per_example=character_errors,
    aggregate="sum",
    headline="cer",
    better="lower",
    finish=_value,
    ratios={"cer": ("char_errors", "transcript_characters")},
    heading="CER %",
    top_level=True,
)
