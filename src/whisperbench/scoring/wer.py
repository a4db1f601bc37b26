"""Word error rate: per-example alignment counts and corpus WER = Σ(S+D+I) / Σ transcript words."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from rapidfuzz.distance import Levenshtein

from ..types import WordCounts

if TYPE_CHECKING:
    import numpy as np

#: word -> integer id, shared by every alignment in this process (equal words, equal ids)
_WORD_IDS: dict[str, int] = {}
_NEXT_ID = itertools.count()  # one step at a time even across threads: two new words never share an id


def _ids(words: list[str]) -> list[int]:
    ids = _WORD_IDS
    try:
        return [ids[word] for word in words]
    except KeyError:
        return [ids[word] if word in ids else ids.setdefault(word, next(_NEXT_ID)) for word in words]


_TAG = itemgetter(0)  # an edit operation's kind: "replace", "delete" or "insert"


def count_edits(reference: Sequence[Any], hypothesis: Sequence[Any]) -> WordCounts:
    """Hits/S/D/I of the Levenshtein alignment of two sequences (token ids or a string's characters).

    The alignment is rapidfuzz's, the one jiwer (>= 3.1) takes its counts from (``Levenshtein.opcodes``
    on the same sequences, counted per block): its edit operations give the same counts, and the tests
    check them against ``jiwer.process_words``/``process_characters``.
    """
    if not reference:
        return WordCounts(insertions=len(hypothesis))
    if not hypothesis:
        return WordCounts(deletions=len(reference))
    if reference == hypothesis:
        return WordCounts(hits=len(reference))
    tags = list(map(_TAG, Levenshtein.editops(reference, hypothesis).as_list()))  # counted in C, not op by op
    subs, dels = tags.count("replace"), tags.count("delete")
    return WordCounts(len(reference) - subs - dels, subs, dels, len(tags) - subs - dels)


def align(reference: str, hypothesis: str) -> WordCounts:
    """Count hits/S/D/I between two already-normalized strings (word-level Levenshtein alignment).

    An empty transcript is allowed: every hypothesis word is then an insertion.
    """
    if reference == hypothesis:  # the same words (common: a right transcript), without looking them up
        return WordCounts(hits=len(reference.split()))
    return count_edits(_ids(reference.split()), _ids(hypothesis.split()))


def align_characters(reference: str, hypothesis: str) -> WordCounts:
    """Count hits/S/D/I over characters (spaces included: pass text without them where they do not count).

    >>> align_characters("abc", "abd")
    WordCounts(hits=2, substitutions=1, deletions=0, insertions=0)
    """
    return count_edits(reference, hypothesis)


def example_wer(counts: WordCounts) -> float | None:
    """Per-example WER in percent; None when the normalized transcript is empty (undefined)."""
    return counts.error_rate()


def pooled_rate(errors: float | None, units: float | None) -> float | None:
    """Σ errors / Σ units in percent, the run value of a pooled rate (WER, CER, F-WER, PER…); None without units
    or without an error count (``WordCounts.error_rate``'s rule on summed columns).

    >>> pooled_rate(1.0, 4.0), pooled_rate(0.0, 0.0), pooled_rate(None, 3.0)
    (25.0, None, None)
    """
    return 100.0 * errors / units if errors is not None and units else None


def example_wers(errors: np.ndarray, words: np.ndarray) -> np.ndarray:
    """:func:`example_wer` over arrays of per-example errors and transcript words: percent, NaN where a
    reference has no words (the same floats as ``WordCounts.error_rate``).

    >>> import numpy as np
    >>> example_wers(np.array([1, 0]), np.array([2, 0])).tolist()
    [50.0, nan]
    """
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(words > 0, 100.0 * errors / np.maximum(words, 1), np.nan)


def corpus_wer(counts: WordCounts) -> float | None:
    """Corpus WER in percent from summed counts; None with no transcript words."""
    return example_wer(counts)
