"""Word error rate: per-example alignment counts and corpus WER = Σ(S+D+I) / Σ reference words."""

from __future__ import annotations

from typing import Iterable, Optional

import jiwer

from ..types import WordCounts
from .normalize import normalize


def align(reference: str, hypothesis: str) -> WordCounts:
    """Count hits/S/D/I between two already-normalized strings (jiwer's Levenshtein alignment).

    An empty reference is allowed: every hypothesis word is then an insertion.
    """
    ref_words, hyp_words = reference.split(), hypothesis.split()
    if not ref_words:
        return WordCounts(insertions=len(hyp_words))
    if not hyp_words:
        return WordCounts(deletions=len(ref_words))
    out = jiwer.process_words(reference, hypothesis)
    return WordCounts(out.hits, out.substitutions, out.deletions, out.insertions)


def align_characters(reference: str, hypothesis: str) -> WordCounts:
    """Count hits/S/D/I over characters (spaces included: pass text without them where they do not count).

    >>> align_characters("abc", "abd")
    WordCounts(hits=2, substitutions=1, deletions=0, insertions=0)
    """
    if not reference:
        return WordCounts(insertions=len(hypothesis))
    if not hypothesis:
        return WordCounts(deletions=len(reference))
    out = jiwer.process_characters(reference, hypothesis)
    return WordCounts(out.hits, out.substitutions, out.deletions, out.insertions)


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

    def reset(self) -> None:
        self.counts = WordCounts()
