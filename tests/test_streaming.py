"""Streaming: the clocks that feed a stream, the latency and revision figures on a planted emission log (checked
against hand computations), and real WhisperLiveKit streams scored exactly like batch runs."""

from __future__ import annotations

import json

import jiwer
import numpy as np
import pytest

from tests.conftest import needs_adapter
from whisperbench.adapters.streaming import Output, committed_text, feed
from whisperbench.scoring.metrics import MetricContext
from whisperbench.scoring.normalize import normalize
from whisperbench.scoring.streaming import example_facts, percentiles, revisions, summarize
from whisperbench.types import Prediction

# --- the clocks -------------------------------------------------------------------------------------------


class _Recorder:
    """A stream that commits, per call, the seconds it was given (and takes ``cost`` of the fake clock)."""

    def __init__(self, clock=None, cost=0.0):
        self.calls: list[tuple[int, float]] = []
        self.clock, self.cost = clock, cost

    def feed(self, chunk, end_s):
        self.calls.append((len(chunk), end_s))
        if self.clock is not None:
            self.clock.t += self.cost
        return [Output(f" {len(chunk) / 16000:g}")]

    def finish(self):
        return []


class _FakeClock:
    def __init__(self):
        self.t = 0.0

    def now(self):
        return self.t

    def sleep(self, s):
        self.t += s


