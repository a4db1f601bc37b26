"""Word error rate: per-example alignment counts and corpus WER = Σ(S+D+I) / Σ reference words."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

import jiwer

from ..types import WordCounts
from .normalize import normalize


def _align(ref_units: int, hyp_units: int, process: Callable[[str, str], Any], reference: str,
           hypothesis: str) -> WordCounts:
    if not ref_units:
        return WordCounts(insertions=hyp_units)
    if not hyp_units:
        return WordCounts(deletions=ref_units)
    out = process(reference, hypothesis)
    return WordCounts(out.hits, out.substitutions, out.deletions, out.insertions)


def align(reference: str, hypothesis: str) -> WordCounts:
    """Count hits/S/D/I between two already-normalized strings (jiwer's Levenshtein alignment).

    An empty reference is allowed: every hypothesis word is then an insertion.
    """
    return _align(len(reference.split()), len(hypothesis.split()), jiwer.process_words, reference, hypothesis)


def align_characters(reference: str, hypothesis: str) -> WordCounts:
    """Count hits/S/D/I over characters (spaces included: pass text without them where they do not count).

    >>> align_characters("abc", "abd")
    WordCounts(hits=2, substitutions=1, deletions=0, insertions=0)
    """
    return _align(len(reference), len(hypothesis), jiwer.process_characters, reference, hypothesis)


def example_wer(counts: WordCounts) -> Optional[float]:
    """Per-example WER in percent; None when the normalized reference is empty (undefined)."""
    return None if counts.ref_words == 0 else 100.0 * counts.errors / counts.ref_words


def corpus_wer(counts: WordCounts) -> Optional[float]:
    """Corpus WER in percent from summed counts; None with no reference words."""
    return example_wer(counts)


class WordErrorRate:
    """Stateful WER (torchmetrics style): ``update`` with raw text pairs, ``compute`` the corpus WER."""

    def __init__(self, normalizer: str = "english"):
        self.normalizer = normalizer
        self.counts = WordCounts()

    def update(self, references: Iterable[str], hypotheses: Iterable[str]) -> None:
        for ref, hyp in zip(references, hypotheses, strict=True):
            self.counts = self.counts + align(normalize(ref, self.normalizer), normalize(hyp, self.normalizer))

    def compute(self) -> Optional[float]:
        return corpus_wer(self.counts)
