"""Timing: ground truth read from real timing files, metrics with known answers (planted shifts), long-form
stitching, subtitles, and the times real implementations store."""

from __future__ import annotations

import json

import numpy as np
import pytest

from whisperbench.datasets.timing import read_ctm, read_subtitles, read_textgrid, read_timing_file
from whisperbench.scoring.metrics import MetricContext
from whisperbench.scoring.timing import example_timing, parity, summarize
from whisperbench.types import Prediction

TRUTH_WORDS = [
    {"word": w, "start": s, "end": e}
    for w, s, e in [
        ("And", 0.30, 0.50),
        ("so", 0.55, 0.80),
        ("my", 0.90, 1.10),
        ("fellow", 1.15, 1.60),
        ("Americans,", 1.70, 2.40),
        ("ask", 3.20, 3.60),
    ]
]
TRUTH_SEGMENTS = [
    {"start": 0.3, "end": 2.4, "text": "And so my fellow Americans,"},
    {"start": 3.2, "end": 3.6, "text": "ask"},
]


def _prediction(pid: str, words, segments, transcript="And so my fellow Americans, ask") -> Prediction:
    pred = Prediction(id=pid, transcript=transcript, hypothesis=" ".join(w["word"] for w in words or []))
    pred.words, pred.segments = words, segments
    pred.extra = {"true_words": TRUTH_WORDS, "true_segments": TRUTH_SEGMENTS}
    return pred


def _shifted(items, shifts, key="start"):
    return [dict(item, **{key: round(item[key] + shift, 6)}) for item, shift in zip(items, shifts)]


def test_planted_word_shifts_give_exactly_the_planted_errors():
    shifts = [0.0, 0.04, -0.08, 0.15, 0.3, -0.01]
    pred = _prediction("a", _shifted(TRUTH_WORDS, shifts), TRUTH_SEGMENTS)
    errors = example_timing(pred, "english")
    assert errors["word_starts"] == pytest.approx([abs(s) for s in shifts], abs=1e-9)
    assert errors["word_ends"] == pytest.approx([0.0] * 6, abs=1e-9)
    assert errors["starts_by_word"] == pytest.approx([0.0, 0.01], abs=1e-9)  # "And" on time, "ask" 10 ms early
    summary = summarize([pred], MetricContext("english"))["word_start_error_ms"]
    expected = np.abs(shifts) * 1000  # independent: numpy's percentiles of the planted shifts
    assert summary["median"] == pytest.approx(np.percentile(expected, 50), abs=0.01)
    assert summary["p90"] == pytest.approx(np.percentile(expected, 90), abs=0.01)
    assert summary["within_50ms"] == pytest.approx(100 * 3 / 6, abs=0.01)  # 0, 40, 10 ms
    assert summary["within_100ms"] == pytest.approx(100 * 4 / 6, abs=0.01)  # + 80 ms
    assert summary["within_200ms"] == pytest.approx(100 * 5 / 6, abs=0.01)  # + 150 ms


def test_word_errors_count_only_aligned_hits():
    words = [dict(w) for w in TRUTH_WORDS]
    words[3] = {"word": "yellow", "start": 9.0, "end": 9.5}  # a substitution: its time is not an error
    del words[5]  # a deletion
    errors = example_timing(_prediction("a", words, None), "english")
    assert errors["word_starts"] == [0.0] * 4 and errors["starts"] == []


def test_planted_segment_shifts_pool_over_every_true_start():
    preds = [
        _prediction("a", None, _shifted(TRUTH_SEGMENTS, [0.1, -0.6])),
        _prediction("b", None, _shifted(TRUTH_SEGMENTS, [0.25, 0.0])),
    ]
    summary = summarize(preds, MetricContext("english"))
    start = summary["utterance_start_error_ms"]
    expected = np.array([100, 600, 250, 0])
    assert start["count"] == 4
    assert start["median"] == pytest.approx(np.percentile(expected, 50))
    assert start["p90"] == pytest.approx(np.percentile(expected, 90))
    assert start["within_200ms"] == 50.0 and start["within_500ms"] == 75.0
    assert "word_start_error_ms" not in summary  # no words stored: absent, not zero
    assert summary["examples_with_words"] == 0