def test_simulated_clock_feeds_fixed_chunks_and_counts_in_audio_time():
    session = _Recorder()
    stream = feed(session, np.zeros(16000 * 5 // 2, np.float32), 1.0)
    assert session.calls == [(16000, 1.0), (16000, 2.0), (8000, 2.5)]
    assert [e.audio_s for e in stream] == [1.0, 2.0, 2.5, 2.5]  # three outputs, then the end of the stream
    assert committed_text(stream) == "1 1 0.5"


def test_real_time_clock_hands_a_slow_stream_all_the_audio_that_arrived_meanwhile():
    """A stream that takes 1.5 s per call on 1 s chunks falls behind: each call gets the audio that arrived while
    the previous one ran (1 s, then 1.5 s, 1.5 s …), and each emission's wall time is when it came."""
    clock = _FakeClock()
    session = _Recorder(clock, cost=1.5)
    stream = feed(session, np.zeros(16000 * 5, np.float32), 1.0, "real-time", now=clock.now, sleep=clock.sleep)
    assert [round(end, 3) for _, end in session.calls] == [1.0, 2.5, 4.0, 5.0]
    assert [round(e.wall_s, 3) for e in stream[:-1]] == [2.5, 4.0, 5.5, 7.0]
    assert sum(n for n, _ in session.calls) == 16000 * 5  # every sample fed once


def test_unknown_clock_is_refused():
    with pytest.raises(ValueError, match="clock 'fast'"):
        feed(_Recorder(), np.zeros(160, np.float32), 1.0, "fast")


# --- the figures on a planted log ---------------------------------------------------------------------------

TRUTH_WORDS = [
    {"word": "hello", "start": 0.2, "end": 0.6},
    {"word": "big", "start": 0.7, "end": 1.0},
    {"word": "world", "start": 1.1, "end": 1.5},
    {"word": "good", "start": 2.6, "end": 2.9},
    {"word": "bye", "start": 3.0, "end": 3.4},
]
TRUTH_SEGMENTS = [
    {"start": 0.2, "end": 1.5, "text": "hello big world"},
    {"start": 2.6, "end": 3.4, "text": "good bye"},
]
# what a LocalAgreement-like stream showed, hand-written: interim text revised once ("bid" -> "big world")
# (each piece starts with its space, as Whisper's text does: the stream's text is the pieces concatenated)
PLANTED = [
    {"audio_s": 1.0, "wall_s": 1.4, "committed": "", "interim": " hello bid"},
    {"audio_s": 2.0, "wall_s": 2.3, "committed": " hello", "interim": " big world"},
    {"audio_s": 3.0, "wall_s": 3.2, "committed": " big world", "interim": " good"},
    {"audio_s": 4.0, "wall_s": 4.1, "committed": "", "interim": " good bye"},
    {"audio_s": 4.0, "wall_s": 4.6, "committed": " good bye", "interim": ""},
]


def _planted(clock="simulated") -> Prediction:
    pred = Prediction(
        "a", "hello big world good bye", "hello big world good bye", audio_s=4.0, stream=[dict(e) for e in PLANTED]
    )
    pred.extra = {
        "true_words": TRUTH_WORDS,
        "true_segments": TRUTH_SEGMENTS,
        "streaming": {"policy": "planted", "chunk_s": 1.0, "clock": clock},
    }
    return pred


def test_planted_log_latencies_and_revisions_by_hand():
    facts = example_facts(_planted(), "english")
    # committed: t=2.0 commits "hello" (last right word hello, ends 0.6) -> 1.4; t=3.0 commits "big world"
    # (world ends 1.5) -> 1.5; t=4.0 commits "good bye" (bye ends 3.4) -> 0.6
    assert facts.committed == pytest.approx([1.4, 1.5, 0.6])
    # interim: t=1 "hello bid": hello (0.6) -> 0.4; t=2 "hello big world": world 1.5 -> 0.5;
    # t=3 "hello big world good": good starts 2.6 < 3.0 and is right -> 3.0 - 2.9 = 0.1; t=4 "... good bye" -> 0.6
    assert facts.interim == pytest.approx([0.4, 0.5, 0.1, 0.6])
    # end of utterance: "world" committed at t=3.0 (ends 1.5) -> 1.5; "bye" committed at t=4.0 (ends 3.4) -> 0.6
    assert facts.end_of_utterance == pytest.approx([1.5, 0.6])
    assert facts.missed_utterances == 0
    # revisions: shown "hello bid" -> "hello big world": 1 word changed ("bid"); later emissions only append
    assert (facts.revised, facts.words) == (1, 5)
    assert facts.first_output_s == 1.0
    assert facts.final_lag_s is None  # simulated clock: the final text comes at the audio's end by construction


def test_real_time_clock_counts_latency_in_wall_time():
    facts = example_facts(_planted("real-time"), "english")
    assert facts.committed == pytest.approx([2.3 - 0.6, 3.2 - 1.5, 4.6 - 3.4])
    assert facts.first_output_s == pytest.approx(1.4)
    assert facts.final_lag_s == pytest.approx(0.1)  # the final text first shown at 4.1 s, the audio 4 s long


def test_final_lag_counts_from_when_the_final_text_was_first_shown():
    """A server that repeats its final text after the audio's end: the lag ends at the first showing."""
    pred = _planted("real-time")
    pred.stream = [
        {"audio_s": 4.0, "wall_s": 4.5, "committed": "", "interim": "hello big world good"},
        {"audio_s": 4.0, "wall_s": 5.25, "committed": "", "interim": "hello big world good bye"},
        {"audio_s": 4.0, "wall_s": 6.0, "committed": "", "interim": "hello big world good bye"},
    ]
    assert example_facts(pred, "english").final_lag_s == pytest.approx(1.25)


def test_a_missed_utterance_is_counted_not_scored():
    pred = _planted()
    pred.stream = [{"audio_s": 4.0, "wall_s": 1.0, "committed": "hello big world", "interim": ""}]
    facts = example_facts(pred, "english")
    assert facts.end_of_utterance == pytest.approx([2.5])
    assert facts.missed_utterances == 1


def test_openbench_latency_of_the_worked_example_by_hand():
    """argmaxinc/OpenBench's confirmed streaming latency (src/openbench/metric/streaming_latency_metrics/
    latency_metrics.py), worked by hand from its code on the planted stream's committed results "hello" (2 s),
    "hello big world" (3 s), "hello big world good bye" (4 s):
    - result 1: hits hello; cursor 0.6 (hello's end), segment from hello's start 0.2; min 2 - 0.6 = 1.4, max 2
      (the first: the time itself) -> 1.7, duration 0.4;
    - result 2: hits up to world (cursor 1.5); the first word it inserts against result 1 is "big" (starts 0.7);
      min 3 - 1.5 = 1.5, max 3 - 0.6 = 2.4 -> 1.95, duration 0.8;
    - result 3: cursor 3.4 (bye), inserted from "good" (2.6); min 0.6, max 4 - 1.5 = 2.5 -> 1.55, duration 0.8.
    Headline: (1.7*0.4 + 1.95*0.8 + 1.55*0.8) / 2.0 = 1.74; p90 of [1.7, 1.95, 1.55] (linear) = 1.9."""
    facts = example_facts(_planted(), "english")
    assert facts.openbench == pytest.approx([1.7, 1.95, 1.55])
    assert facts.openbench_durations == pytest.approx([0.4, 0.8, 0.8])
    value = summarize([_planted()], MetricContext("english"))["openbench_latency_s"]
    assert value == pytest.approx({"mean": 1.74, "p50": 1.7, "p90": 1.9, "p99": 1.945, "n": 3})


def _openbench_plainly(results: list[str], cursor: list[float], words: list[dict]) -> tuple[list, list]:
    """OpenBench's ``BaseStreamingLatency.compute_min_max_latency`` (ground-truth timestamps) written out plainly for
    the test, with Whisper's basic normalizer (the function OpenBench takes from transformers): (mean of min and
    max latency per kept result, its duration)."""

    def norm(text: str) -> str:
        return normalize(text, "basic")

    truth = norm(" ".join(w["word"] for w in words))
    cursors, lows, highs, durations = [], [], [], []
    for k, text in enumerate(results):
        out = jiwer.process_words(truth, norm(text)).alignments[0]
        hits = [c for c in out if c.type == "equal"]
        if not hits:
            continue
        if k == 0:
            start = words[hits[0].ref_start_idx]["start"]
        else:
            if not norm(results[k - 1]).strip() or not norm(text).strip():
                continue
            diff = jiwer.process_words(norm(results[k - 1]), norm(text)).alignments[0]
            new = [c for c in diff if c.type in ("insert", "substitute")]
            if not new:
                continue
            at = next(
                (
                    c.ref_start_idx + new[0].hyp_start_idx - c.hyp_start_idx
                    for c in out
                    if c.hyp_start_idx <= new[0].hyp_start_idx < c.hyp_end_idx
                ),
                None,
            )
            if at is None or at >= len(words):
                continue
            start = words[at]["start"]
        end = words[hits[-1].ref_end_idx - 1]["end"]
        durations.append(end - start)
        cursors.append(end)
        lows.append(max(cursor[k] - end, 0))
        highs.append(max(cursor[k] if len(cursors) < 2 else cursor[k] - cursors[-2], 0))
    return [(a + b) / 2 for a, b in zip(lows, highs)], durations


def test_openbench_latency_equals_openbenchs_code_written_out_on_random_streams():
    """300 seeded streams (words substituted, dropped, inserted; committed a few at a time at rising cursors, some
    before the words end): whisperbench's OpenBench latencies and durations equal OpenBench's computation written
    out plainly above, result for result."""
    import random

    from whisperbench.scoring.streaming import openbench_latencies, truth_tokens

    rng = random.Random(69)
    vocabulary = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    for _ in range(300):
        words, t = [], 0.0
        for word in rng.choices(vocabulary, k=rng.randint(1, 14)):
            t += rng.uniform(0.05, 0.4)
            words.append({"word": word, "start": round(t, 2), "end": round(t + 0.3, 2)})
            t += 0.3
        said = []
        for w in words:
            roll = rng.random()
            said += [] if roll < 0.1 else [rng.choice(vocabulary)] if roll < 0.2 else [w["word"]]
            if rng.random() < 0.1:
                said.append(rng.choice(vocabulary))
        stream, results, cursors, at, cursor = [], [], [], 0, 0.0
        while at < len(said):
            take = rng.randint(1, 3)
            cursor += rng.uniform(0.2, 1.5)
            stream.append({"audio_s": cursor, "wall_s": cursor, "committed": " " + " ".join(said[at : at + take])})
            at += take
            results.append(" ".join(said[:at]))
            cursors.append(cursor)
        times = [e["audio_s"] for e in stream]
        got = openbench_latencies(stream, times, truth_tokens(words, "basic"), "basic")
        expected = _openbench_plainly(results, cursors, words)
        assert got[0] == pytest.approx(expected[0]) and got[1] == pytest.approx(expected[1]), (words, results)


def test_openbench_clips_a_negative_latency_where_the_commit_delay_counts_from_the_cursor():
    """Committed at cursor 0.5 s, "hello" (0.2-0.6 s) not yet over: OpenBench's minimum latency 0.5 - 0.6 is
    clipped to 0, its maximum is 0.5 (the first result): 0.25. whisperbench's commit delay counts from what had
    been heard (the cursor): 0."""
    pred = _planted()
    pred.stream = [{"audio_s": 0.5, "wall_s": 0.6, "committed": " hello", "interim": ""}]
    facts = example_facts(pred, "english")
    assert facts.openbench == pytest.approx([0.25]) and facts.committed == pytest.approx([0.0])


_PRICE_WORDS = [
    {"word": "it", "start": 0.1, "end": 0.3},
    {"word": "cost", "start": 0.4, "end": 0.8},
    {"word": "twenty", "start": 0.9, "end": 1.3},
    {"word": "five", "start": 1.4, "end": 1.8},
    {"word": "dollars", "start": 2.05, "end": 2.4},
]


@pytest.mark.parametrize("first", [" it cost twenty five", " it cost 25"])
def test_latency_is_the_same_for_numbers_in_digits_or_words(first):
    """Truth "it cost twenty five dollars" ("five" ends 1.8 s, "dollars" 2.4 s), committed at 2 s and 3 s: each
    side normalized as one text (the English normalizer makes "twenty five" "25", and "twenty five dollars"
    "$25"), so the commit delays are 2.0 - 1.8 and 3.0 - 2.4 and the utterance's latency 0.6, whether the
    stream writes the number in words or digits (word by word the truth was "20 5", which shifted the alignment)."""
    pred = Prediction("p", "it cost twenty five dollars", "", audio_s=3.0)
    pred.stream = [
        {"audio_s": 2.0, "wall_s": 2.1, "committed": first, "interim": ""},
        {"audio_s": 3.0, "wall_s": 3.1, "committed": " dollars", "interim": ""},
    ]
    pred.extra = {"true_words": _PRICE_WORDS, "true_segments": [{"start": 0.1, "end": 2.4, "text": pred.transcript}]}
    facts = example_facts(pred, "english")
    assert facts.committed == pytest.approx([0.2, 0.6])
    assert facts.end_of_utterance == pytest.approx([0.6])


def test_an_inconsistent_stream_is_refused_naming_the_example():
    """A wall time that goes back, or an utterance committed at cursor 0.5 s whose words are spoken at 2.6-3.4 s:
    refused, naming the example, instead of a latency of -2.9 s."""
    from whisperbench.scoring.streaming import InconsistentStream

    back = _planted()
    back.stream[2]["wall_s"] = 1.0
    with pytest.raises(InconsistentStream, match="example a: the stream's wall_s goes back"):
        example_facts(back, "english")
    early = _planted()
    early.stream = [{"audio_s": 0.5, "wall_s": 0.5, "committed": " good bye", "interim": ""}]
    with pytest.raises(InconsistentStream, match="example a: the stream commits 'good' at audio cursor 0.5 s"):
        example_facts(early, "english")
    ahead = _planted("real-time")  # shown at wall 0.2 s what the audio cursor says arrived by 1 s
    ahead.stream = [{"audio_s": 1.0, "wall_s": 0.2, "committed": " hello", "interim": ""}]
    with pytest.raises(InconsistentStream, match="example a: a commit delay of -0.4 s"):
        example_facts(ahead, "english")


def test_revisions_count_changed_and_removed_words_not_appended_ones():
    log = [
        {"committed": "", "interim": "a b c"},
        {"committed": "", "interim": "a x"},  # b, c changed/removed: 2
        {"committed": "a", "interim": "x y"},  # appended only
        {"committed": "x y z", "interim": ""},
    ]
    assert revisions(log) == (2, 4)


def test_percentiles_pool_examples_and_bound_p90():
    values = [[1.0, 2.0, 3.0], [4.0], [5.0, 6.0]]
    out = percentiles(values)
    pooled = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert out["p50"] == pytest.approx(np.percentile(pooled, 50))
    assert out["p90"] == pytest.approx(np.percentile(pooled, 90))
    low, high = out["p90_ci"]
    assert low <= out["p90"] <= high
    assert percentiles([[], []]) is None


def test_summary_of_a_run_without_streams_is_absent():
    pred = Prediction("a", "hi", "hi")
    assert summarize([pred], MetricContext("english")) is None


def test_summary_of_the_planted_run():
    value = summarize([_planted(), _planted()], MetricContext("english"))
    assert value["examples"] == 2 and value["clock"] == "simulated" and value["policy"] == "planted"
    assert value["commit_delay_s"]["p50"] == pytest.approx(np.percentile([1.4, 1.5, 0.6] * 2, 50))
    assert value["end_of_utterance_latency_s"]["p90"] == pytest.approx(np.percentile([1.5, 0.6] * 2, 90))
    assert value["revisions_per_word"] == pytest.approx(2 / 10)
    assert value["shown_then_dropped"] == {"examples": 0, "ids": []}


def test_a_stream_that_showed_words_and_ended_empty_is_counted():
    """WhisperLiveKit 0.2.26's SimulStreaming with language detection keeps a short clip's words in its buffer until
    the language is detected, and at the end drops them: the user saw "What a spiteful thing I", the transcript is
    empty. The run says how many examples did so, and which."""
    stream = [
        {"audio_s": 2.0, "wall_s": 1.8, "committed": "", "interim": " What a spiteful thing"},
        {"audio_s": 2.115, "wall_s": 2.8, "committed": "", "interim": " What a spiteful thing I"},
        {"audio_s": 2.115, "wall_s": 3.6, "committed": "", "interim": ""},
    ]
    lost = Prediction(
        "lost",
        "what a spiteful thing i am",
        "",
        audio_s=2.115,
        stream=stream,
        extra={"streaming": {"clock": "simulated"}},
    )
    value = summarize([lost, _planted()], MetricContext("english"))
    assert value["shown_then_dropped"] == {"examples": 1, "ids": ["lost"]}


def test_whisperlivekit_decodes_in_the_language_the_run_names():
    """``-o language=en`` reaches WhisperLiveKit's engine: told "auto", its SimulStreaming buffers every word until
    it has detected the language and drops them at the end of a short clip (base, 7 of the 81 shared clips empty;
    with the language named, "What a spiteful thing I am" and the others came back). Detect only when nothing is
    named, or per example with ``language=dataset``."""
    from whisperbench.adapters.base import DecodingOptions
    from whisperbench.adapters.whisperlivekit import WhisperLiveKitAdapter

    def engine_language(language, multilingual=True):
        adapter = WhisperLiveKitAdapter("base", DecodingOptions(language=language))
        adapter.multilingual = multilingual
        return adapter._engine_language()

    assert engine_language("en") == "en" and engine_language("de") == "de"
    assert engine_language(None) == "auto" and engine_language("dataset") == "auto"
    assert engine_language(None, multilingual=False) == "en"


# --- real streams ----------------------------------------------------------------------------------------------


def _jfk_manifest(tmp_path, tiny_rows):
    from tests.conftest import BUNDLED, write_jsonl

    row = next(r for r in tiny_rows if r["id"] == "jfk")
    return write_jsonl(tmp_path / "jfk.jsonl", [dict(row, audio=str(BUNDLED / "shortform" / row["audio"]))])


def _check_stream(run):
    pred = run.predictions[0]
    assert pred.status == "ok", pred.error
    stream = pred.stream
    assert stream and stream[-1]["audio_s"] == pytest.approx(11.0, abs=0.01)
    cursors = [e["audio_s"] for e in stream]
    assert cursors == sorted(cursors)
    assert ("".join(e["committed"] for e in stream) + stream[-1]["interim"]).strip() == pred.hypothesis
    truth, said = normalize(pred.transcript, "english"), normalize(pred.hypothesis, "english")
    assert run.summary.wer == pytest.approx(100 * jiwer.wer(truth, said))  # scored exactly like a batch run
    streaming = run.summary.metrics["streaming"]
    assert streaming["examples"] == 1 and streaming["clock"] == "simulated"
    assert streaming["first_output_s"]["p50"] <= 11.0
    return pred


def test_whisperlivekit_simulstreaming_streams_jfk(tmp_path, tiny_rows):
    """SimulStreaming (AlignAtt) on tiny.en, 1 s chunks, computation-unaware: a real stream whose final text is
    scored like any run; jfk comes out nearly word for word (tiny.en batch gets it exactly)."""
    needs_adapter("whisperlivekit", "tiny.en")
    from whisperbench import api

    run = api.evaluate(
        "whisperlivekit", "tiny.en", _jfk_manifest(tmp_path, tiny_rows), runs_dir=tmp_path / "runs", warmup=False
    )
    pred = _check_stream(run)
    assert run.summary.wer < 20.0, pred.hypothesis
    assert run.info["adapter_info"]["streaming"] == {"policy": "simulstreaming", "chunk_s": 1.0, "clock": "simulated"}


@pytest.mark.slow
def test_whisperlivekit_localagreement_streams_jfk_with_interim_text(tmp_path, tiny_rows):
    needs_adapter("whisperlivekit", "tiny.en")
    from whisperbench import api

    run = api.evaluate(
        "whisperlivekit",
        "tiny.en",
        _jfk_manifest(tmp_path, tiny_rows),
        runs_dir=tmp_path / "runs",
        options={"policy": "localagreement"},
        warmup=False,
    )
    pred = _check_stream(run)
    assert any(e["interim"] for e in pred.stream)  # LocalAgreement shows text before it commits it
    assert run.summary.wer < 20.0, pred.hypothesis


def test_whisper_live_server_streams_a_clip_in_real_time(tmp_path, tiny_rows):
    """WhisperLive's own server on 127.0.0.1 (started by the adapter), a 5.4 s clip sent in real time: every answer
    stored as it arrived, the final text scored like any run, the real-time figures present."""
    needs_adapter("whisper-live", "tiny.en")
    from tests.conftest import BUNDLED, write_jsonl
    from whisperbench import api

    row = next(r for r in tiny_rows if r["id"] == "1089-134691-0001")
    manifest = write_jsonl(tmp_path / "one.jsonl", [dict(row, audio=str(BUNDLED / "shortform" / row["audio"]))])
    run = api.evaluate("whisper-live", "tiny.en", manifest, runs_dir=tmp_path / "runs", warmup=False)
    pred = run.predictions[0]
    assert pred.status == "ok", pred.error
    walls = [e["wall_s"] for e in pred.stream]
    assert walls == sorted(walls) and walls[-1] >= 5.0  # real time: nothing before the audio was spoken
    truth, said = normalize(pred.transcript, "english"), normalize(pred.hypothesis, "english")
    assert run.summary.wer == pytest.approx(100 * jiwer.wer(truth, said))
    assert run.summary.wer < 30.0, pred.hypothesis
    streaming = run.summary.metrics["streaming"]
    assert streaming["clock"] == "real-time" and streaming["final_lag_s"]["n"] == 1


def test_whisper_live_refuses_the_simulated_clock(tmp_path):
    from whisperbench.adapters import get_adapter
    from whisperbench.adapters.base import DecodingOptions
    from whisperbench.errors import OptionError

    cls = get_adapter("whisper-live")
    with pytest.raises(OptionError, match="real-time"):
        cls("tiny.en", DecodingOptions.from_pairs(["clock=simulated"]))


def test_stored_stream_round_trips(tmp_path):
    pred = _planted()
    again = Prediction.from_json(json.loads(json.dumps(pred.to_json())))
    assert again.stream == pred.stream


# --- recorded streams through score, gate, compare and report -------------------------------------------------


def _recorded_stream_runs(tmp_path, tiny_rows):
    """Two examples with planted utterance times; a batch reference and a streaming candidate (the planted log's
    shape on each transcript's words: each utterance committed one chunk after it ends)."""
    from tests.conftest import BUNDLED, write_jsonl
    from whisperbench import api

    rows = []
    for row in tiny_rows[:2]:
        rows.append(
            dict(
                row,
                audio=str(BUNDLED / "shortform" / row["audio"]),
                segments=[{"start": 0.5, "end": 3.0, "text": row["text"]}],
            )
        )
    manifest = write_jsonl(tmp_path / "set.jsonl", rows)
    batch = write_jsonl(tmp_path / "batch.jsonl", [{"id": r["id"], "hypothesis": r["text"]} for r in rows])
    lines = []
    for r, commit_at in zip(rows, (4.0, 5.0)):  # the last word committed 1 s and 2 s after the utterance ends
        words = r["text"].split()
        stream = [
            {"audio_s": 2.0, "wall_s": 0.5, "committed": "", "interim": " ".join(words[:2])},
            {"audio_s": commit_at, "wall_s": 1.0, "committed": r["text"], "interim": ""},
        ]
        lines.append({"id": r["id"], "hypothesis": r["text"], "stream": stream, "streaming": {"policy": "planted"}})
    streamed = write_jsonl(tmp_path / "streamed.jsonl", lines)
    runs = tmp_path / "runs"
    api.score(batch, manifest, runs_dir=runs, name="batch")
    api.score(streamed, manifest, runs_dir=runs, name="stream")
    return runs


def test_a_recorded_stream_is_measured_gated_compared_and_reported(tmp_path, tiny_rows):
    from whisperbench import api

    runs = _recorded_stream_runs(tmp_path, tiny_rows)
    value = api.load_run("stream", runs).summary.metrics["streaming"]
    expected = [4.0 - 3.0, 5.0 - 3.0]  # commit time minus the utterance's end, by hand
    assert value["end_of_utterance_latency_s"]["p90"] == pytest.approx(np.percentile(expected, 90))
    assert value["clock"] == "simulated" and value["policy"] == "planted"
    assert value["commit_delay_s"] is None  # no word times in the set

    p90 = float(np.percentile(expected, 90))
    passed = api.gate("batch", "stream", runs_dir=runs, min_qoi=100, max_latency_p90=p90 + 0.01)
    failed = api.gate("batch", "stream", runs_dir=runs, min_qoi=100, max_latency_p90=p90 - 0.01)
    assert (passed.code, failed.code) == (0, 1)
    check = next(c for c in failed.checks if c.name == "latency")
    assert "end-of-utterance latency p90" in check.detail and "simulated clock" in check.detail

    batch_as_candidate = api.gate("stream", "batch", runs_dir=runs, min_qoi=100, max_latency_p90=10)
    assert batch_as_candidate.code == 2  # a batch run has no latency to judge

    comparison = api.compare("batch", "stream", runs_dir=runs)
    assert comparison.to_json()["streaming"]["reference"] is None
    assert any(note.startswith("streaming, candidate stream: planted") for note in comparison.notes)

    board = api.report(runs, out=tmp_path / "board.md", references=["batch"])
    section = board.text.split("## Streaming", 1)[1]
    assert "| stream | recorded | planted |" in section
    assert "+0.00 [+0.00, +0.00] vs batch" in section  # the same words as the batch reference
    page = api.report(runs, out=tmp_path / "board.html", references=["batch"]).path.read_text()
    assert "<h2>Streaming</h2>" in page and "<td>planted</td>" in page


def test_a_bad_recorded_stream_names_the_line(tmp_path, tiny_rows):
    from tests.conftest import write_jsonl
    from whisperbench.adapters.recorded import read_streams
    from whisperbench.errors import WhisperbenchError

    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"id": "a", "hypothesis": "x"},
            {"id": "b", "hypothesis": "x", "stream": [{"audio_s": 2.0, "wall_s": 1}, {"audio_s": 1.0, "wall_s": 2}]},
        ],
    )
    with pytest.raises(WhisperbenchError, match="line 2: stream audio_s goes back"):
        read_streams(str(bad))
    backwards = [{"audio_s": 1.0, "wall_s": 2.0}, {"audio_s": 2.0, "wall_s": 1.5}]
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "b", "hypothesis": "x", "stream": backwards}])
    with pytest.raises(WhisperbenchError, match="line 1: stream wall_s goes back"):
        read_streams(str(bad))


