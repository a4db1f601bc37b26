"""Streaming metrics: when text appears, how often it changes, how long after an utterance ends it is committed.

A streaming prediction keeps its emissions (``Prediction.stream``: audio cursor, wall time, the committed piece,
the interim text). An emission's **time** is its audio cursor under the ``simulated`` clock (computation-unaware:
the lower bound) and its wall time since the stream started under the ``real-time`` clock (what a user saw).
Texts are normalized with the run's normalizer, each side as one text (the truth words keep their times through a
word-index map, :func:`sourced_tokens`, so "twenty five" against "25" never shifts the alignment); words are matched
to the truth by the WER alignment's hits. A stream whose times cannot be true is refused
(:class:`InconsistentStream`, naming the example): a wall time or audio cursor going back, a word committed before
the audio cursor reached it, a latency below zero.

- ``commit_delay_s`` / ``interim_delay_s`` (whisperbench's own, where the dataset has word times): for each emission
  that commits new text (or shows interim text), its time minus the true end of the last word it has transcribed
  correctly so far (truth words that start before the cursor only; a word not over at the cursor counts from the
  cursor). p50/p90/p99 over all such emissions of the run. (Named ``committed_latency_s`` / ``interim_latency_s``
  before 2026-11-29; it is OpenBench's minimum latency without its clipping, not OpenBench's figure.)
- ``openbench_latency_s`` {mean, p50, p90, p99, n} (where the dataset has word times): argmaxinc/OpenBench's
  confirmed streaming latency as its ``streaming_latency_metrics/latency_metrics.py`` computes it
  (:func:`openbench_latencies`): per committing emission the mean of its minimum and maximum latency, negatives
  clipped to 0; ``mean`` the duration-weighted headline, the percentiles over the unweighted latencies.
- ``end_of_utterance_latency_s`` (where the dataset has utterance ``segments`` with texts): for each utterance, the
  time of the emission that commits its last correctly transcribed word minus the utterance's true end (or the
  audio cursor then, if earlier); utterances
  with no word right are counted as ``missed``. p50/p90.
- ``revisions_per_word``: words shown (committed + interim) that a later emission changed or removed, per word of
  the final text (committed text is never revised; appending is not a revision).
- ``first_output_s``: the time of the first emission that shows any text. ``final_lag_s`` (real-time clock): how
  long after the audio's end the final text was shown (the first emission from which the shown text stays
  final). ``wall_per_audio``: the stream's wall time per audio second.

The 90th percentiles carry a 95 % interval from resampling examples (a cluster bootstrap, seeded).

>>> stream = [{"audio_s": 1.0, "wall_s": 0.2, "committed": "", "interim": "hello word"},
...           {"audio_s": 2.0, "wall_s": 0.5, "committed": "hello world", "interim": ""}]
>>> revisions(stream)
(1, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from ..errors import WhisperbenchError
from ..types import Prediction
from .engine import raw
from .metrics import Metric, MetricContext
from .normalize import normalize
from .timing import TimedToken, matched_pairs

CLOCK_TIME = {"simulated": "audio_s", "real-time": "wall_s"}
RESAMPLES = 1000
SEED = 0


@dataclass
class StreamFacts:
    """One example's streaming measures (latencies in seconds)."""

    first_output_s: float | None = None
    revised: int = 0
    words: int = 0
    committed: list[float] = field(default_factory=list)
    interim: list[float] = field(default_factory=list)
    end_of_utterance: list[float] = field(default_factory=list)
    openbench: list[float] = field(default_factory=list)
    openbench_durations: list[float] = field(default_factory=list)
    missed_utterances: int = 0
    final_lag_s: float | None = None
    wall_s: float = 0.0
    audio_s: float = 0.0


def clock_of(pred: Prediction) -> str:
    """The clock a prediction was streamed under (``extra["streaming"]["clock"]``; simulated when unsaid)."""
    return str((pred.extra.get("streaming") or {}).get("clock") or "simulated")