def test_nearest_predicted_start_is_matched():
    # an extra predicted segment between the true starts: each true start takes its nearest one
    pred = _prediction(
        "a",
        None,
        [
            {"start": 0.2, "end": 1.0, "text": "x"},
            {"start": 1.5, "end": 3.0, "text": "y"},
            {"start": 3.5, "end": 3.6, "text": "z"},
        ],
    )
    assert example_timing(pred, "english")["starts"] == pytest.approx([0.1, 0.3])


def test_no_timing_leaves_the_summary_key_out():
    pred = Prediction(id="a", transcript="hi", hypothesis="hi")
    assert summarize([pred], MetricContext("english")) is None


def test_parity_against_a_reference_run():
    reference = [_prediction("a", TRUTH_WORDS, None)]
    shifts = [0.0, 0.05, 0.2, -0.3, 0.0, 0.099]
    candidate = [_prediction("a", _shifted(TRUTH_WORDS, shifts), None)]
    result = parity(reference, candidate, "english")
    assert result["words"] == 6
    assert result["within_tolerance"] == pytest.approx(100 * 4 / 6, abs=0.01)
    assert result["regressed_examples"] == []  # median shift 0.075 s <= 0.1 s
    late = [_prediction("a", _shifted(TRUTH_WORDS, [0.5] * 6), None)]
    assert parity(reference, late, "english")["regressed_examples"] == ["a"]


# ------------------------------------------------------------------------------------ timing files


def test_ctm_reader_on_a_written_file(tmp_path):
    ctm = tmp_path / "words.ctm"
    ctm.write_text(";; a comment\nu1 1 0.50 0.30 HELLO 0.98\nu1 1 0.80 0.25 WORLD\nu2 1 0.10 0.20 OTHER\n")
    words = read_timing_file(str(ctm), "u1")["words"]
    assert words == [{"word": "HELLO", "start": 0.5, "end": 0.8}, {"word": "WORLD", "start": 0.8, "end": 1.05}]
    with pytest.raises(ValueError, match="no words of utterance 'u3'"):
        read_ctm(ctm.read_text(), "u3")


LONG_TEXTGRID = '''File type = "ooTextFile"
Object class = "TextGrid"

xmin = 0
xmax = 2.5
tiers? <exists>
size = 2
item []:
    item [1]:
        class = "IntervalTier"
        name = "words"
        xmin = 0
        xmax = 2.5
        intervals: size = 3
        intervals [1]:
            xmin = 0
            xmax = 0.42
            text = ""
        intervals [2]:
            xmin = 0.42
            xmax = 1.2
            text = "say ""hi"""
        intervals [3]:
            xmin = 1.2
            xmax = 2.5
            text = "2"
    item [2]:
        class = "TextTier"
        name = "events"
        xmin = 0
        xmax = 2.5
        points: size = 1
        points [1]:
            number = 1.5
            mark = "click"
'''

SHORT_TEXTGRID = """File type = "ooTextFile"
Object class = "TextGrid"

0
2.5
<exists>
1
"IntervalTier"
"utterances"
0
2.5
2
0
1.75
"first part"
1.75
2.5
""
"""


def test_textgrid_reader_long_and_short_format(tmp_path):
    long_file = tmp_path / "a.TextGrid"
    long_file.write_text(LONG_TEXTGRID)
    assert read_timing_file(str(long_file), "a") == {
        "words": [{"word": 'say "hi"', "start": 0.42, "end": 1.2}, {"word": "2", "start": 1.2, "end": 2.5}]
    }
    assert read_textgrid(SHORT_TEXTGRID) == {"segments": [{"text": "first part", "start": 0.0, "end": 1.75}]}
    with pytest.raises(ValueError, match="no tier named"):
        read_textgrid(SHORT_TEXTGRID.replace('"utterances"', '"phones"'))