def test_run_metrics_on_the_scoring_pool_equal_those_of_one_process_with_scores_made_on_read():
    """The pool's scored predictions are made when read (table.ScoredOnRead): the run-level metrics (timing,
    streaming, hallucination) and the language identification read the predictions' raw fields and give what they
    give on the list one process makes; every item read is the scored prediction."""
    from whisperbench.scoring.engine import PARALLEL_MIN, raw
    from whisperbench.scoring.figures import language_identification
    from whisperbench.scoring.metrics import MetricContext, run_metrics
    from whisperbench.scoring.table import ScoredOnRead, scored_table

    words = "hello big world good bye".split()
    preds = []
    for i in range(PARALLEL_MIN + 10):
        hyp = " ".join(words[: 2 + i % 4] + (["oops"] if i % 3 else []))
        pred = _planted() if i % 50 == 0 else Prediction(f"u{i}", " ".join(words), hyp, audio_s=4.0)
        pred.id, pred.hypothesis = f"u{i}", hyp if i % 50 else pred.hypothesis
        if i % 7 == 0:  # word times against true utterances (the timing metric)
            pred.words = [{"word": w, "start": 0.5 * k, "end": 0.5 * k + 0.4} for k, w in enumerate(hyp.split())]
            pred.extra = {**pred.extra, "true_segments": TRUTH_SEGMENTS}
        pred.language_label, pred.detected_language = "en", "en" if i % 5 else "de"
        preds.append(pred)
    one_scored, one_table = scored_table(preds, "english", workers=1)
    pool_scored, pool_table = scored_table(preds, "english", workers=2)
    assert isinstance(pool_scored, ScoredOnRead) and isinstance(one_scored, list)
    assert pool_table.equals(one_table)
    assert list(pool_scored) == one_scored and pool_scored[3] == one_scored[3] and pool_scored[-2:] == one_scored[-2:]
    assert all(p.score is None for p in raw(pool_scored)[:20])  # the stored predictions are left as they were
    one = run_metrics(one_scored, MetricContext("english", table=one_table))
    pool = run_metrics(pool_scored, MetricContext("english", table=pool_table))
    assert set(one) >= {"timing", "streaming", "hallucination"} and pool == one
    assert language_identification(raw(pool_scored)) == language_identification(one_scored)


