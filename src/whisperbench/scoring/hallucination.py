"""Hallucination measures: what Whisper ports do wrong besides word errors. Pure per-example functions.

Per example, from the raw output and the (normalized) reference:

- **repetition**: the longest run of one repeated n-gram in the normalized hypothesis (``a b a b a b``: the
  2-gram ``a b`` three times in a row), and Whisper's own signal, the gzip compression ratio of the raw text
  (openai-whisper retries a window whose ratio is above 2.4). An example is a **loop** when some phrase of up
  to ``max_ngram`` words repeats at least ``loop_repeats`` times in a row, over at least ``loop_words`` words,
  *and* more times in a row than in the transcript (one saying "thank you thank you thank you" does not
  make that a loop; "no, no, no" is too short to be one).
- **insertion burst**: the longest run of consecutive inserted words in the word alignment against the
  transcript; a **burst** when it is at least ``burst_words`` long. On an empty transcript every output word is
  inserted, so a long output on silence is also a burst.
- **non-speech output**: the normalized transcript is empty (non-speech audio: silence, noise, music) and the
  normalized hypothesis is not. Its words are errors (insertions).
- **catastrophic**: the example's WER is at least ``catastrophic_wer`` (100 %); undefined, hence never, on an
  empty transcript (non-speech output is counted on its own).

Failed examples are counted by the summary (``num_failed``), never flagged here. The thresholds are
:class:`Thresholds`; a run's ``summary.json["hallucination"]`` holds the counts and the example ids of each
kind, and the thresholds it used. ``MetricContext.options["hallucination"]`` (keys: fields of :class:`Thresholds`)
override the defaults.

>>> repeat_run("i will i will i will go".split()).copies
3
>>> insertion_burst("a b c", "a x y z b c")
3
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import eq
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from ..core.ranges import Range
from ..types import Prediction
from .arrays import FALSE, OK, numbers, strings
from .metrics import Display, Metric, MetricContext, Pairing
from .wer import example_wers

#: each threshold's range: a loop needs two copies; a burst, a loop, an n-gram at least one word
THRESHOLD_LIMITS = {
    "loop_repeats": Range(2, 1000, integer=True),
    "loop_words": Range(1, 10_000, integer=True),
    "max_ngram": Range(1, 1000, integer=True),
    "burst_words": Range(1, 10_000, integer=True),
    "compression_ratio": Range(0, 100, open_low=True),
    "catastrophic_wer": Range(0, 10_000, unit="%"),
}


@dataclass(frozen=True)
class Thresholds:
    """When an example counts as each kind of hallucination (the documented defaults)."""

    loop_repeats: int = 3  # a phrase said this many times in a row (and more often in a row than the transcript)
    loop_words: int = 5  # ... covering at least this many words ("no, no, no" is not a loop; "thank you" x 3 is)
    max_ngram: int = 20  # the longest phrase (in words) looked for as a repeated unit
    burst_words: int = 5  # this many consecutive inserted words
    compression_ratio: float = 2.4  # openai-whisper's compression_ratio_threshold
    catastrophic_wer: float = 100.0  # example WER in percent

    def __post_init__(self) -> None:
        for name, limit in THRESHOLD_LIMITS.items():  # a NaN or out-of-range threshold would flag every example
            limit.check(f"hallucination threshold {name}", getattr(self, name))

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Thresholds:
        """The defaults with any of ``options`` (keys: field names) applied; an unknown key is an error."""
        names = {f.name: f.type for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise ValueError(f"unknown hallucination threshold(s) {unknown}; known: {sorted(names)}")
        defaults, typed = cls(), {}
        for key, value in options.items():
            kind = type(getattr(defaults, key))
            try:
                typed[key] = kind(value)
            except (TypeError, ValueError):
                raise ValueError(
                    f"hallucination threshold {key}={value!r}: expected {kind.__name__} "
                    f"(default {getattr(defaults, key)})"
                ) from None
        return cls(**typed)


@dataclass(frozen=True)
class Repeat:
    """A run of one phrase said ``copies`` times in a row (``words`` = words the run covers)."""

    phrase: tuple[str, ...] = ()
    copies: int = 0

    @property
    def words(self) -> int:
        """How many words the run covers (the phrase's length times its copies)."""
        return len(self.phrase) * self.copies


def _runs(words: Sequence[str], periods: Iterable[int]) -> Iterator[Repeat]:
    """Every maximal run of a phrase of ``n`` words (``n`` in ``periods``) repeated at least twice in a row."""
    for n in periods:
        start = 0
        for same, group in groupby(map(eq, words, words[n:])):  # words[j] == words[j + n], run by run
            length = len(list(group))
            if same and length >= n:  # words[start : start + length + n] has period n
                yield Repeat(tuple(words[start : start + n]), (length + n) // n)
            start += length


def repeat_run(words: Sequence[str], max_ngram: int = Thresholds.max_ngram) -> Repeat:
    """The repeated run covering the most words (ties: more copies, then the shorter phrase); none: empty."""
    runs = _runs(words, range(1, min(max_ngram, len(words) // 2) + 1))
    return max(runs, key=lambda r: (r.words, r.copies, -len(r.phrase)), default=Repeat())


def copies_in_a_row(words: Sequence[str], phrase: tuple[str, ...]) -> int:
    """The most times ``phrase`` occurs back to back in ``words`` (0 when it does not occur).

    >>> copies_in_a_row("no no no way".split(), ("no",))
    3
    """
    occurs = any(tuple(words[j : j + len(phrase)]) == phrase for j in range(len(words) - len(phrase) + 1))
    return _copies_in_a_row(words, len(phrase), {phrase}).get(phrase, 1 if occurs else 0)


def _copies_in_a_row(words: Sequence[str], n: int, phrases: set[tuple[str, ...]]) -> dict[tuple[str, ...], int]:
    """For each of ``phrases`` (``n`` words each) said at least twice back to back in ``words``, the most times it
    is (a phrase said once or never is left out: a loop needs more copies than that). Two copies back to back lie
    in a stretch of period ``n`` (:func:`_runs`), where the phrase starting ``r`` words in repeats ``(covered - r)
    // n`` times: one pass per length, linear in the length of ``words``.

    >>> _copies_in_a_row("x a b a b a b c a b".split(), 2, {("a", "b"), ("b", "a"), ("b", "c")})
    {('a', 'b'): 3, ('b', 'a'): 2}
    """
    best: dict[tuple[str, ...], int] = {}
    start = 0
    for same, group in groupby(map(eq, words, words[n:])):  # words[j] == words[j + n], run by run
        length = len(list(group))
        if same and length >= n:  # words[start : start + length + n] has period n
            for shift in range(n):
                phrase = tuple(words[start + shift : start + shift + n])
                copies = (length + n - shift) // n
                if phrase in phrases and copies > best.get(phrase, 0):
                    best[phrase] = copies
        start += length
    return best


def _loop_periods(words: Sequence[str], thresholds: Thresholds) -> set[int]:
    """The spacings (≤ ``max_ngram``) at which some word comes back ``loop_repeats`` times in a row: a loop's
    phrase length is one of them (its first word comes back so), found without looking for the runs: per pair of
    places of one word at most ``max_ngram`` apart (their spacing ``g``), whether the word is also at the next
    ``loop_repeats - 2`` places ``g`` further. Linear in the text's length (a word's places are visited only
    within ``max_ngram`` of each other, and a million-word loop of one word stops once every spacing is found);
    a sentence that says "the" three times costs a few set lookups, not an array operation per spacing."""
    repeats, widest = thresholds.loop_repeats, thresholds.max_ngram
    if len(words) - len(set(words)) < repeats - 1:
        return set()  # no word said loop_repeats times: the common case
    places: dict[str, list[int]] = {}
    for at, word in enumerate(words):
        places.setdefault(word, []).append(at)
    periods: set[int] = set()
    for found in places.values():
        if len(found) < repeats:
            continue
        present, count = set(found), len(found)
        for n, start in enumerate(found):
            later = n + 1
            while later < count and found[later] - start <= widest and len(periods) < widest:
                gap = found[later] - start
                if gap not in periods and all(start + k * gap in present for k in range(2, repeats)):
                    periods.add(gap)
                later += 1
    return periods


def loop_of(transcript: str, hypothesis: str, thresholds: Thresholds = Thresholds()) -> Repeat | None:
    """The repeated run that makes ``hypothesis`` a loop against ``transcript`` (normalized texts), or None: linear
    in the texts' lengths (the transcript's copies of each candidate phrase counted in one pass per length)."""
    hyp_words = hypothesis.split()
    periods = _loop_periods(hyp_words, thresholds)
    if not periods:  # the common case: no word comes back often enough at a fixed spacing
        return None
    candidates = [
        r
        for r in _runs(hyp_words, sorted(periods))
        if r.copies >= thresholds.loop_repeats and r.words >= thresholds.loop_words
    ]
    transcript_words = transcript.split()
    in_transcript: dict[tuple[str, ...], int] = {}
    for n in {len(r.phrase) for r in candidates}:
        in_transcript |= _copies_in_a_row(transcript_words, n, {r.phrase for r in candidates if len(r.phrase) == n})
    loops = [r for r in candidates if r.copies > in_transcript.get(r.phrase, 0)]
    return max(loops, key=lambda r: (r.words, r.copies, -len(r.phrase)), default=None)


def compression_ratio(text: str) -> float | None:
    """Whisper's repetition signal: UTF-8 length over zlib-compressed length (None for empty text)."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data.strip() else None


def insertion_burst(transcript: str, hypothesis: str) -> int:
    """The longest run of consecutive inserted words in the word alignment of two normalized texts."""
    transcript_words, hyp_words = transcript.split(), hypothesis.split()
    if not transcript_words:
        return len(hyp_words)
    longest = 0
    for op in Levenshtein.opcodes(transcript_words, hyp_words):
        if op.tag == "insert":
            longest = max(longest, op.dest_end - op.dest_start)
    return longest


#: summary key -> the per-example flag it counts
KINDS = {
    "loops": "loop",
    "bursts": "burst",
    "nonspeech_with_output": "nonspeech_output",
    "catastrophic": "catastrophic",
}


@dataclass(frozen=True)
class ExampleHallucination:
    """The hallucination measures of one scored example."""

    id: str
    loop_run: Repeat | None  # the repeated phrase that makes it a loop
    compression_ratio: float | None
    burst_words: int
    burst: bool
    nonspeech: bool  # the normalized transcript is empty
    nonspeech_output: bool  # ... and the normalized hypothesis is not
    catastrophic: bool

    @property
    def loop(self) -> bool:
        """Whether a phrase repeats beyond the transcript (see :func:`loop_of`)."""
        return self.loop_run is not None

    @property
    def flags(self) -> list[str]:
        """The kinds this example counts as: loop, burst, nonspeech_output, catastrophic."""
        return [k for k in ("loop", "burst", "nonspeech_output", "catastrophic") if getattr(self, k)]


_DEFAULTS = Thresholds()  # what the score table's columns are measured with


def _measured(pred: Prediction, thresholds: Thresholds) -> tuple[int, Repeat | None, float | None]:
    """(longest insertion burst, loop run, compression ratio) of a scored prediction; a failed one: (0, None, None)."""
    score = pred.scored()
    if pred.status != "ok":
        return 0, None, None
    ref, hyp = score.transcript_norm, score.hypothesis_norm
    insertions = score.words.insertions
    burst = insertions if insertions < 2 else insertion_burst(ref, hyp)  # under two: the longest run is their number
    loop = loop_of(ref, hyp, thresholds) if hyp != ref else None
    return burst, loop, compression_ratio(pred.hypothesis)


def example_hallucination(pred: Prediction, thresholds: Thresholds = Thresholds()) -> ExampleHallucination:
    """The measures of one prediction already scored (its normalized texts and WER; unscored: UnscoredError); its
    flags decided by :meth:`Measures.flags`, the one decision every run's counts come from."""
    burst, loop, ratio = _measured(pred, thresholds)
    words = pred.scored().words
    one = Measures(
        np.array([pred.id], dtype=object),
        np.array([pred.status == "ok"], dtype=bool),
        tuple(np.array([getattr(words, k)], dtype=np.int64) for k in _COUNTS),  # type: ignore[arg-type]
        np.array([burst], dtype=np.int64),
        np.array([loop.words if loop else 0], dtype=np.int64),
        np.array([np.nan if ratio is None else ratio], dtype=np.float64),
    )
    flags = {kind: bool(flag[0]) for kind, flag in one.flags(thresholds).items()}
    return ExampleHallucination(
        id=pred.id,
        loop_run=loop,
        compression_ratio=ratio,
        burst_words=burst,
        burst=flags["bursts"],
        nonspeech=flags["nonspeech"],
        nonspeech_output=flags["nonspeech_with_output"],
        catastrophic=flags["catastrophic"],
    )


def stored_measures(pred: Prediction) -> tuple[int, int, float | None]:
    """The score table's hallucination columns of one scored prediction: the longest insertion burst, the words
    of its loop under the default thresholds (0: none) and the compression ratio of its raw text. From them
    :meth:`Measures.flags` gives each kind's flags without normalizing or aligning again.

    >>> from whisperbench.scoring.engine import score_prediction
    >>> looped = score_prediction(Prediction("a", "go", "go on and on and on and on"), "basic")
    >>> burst, loop, ratio = stored_measures(looped)
    >>> burst, loop, round(ratio, 2)
    (7, 6, 1.44)
    """
    burst, loop, ratio = _measured(pred, _DEFAULTS)
    return burst, loop.words if loop else 0, ratio


def loops_stored(thresholds: Thresholds) -> bool:
    """Whether the stored ``loop_words`` column answers the loop question under ``thresholds`` (it was found
    under the default loop thresholds)."""
    return (thresholds.loop_repeats, thresholds.loop_words, thresholds.max_ngram) == (
        _DEFAULTS.loop_repeats,
        _DEFAULTS.loop_words,
        _DEFAULTS.max_ngram,
    )


@dataclass(frozen=True)
class Measures:
    """A run's per-example measures as arrays (one entry per example, in one order): ids, status ok, word counts
    (hits, substitutions, deletions, insertions) and :func:`stored_measures`' three; read from a score table's
    columns (:meth:`of_table`) or computed from scored predictions (:meth:`of_predictions`)."""

    ids: np.ndarray
    ok: np.ndarray
    counts: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    burst_words: np.ndarray
    loop_words: np.ndarray  # under the default loop thresholds
    compression_ratio: np.ndarray  # NaN where the example has none

    @classmethod
    def of_table(cls, table: Any) -> Measures:
        """From a score table's columns (``scoring.table``: a pyarrow table)."""
        import pyarrow.compute as pc

        def col(name: str) -> np.ndarray:
            return numbers(table[name])

        ratio = numbers(table["compression_ratio"], np.float64)  # nulls as NaN
        counts = (col("hits"), col("substitutions"), col("deletions"), col("insertions"))
        ok = numbers(pc.fill_null(pc.equal(table["status"], OK), FALSE))  # a missing status is no success
        return cls(strings(table["id"]), ok, counts, col("burst_words"), col("loop_words"), ratio)

    @classmethod
    def of_predictions(cls, scored: Sequence[Prediction]) -> Measures:
        """Computed from scored predictions (what the score table's columns hold)."""
        measures = [stored_measures(p) for p in scored]
        words = [p.scored().words for p in scored]
        return cls(
            np.array([p.id for p in scored], dtype=object),
            np.array([p.status == "ok" for p in scored], dtype=bool),
            tuple(np.array([getattr(w, k) for w in words], dtype=np.int64) for k in _COUNTS),  # type: ignore[arg-type]
            np.array([m[0] for m in measures], dtype=np.int64),
            np.array([m[1] for m in measures], dtype=np.int64),
            np.array([np.nan if m[2] is None else m[2] for m in measures], dtype=np.float64),
        )

    def flags(self, thresholds: Thresholds, loop_words: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Per example, each kind's flag (``loops``, ``bursts``, ``nonspeech_with_output``, ``catastrophic``) and
        ``nonspeech`` (the normalized transcript is empty): the one decision, :func:`example_hallucination` asks it too;
        ``loop_words`` found under ``thresholds`` where they are not the default loop thresholds."""
        hits, subs, dels, ins = self.counts
        transcript_words = hits + subs + dels
        wer = example_wers(subs + dels + ins, transcript_words)
        nonspeech = transcript_words == 0
        loops = self.loop_words if loop_words is None else loop_words
        return {
            "loops": self.ok & (loops > 0),
            "bursts": self.ok & (self.burst_words >= thresholds.burst_words),
            "nonspeech_with_output": self.ok & nonspeech & (hits + subs + ins > 0),
            "catastrophic": self.ok & ~nonspeech & (wer >= thresholds.catastrophic_wer),
            "nonspeech": nonspeech,
        }


_COUNTS = ("hits", "substitutions", "deletions", "insertions")


def loop_words_under(scored: Sequence[Prediction], thresholds: Thresholds) -> np.ndarray:
    """Per prediction, the words of its loop under ``thresholds`` (0: none): what the stored column cannot say
    when the loop thresholds are not the defaults."""
    found = (example_hallucination(p, thresholds).loop_run for p in scored)
    return np.array([run.words if run else 0 for run in found], dtype=np.int64)


def summarize(scored: Sequence[Prediction], context: MetricContext) -> dict[str, Any] | None:
    """``summary.json["hallucination"]``: counts and example ids of each kind, the thresholds used; from the
    run's score table when the context holds it (its rows are ``scored``, in order; under the default loop
    thresholds the table alone is enough: a breakdown's part passes no predictions)."""
    if not (scored or (context.table is not None and context.table.num_rows)):
        return None
    thresholds = Thresholds.from_options(context.options.get("hallucination", {}))
    measures = Measures.of_table(context.table) if context.table is not None else Measures.of_predictions(scored)
    loops = None if loops_stored(thresholds) else loop_words_under(scored, thresholds)
    flags = measures.flags(thresholds, loops)
    ratio = measures.compression_ratio
    ids = {kind: sorted(measures.ids[flags[kind]].tolist()) for kind in KINDS}
    ids["high_compression"] = sorted(measures.ids[ratio > thresholds.compression_ratio].tolist())
    nonspeech = int(flags["nonspeech"].sum())
    loop_words = measures.loop_words if loops is None else loops
    return {
        **{kind: len(names) for kind, names in ids.items()},
        "nonspeech_examples": nonspeech,
        "nonspeech_output_rate": 100.0 * len(ids["nonspeech_with_output"]) / nonspeech if nonspeech else None,
        "longest_loop_words": int(loop_words.max(initial=0)),
        "longest_burst_words": int(measures.burst_words.max(initial=0)),
        "max_compression_ratio": float(np.nanmax(ratio)) if np.any(ratio > 0) else None,
        "ids": ids,
        "thresholds": dataclasses.asdict(thresholds),
    }


def _options(values: dict[str, Any]) -> dict[str, Any]:
    return dataclasses.asdict(Thresholds.from_options(values))


#: the report section: one row per run, each kind's count (heading -> key of the value)
DISPLAY = Display(
    "Hallucinations",
    {
        "Loops": "loops",
        "Bursts": "bursts",
        "Non-speech examples": "nonspeech_examples",
        "Output on non-speech": "nonspeech_with_output",
        "Catastrophic": "catastrophic",
        "Ratio > 2.4": "high_compression",
        "Non-speech output %": "nonspeech_output_rate",
    },
    "Examples counted (defaults, docs/robustness.md): loop: a phrase said ≥ 3 times in a row (≥ 5 words), more "
    "often than in the transcript; burst: ≥ 5 consecutive inserted words; output on non-speech: words written on "
    "audio whose transcript is empty; catastrophic: example WER ≥ 100 %; ratio > 2.4: Whisper's gzip "
    "compression ratio of the raw output above openai-whisper's retry threshold.",
    label="loops, bursts or output on non-speech",
    unit="examples",
)

METRIC = Metric(
    "hallucination",
    "repetition loops, insertion bursts, output on non-speech audio, catastrophic examples (scoring/hallucination.py)",
    summarize,
    options=_options,
    display=DISPLAY,
    #: the examples that loop (burst) in the candidate but not in the reference (reports/hallucination.py)
    pairings=(
        Pairing("new_loops", "new", "loops", heading="New loops", flag="max_new_loops"),
        Pairing("new_bursts", "new", "bursts", heading="New bursts", flag="max_new_bursts"),
    ),
)