def test_srt_and_vtt_readers():
    srt = "1\r\n00:00:01,500 --> 00:00:03,250\r\nHello\r\nthere\r\n\r\n2\r\n00:01:02,000 --> 00:01:04,000\r\nbye\r\n"
    assert read_subtitles(srt) == [
        {"start": 1.5, "end": 3.25, "text": "Hello there"},
        {"start": 62.0, "end": 64.0, "text": "bye"},
    ]
    vtt = "WEBVTT\n\ncue-1\n00:01.000 --> 00:02.500 align:start\n<v Roger>Hi\n\n01:00:00.000 --> 01:00:01.000\nlate\n"
    assert read_subtitles(vtt) == [
        {"start": 1.0, "end": 2.5, "text": "Hi"},
        {"start": 3600.0, "end": 3601.0, "text": "late"},
    ]


def test_manifest_rows_carry_timing_and_bad_times_are_one_error(tmp_path, tiny_rows):
    from tests.conftest import BUNDLED
    from whisperbench.datasets import load_dataset
    from whisperbench.errors import DatasetError

    row = dict(tiny_rows[0], audio=str(BUNDLED / "shortform" / tiny_rows[0]["audio"]))
    (tmp_path / "jfk.ctm").write_text("jfk 1 0.32 0.20 And\njfk 1 0.55 0.20 so\n")
    good = dict(row, timing="jfk.ctm", segments=[{"start": 0.3, "end": 8.0}])
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps(good) + "\n")
    example = load_dataset(str(manifest)).dataset.examples[0]
    assert example.extra["words"][1] == {"word": "so", "start": 0.55, "end": 0.75}
    assert Prediction.for_example(example).extra["true_segments"] == [{"start": 0.3, "end": 8.0}]
    manifest.write_text(json.dumps(dict(row, words=[{"word": "x", "start": 2.0, "end": 1.0}])) + "\n")
    with pytest.raises(DatasetError, match=r"m.jsonl line 1 \(id jfk\): words: item 0: need 0 <= start <= end"):
        load_dataset(str(manifest))


# ------------------------------------------------------------------------ recorded runs: reports and gate


def _timed_rows(rows, shift_s: float):
    """Hypothesis rows whose one segment and words are the truth's, moved ``shift_s`` (< 0.5 s) later: the words
    spread evenly over the clip less its last 0.5 s, so that every moved time still lies inside the audio."""
    out = []
    for row in rows:
        words = row["text"].split()
        step = round((row["duration_s"] - 0.5) / len(words), 2)  # whole 10 ms steps: stored times keep 1 ms
        truth = [{"word": w, "start": step * i, "end": step * (i + 0.8)} for i, w in enumerate(words)]
        moved = [dict(w, start=w["start"] + shift_s, end=w["end"] + shift_s) for w in truth]
        out.append(
            (
                dict(row, words=truth, segments=[{"start": 0.0, "end": step * len(words), "text": row["text"]}]),
                {
                    "id": row["id"],
                    "hypothesis": row["text"],
                    "words": moved,
                    "segments": [{"start": shift_s, "end": step * len(words) + shift_s, "text": row["text"]}],
                },
            )
        )
    return out


@pytest.fixture
def timed_runs(tmp_path, tiny_rows):
    """A manifest with true times and two recorded runs: on time, and every time 0.3 s late."""
    from tests.conftest import BUNDLED, write_jsonl
    from whisperbench.cli import main

    rows = [dict(r, audio=str(BUNDLED / "shortform" / r["audio"])) for r in tiny_rows[:3]]
    runs_dir = tmp_path / "runs"
    for name, shift in (("ontime", 0.0), ("late", 0.3)):
        pairs = _timed_rows(rows, shift)
        manifest = write_jsonl(tmp_path / "manifest.jsonl", [truth for truth, _ in pairs])
        hyp = write_jsonl(tmp_path / f"{name}.jsonl", [h for _, h in pairs])
        assert (
            main(
                [
                    "score",
                    "--dataset",
                    str(manifest),
                    "--hypotheses",
                    str(hyp),
                    "--name",
                    name,
                    "--runs-dir",
                    str(runs_dir),
                ]
            )
            == 0
        )
    return runs_dir


