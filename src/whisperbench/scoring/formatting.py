"""Formatted text: punctuation, casing and the way numbers are written, which Whisper's normalizer erases before
WER and QoI. A per-example metric (``summary.json["formatting"]``) over the examples whose transcript is
formatted, and the formatting parity of a candidate's output against the reference run's (no formatted
transcript needed).

The figures, every rate in percent like WER:

- ``f_wer``: WER on the raw texts split on whitespace only (case and attached punctuation count; named after
  AssemblyAI's unnormalized "F-WER" as it describes it, checked against jiwer, not AssemblyAI's code);
- ``wer_c``: case-sensitive, punctuation removed; ``wer_pc``: case-sensitive, each punctuation mark a token of
  its own (named after NeMo-Skills' WER_C and WER_PC as they describe them; checked against jiwer, not their code);
- ``per``: punctuation error rate as NVIDIA NeMo's ``punct_er.py`` and Meister et al. 2023 (arXiv 2310.02943)
  define it: (substituted + deleted + inserted marks) / (correct + substituted + deleted + inserted marks), the
  marks lined up by NeMo's alignment of the tokens with every mark masked (a mark against another mark is a
  substitution; a transcript mark left unmatched a deletion, a hypothesis mark an insertion; a mark moved to
  another word is a deletion and an insertion). Marks are the characters of Unicode category P* (full-width and
  CJK marks included); the tokens are whisperbench's (:func:`tokens`: a mark inside a word, as in "p.m" or
  "well-known", stays in it). ``per_by_mark``: per mark of :data:`MARKS`, its errors over its operations (NeMo's
  per-mark rates: a substitution counted under the transcript's mark, an insertion rate where the transcript has
  none of the mark); ``per_operations``: substitutions, deletions and insertions each over all operations;
- ``casing_error_rate``: of the words the hypothesis gets right ignoring case, the share whose casing differs;
- ``itn_examples``: examples whose words agree after the normalizer yet differ before it only in tokens holding
  digits ("2020" against "twenty twenty"): the inverse-text-normalization part of ``f_wer``.

A transcript is formatted when it has both upper- and lower-case letters or any of ``. , ? ! ; :`` or their
full-width and CJK forms (``。，、？！；：「」『』``; LibriSpeech's upper-case, unpunctuated transcripts are
not); a manifest column ``formatted`` (true/false) overrides that.

>>> tokens("Hello, world! It's 5 p.m.")
['Hello', ',', 'world', '!', "It's", '5', 'p.m', '.']
>>> transcript, hypothesis = "Hi, dear! Nice to see you. What's", "Hi dear! Nice to see you! What's?"
>>> counts = punctuation_counts(tokens(transcript), tokens(hypothesis))
>>> counts["errors"], counts["operations"], counts["."], counts[","], counts["!"], counts["?"]
(3, 4, (1, 1), (1, 1), (0, 1), (1, 1))
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
from rapidfuzz.distance import Levenshtein

from ..types import WordCounts
from .engine import map_ranges
from .metrics import Metric, Pairing, ScoredExample
from .wer import count_edits, pooled_rate

#: the marks reported one by one, each with the name of its columns (every punctuation character, Unicode category
#: P*, counts in ``per``): the Latin sentence marks and their full-width and CJK forms
MARK_NAMES = {
    ".": "period",
    ",": "comma",
    "?": "question",
    "!": "exclamation",
    "\u3002": "ideographic_full_stop",  # 。
    "\uff0c": "fullwidth_comma",  # ，
    "\u3001": "ideographic_comma",  # 、
    "\uff1f": "fullwidth_question",  # ？
    "\uff01": "fullwidth_exclamation",  # ！
}
MARKS = tuple(MARK_NAMES)
#: a sentence mark that makes a transcript formatted (Latin, full-width and CJK)
_FORMATTING_MARK = re.compile("[.,?!;:\u3002\uff0c\u3001\uff1f\uff01\uff1b\uff1a\u300c\u300d\u300e\u300f]")
#: a token: a word, an apostrophe, hyphen or full stop inside it included ("it's", "well-known", "p.m"), or any other
#: character that is neither a word's nor a space (a punctuation mark, a symbol) on its own
_TOKEN = re.compile(r"\w+(?:['’\-.]\w+)*|[^\w\s]")
#: what :data:`_TOKEN` could split off: anything but a word character, a space or an apostrophe inside a word
_PLAIN = re.compile(r"[^\w\s']|(?<!\w)'|'(?!\w)")


def is_formatted(transcript: str, override: Any = None) -> bool:
    """Whether ``transcript`` is written formatted (mixed case or sentence punctuation); ``override`` (the
    manifest's ``formatted`` column, a bool or "true"/"false") decides when given.

    >>> is_formatted("HE SAID NO"), is_formatted("He said no."), is_formatted("he said no", override="true")
    (False, True, True)
    """
    if isinstance(override, bool):
        return override
    if isinstance(override, str) and override.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
        return override.strip().lower() in ("true", "1", "yes")
    if _FORMATTING_MARK.search(transcript):
        return True
    return transcript != transcript.upper() and transcript != transcript.lower()  # both cases: mixed


@lru_cache(maxsize=65536)  # tokens repeat: a run looks the same few thousand up again and again
def _is_mark(token: str) -> bool:
    """A punctuation mark (Unicode category P*); a symbol such as $ or % is a word here."""
    return len(token) == 1 and unicodedata.category(token).startswith("P")


#: the ASCII characters that are punctuation marks (Unicode category P*), looked up without a call
_ASCII_MARKS = frozenset(c for c in map(chr, range(128)) if unicodedata.category(c).startswith("P"))


def tokens(text: str) -> list[str]:
    """Words and punctuation marks, each mark a token of its own (a mark inside a word stays in it).

    >>> tokens("Don't stop, 'now' - ok?")
    ["Don't", 'stop', ',', "'", 'now', "'", '-', 'ok', '?']
    """
    text = unicodedata.normalize("NFC", text)
    if _PLAIN.search(text) is None:  # words and inner apostrophes only (most output): nothing to split off
        return text.split()
    return _TOKEN.findall(text)


class _Side(NamedTuple):
    """One side's tokens as every measure here takes them, each list made once."""

    tokens: list[str]
    lower: list[str]  # the tokens without case
    words: list[str]  # the tokens that are not marks
    words_lower: list[str]
    marks: int

    @classmethod
    def of(cls, tokens: list[str]) -> _Side:
        lower = [t.lower() for t in tokens]
        keep = [t not in _ASCII_MARKS and (len(t) > 1 or t.isascii() or not _is_mark(t)) for t in tokens]
        if all(keep):
            return cls(tokens, lower, tokens, lower, 0)
        words = [t for t, k in zip(tokens, keep) if k]
        return cls(tokens, lower, words, [t for t, k in zip(lower, keep) if k], len(tokens) - len(words))


def punctuation_counts(reference: list[str], hypothesis: list[str]) -> dict[str, Any]:
    """The punctuation operations of ``hypothesis`` against ``reference`` (tokens) as NVIDIA NeMo's
    ``punct_er.py`` counts them: ``correct``, ``substitutions``, ``deletions``, ``insertions``, ``errors`` (the last
    three), ``operations`` (all four: PER's denominator), and per mark of :data:`MARKS` a pair (errors, operations),
    a substitution counted under the transcript's mark."""
    return _punctuation(_Side.of(reference), _Side.of(hypothesis))


#: a backtrace step of :func:`_matched_marks` (NeMo's: a match, a substitution, an insertion, a deletion)
_COR, _SUB, _INS, _DEL = 0, 1, 2, 3


def _masked(tokens: list[str]) -> list[str | None]:
    """The tokens with every punctuation mark masked (None): marks align with marks, whatever the mark."""
    return [None if _is_mark(t) else t for t in tokens]


#: the widest band (cells a row) aligned cell by cell in Python; a wider one is faster a row at a time by vector
#: operations, whose fixed cost a row outweighs the cells of a narrower band
_BANDED_MAX_WIDTH = 61

#: a backtrace step at cell (i, j) of the cost matrix (i, j >= 1)
StepAt = Callable[[int, int], int]


def _matched_marks(ref: list[str], hyp: list[str]) -> list[tuple[str, str]]:
    """The (transcript mark, hypothesis mark) pairs that NeMo's alignment lines up: a Levenshtein alignment of the
    tokens, each mark masked, backtraced from the end preferring a match, then a substitution, an insertion, a
    deletion (as ``punct_er.py`` does). A common tail is matched without the matrix (the backtrace takes it so).
    The backtrace only visits cells whose cost is at most the distance d, each within d of the diagonal, so only
    that band of the matrix is computed (:func:`_banded_steps`); a large band is computed a row at a time by
    vector operations on the whole row (:func:`_row_steps`)."""
    r, h = _masked(ref), _masked(hyp)
    if r == h:  # the same words, marks in the same places: every mark lines up with its own
        return [(a, b) for a, b, m in zip(ref, hyp, r) if m is None]
    tail = 0
    while tail < min(len(r), len(h)) and r[-1 - tail] == h[-1 - tail]:
        tail += 1
    pairs = [(ref[-1 - k], hyp[-1 - k]) for k in range(tail) if r[-1 - k] is None]
    rows, cols = len(r) - tail, len(h) - tail
    if rows and cols:
        band = Levenshtein.distance(r[:rows], h[:cols])
        small = 2 * band + 1 <= _BANDED_MAX_WIDTH
        step_at = (_banded_steps if small else _row_steps)(r[:rows], h[:cols], band)
        pairs += _backtrace(step_at, rows, cols, ref, hyp, r)
    return pairs


def _banded_steps(r: list[str | None], h: list[str | None], band: int) -> StepAt:
    """NeMo's backtrace step of every cell within ``band`` (the distance) of the diagonal, the costs outside it
    taken as infinite: a cell on the backtrace costs at most the distance, so its cost and its neighbours' that
    could be chosen are exact."""
    far = len(r) + len(h) + 1
    prev, prev_lo = list(range(min(len(h), band) + 1)), 0
    rows: list[tuple[int, list[int]]] = [(0, [])]
    for i in range(1, len(r) + 1):
        lo, hi, token = max(0, i - band), min(len(h), i + band), r[i - 1]
        costs: list[int] = []
        steps: list[int] = []
        for j in range(lo, hi + 1):
            if j == 0:
                costs.append(i)
                steps.append(_DEL)
                continue
            diagonal = prev[j - 1 - prev_lo]  # (i - 1, j - 1) lies on the same diagonal: inside the band
            if token == h[j - 1]:
                costs.append(diagonal)
                steps.append(_COR)
                continue
            up = prev[j - prev_lo] if j - prev_lo < len(prev) else far
            left = costs[-1] if j > lo else far
            cost = min(diagonal, left, up) + 1
            costs.append(cost)
            steps.append(_SUB if cost == diagonal + 1 else _INS if cost == left + 1 else _DEL)
        rows.append((lo, steps))
        prev, prev_lo = costs, lo
    return lambda i, j: rows[i][1][j - rows[i][0]]


def _row_steps(r: list[str | None], h: list[str | None], band: int) -> StepAt:
    """NeMo's backtrace step of every cell of the Levenshtein cost matrix of ``r``, ``h``, a row at a time by
    vector operations (the insertions a running minimum); ``band`` unused (the whole row is computed)."""
    ids: dict[str | None, int] = {}
    r_ids = np.array([ids.setdefault(t, len(ids)) for t in r])
    h_ids = np.array([ids.setdefault(t, len(ids)) for t in h])
    cols = np.arange(len(h) + 1)
    steps = np.empty((len(r) + 1, len(h) + 1), dtype=np.int8)
    prev = cols.copy()
    for i in range(1, len(r) + 1):
        equal = h_ids == r_ids[i - 1]
        sub = prev[:-1] + 1
        diagonal = np.where(equal, prev[:-1], sub)
        best = np.minimum(diagonal, prev[1:] + 1)  # a match or substitution, or a deletion
        row = np.minimum.accumulate(np.concatenate(([i], best - cols[1:]))) + cols  # or an insertion
        insertion = row[:-1] + 1
        steps[i, 1:] = np.where(equal, _COR, np.where(row[1:] == sub, _SUB, np.where(row[1:] == insertion, _INS, _DEL)))
        prev = row
    return lambda i, j: int(steps[i, j])


def _backtrace(
    step_at: StepAt, rows: int, cols: int, ref: list[str], hyp: list[str], masked: list[str | None]
) -> list[tuple[str, str]]:
    """The marks matched on the path from cell (``rows``, ``cols``) (row 0: insertions, column 0: deletions)."""
    pairs = []
    i, j = rows, cols
    while i > 0 and j > 0:
        step = step_at(i, j)
        if step == _COR and masked[i - 1] is None:
            pairs.append((ref[i - 1], hyp[j - 1]))
        i, j = i - (step != _INS), j - (step != _DEL)
    return pairs


def _punctuation(ref: _Side, hyp: _Side) -> dict[str, Any]:
    reference, hypothesis = ref.tokens, hyp.tokens
    matched = _matched_marks(reference, hypothesis) if ref.marks and hyp.marks else []
    correct = sum(a == b for a, b in matched)
    substitutions = len(matched) - correct
    deletions, insertions = ref.marks - len(matched), hyp.marks - len(matched)
    right = Counter(a for a, b in matched if a == b)
    substituted = Counter(a for a, b in matched if a != b)  # under the transcript's mark
    substituted_to = Counter(b for a, b in matched if a != b)
    per_mark = {}
    for mark in MARKS:
        lost = reference.count(mark) - right[mark] - substituted[mark]
        added = hypothesis.count(mark) - right[mark] - substituted_to[mark]
        errors = substituted[mark] + lost + added
        per_mark[mark] = (errors, errors + right[mark])
    return {
        "correct": correct,
        "substitutions": substitutions,
        "deletions": deletions,
        "insertions": insertions,
        "errors": substitutions + deletions + insertions,
        "operations": correct + substitutions + deletions + insertions,
        **per_mark,
    }


def casing_counts(reference: list[str], hypothesis: list[str]) -> tuple[int, int]:
    """(words right ignoring case whose casing differs, words right ignoring case), marks left out."""
    return _casing(_Side.of(reference), _Side.of(hypothesis))


def _casing(ref: _Side, hyp: _Side, ops: Any = None) -> tuple[int, int]:
    """:func:`casing_counts`; ``ops``: the opcodes of the two sides' lower-case words, where already aligned."""
    if ref.words_lower == hyp.words_lower:  # the same words: no alignment needed
        return sum(r != h for r, h in zip(ref.words, hyp.words)), len(ref.words)
    differ = same = 0
    ref_w, hyp_w = ref.words, hyp.words
    for op in ops if ops is not None else Levenshtein.opcodes(ref.words_lower, hyp.words_lower):
        if op.tag == "equal":
            pairs = zip(ref_w[op.src_start : op.src_end], hyp_w[op.dest_start : op.dest_end])
            for r, h in pairs:
                same += 1
                differ += r != h
    return differ, same


def _words(counts: WordCounts) -> tuple[float, float]:
    return float(counts.errors), float(counts.transcript_words)


def numbers_only_difference(reference: list[str], hypothesis: list[str]) -> bool:
    """Whether the two token lists (marks and case left out) differ, and only in tokens that hold a digit."""
    return _numbers_only(_Side.of(reference), _Side.of(hypothesis))


def _numbers_only(ref_side: _Side, hyp_side: _Side, ops: Any = None) -> bool:
    """:func:`numbers_only_difference`; ``ops`` as in :func:`_casing`."""
    ref, hyp = ref_side.words_lower, hyp_side.words_lower
    if ref == hyp:
        return False
    changed = [
        t
        for op in (ops if ops is not None else Levenshtein.opcodes(ref, hyp))
        if op.tag != "equal"
        for t in ref[op.src_start : op.src_end] + hyp[op.dest_start : op.dest_end]
    ]
    return any(any(c.isdigit() for c in t) for t in changed)


def formatting_columns(example: ScoredExample) -> dict[str, float]:
    """One example's counts (summed over the run, then made rates by :func:`formatting_value`); {} (no value) when
    its transcript is not formatted."""
    if not is_formatted(example.transcript, example.extra.get("formatted")):
        return {}
    ref = _Side.of(tokens(example.transcript))
    if example.hypothesis == example.transcript:  # written exactly so (common): no error, nothing to align
        return _unchanged_columns(ref, len(example.transcript.split()))
    return _aligned_columns(example, ref, _Side.of(tokens(example.hypothesis)))


def _aligned_columns(example: ScoredExample, ref: _Side, hyp: _Side) -> dict[str, float]:
    """:func:`formatting_columns` of a formatted example, its two sides tokenized (``ref``, ``hyp``)."""
    ops = Levenshtein.opcodes(ref.words_lower, hyp.words_lower) if ref.words_lower != hyp.words_lower else None
    normalized_same = example.words.errors == 0 and example.status == "ok"
    return _columns(
        count_edits(example.transcript.split(), example.hypothesis.split()),
        count_edits(ref.words, hyp.words),
        count_edits(ref.tokens, hyp.tokens),
        _punctuation(ref, hyp),
        _casing(ref, hyp, ops),
        normalized_same and _numbers_only(ref, hyp, ops),
    )


def _unchanged_columns(ref: _Side, raw_words: int) -> dict[str, float]:
    """:func:`formatting_columns` of a hypothesis that is its transcript written again, character for character:
    every count of the transcript, no error (a test checks it against the alignments)."""
    punct = {
        "correct": ref.marks,
        "substitutions": 0,
        "deletions": 0,
        "insertions": 0,
        "errors": 0,
        "operations": ref.marks,
        **{mark: (0, ref.tokens.count(mark)) for mark in MARKS},
    }
    same = len(ref.words)
    return _columns(
        WordCounts(hits=raw_words), WordCounts(hits=same), WordCounts(hits=len(ref.tokens)), punct, (0, same), False
    )


def _columns(
    raw: WordCounts, cased: WordCounts, marked: WordCounts, punct: dict[str, Any], casing: tuple[int, int], itn: bool
) -> dict[str, float]:
    """One formatted example's columns from its counts: the raw words' (F-WER), the cased words' (WER_C), the
    words and marks' (WER_PC), the marks' (:func:`punctuation_counts`), the casing's (differ, same) and whether its
    words differ only in numbers."""
    f_errors, f_words = _words(raw)
    c_errors, c_words = _words(cased)
    pc_errors, pc_words = _words(marked)
    case_differ, case_same = casing
    columns = {
        "examples": 1.0,
        "f_errors": f_errors,
        "f_words": f_words,
        "c_errors": c_errors,
        "c_words": c_words,
        "pc_errors": pc_errors,
        "pc_words": pc_words,
        "punct_errors": float(punct["errors"]),
        "punct_ops": float(punct["operations"]),
        "punct_substitutions": float(punct["substitutions"]),
        "punct_deletions": float(punct["deletions"]),
        "punct_insertions": float(punct["insertions"]),
        "case_errors": float(case_differ),
        "case_words": float(case_same),
        "itn": float(itn),
    }
    for mark, name in MARK_NAMES.items():
        columns[f"{name}_errors"], columns[f"{name}_ops"] = (float(n) for n in punct[mark])
    return columns


def formatting_value(sums: Mapping[str, Any]) -> dict[str, Any] | None:
    """The run's figures from the summed counts; None (``formatting: null``) without a formatted transcript."""
    if not sums.get("examples"):
        return None
    by_mark = {
        mark: pooled_rate(sums.get(f"{name}_errors"), sums.get(f"{name}_ops")) for mark, name in MARK_NAMES.items()
    }
    ops = sums.get("punct_ops")
    return {
        "examples": int(sums["examples"]),
        "f_wer": pooled_rate(sums.get("f_errors"), sums.get("f_words")),
        "wer_c": pooled_rate(sums.get("c_errors"), sums.get("c_words")),
        "wer_pc": pooled_rate(sums.get("pc_errors"), sums.get("pc_words")),
        "per": pooled_rate(sums.get("punct_errors"), ops),
        "per_by_mark": by_mark,
        "per_operations": {
            kind: pooled_rate(sums.get(f"punct_{kind}"), ops) for kind in ("substitutions", "deletions", "insertions")
        },
        "casing_error_rate": pooled_rate(sums.get("case_errors"), sums.get("case_words")),
        "itn_examples": int(sums.get("itn") or 0),
    }


#: a character of a script written without spaces between words (Thai, kana, Han)
_UNSPACED = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def same_words(reference_norm: str | None, candidate_norm: str | None) -> bool:
    """Whether two normalized outputs hold the same words: they are equal, or, in text of a script written without
    spaces (Chinese, Japanese, Thai), where the normalizer turns a dropped mark into a missing space ("你好 世界"
    against "你好世界"), equal once their spaces are removed.

    >>> same_words("你好 世界", "你好世界"), same_words("a b", "ab")
    (True, False)
    """
    if reference_norm == candidate_norm:
        return True
    if reference_norm is None or candidate_norm is None or not _UNSPACED.search(reference_norm):
        return False
    return "".join(reference_norm.split()) == "".join(candidate_norm.split())


#: drift examples named in a parity result (the first ones, by id)
DRIFT_IDS_SHOWN = 50


def formatting_parity(pairs: Iterable[tuple[str, str, str, bool]]) -> dict[str, Any] | None:
    """The candidate's formatting against the reference run's output on the same examples (``pairs``: the id, the
    reference run's and the candidate's raw output of each joined example both transcribed, and whether their
    normalized words agree: ``ExampleRows.output_pairs``): the reference's output stands for the transcript, so no
    formatted transcript is needed. ``drift_examples`` / ``drift_pct``: examples whose output differs while the
    normalized words agree (formatting only), ``number_drift_examples`` those of them that differ only in tokens
    with digits, ``drift_ids`` the first :data:`DRIFT_IDS_SHOWN` of them; ``per`` and ``casing_error_rate`` as in
    the metric. None without examples.

    >>> parity = formatting_parity([("a", "Hello, world.", "hello world", True), ("b", "Yes.", "Yes.", True)])
    >>> parity["drift_examples"], parity["drift_ids"]
    (1, ['a'])
    """
    pairs = list(pairs)
    return parity_of_parts(map_ranges(_pairs_part, pairs, len(pairs)))


def parity_of_parts(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """:func:`formatting_parity`'s result from the counts of its parts (:func:`parity_counts` each, in order)."""
    sums = sum_parity_parts(parts)
    if not sums.get("examples"):
        return None
    return _drift(sums["examples"], sums["drift"], sums["numbers"], sums["drift_ids"]) | {
        "per": pooled_rate(sums["punct_errors"], sums["punct_ops"]),
        "casing_error_rate": pooled_rate(sums["case_errors"], sums["case_words"]),
    }


def _drift(examples: int, drifted: int, numbers: int, ids: list[str]) -> dict[str, Any]:
    """The drift figures, one definition for :func:`formatting_parity` and :func:`formatting_drift`."""
    return {
        "examples": examples,
        "drift_examples": drifted,
        "drift_pct": 100.0 * drifted / examples,
        "number_drift_examples": numbers,
        "drift_ids": ids,
    }


def formatting_drift(examples: int, drifted: Sequence[tuple[str, str, str]]) -> dict[str, Any] | None:
    """The drift part of :func:`formatting_parity` alone, without aligning every pair: of ``examples`` both runs
    transcribed, ``drifted`` (id, reference run's output, candidate's output) differ in formatting only. Keys:
    ``examples``, ``drift_examples``, ``drift_pct``, ``number_drift_examples``, ``drift_ids``; None without
    examples.

    >>> formatting_drift(2, [("a", "Hello, world.", "hello world")])["drift_pct"]
    50.0
    """
    if not examples:
        return None
    numbers = sum(numbers_only_difference(tokens(ref), tokens(cand)) for _, ref, cand in drifted)
    return _drift(examples, len(drifted), numbers, [i for i, _, _ in drifted[:DRIFT_IDS_SHOWN]])


def sum_parity_parts(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The counts of consecutive parts as one (drift ids in order, the first :data:`DRIFT_IDS_SHOWN`)."""
    if not parts:
        return {}
    sums = {key: sum(part[key] for part in parts) for key in parts[0] if key != "drift_ids"}
    sums["drift_ids"] = [i for part in parts for i in part["drift_ids"]][:DRIFT_IDS_SHOWN]
    return sums


def _pairs_part(pairs: Sequence[tuple[str, str, str, bool]], start: int, stop: int) -> dict[str, Any]:
    return parity_counts(pairs[start:stop])


def parity_counts(pairs: Iterable[tuple[str, str, str, bool]]) -> dict[str, Any]:
    """:func:`formatting_parity`'s counts over some pairs (one worker's part, or all of them)."""
    n = drift = numbers = punct_errors = punct_ops = case_errors = case_words = 0
    drift_ids: list[str] = []
    for ex_id, ref, cand, same_words in pairs:
        n += 1
        ref_tokens = tokens(ref)
        if ref == cand:
            ref_marks = sum(map(_is_mark, ref_tokens))
            punct_ops, case_words = punct_ops + ref_marks, case_words + len(ref_tokens) - ref_marks
            continue
        ref_side, cand_side = _Side.of(ref_tokens), _Side.of(tokens(cand))
        if ref_side.marks or cand_side.marks:
            punct = _punctuation(ref_side, cand_side)
            punct_errors, punct_ops = punct_errors + punct["errors"], punct_ops + punct["operations"]
        # (no mark on either side, as in most unformatted output: no punctuation error); one alignment of the
        # lower-case words serves casing and the number check
        same_lower = ref_side.words_lower == cand_side.words_lower
        ops = None if same_lower else Levenshtein.opcodes(ref_side.words_lower, cand_side.words_lower)
        differ, same = _casing(ref_side, cand_side, ops)
        case_errors, case_words = case_errors + differ, case_words + same
        if same_words:
            drift += 1
            numbers += _numbers_only(ref_side, cand_side, ops)
            if len(drift_ids) < DRIFT_IDS_SHOWN:
                drift_ids.append(ex_id)
    return {
        "examples": n,
        "drift": drift,
        "numbers": numbers,
        "punct_errors": punct_errors,
        "punct_ops": punct_ops,
        "case_errors": case_errors,
        "case_words": case_words,
        "drift_ids": drift_ids,
    }


METRIC = Metric(
    "formatting",
    "punctuation, casing and number formatting against formatted transcripts (F-WER, "
    "WER_C, WER_PC, PER, casing; docs/measuring.md)",
    per_example=formatting_columns,
    aggregate="sum",
    headline="f_wer",
    better="lower",
    finish=formatting_value,
    ratios={
        "f_wer": ("f_errors", "f_words"),
        "wer_c": ("c_errors", "c_words"),
        "wer_pc": ("pc_errors", "pc_words"),
        "per": ("punct_errors", "punct_ops"),
    },
    pairings=(Pairing("drift", "drift", heading="Format drift %", flag="max_formatting_drift"),),
)
