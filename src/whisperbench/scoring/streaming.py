"""Streaming metrics: when text appears, how often it changes, how long after an utterance ends it is committed.

A streaming prediction keeps its emissions (``Prediction.stream``: audio cursor, wall time, the committed piece,
the interim text). An emission's **time** is its audio cursor under the ``simulated`` clock (computation-unaware:
the lower bound) and its wall time since the stream started under the ``real-time`` clock (what a user saw).
Texts are normalized with the run's normalizer; words are matched to the truth by the WER alignment's hits.

- ``committed_latency_s`` / ``interim_latency_s`` (argmaxinc/OpenBench's definition, where the dataset has word
  times): for each emission that commits new text (or shows interim text), its time minus the true end of the last
  word it has transcribed correctly so far (truth words that start before the cursor only). p50/p90/p99 over all
  such emissions of the run.
- ``end_of_utterance_latency_s`` (where the dataset has utterance ``segments`` with texts): for each utterance, the
  time of the emission that commits its last correctly transcribed word minus the utterance's true end; utterances
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

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ..types import Prediction
from .metrics import Metric, MetricContext
from .normalize import normalize
from .summary import raw
from .timing import TimedToken, matched_pairs, timed_tokens

CLOCK_TIME = {"simulated": "audio_s", "real-time": "wall_s"}
RESAMPLES = 1000
SEED = 0


@dataclass
class StreamFacts:
    """One example's streaming measures (latencies in seconds)."""

    first_output_s: Optional[float] = None
    revised: int = 0
    words: int = 0
    committed: list[float] = field(default_factory=list)
    interim: list[float] = field(default_factory=list)
    end_of_utterance: list[float] = field(default_factory=list)
    missed_utterances: int = 0
    final_lag_s: Optional[float] = None
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


def _last_right_end(spoken: Sequence[TimedToken], tokens: list[str]) -> Optional[float]:
    """The true end of the last truth word (of ``spoken``) that ``tokens`` got right; None: none right."""
    pairs = matched_pairs(spoken, [TimedToken(token, 0.0, 0.0) for token in tokens])
    return spoken[max(pairs, key=lambda pair: pair[1])[0]].end if pairs else None


def cursor_latencies(
    stream: Sequence[dict[str, Any]], times: Sequence[float], truth: Sequence[TimedToken], normalizer: str
) -> tuple[list[float], list[float]]:
    """OpenBench's latencies, (committed, interim): per emission with new committed (or any interim) text, its time
    minus the true end of the last truth word (of those begun before the cursor) that the text so far got right
    (committed text; committed + interim text). Each piece of text is normalized once."""
    committed: list[str] = []
    out: tuple[list[float], list[float]] = ([], [])
    for e, t in zip(stream, times):
        piece = _tokens(str(e.get("committed") or ""), normalizer)
        committed += piece
        extra = _tokens(str(e.get("interim") or ""), normalizer)
        spoken = [w for w in truth if w.start < float(e["audio_s"])]
        for latencies, new, shown in ((out[0], piece, committed), (out[1], extra, committed + extra)):
            end = _last_right_end(spoken, shown) if new else None
            if end is not None:
                latencies.append(t - end)
    return out


def utterance_latencies(
    stream: Sequence[dict[str, Any]], times: Sequence[float], segments: Sequence[dict[str, Any]], normalizer: str
) -> tuple[list[float], int]:
    """(per utterance: the time of the emission committing its last correct word minus its true end; utterances
    with no word right)."""
    utterances = sorted((s for s in segments if str(s.get("text") or "").strip()), key=lambda s: float(s["start"]))
    truth: list[TimedToken] = []
    owner: list[int] = []
    for u, segment in enumerate(utterances):
        for token in _tokens(str(segment["text"]), normalizer):
            truth.append(TimedToken(token, 0.0, 0.0))
            owner.append(u)
    hypothesis: list[TimedToken] = []
    emitted_by: list[int] = []
    for k, e in enumerate(stream):
        text = str(e.get("committed") or "") + (str(e.get("interim") or "") if k == len(stream) - 1 else "")
        for token in _tokens(text, normalizer):
            hypothesis.append(TimedToken(token, 0.0, 0.0))
            emitted_by.append(k)
    last_hit: dict[int, int] = {}
    for t, h in matched_pairs(truth, hypothesis):
        last_hit[owner[t]] = max(last_hit.get(owner[t], -1), h)
    latencies = [times[emitted_by[h]] - float(utterances[u]["end"]) for u, h in sorted(last_hit.items())]
    return latencies, len(utterances) - len(last_hit)


def example_facts(pred: Prediction, normalizer: str) -> StreamFacts:
    """Every streaming measure of one prediction."""
    stream = pred.stream or []
    clock = clock_of(pred)
    times = emission_times(stream, clock)
    facts = StreamFacts(wall_s=float(stream[-1]["wall_s"]) if stream else 0.0, audio_s=pred.audio_s)
    facts.revised, facts.words = revisions(stream)
    shown = [t for e, t in zip(stream, times) if str(e.get("committed") or "").strip() or str(e.get("interim") or "")]
    facts.first_output_s = shown[0] if shown else None
    if clock == "real-time" and stream:
        facts.final_lag_s = max(0.0, times[_settled(stream)] - float(stream[-1]["audio_s"]))
    truth_words = pred.extra.get("true_words") or []
    if truth_words:
        facts.committed, facts.interim = cursor_latencies(
            stream, times, timed_tokens(truth_words, normalizer), normalizer
        )
    segments = pred.extra.get("true_segments") or []
    if segments:
        facts.end_of_utterance, facts.missed_utterances = utterance_latencies(stream, times, segments, normalizer)
    return facts


def percentiles(per_example: Sequence[Sequence[float]], qs: Sequence[int] = (50, 90, 99)) -> Optional[dict[str, Any]]:
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


def summarize(scored: Sequence[Prediction], context: MetricContext) -> Optional[dict[str, Any]]:
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
        "committed_latency_s": percentiles([f.committed for f in facts]),
        "interim_latency_s": percentiles([f.interim for f in facts]),
        "end_of_utterance_latency_s": eou,
        "revisions_per_word": round(sum(f.revised for f in facts) / words, 4) if words else None,
        "first_output_s": percentiles(first, (50, 90)),
        "final_lag_s": percentiles(lags, (50, 90)),
        "wall_per_audio": round(sum(f.wall_s for f in facts) / audio, 4) if audio > 0 else None,
        "shown_then_dropped": {"examples": len(dropped), "ids": dropped[:10]},
    }


def shown_then_dropped(stream: Sequence[dict[str, Any]], final_text: str) -> Optional[str]:
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