def test_summary_gate_and_compare_read_the_planted_shift(timed_runs, capsys):
    from whisperbench.cli import main
    from whisperbench.store.runs import open_run

    late = open_run("late", timed_runs).summary.metrics["timing"]
    assert late["utterance_start_error_ms"]["median"] == pytest.approx(300.0)
    assert late["word_start_error_ms"]["median"] == pytest.approx(300.0)
    assert late["word_end_error_ms"]["within_200ms"] == 0.0
    assert open_run("ontime", timed_runs).summary.metrics["timing"]["word_start_error_ms"]["p90"] == 0.0
    gate = ["gate", "--reference", "ontime", "--runs-dir", str(timed_runs), "--min-qoi", "100"]
    assert main(gate + ["--candidate", "late", "--max-timing-error-ms", "250"]) == 1
    assert "median utterance-start error 300 ms" in capsys.readouterr().out
    assert main(gate + ["--candidate", "late", "--max-timing-error-ms", "350"]) == 0
    capsys.readouterr()
    assert (
        main(["compare", "--reference", "ontime", "--candidate", "late", "--runs-dir", str(timed_runs), "--json"]) == 0
    )
    timing = json.loads(capsys.readouterr().out)[0]["timing"]
    assert timing["timing parity %"] == 0.0 and timing["cand start err ms"] == pytest.approx(300.0)


