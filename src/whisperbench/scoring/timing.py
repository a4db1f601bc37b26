"""Timing metrics: how far an implementation's segment and word times lie from the truth (or from a reference).

Pure functions over stored predictions. A prediction carries its implementation's ``segments``
(``[{start, end, text}]``) and ``words`` (``[{word, start, end}]``) in seconds; the ground truth, where the
dataset has it, is copied from the manifest row into ``extra["true_segments"]`` / ``["true_words"]``.

- **utterance-start error**: for each true segment start, the distance to the nearest predicted segment start
  (and, with word timing, to the nearest predicted word start: an utterance may begin inside a segment);
- **word timing**: words of the truth and of the prediction are normalized one by one (each token keeps its
  word's times) and aligned by the WER alignment; over the hits, the start and end errors;
- **per-utterance WER** inside a long transcript: predicted words (else segments) assigned to the true
  utterances by time, each scored against its utterance's text (a word put in the wrong utterance counts);
- **timing parity** (no truth needed): over transcript words that two runs both got right, the share
  whose start in the candidate lies within :data:`PARITY_TOLERANCE_S` of the reference run's.

Errors are absolute, in seconds per example and in milliseconds in the summaries (median, p90, share within a
collar). ``summary.json["timing"]`` is left out when the run has no timing to score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..types import Prediction, WordCounts
from .engine import raw
from .metrics import Display, Metric, MetricContext
from .normalize import normalize
from .wer import align

#: utterance starts within these distances (seconds) of a predicted segment start count as "within"
START_COLLARS_S = (0.2, 0.5)
#: word start/end collars (seconds)
WORD_COLLARS_S = (0.05, 0.1, 0.2)
#: timing parity: a word's start agrees with the reference run's within this (seconds)
PARITY_TOLERANCE_S = 0.1


@dataclass(frozen=True)
class TimedToken:
    """One normalized token with the times of the word it came from."""

    token: str
    start: float
    end: float


def start_errors(true_starts: Sequence[float], predicted_starts: Sequence[float]) -> list[float]:
    """For each true start, the distance (s) to the nearest predicted start; empty without predictions.

    >>> start_errors([0.0, 5.0], [0.25, 4.0, 5.5])
    [0.25, 0.5]
    """
    if not predicted_starts:
        return []
    predicted = np.asarray(predicted_starts, dtype=float)
    return [float(np.min(np.abs(predicted - start))) for start in true_starts]


def timed_tokens(words: Sequence[dict[str, Any]], normalizer: str) -> list[TimedToken]:
    """Each word normalized on its own; every token it becomes keeps the word's times (``Mr.`` -> ``mister``).

    >>> timed_tokens([{"word": "Hello,", "start": 0.5, "end": 0.9}], "english")
    [TimedToken(token='hello', start=0.5, end=0.9)]
    """
    tokens = []
    for word in words:
        for token in normalize(str(word.get("word", "")), normalizer).split():
            tokens.append(TimedToken(token, float(word["start"]), float(word["end"])))
    return tokens


def matched_pairs(truth: Sequence[TimedToken], hypothesis: Sequence[TimedToken]) -> list[tuple[int, int]]:
    """Index pairs (truth, hypothesis) that the WER alignment (jiwer) calls hits."""
    if not truth or not hypothesis:
        return []
    import jiwer  # on use: most runs have no times (importing jiwer is about 6 ms of every command's start)

    out = jiwer.process_words(" ".join(t.token for t in truth), " ".join(t.token for t in hypothesis))
    pairs = []
    for chunk in out.alignments[0]:
        if chunk.type == "equal":
            pairs += [
                (chunk.ref_start_idx + i, chunk.hyp_start_idx + i)
                for i in range(chunk.ref_end_idx - chunk.ref_start_idx)
            ]
    return pairs


def word_errors(truth: Sequence[TimedToken], hypothesis: Sequence[TimedToken]) -> tuple[list[float], list[float]]:
    """Start and end errors (s) over the aligned hits.

    >>> truth = [TimedToken("a", 0.0, 0.5), TimedToken("b", 0.5, 1.0)]
    >>> word_errors(truth, [TimedToken("a", 0.1, 0.5), TimedToken("c", 0.5, 1.0)])
    ([0.1], [0.0])
    """
    pairs = matched_pairs(truth, hypothesis)
    return (
        [abs(hypothesis[h].start - truth[t].start) for t, h in pairs],
        [abs(hypothesis[h].end - truth[t].end) for t, h in pairs],
    )


def hit_starts(transcript: str, words: Sequence[dict[str, Any]], normalizer: str) -> dict[int, float]:
    """{index of a normalized transcript-transcript word: the start of the predicted word aligned to it as a hit}."""
    truth = [TimedToken(token, 0.0, 0.0) for token in normalize(transcript, normalizer).split()]
    hypothesis = timed_tokens(words, normalizer)
    return {t: hypothesis[h].start for t, h in matched_pairs(truth, hypothesis)}


def start_shifts(
    reference: Prediction, candidate: Prediction, normalizer: str, candidate_transcript: str | None = None
) -> dict[int, float]:
    """{index of a normalized transcript word both runs got right (a hit in each): the candidate's start minus the
    reference's (s)}; empty when either lacks word times. The candidate's words are aligned to its own transcript
    unless ``candidate_transcript`` is given."""
    if reference.words is None or candidate.words is None:
        return {}
    ours = hit_starts(reference.transcript, reference.words, normalizer)
    theirs = hit_starts(
        candidate.transcript if candidate_transcript is None else candidate_transcript, candidate.words, normalizer
    )
    return {index: theirs[index] - start for index, start in ours.items() if index in theirs}


def parity_pairs(reference: Prediction, candidate: Prediction, normalizer: str) -> list[float]:
    """Start differences (s) between two runs over the transcript words both got right (the same word of the
    transcript, a hit in each); empty when either lacks word times."""
    return [abs(shift) for shift in start_shifts(reference, candidate, normalizer).values()]


def distribution_ms(errors_s: Sequence[float], collars_s: Sequence[float]) -> dict[str, Any] | None:
    """Median, p90 (linear interpolation) in ms, the share (%) within each collar and the count; None if empty.

    >>> distribution_ms([0.0, 0.1, 0.3], (0.2,))
    {'median': 100.0, 'p90': 260.0, 'within_200ms': 66.67, 'count': 3}
    """
    if not errors_s:
        return None
    values = np.asarray(errors_s, dtype=float)
    out: dict[str, Any] = {
        "median": round(float(np.percentile(values, 50)) * 1000, 2),
        "p90": round(float(np.percentile(values, 90)) * 1000, 2),
    }
    for collar in collars_s:
        out[f"within_{round(collar * 1000)}ms"] = round(100.0 * float(np.mean(values <= collar + 1e-9)), 2)
    out["count"] = len(values)
    return out


def parity(
    reference: Sequence[Prediction],
    candidate: Sequence[Prediction],
    normalizer: str,
    tolerance_s: float = PARITY_TOLERANCE_S,
) -> dict[str, Any] | None:
    """Timing parity of two runs (matched by example id): the share (%) of commonly-correct words whose start
    lies within ``tolerance_s`` of the reference's, the median/p90 start difference, and the examples whose
    median difference exceeds the tolerance (timing regressions); None when no word times are shared."""
    theirs = {p.id: p for p in candidate if p.status == "ok"}
    differences, regressed = [], []
    for ours in reference:
        other = theirs.get(ours.id)
        if ours.status != "ok" or other is None:
            continue
        pairs = parity_pairs(ours, other, normalizer)
        differences += pairs
        if pairs and float(np.median(pairs)) > tolerance_s:
            regressed.append(ours.id)
    if not differences:
        return None
    stats = distribution_ms(differences, (tolerance_s,)) or {}
    return {
        "within_tolerance": stats[f"within_{round(tolerance_s * 1000)}ms"],
        "tolerance_ms": tolerance_s * 1000,
        "median_ms": stats["median"],
        "p90_ms": stats["p90"],
        "words": stats["count"],
        "regressed_examples": regressed,
    }


def example_timing(pred: Prediction, normalizer: str) -> dict[str, list[float]]:
    """One example's errors (s): ``starts`` (each true utterance start to the nearest predicted segment start),
    ``starts_by_word`` (… to the nearest predicted word start), ``word_starts``, ``word_ends``; lists may be empty."""
    out: dict[str, list[float]] = {"starts": [], "starts_by_word": [], "word_starts": [], "word_ends": []}
    truth_segments = pred.extra.get("true_segments") or []
    true_starts = [float(s["start"]) for s in truth_segments]
    if truth_segments and pred.segments is not None:
        out["starts"] = start_errors(true_starts, [float(s["start"]) for s in pred.segments])
    if truth_segments and pred.words is not None:  # an utterance may start inside a predicted segment
        out["starts_by_word"] = start_errors(true_starts, [float(w["start"]) for w in pred.words])
    truth_words = pred.extra.get("true_words") or []
    if truth_words and pred.words is not None:
        out["word_starts"], out["word_ends"] = word_errors(
            timed_tokens(truth_words, normalizer), timed_tokens(pred.words, normalizer)
        )
    return out


def utterance_counts(pred: Prediction, normalizer: str) -> list[tuple[str, WordCounts]]:
    """Per-utterance alignment counts inside a long transcript: each predicted word (or, without words, each
    segment) goes by its middle to the true utterance it falls in (the last that starts before it), and is scored
    against that utterance's text. Empty unless the truth has texts and the prediction has times.

    >>> pred = Prediction("a", "", "", words=[{"word": "hi", "start": 0.1, "end": 0.3},
    ...                                       {"word": "there", "start": 0.9, "end": 1.2}])
    >>> pred.extra["true_segments"] = [{"id": "u1", "start": 0.0, "end": 0.5, "text": "hi there"},
    ...                                     {"id": "u2", "start": 0.8, "end": 1.5, "text": "there"}]
    >>> [(name, counts.hits, counts.deletions) for name, counts in utterance_counts(pred, "english")]
    [('u1', 1, 1), ('u2', 1, 0)]
    """
    truth = [s for s in pred.extra.get("true_segments") or [] if s.get("text")]
    units = pred.words if pred.words is not None else pred.segments
    if not truth or units is None:
        return []
    starts = [float(s["start"]) for s in truth]
    texts: list[list[str]] = [[] for _ in truth]
    for unit in units:
        middle = (float(unit["start"]) + float(unit["end"])) / 2
        index = max(0, int(np.searchsorted(starts, middle, side="right")) - 1)
        texts[index].append(str(unit.get("word", unit.get("text", ""))))
    return [
        (str(s.get("id", i)), align(normalize(s["text"], normalizer), normalize(" ".join(t), normalizer)))
        for i, (s, t) in enumerate(zip(truth, texts))
    ]


def crosses_seam(segment: dict[str, Any], seams_s: Sequence[float]) -> bool:
    """Whether a true utterance spans a seam (a point where one decoding window's text gives way to the next).

    >>> crosses_seam({"start": 28.0, "end": 31.0}, [29.5]), crosses_seam({"start": 31.0, "end": 40.0}, [29.5])
    (True, False)
    """
    start, end = float(segment["start"]), float(segment["end"])
    return any(start < seam < end for seam in seams_s)


def crosses_window_mark(segment: dict[str, Any], window_s: float = 30.0) -> bool:
    """Whether a true utterance spans a multiple of ``window_s`` (where 30 s windows that start at 0 meet).

    >>> crosses_window_mark({"start": 28.0, "end": 31.0}), crosses_window_mark({"start": 31.0, "end": 40.0})
    (True, False)
    """
    start, end = float(segment["start"]), float(segment["end"])
    return math.floor(start / window_s) != math.floor(end / window_s)


def _wer_of(rows: list[tuple[str, WordCounts]]) -> float | None:
    total = sum((counts for _, counts in rows), WordCounts())
    return round(100.0 * total.errors / total.transcript_words, 2) if total.transcript_words else None


def _utterance_wer(scored: Sequence[Prediction], normalizer: str) -> dict[str, Any] | None:
    """Pooled WER (%) of the utterances inside long transcripts, split by whether the utterance spans a seam of
    the decoding windows (``at_seams``): where the transcript recorded them (``seams_s``: the harness's windowed
    strategies, a native decoder's window offsets, a pipeline's chunks; ``seams_from`` says which), else the 30 s
    marks where sequential 30 s windows that start at 0 would meet (``seams``: which were used); where seams were
    recorded, the same split at the 30 s marks (``at_30s_marks``) for comparison; and the three worst utterances."""
    rows, seam, marks, sources, examples = [], [], [], [], 0
    for pred in scored:
        counted = utterance_counts(pred, normalizer)
        if not counted:
            continue
        truth = [s for s in pred.extra.get("true_segments") or [] if s.get("text")]
        rows += counted
        seams, examples = pred.extra.get("seams_s"), examples + 1
        if seams is not None:
            sources.append(str(pred.extra.get("seams_from") or "recorded"))
        crosses = partial(crosses_seam, seams_s=seams) if seams is not None else crosses_window_mark
        seam += [row for row, segment in zip(counted, truth) if crosses(segment)]
        marks += [row for row, segment in zip(counted, truth) if crosses_window_mark(segment)]
    if not rows or _wer_of(rows) is None:
        return None
    worst = sorted(rows, key=lambda row: -(row[1].errors / max(row[1].transcript_words, 1)))[:3]
    out = {
        "wer": _wer_of(rows),
        "utterances": len(rows),
        "seams": seams_label(sources, examples),
        **_split(rows, seam, "at_seams", "away_from_seams"),
        "worst": [{"id": name, "wer": round(100.0 * c.errors / max(c.transcript_words, 1), 2)} for name, c in worst],
    }
    if sources:
        out["at_30s_marks"] = _split(rows, marks, "at_seams", "away_from_seams")
    return out


Rows = list[tuple[str, WordCounts]]


def _split(rows: Rows, at: Rows, at_key: str, away_key: str) -> dict[str, dict[str, Any]]:
    away = [row for row in rows if all(row is not other for other in at)]
    return {
        at_key: {"utterances": len(at), "wer": _wer_of(at)},
        away_key: {"utterances": len(away), "wer": _wer_of(away)},
    }


def seams_label(sources: Sequence[str], examples: int) -> str:
    """Where a run's seams came from: the recorded sources, else the 30 s marks.

    >>> seams_label([], 2), seams_label(["decoder windows"] * 2, 2), seams_label(["harness windows"], 2)
    ('30 s marks', 'decoder windows', 'harness windows where recorded, else 30 s marks')
    """
    if not sources:
        return "30 s marks"
    named = ", ".join(sorted(set(sources)))
    return named if len(sources) == examples else f"{named} where recorded, else 30 s marks"


def summarize(scored: Sequence[Prediction], context: MetricContext) -> dict[str, Any] | None:
    """``summary.json["timing"]``: pooled utterance-start and word errors, and what the run stored (read from the
    predictions' raw fields: their scores are not needed)."""
    pooled: dict[str, list[float]] = {"starts": [], "starts_by_word": [], "word_starts": [], "word_ends": []}
    ok = [p for p in raw(scored) if p.status == "ok"]
    stored, refused = {"segments": 0, "words": 0}, []
    for pred in ok:  # one pass: a run without times (most runs) costs a look at each prediction, no more
        if pred.extra.get("timing_refused"):
            refused.append(pred)
        if pred.segments is None and pred.words is None:  # no predicted time: nothing to measure
            continue
        stored["segments"] += pred.segments is not None
        stored["words"] += pred.words is not None
        for key, errors in example_timing(pred, context.normalizer).items():
            pooled[key] += errors
    if not stored["segments"] and not stored["words"] and not refused:
        return None
    out: dict[str, Any] = {"examples_with_segments": stored["segments"], "examples_with_words": stored["words"]}
    if refused:  # times that cannot be right (Prediction.refuse_bad_times): counted and named, never scored
        out["refused"] = {
            "examples": len(refused),
            "first": [reason for p in refused[:5] for reason in p.extra["timing_refused"].values()],
        }
    for key, errors, collars in (
        ("utterance_start_error_ms", pooled["starts"], START_COLLARS_S),
        ("utterance_word_start_error_ms", pooled["starts_by_word"], START_COLLARS_S),
        ("word_start_error_ms", pooled["word_starts"], WORD_COLLARS_S),
        ("word_end_error_ms", pooled["word_ends"], WORD_COLLARS_S),
    ):
        value = distribution_ms(errors, collars)
        if value is not None:
            out[key] = value
    utterances = _utterance_wer(ok, context.normalizer)
    if utterances is not None:
        out["utterance_wer"] = utterances
    return out


#: the report section: one row per run that stored times, the pooled errors (heading -> key of the value)
DISPLAY = Display(
    "Timing",
    {
        "Examples timed": "examples_with_segments",
        "Start err median ms": "utterance_start_error_ms.median",
        "Start err p90 ms": "utterance_start_error_ms.p90",
        "Starts ≤200 ms %": "utterance_start_error_ms.within_200ms",
        "Starts ≤500 ms %": "utterance_start_error_ms.within_500ms",
        "True starts": "utterance_start_error_ms.count",
        "Start by word median ms": "utterance_word_start_error_ms.median",
        "Utterance WER %": "utterance_wer.wer",
        "Word start median ms": "word_start_error_ms.median",
        "Word start p90 ms": "word_start_error_ms.p90",
        "Words ≤100 ms %": "word_start_error_ms.within_100ms",
        "Words matched": "word_start_error_ms.count",
    },
    "Errors against ground-truth times: for each true utterance start, the nearest predicted segment start; words "
    "matched by the WER alignment (see docs/timestamps.md).",
    label="timing errors",
    unit="count",
)

METRIC = Metric(
    "timing",
    "segment and word timing against ground-truth times (median/p90 ms, share within collars)",
    summarize,
    display=DISPLAY,
)
