"""Keyword accuracy: were the words that matter (an example's ``keywords``: docs/keywords.md) written right?

Counted as OpenBench counts them (``keyword_boosting_metrics/boosting_metrics.py``, argmaxinc/OpenBench): both
texts and the terms go through Whisper's basic normalizer; the normalized words are aligned (a Levenshtein word
alignment, rapidfuzz's, ``<eps>`` on the side that has no word); then, per term,

- **ground truth** (``occurrences``): each place the term's words follow each other in the reference, on the aligned
  reference words (those that are not ``<eps>``; an n-word term on every window of n such words);
- **true positive**: such a place whose aligned hypothesis words are the term's (for a one-word term, the word it is
  aligned with; for a longer one, the words aligned with each of its words, insertions between them not looked at);
- **false positive**: a one-word term written in the hypothesis against a reference word that is no term (a
  reference word that is a term is counted on its own side only), or an n-word term written on n consecutive
  hypothesis words against reference words that are not that term.

The run's ``precision`` = Σ tp / (Σ tp + Σ fp), ``recall`` = Σ tp / Σ occurrences, ``f1`` their harmonic mean, in
percent (None where a denominator is 0, where OpenBench's 1e-8 gives 0). Beside them the **entity-span error
rate**: the word errors (substitutions, deletions, insertions) on the aligned spans of the terms' occurrences —
each occurrence's words and the insertions next to them — over the terms' words: "Wojciech" written "Voy check" is
two errors on one term word, whatever the rest of the utterance.

An example without terms gives no value (its columns empty); a run without any: ``keywords: null``. The paired
gate: ``gate --max-decrease keywords.recall=N`` (``--confidence``: on the paired bootstrap of the pooled recall);
per term: :func:`term_table`, ``gate --must-keep-keywords``.

>>> from whisperbench.types import WordCounts
>>> e = ScoredExample("a", "ok", "I met Wojciech in New York.", "I met Voy check in new york", "", "",
...                   WordCounts(0, 0, 0, 0), extra={"keywords": ["Wojciech", "New York"]})
>>> columns = per_example(e)
>>> columns["occurrences"], columns["true_positives"], columns["span_errors"], columns["span_words"]
(2.0, 1.0, 2.0, 3.0)
>>> METRIC.value_of(METRIC.columns_of([e]))["recall"]
50.0
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz.distance import Levenshtein

from ..types import Prediction
from .metrics import Display, Metric, Pairing, ScoredExample
from .normalize import get_normalizer

#: the word an alignment puts on the side that has none (texterrors' and OpenBench's)
EPS = "<eps>"


@dataclass
class TermCounts:
    """One term's counts in one example (or summed): true positives, ground truth (occurrences), false positives."""

    tp: int = 0
    gt: int = 0
    fp: int = 0


@dataclass
class KeywordStats:
    """One example's counts: per normalized term, and the entity-span errors and words."""

    terms: dict[str, TermCounts] = field(default_factory=dict)
    span_errors: int = 0
    span_words: int = 0

    def total(self, name: str) -> int:
        """The sum of one count (``tp``, ``gt``, ``fp``) over the terms."""
        return sum(getattr(counts, name) for counts in self.terms.values())


def normalized_terms(terms: Iterable[str]) -> list[str]:
    """The terms as the counts see them: basic-normalized, those left empty dropped, each once."""
    basic = get_normalizer("basic")
    return list(dict.fromkeys(t for t in (" ".join(basic(term).split()) for term in terms) if t))


def aligned(reference: Sequence[str], hypothesis: Sequence[str]) -> list[tuple[str, str]]:
    """The word alignment of two word lists as pairs, :data:`EPS` on the side without a word (rapidfuzz's
    Levenshtein opcodes).

    >>> aligned(["a", "b", "c"], ["a", "x", "y", "c"])
    [('a', 'a'), ('<eps>', 'x'), ('b', 'y'), ('c', 'c')]
    """
    pairs: list[tuple[str, str]] = []
    for op in Levenshtein.opcodes(reference, hypothesis):
        ref, hyp = list(reference[op.src_start : op.src_end]), list(hypothesis[op.dest_start : op.dest_end])
        width = max(len(ref), len(hyp))
        pairs += zip(ref + [EPS] * (width - len(ref)), hyp + [EPS] * (width - len(hyp)))
    return pairs