def test_report_and_subtitles_of_a_timed_run(timed_runs, tmp_path, capsys):
    from whisperbench.cli import main
    from whisperbench.datasets.timing import read_subtitles
    from whisperbench.store.runs import open_run

    assert main(["report", "--runs-dir", str(timed_runs), "--out", str(tmp_path / "board.md"), "--quiet"]) == 0
    text = (tmp_path / "board.md").read_text()
    assert "## Timing" in text and "| late |" in text
    assert main(["report", "--runs-dir", str(timed_runs), "--out", str(tmp_path / "board.html")]) == 0
    assert "<h2>Timing</h2>" in (tmp_path / "board.html").read_text()
    for fmt in ("srt", "vtt"):
        assert (
            main(["subtitles", "late", "--runs-dir", str(timed_runs), "--format", fmt, "--out", str(tmp_path / fmt)])
            == 0
        )
        pred = open_run("late", timed_runs).predictions[0]
        cues = read_subtitles((tmp_path / fmt / f"{pred.id}.{fmt}").read_text())
        assert cues == [{"start": s["start"], "end": s["end"], "text": s["text"]} for s in pred.segments]
    assert main(["subtitles", "ontime", "--runs-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path)]) == 2


def test_per_utterance_wer_assigns_words_by_time():
    import jiwer

    from whisperbench.scoring.timing import utterance_counts

    truth = [
        {"id": "u1", "start": 0.0, "end": 1.9, "text": "the cat sat"},
        {"id": "u2", "start": 2.0, "end": 3.9, "text": "on mats"},
    ]
    words = [{"word": w, "start": 0.6 * i, "end": 0.6 * i + 0.3} for i, w in enumerate("the cat sat on mats".split())]
    pred = Prediction(id="a", transcript="", hypothesis="", words=words)
    pred.extra["true_segments"] = truth
    # "on" lies at 1.8-2.1 s: its middle (1.95 s) falls in u1, so u1 gets an insertion and u2 a deletion
    counts = dict(utterance_counts(pred, "english"))
    assert (counts["u1"].insertions, counts["u2"].deletions) == (1, 1)
    assert counts["u1"].errors / 3 == jiwer.wer("the cat sat", "the cat sat on")
    summary = summarize([pred], MetricContext("english"))["utterance_wer"]
    assert summary["wer"] == pytest.approx(100 * 2 / 5) and summary["utterances"] == 2
    # the same 29 s later: u1 (29.0-30.9 s) spans the 30 s mark, u2 does not
    later = Prediction(
        id="b",
        transcript="",
        hypothesis="",
        words=[dict(w, start=w["start"] + 29.0, end=w["end"] + 29.0) for w in words],
    )
    later.extra["true_segments"] = [dict(s, start=s["start"] + 29.0, end=s["end"] + 29.0) for s in truth]
    split = summarize([later], MetricContext("english"))["utterance_wer"]
    assert split["at_seams"] == {"utterances": 1, "wer": pytest.approx(100 / 3, abs=0.01)}
    assert split["away_from_seams"] == {"utterances": 1, "wer": 50.0} and split["seams"] == "30 s marks"
    # seams the harness recorded replace the 30 s marks: one at 31.5 s lies inside u2 (31.0-32.9 s), not u1
    later.extra["seams_s"] = [31.5]
    moved = summarize([later], MetricContext("english"))["utterance_wer"]
    assert moved["seams"] == "recorded" and moved["at_seams"] == {"utterances": 1, "wer": 50.0}


def test_windowed_strategies_record_their_seams(tiny_long):
    """The harness's sequential windows record each later window's start, the chunked ones the middle of each
    overlap (where the central parts meet): known from the configuration, checked on the bundled 84 s file."""
    from whisperbench.adapters import get_adapter
    from whisperbench.datasets import load_dataset
    from whisperbench.harness.longform import LongFormConfig, strategy_for

    pytest.importorskip("faster_whisper")
    example = load_dataset(str(tiny_long)).dataset.examples[0]
    adapter = get_adapter("faster-whisper")("tiny.en")
    adapter.load()
    config = LongFormConfig("chunked")
    try:
        chunked = strategy_for(config, True).run(adapter, example, True).transcript.extra["seams_s"]
        sequential = (
            strategy_for(LongFormConfig("sequential"), True).run(adapter, example, True).transcript.extra["seams_s"]
        )
    finally:
        adapter.close()
    assert chunked == [round(i * config.step_s + config.stride_s, 3) for i in range(1, len(chunked) + 1)]
    assert len(chunked) == 3 and 0 < sequential[0] <= 30.0 and sequential == sorted(sequential)
    assert all(b - a <= 30.0 for a, b in zip([0.0] + sequential, sequential))


def test_explorer_shows_word_times_and_the_words_that_moved(timed_runs, tiny_rows, tmp_path):
    """A regressed example in the HTML explorer lists both runs' words with their start times, and names the
    transcript words both got right whose starts lie more than 100 ms apart, with the planted shift."""
    from tests.conftest import BUNDLED, write_jsonl
    from whisperbench.cli import main

    rows = [dict(r, audio=str(BUNDLED / "shortform" / r["audio"])) for r in tiny_rows[:3]]
    pairs = _timed_rows(rows, 0.3)
    manifest = write_jsonl(tmp_path / "manifest.jsonl", [truth for truth, _ in pairs])
    hyps = [h for _, h in pairs]
    first = hyps[0]["words"]
    hyps[0] = dict(
        hyps[0],
        hypothesis=" ".join(["zebra"] + [w["word"] for w in first[1:]]),
        words=[dict(first[0], word="zebra")] + first[1:],
    )  # one substitution: a regression
    assert (
        main(
            [
                "score",
                "--dataset",
                str(manifest),
                "--hypotheses",
                str(write_jsonl(tmp_path / "w.jsonl", hyps)),
                "--name",
                "wrong",
                "--runs-dir",
                str(timed_runs),
            ]
        )
        == 0
    )
    out = tmp_path / "board.html"
    assert main(["report", "--runs-dir", str(timed_runs), "--reference", "ontime", "--out", str(out)]) == 0
    page = out.read_text()
    row = page[page.index(f'id="wrong--{rows[0]["id"]}"') :]
    row = row[: row.index("</tr>")]
    truth = pairs[0][0]["words"]
    assert "word times" in row and f"{truth[1]['word']}<sub>{truth[1]['start'] + 0.3:.2f}</sub>" in row
    moved = len(truth) - 1  # every word but the substituted one, each 300 ms late
    assert f"{moved} of {moved} words both got right start more than 100 ms apart" in row and "(+300 ms)" in row
