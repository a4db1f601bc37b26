"""WER as a metric of the protocol: per example the word errors (substitutions + deletions + insertions) and the
transcript words of the run's normalized texts, pooled over the run — Σ errors / Σ transcript words, failed
examples as empty hypotheses. Its figures stay where summary.json has always had them (``wer``,
``transcript_words`` at the top level); through the registry the gate takes ``--max-increase wer.wer=N`` (a paired
bootstrap with ``--confidence``), ``compare --json`` and the trackers get it, the per-example export its columns.

>>> from whisperbench.types import WordCounts
>>> from .metrics import ScoredExample
>>> a = ScoredExample("a", "ok", "one two", "one", "one two", "one", WordCounts(1, 0, 1, 0))
>>> b = ScoredExample("b", "ok", "three", "three", "three", "three", WordCounts(1, 0, 0, 0))
>>> METRIC.value_of(METRIC.columns_of([a, b]))
{'wer': 33.333333333333336, 'transcript_words': 3}
"""

from __future__ import annotations

from typing import Any

from .metrics import Metric, Pairing, ScoredExample
from .wer import pooled_rate


def word_errors(example: ScoredExample) -> dict[str, float]:
    """One example's word errors and transcript words (the run's normalizer; a failed example: every word
    deleted)."""
    return {"word_errors": float(example.words.errors), "transcript_words": float(example.words.transcript_words)}


def _value(sums: dict[str, Any]) -> dict[str, Any]:
    """The run's WER and its denominator from the summed columns."""
    return {
        "wer": pooled_rate(sums.get("word_errors"), sums.get("transcript_words")),
        "transcript_words": int(sums.get("transcript_words") or 0),
    }


METRIC = Metric(
    "wer",
    "word error rate: Σ(substitutions + deletions + insertions) / Σ transcript words over normalized text, "
    "failed examples as empty hypotheses",
    per_example=word_errors,
    aggregate="sum",
    headline="wer",
    better="lower",
    finish=_value,
    ratios={"wer": ("word_errors", "transcript_words")},
    heading="WER %",
    top_level=True,
    core=True,
    pairings=(
        Pairing("qoi", "qoi", better="higher", heading="QoI %", flag="min_qoi"),
        Pairing("increase", "difference", "wer", heading="ΔWER points", flag="max_wer_increase"),
    ),
)