def keyword_stats(reference: str, hypothesis: str, terms: Iterable[str]) -> KeywordStats:
    """OpenBench's counts (module doc) of ``terms`` in one example's raw texts, with its entity spans."""
    basic = get_normalizer("basic")
    stats = KeywordStats({term: TermCounts() for term in normalized_terms(terms)})
    if not stats.terms:
        return stats
    pairs = aligned(basic(reference).split(), basic(hypothesis).split())
    longest = max(len(term.split()) for term in stats.terms)
    for n in range(1, longest + 1):
        for positions in _windows(pairs, 0, n):
            _count_reference(stats, pairs, positions)
        for positions in _windows(pairs, 1, n):
            _count_hypothesis(stats, pairs, positions)
    return stats


def _windows(pairs: Sequence[tuple[str, str]], side: int, n: int) -> Iterable[list[int]]:
    """The positions of every ``n`` consecutive words of one side (0: reference, 1: hypothesis) of the alignment,
    its :data:`EPS` skipped."""
    words = [i for i, pair in enumerate(pairs) if pair[side] != EPS]
    return (words[start : start + n] for start in range(len(words) - n + 1))


def _count_reference(stats: KeywordStats, pairs: Sequence[tuple[str, str]], positions: list[int]) -> None:
    """A reference window that is a term: one occurrence; a hit when its aligned hypothesis words are the term; its
    span's word errors."""
    term = " ".join(pairs[i][0] for i in positions)
    counts = stats.terms.get(term)
    if counts is None:
        return
    counts.gt += 1
    counts.tp += term == " ".join(pairs[i][1] for i in positions)
    first, last = positions[0], positions[-1]
    while first > 0 and pairs[first - 1][0] == EPS:  # insertions just before the term belong to its span
        first -= 1
    while last + 1 < len(pairs) and pairs[last + 1][0] == EPS:  # and those just after it
        last += 1
    stats.span_errors += sum(ref != hyp for ref, hyp in pairs[first : last + 1])
    stats.span_words += len(positions)


def _count_hypothesis(stats: KeywordStats, pairs: Sequence[tuple[str, str]], positions: list[int]) -> None:
    """A hypothesis window that is a term written where the reference does not have it: a false positive (a
    one-word term only against a reference word that is no term, as OpenBench's first pass counts)."""
    term = " ".join(pairs[i][1] for i in positions)
    counts = stats.terms.get(term)
    if counts is None:
        return
    written = " ".join(pairs[i][0] for i in positions)
    if len(positions) == 1 and written in stats.terms:  # the reference word is a term: counted on its side
        return
    counts.fp += written != term


def example_terms(extra: Mapping[str, Any]) -> list[str]:
    """An example's terms as stored with its prediction (``extra["keywords"]``; none: [])."""
    terms = extra.get("keywords")
    return [t for t in terms if isinstance(t, str)] if isinstance(terms, list) else []


def per_example(example: ScoredExample) -> dict[str, float]:
    """One example's counts as columns; {} (no value) for an example without terms."""
    terms = example_terms(example.extra)
    if not terms:
        return {}
    stats = keyword_stats(example.transcript, example.hypothesis, terms)
    return {
        "occurrences": float(stats.total("gt")),
        "true_positives": float(stats.total("tp")),
        "false_positives": float(stats.total("fp")),
        "span_errors": float(stats.span_errors),
        "span_words": float(stats.span_words),
    }


def distinct_terms(scored: Sequence[Prediction]) -> dict[str, int]:
    """``{"terms": n}``: how many distinct terms the run's examples hold, counted as the counts see them (normalized:
    ``New York`` and ``new york.`` are one term; a term of the dictionary given to every example, once)."""
    given = {term for pred in scored for term in example_terms(pred.extra)}  # each raw spelling normalized once
    return {"terms": len(normalized_terms(given))}