def test_score_refuses_a_recorded_stream_that_commits_words_before_they_are_spoken(tmp_path, tiny_rows, capsys):
    """issue 69's case: an utterance committed at cursor 0.5 s whose words are spoken at 4-5 s. ``score`` says
    so in one line naming the example and exits 2; no latency of -4.5 s is ever written."""
    from tests.conftest import BUNDLED, write_jsonl
    from whisperbench.cli import main

    row = tiny_rows[0]
    words = [{"word": w, "start": 4.0 + 0.1 * k, "end": 4.1 + 0.1 * k} for k, w in enumerate(row["text"].split()[:5])]
    manifest = write_jsonl(
        tmp_path / "set.jsonl", [dict(row, audio=str(BUNDLED / "shortform" / row["audio"]), words=words)]
    )
    said = " ".join(w["word"] for w in words)
    stream = [{"audio_s": 0.5, "wall_s": 0.6, "committed": " " + said, "interim": ""}]
    hypotheses = write_jsonl(tmp_path / "h.jsonl", [{"id": row["id"], "hypothesis": said, "stream": stream}])
    argv = ["score", "--dataset", str(manifest), "--hypotheses", str(hypotheses), "--runs-dir", str(tmp_path / "runs")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"example {row['id']}: the stream commits" in err and "Traceback" not in err