def emission_times(stream: Sequence[dict[str, Any]], clock: str) -> list[float]:
    """Each emission's time under ``clock`` (the audio cursor, or the wall time)."""
    key = CLOCK_TIME.get(clock, "audio_s")
    return [float(e[key]) for e in stream]


def revisions(stream: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """(words shown that a later emission changed or removed, words of the final text), on the raw words."""
    committed: list[str] = []
    shown: list[str] = []
    changed = 0
    for e in stream:
        committed += str(e.get("committed") or "").split()
        now = committed + str(e.get("interim") or "").split()
        same = 0
        while same < min(len(shown), len(now)) and shown[same] == now[same]:
            same += 1
        changed += len(shown) - same
        shown = now
    return changed, len(shown)


def _settled(stream: Sequence[dict[str, Any]]) -> int:
    """The index of the emission from which the text shown (committed + interim) stays the final text."""
    shown, committed = [], ""
    for e in stream:
        committed += str(e.get("committed") or "")
        shown.append((committed + str(e.get("interim") or "")).split())
    k = len(shown) - 1
    while k > 0 and shown[k - 1] == shown[-1]:
        k -= 1
    return k


def _tokens(text: str, normalizer: str) -> list[str]:
    return normalize(text, normalizer).split() if text.strip() else []


#: how far past the audio cursor a truth word may begin and still count as heard when an emission commits it (the
#: word times come from an aligner, a few hundredths of a second off at a boundary)
HEARD_TOLERANCE_S = 0.1


class InconsistentStream(WhisperbenchError):
    """A stream whose times cannot be true (refused: its latencies would mean nothing)."""


def sourced_tokens(words: Sequence[str], normalizer: str) -> list[tuple[str, int, int]]:
    """The words normalized as one text, each token with the first and last word it came from: the normalizer
    reads the whole text (under the English one "twenty five" is "25", where word by word it is "20 5"), and the
    tokens are mapped back by aligning them with the words normalized one by one (a token that merges or rewrites
    several words comes from all of them).

    >>> sourced_tokens(["it", "cost", "twenty", "five"], "english")
    [('it', 0, 0), ('cost', 1, 1), ('25', 2, 3)]
    >>> sourced_tokens(["it", "cost", "twenty", "five", "dollars"], "english")
    [('it', 0, 0), ('cost', 1, 1), ('$25', 2, 4)]
    """
    whole = _tokens(" ".join(words), normalizer)
    single = [(token, i) for i, word in enumerate(words) for token in _tokens(word, normalizer)]
    if [token for token, _ in single] == whole:
        return [(token, i, i) for token, i in single]
    out: list[tuple[str, int, int]] = []
    for op in _merged_opcodes(whole, [token for token, _ in single]):
        if op[0] == "equal":
            out += [(whole[k], single[j][1], single[j][1]) for k, j in zip(range(op[1], op[2]), range(op[3], op[4]))]
        elif op[2] > op[1]:  # tokens of the whole text that the single words do not give as they are
            first, last = (op[3], op[4] - 1) if op[4] > op[3] else (max(op[3] - 1, 0), min(op[3], len(single) - 1))
            out += [(whole[k], single[first][1], single[last][1]) for k in range(op[1], op[2])]
    return out


def _merged_opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """Levenshtein opcodes of ``a`` against ``b``, each run of unequal ones merged into one ("differ")."""
    out: list[tuple[str, int, int, int, int]] = []
    for op in Levenshtein.opcodes(a, b):
        tag = "equal" if op.tag == "equal" else "differ"
        if out and tag == "differ" == out[-1][0]:
            out[-1] = (tag, out[-1][1], op.src_end, out[-1][3], op.dest_end)
        else:
            out.append((tag, op.src_start, op.src_end, op.dest_start, op.dest_end))
    return out


def truth_tokens(words: Sequence[dict[str, Any]], normalizer: str) -> list[TimedToken]:
    """The truth words normalized as one text (:func:`sourced_tokens`), each token with the start of its first word
    and the end of its last."""
    spans = sourced_tokens([str(w.get("word", "")) for w in words], normalizer)
    return [TimedToken(token, float(words[i]["start"]), float(words[j]["end"])) for token, i, j in spans]


def _last_right_end(spoken: Sequence[TimedToken], tokens: list[str]) -> float | None:
    """The true end of the last truth token (of ``spoken``) that ``tokens`` got right; None: none right."""
    pairs = matched_pairs(spoken, [TimedToken(token, 0.0, 0.0) for token in tokens])
    return spoken[max(pairs, key=lambda pair: pair[1])[0]].end if pairs else None


def _shown_texts(stream: Sequence[dict[str, Any]]) -> list[tuple[str, str, bool, bool]]:
    """Per emission: the committed text so far, that plus its interim text, whether it commits new text and
    whether it shows interim text."""
    committed, out = "", []
    for e in stream:
        piece, interim = str(e.get("committed") or ""), str(e.get("interim") or "")
        committed += piece
        out.append((committed, committed + interim, bool(piece.strip()), bool(interim.strip())))
    return out


def cursor_latencies(
    stream: Sequence[dict[str, Any]], times: Sequence[float], truth: Sequence[dict[str, Any]], normalizer: str
) -> tuple[list[float], list[float]]:
    """whisperbench's commit and interim delays, (committed, interim): per emission that commits new text (or shows
    interim text), its time minus the true end of the last truth token that the text so far got right (committed
    text; committed + interim text), the truth words (``truth``: word, start, end) begun before the audio cursor
    and the text each normalized as one text. A word that
    ends after the cursor counts from the cursor (what had been heard of it)."""
    out: tuple[list[float], list[float]] = ([], [])
    for e, t, (committed, shown, commits, interim) in zip(stream, times, _shown_texts(stream)):
        cursor = float(e["audio_s"])
        spoken = truth_tokens([w for w in truth if float(w["start"]) < cursor], normalizer)
        for latencies, new, text in ((out[0], commits, committed), (out[1], interim, shown)):
            end = _last_right_end(spoken, _tokens(text, normalizer)) if new else None
            if end is not None:
                latencies.append(t - min(end, cursor))
    return out


def openbench_latencies(
    stream: Sequence[dict[str, Any]], times: Sequence[float], truth: Sequence[TimedToken], normalizer: str
) -> tuple[list[float], list[float]]:
    """argmaxinc/OpenBench's confirmed streaming latency (``streaming_latency_metrics/latency_metrics.py``) of one
    stream: (latencies, durations). Its results are the committed text so far at each emission that commits
    (its cursor: the emission's time). Per result, the truth aligned with it (jiwer): the transcript cursor is the
    end of the truth token of the last hit; the segment starts at the truth token of the first hit (first
    result) or at the truth token under the first word the result inserted or changed against the previous one
    (none: the result is left out). The minimum latency is the time minus the transcript cursor, the maximum the
    time minus the previous result's cursor (the time itself for the first); both clipped at 0; the latency is
    their mean, weighted by the segment's duration in the headline."""
    import jiwer  # on use, as timing.matched_pairs does

    truth_text = " ".join(w.token for w in truth)
    latencies: list[float] = []
    durations: list[float] = []
    cursors: list[float] = []
    previous: list[str] | None = None
    for t, (committed, _, commits, _) in zip(times, _shown_texts(stream)):
        if not commits:
            continue
        result, before = _tokens(committed, normalizer), previous
        previous = result
        chunks = jiwer.process_words(truth_text, " ".join(result)).alignments[0] if result and truth else []
        hits = [c for c in chunks if c.type == "equal"]
        if not hits:
            continue
        if before is None:
            start = truth[hits[0].ref_start_idx].start
        else:
            at = _first_new_truth_index(before, result, chunks) if before else None
            if at is None or at >= len(truth):
                continue
            start = truth[at].start
        end = truth[hits[-1].ref_end_idx - 1].end
        low = max(t - end, 0.0)
        high = max(t - cursors[-1], 0.0) if cursors else max(t, 0.0)
        cursors.append(end)
        latencies.append((low + high) / 2)
        durations.append(end - start)
    return latencies, durations


def _first_new_truth_index(before: list[str], result: list[str], chunks: Sequence[Any]) -> int | None:
    """OpenBench's start of the updated segment: the first word ``result`` inserts or substitutes against
    ``before``, mapped to the truth through the chunk of ``chunks`` (truth against ``result``) that holds it."""
    import jiwer

    diff = jiwer.process_words(" ".join(before), " ".join(result)).alignments[0]
    changed = [c for c in diff if c.type in ("insert", "substitute")]
    if not changed:
        return None
    index = changed[0].hyp_start_idx
    for chunk in chunks:
        if chunk.hyp_start_idx <= index < chunk.hyp_end_idx:
            return int(chunk.ref_start_idx + index - chunk.hyp_start_idx)
    return None


def utterance_latencies(
    stream: Sequence[dict[str, Any]], times: Sequence[float], segments: Sequence[dict[str, Any]], normalizer: str
) -> tuple[list[float], int]:
    """(per utterance: the time of the emission committing its last correct word minus its true end, or minus the
    audio cursor then if that came first; utterances with no word right). Each side is normalized as one text."""
    utterances = sorted((s for s in segments if str(s.get("text") or "").strip()), key=lambda s: float(s["start"]))
    truth: list[TimedToken] = []
    owner: list[int] = []
    for u, segment in enumerate(utterances):
        for token in _tokens(str(segment["text"]), normalizer):
            truth.append(TimedToken(token, 0.0, 0.0))
            owner.append(u)
    hypothesis, emitted_by = _hypothesis_tokens(stream, normalizer)
    last_hit: dict[int, int] = {}
    for t, h in matched_pairs(truth, hypothesis):
        last_hit[owner[t]] = max(last_hit.get(owner[t], -1), h)
    latencies = [
        times[emitted_by[h]] - min(float(utterances[u]["end"]), float(stream[emitted_by[h]]["audio_s"]))
        for u, h in sorted(last_hit.items())
    ]
    return latencies, len(utterances) - len(last_hit)


def _hypothesis_tokens(stream: Sequence[dict[str, Any]], normalizer: str) -> tuple[list[TimedToken], list[int]]:
    """The stream's final text (every committed piece, then the last emission's interim text) normalized as one
    text, and per token the emission that gave its last word."""
    words: list[str] = []
    emitted_by: list[int] = []
    for k, e in enumerate(stream):
        text = str(e.get("committed") or "") + (str(e.get("interim") or "") if k == len(stream) - 1 else "")
        for word in text.split():
            words.append(word)
            emitted_by.append(k)
    spans = sourced_tokens(words, normalizer)
    return [TimedToken(token, 0.0, 0.0) for token, _, _ in spans], [emitted_by[j] for _, _, j in spans]


def check_consistent(pred: Prediction, truth: Sequence[TimedToken], normalizer: str) -> None:
    """Refuse (:class:`InconsistentStream`, naming the example) a stream whose times cannot be true: a wall time
    or audio cursor that goes back, or a committed word that the truth says begins after the audio cursor of the
    emission that committed it (more than :data:`HEARD_TOLERANCE_S`): it could not have been heard."""
    stream = pred.stream or []
    for key in ("audio_s", "wall_s"):
        values = [float(e[key]) for e in stream]
        back = next((k for k in range(1, len(values)) if values[k] < values[k - 1]), None)
        if back is not None:
            raise InconsistentStream(
                f"example {pred.id}: the stream's {key} goes back ({values[back - 1]:g} s, then {values[back]:g} s)"
            )
    if not truth:
        return
    hypothesis, emitted_by = _hypothesis_tokens(stream, normalizer)
    for t, h in matched_pairs(truth, hypothesis):
        cursor = float(stream[emitted_by[h]]["audio_s"])
        if truth[t].start > cursor + HEARD_TOLERANCE_S:
            raise InconsistentStream(
                f"example {pred.id}: the stream commits {truth[t].token!r} at audio cursor {cursor:g} s, but it is "
                f"spoken from {truth[t].start:g} s on: an inconsistent stream is refused (docs/streaming.md)"
            )


def example_facts(pred: Prediction, normalizer: str) -> StreamFacts:
    """Every streaming measure of one prediction (:class:`InconsistentStream` for a stream whose times cannot be
    true)."""
    stream = pred.stream or []
    clock = clock_of(pred)
    times = emission_times(stream, clock)
    truth_words = pred.extra.get("true_words") or []
    truth = truth_tokens(truth_words, normalizer) if truth_words else []
    check_consistent(pred, truth, normalizer)
    facts = StreamFacts(wall_s=float(stream[-1]["wall_s"]) if stream else 0.0, audio_s=pred.audio_s)
    facts.revised, facts.words = revisions(stream)
    shown = [t for e, t in zip(stream, times) if str(e.get("committed") or "").strip() or str(e.get("interim") or "")]
    facts.first_output_s = shown[0] if shown else None
    if clock == "real-time" and stream:
        facts.final_lag_s = max(0.0, times[_settled(stream)] - float(stream[-1]["audio_s"]))
    if truth:
        facts.committed, facts.interim = cursor_latencies(stream, times, truth_words, normalizer)
        facts.openbench, facts.openbench_durations = openbench_latencies(stream, times, truth, normalizer)
    segments = pred.extra.get("true_segments") or []
    if segments:
        facts.end_of_utterance, facts.missed_utterances = utterance_latencies(stream, times, segments, normalizer)
    _refuse_negative(pred.id, facts)
    return facts


def _refuse_negative(example: str, facts: StreamFacts) -> None:
    """A latency below zero means the stream's clock and its audio cursor disagree (a real-time emission before
    the audio it holds had arrived): refused, naming the example."""
    for name, values in (
        ("commit delay", facts.committed),
        ("interim delay", facts.interim),
        ("end-of-utterance latency", facts.end_of_utterance),
    ):
        if values and min(values) < 0:
            raise InconsistentStream(
                f"example {example}: a {name} of {min(values):.3g} s: the stream shows text before the audio it "
                "holds had arrived (its clock and audio cursor disagree); an inconsistent stream is refused"
            )


def percentiles(per_example: Sequence[Sequence[float]], qs: Sequence[int] = (50, 90, 99)) -> dict[str, Any] | None:
    """Pooled percentiles of the examples' latencies, with a 95 % cluster-bootstrap interval on p90 (None: none).

    >>> percentiles([[0.5, 1.0], [2.0]], qs=(50,))["p50"]
    1.0
    """
    pooled = np.array([v for values in per_example for v in values], dtype=float)
    if pooled.size == 0:
        return None
    out: dict[str, Any] = {f"p{q}": round(float(np.percentile(pooled, q)), 3) for q in qs}
    out["n"] = int(pooled.size)
    groups = [np.asarray(values, dtype=float) for values in per_example if len(values)]
    if len(groups) > 1:
        rng = np.random.default_rng(SEED)
        draws = rng.integers(0, len(groups), size=(RESAMPLES, len(groups)))
        p90s = [float(np.percentile(np.concatenate([groups[i] for i in draw]), 90)) for draw in draws]
        out["p90_ci"] = [round(float(np.percentile(p90s, 2.5)), 3), round(float(np.percentile(p90s, 97.5)), 3)]
    return out


def openbench_summary(facts: Sequence[StreamFacts]) -> dict[str, Any] | None:
    """OpenBench's confirmed streaming latency of the run: ``mean`` its headline (the latencies weighted by their
    segments' durations, pooled over the examples as its metric accumulates them), ``p50``/``p90``/``p99`` its
    percentiles of the unweighted latencies (NumPy's linear interpolation), ``n`` how many; None without any.

    >>> openbench_summary([StreamFacts(openbench=[1.7, 1.95, 1.55], openbench_durations=[0.4, 0.8, 0.8])])
    {'mean': 1.74, 'p50': 1.7, 'p90': 1.9, 'p99': 1.945, 'n': 3}
    """
    latencies = [v for f in facts for v in f.openbench]
    if not latencies:
        return None
    weight = sum(d for f in facts for d in f.openbench_durations)
    weighted = sum(v * d for f in facts for v, d in zip(f.openbench, f.openbench_durations))
    return {
        "mean": round(weighted / weight, 4) if weight else None,
        **{f"p{q}": round(float(np.percentile(latencies, q)), 4) for q in (50, 90, 99)},
        "n": len(latencies),
    }


def summarize(scored: Sequence[Prediction], context: MetricContext) -> dict[str, Any] | None:
    """``summary.json["streaming"]`` (None: no prediction of the run is a stream); from the predictions' raw fields
    (their scores are not needed)."""
    streamed = [p for p in raw(scored) if p.status == "ok" and p.stream]
    if not streamed:
        return None
    facts = [example_facts(p, context.normalizer) for p in streamed]
    first = [[f.first_output_s] for f in facts if f.first_output_s is not None]
    words = sum(f.words for f in facts)
    audio = sum(f.audio_s for f in facts)
    lags = [[f.final_lag_s] for f in facts if f.final_lag_s is not None]
    dropped = [p.id for p in streamed if shown_then_dropped(p.stream or [], p.hypothesis)]
    eou = percentiles([f.end_of_utterance for f in facts], (50, 90))
    if eou is not None:
        eou["missed_utterances"] = sum(f.missed_utterances for f in facts)
    return {
        "examples": len(streamed),
        "clock": ", ".join(sorted({clock_of(p) for p in streamed})),
        **{key: _one_setting(streamed, key) for key in ("policy", "chunk_s")},
        "commit_delay_s": percentiles([f.committed for f in facts]),
        "interim_delay_s": percentiles([f.interim for f in facts]),
        "openbench_latency_s": openbench_summary(facts),
        "end_of_utterance_latency_s": eou,
        "revisions_per_word": round(sum(f.revised for f in facts) / words, 4) if words else None,
        "first_output_s": percentiles(first, (50, 90)),
        "final_lag_s": percentiles(lags, (50, 90)),
        "wall_per_audio": round(sum(f.wall_s for f in facts) / audio, 4) if audio > 0 else None,
        "shown_then_dropped": {"examples": len(dropped), "ids": dropped[:10]},
    }


def shown_then_dropped(stream: Sequence[dict[str, Any]], final_text: str) -> str | None:
    """The last text a stream showed when its final text is empty (the stream ended without committing what it had
    shown: the user saw words that the transcript lost), else None.

    >>> shown_then_dropped([{"committed": "", "interim": " What a"}, {"committed": "", "interim": ""}], "")
    'What a'
    >>> shown_then_dropped([{"committed": " hi", "interim": ""}], "hi") is None
    True
    """
    if final_text.strip():
        return None
    shown = "".join(str(e.get("committed") or "") for e in stream)
    for emission in reversed(stream):
        text = (shown + str(emission.get("interim") or "")).strip()
        if text:
            return text
    return None


def _one_setting(preds: Sequence[Prediction], key: str) -> Any:
    values = {str((p.extra.get("streaming") or {}).get(key)) for p in preds}
    return (preds[0].extra.get("streaming") or {}).get(key) if len(values) == 1 else ", ".join(sorted(values))


METRIC = Metric(
    "streaming",
    "streaming latency (committed, interim, end of utterance; p50/p90/p99 s), revisions per word, first output",
    summarize,
)