def _percent(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole else None


def finish(sums: dict[str, Any]) -> dict[str, Any] | None:
    """The run's precision, recall, F1 and entity-span error rate (percent) from the summed counts."""
    if sums.get("occurrences") is None:
        return None
    tp, gt, fp = (float(sums.get(k) or 0) for k in ("true_positives", "occurrences", "false_positives"))
    precision, recall = _percent(tp, tp + fp), _percent(tp, gt)
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else None
    if precision is not None and recall is not None and not (precision and recall):
        f1 = 0.0
    counts = {k: int(sums.get(k) or 0) for k in ("occurrences", "true_positives", "false_positives")}
    spans = {k: int(sums.get(k) or 0) for k in ("span_errors", "span_words")}
    return {
        **counts,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        **spans,
        "span_error_rate": _percent(spans["span_errors"], spans["span_words"]),
    }


@dataclass
class TermRow:
    """One term over a run: its occurrences, hits, false positives and the examples where it was missed."""

    term: str
    occurrences: int = 0
    hits: int = 0
    false_positives: int = 0
    missed_in: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float | None:
        """Percent of its occurrences written right (None without one)."""
        return _percent(self.hits, self.occurrences)


def term_table(examples: Iterable[tuple[str, str, str, Sequence[str]]]) -> list[TermRow]:
    """Per term over ``examples`` (id, transcript, hypothesis, terms): worst recall first (then most occurrences),
    terms that never occur last."""
    rows: dict[str, TermRow] = {}
    for example_id, transcript, hypothesis, terms in examples:
        for term, counts in keyword_stats(transcript, hypothesis, terms).terms.items():
            row = rows.setdefault(term, TermRow(term))
            row.occurrences, row.hits, row.false_positives = (
                row.occurrences + counts.gt,
                row.hits + counts.tp,
                row.false_positives + counts.fp,
            )
            if counts.tp < counts.gt:
                row.missed_in.append(example_id)
    return sorted(rows.values(), key=lambda r: (r.recall is None, r.recall or 0.0, -r.occurrences, r.term))


def missed_terms(examples: Iterable[tuple[str, str, str, Sequence[str]]]) -> dict[tuple[str, str], int]:
    """``{(example id, term): occurrences missed}`` over ``examples`` (id, transcript, hypothesis, terms), for the
    terms each example holds (missed: fewer hits than occurrences)."""
    missed = {}
    for example_id, transcript, hypothesis, terms in examples:
        for term, counts in keyword_stats(transcript, hypothesis, terms).terms.items():
            if counts.gt:
                missed[(example_id, term)] = counts.gt - counts.tp
    return missed


METRIC = Metric(
    "keywords",
    "keyword accuracy (OpenBench's counts on basic-normalized, aligned words): precision, recall, F1 and "
    "entity-span error rate of each example's keywords",
    per_example=per_example,
    aggregate="sum",
    headline="recall",
    better="higher",
    finish=finish,
    run_keys=distinct_terms,
    ratios={"recall": ("true_positives", "occurrences"), "span_error_rate": ("span_errors", "span_words")},
    display=Display(
        "Keywords",
        {
            "Occurrences": "occurrences",
            "Recall %": "recall",
            "Precision %": "precision",
            "F1 %": "f1",
            "Span error %": "span_error_rate",
        },
        "the words that matter (docs/keywords.md): recall = occurrences written right; precision counts terms "
        "written where the transcript has none; span error = WER on the terms' aligned words",
    ),
    heading="Keyword recall %",
    #: the (term, example) pairs the reference wrote right and the candidate misses (reports/keywords.py):
    #: ``gate --must-keep-keywords`` is ``--max keywords.lost=0``
    pairings=(Pairing("lost", "lost", heading="Keywords lost", flag="must_keep_keywords"),),
)
