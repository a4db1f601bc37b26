"""Hallucination measures with known answers: planted loops, bursts and output on non-speech audio are flagged,
clean output is not; empty references score as documented (docs/robustness.md); the gate fails on planted loops."""

import json
import zlib

import jiwer
import numpy as np
import pytest
import soundfile as sf

from whisperbench.cli import main
from whisperbench.scoring import qoi, score_prediction, summarize
from whisperbench.scoring.hallucination import (
    Thresholds,
    compression_ratio,
    copies_in_a_row,
    example_hallucination,
    insertion_burst,
    loop_of,
    repeat_run,
)
from whisperbench.types import Prediction

from .conftest import BUNDLED, record_run, write_jsonl

LOOP = "i will go to the store " * 6


def _scored(reference: str, hypothesis: str, status: str = "ok") -> Prediction:
    return score_prediction(Prediction("x", reference, hypothesis, status=status), "english")


def test_repeat_run_finds_the_longest_tandem_repeat():
    words = "so we said that we will we will we will we will go".split()
    run = repeat_run(words)
    assert (run.phrase, run.copies, run.words) == (("we", "will"), 4, 8)
    # brute force: for each start and phrase length, copies back to back; the max words covered
    best = max(
        (n * copies_in_a_row(words[i:], tuple(words[i : i + n])), n)
        for n in range(1, len(words) // 2 + 1)
        for i in range(len(words) - n + 1)
    )
    assert run.words == best[0]
    assert repeat_run("a b c d".split()).copies == 0


def test_loop_is_a_phrase_repeated_beyond_the_reference():
    assert loop_of("i will go to the store", LOOP.strip()).phrase == tuple("i will go to the store".split())
    assert loop_of("i will go to the store", "i will go to the store") is None
    said = "thank you thank you thank you for that"
    assert loop_of(said, said) is None  # as often as the reference
    assert loop_of("thank you thank you for that", said).phrase == ("thank", "you")
    assert loop_of("no", "no no no no no").phrase == ("no",)
    assert loop_of("no", "no no no no") is None  # 4 words: below the default of 5
    assert loop_of("a", "thank you thank you", Thresholds(loop_repeats=2, loop_words=4)) is not None
    assert loop_of("a", "thank you thank you") is None  # twice is below the default of 3


def test_compression_ratio_is_whispers():
    utils = pytest.importorskip(
        "whisper.utils", reason="compared with openai-whisper's own: pip install 'whisperbench[openai-whisper]'"
    )
    whisper_compression_ratio = utils.compression_ratio
    for text in (LOOP, "And so my fellow Americans, ask not", "ééé " * 30):
        assert compression_ratio(text) == pytest.approx(whisper_compression_ratio(text))
        assert compression_ratio(text) == len(text.encode()) / len(zlib.compress(text.encode()))
    assert compression_ratio("") is None
    assert compression_ratio(LOOP) > Thresholds().compression_ratio > compression_ratio("ask not what your country")


def _jiwer_longest_insertion(reference: str, hypothesis: str) -> int:
    out = jiwer.process_words(reference, hypothesis)
    return max((c.hyp_end_idx - c.hyp_start_idx for c in out.alignments[0] if c.type == "insert"), default=0)


@pytest.mark.parametrize(
    "reference, hypothesis, expected",
    [
        ("ask not what your country can do", "ask not what your country can do", 0),
        (
            "ask not what your country can do",
            "ask not thank you for watching please subscribe what your country can do",
            6,
        ),
        ("ask not what your country can do", "ask not what your country can do for you", 2),
        ("ask not what your country can do", "oh ask not what your nation can do now", 1),
    ],
)
def test_insertion_burst_matches_jiwer_alignment(reference, hypothesis, expected):
    assert insertion_burst(reference, hypothesis) == expected == _jiwer_longest_insertion(reference, hypothesis)


def test_example_flags_planted_and_clean():
    ref = "ask not what your country can do for you"
    clean = example_hallucination(_scored(ref, "Ask not what your country can do for you."))
    assert clean.flags == []
    looped = example_hallucination(_scored(ref, "Ask not what your country " + LOOP))
    assert "loop" in looped.flags and looped.compression_ratio > 2.4
    burst = example_hallucination(
        _scored(ref, "Ask not what your country, subtitles by the amara org community, can do for you")
    )
    assert burst.flags == ["burst"] and burst.burst_words == 6
    silence = example_hallucination(_scored("", "Thank you."))
    assert silence.flags == ["nonspeech_output"] and silence.nonspeech
    assert example_hallucination(_scored("", "")).flags == []
    catastrophic = example_hallucination(_scored("ask not", "thank you for watching"))
    assert catastrophic.catastrophic and not catastrophic.nonspeech_output
    failed = example_hallucination(_scored(ref, LOOP, status="failed"))
    assert failed.flags == []  # a failure is counted as a failure, not as a hallucination


def test_empty_reference_scoring_as_documented():
    """Empty reference: example WER/CER undefined, every output word an insertion that adds to the corpus WER's
    errors and nothing to its reference words; QoI compares errors, so any output against none regresses."""
    speech, silent = _scored("ask not what", "ask not what"), _scored("", "Thank you.")
    assert (silent.wer, silent.cer, silent.scored().words.insertions, silent.scored().chars.insertions) == (
        None,
        None,
        2,
        len("thank you"),
    )
    run = summarize(
        [Prediction("a", "ask not what", "ask not what"), Prediction("b", "", "Thank you.")], "english", "short"
    )
    assert run.wer == pytest.approx(100.0 * 2 / 3) and run.empty_transcripts == 1
    assert run.cer == pytest.approx(100.0 * len("thank you") / len("ask not what"))
    quiet = Prediction("b", "", "")
    result = qoi([speech, quiet], [speech, Prediction("b", "", "Thank you.")])
    assert (result.regressed, result.qoi) == (1, 50.0)
    assert qoi([speech, Prediction("b", "", "Thank you.")], [speech, quiet]).improved == 1
    hall = summarize([speech, silent, quiet], "english", "short").metrics["hallucination"]
    assert (hall["nonspeech_examples"], hall["nonspeech_with_output"], hall["nonspeech_output_rate"]) == (2, 1, 50.0)


def test_thresholds_are_options():
    preds = [Prediction("a", "ask not", "ask not thank you for watching")]
    assert summarize(preds, "english", "short").metrics["hallucination"]["bursts"] == 0
    tight = summarize(preds, "english", "short", metric_options={"hallucination": {"burst_words": 4}})
    assert tight.metrics["hallucination"]["bursts"] == 1
    assert tight.metrics["hallucination"]["thresholds"]["burst_words"] == 4
    with pytest.raises(ValueError, match="unknown hallucination threshold"):
        Thresholds.from_options({"burst": 3})


def _nonspeech_manifest(tmp_path, rows):
    """The bundled rows plus two non-speech rows (digital silence, low noise) with empty transcripts."""
    base = BUNDLED / "shortform"
    out = [dict(r, audio=str(base / r["audio"])) for r in rows]
    rng = np.random.default_rng(0)
    for name, samples in (("silence", np.zeros(16000)), ("noise", 0.01 * rng.standard_normal(16000))):
        sf.write(tmp_path / f"{name}.wav", samples, 16000)
        out.append({"id": name, "audio": str(tmp_path / f"{name}.wav"), "text": "", "nonspeech": True})
    return write_jsonl(tmp_path / "with-nonspeech.jsonl", out)


def test_summary_and_gate_on_planted_loops(tmp_path, tiny_rows, capsys):
    manifest = _nonspeech_manifest(tmp_path, tiny_rows)
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    runs = tmp_path / "runs"
    looped = {"jfk", "1089-134691-0001"}
    record_run(runs, manifest, rows, "ref", lambda r: r["text"])
    record_run(runs, manifest, rows, "same", lambda r: r["text"].lower())
    record_run(runs, manifest, rows, "loops", lambda r: r["text"] + " " + LOOP if r["id"] in looped else r["text"])
    record_run(runs, manifest, rows, "talks", lambda r: r["text"] or "Thank you.")
    summary = json.loads((runs / "loops" / "summary.json").read_text())["hallucination"]
    assert (summary["loops"], summary["nonspeech_examples"], summary["nonspeech_with_output"]) == (2, 2, 0)
    assert summary["ids"]["loops"] == sorted(looped) and summary["bursts"] == 2  # appended loops are insertions
    talks = json.loads((runs / "talks" / "summary.json").read_text())["hallucination"]
    assert talks["ids"]["nonspeech_with_output"] == ["noise", "silence"] and talks["nonspeech_output_rate"] == 100.0
    gate = ["gate", "--reference", "ref", "--runs-dir", str(runs), "--min-qoi", "0"]
    assert main(gate + ["--candidate", "same", "--max-new-loops", "0", "--max-new-bursts", "0"]) == 0
    capsys.readouterr()
    assert main(gate + ["--candidate", "loops", "--max-new-loops", "1"]) == 1
    out = capsys.readouterr().out
    assert "[FAIL] new loops: 2 example(s)" in out and "1089-134691-0001, jfk" in out
    assert main(gate + ["--candidate", "loops", "--max-new-loops", "2"]) == 0
    assert main(gate + ["--candidate", "talks", "--max-nonspeech-output-rate", "50"]) == 1


def test_reports_show_hallucinations(tmp_path, tiny_rows, capsys):
    manifest = _nonspeech_manifest(tmp_path, tiny_rows)
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    runs = tmp_path / "runs"
    record_run(runs, manifest, rows, "ref", lambda r: r["text"])
    record_run(
        runs, manifest, rows, "cand", lambda r: r["text"] + " " + LOOP if r["id"] == "jfk" else r["text"] or "Bye."
    )
    capsys.readouterr()
    assert main(["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "new loops vs the reference: 1 (jfk)" in out and "output on 2 of 2 non-speech examples" in out
    assert main(["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--json"]) == 0
    hall = json.loads(capsys.readouterr().out)[0]["hallucination"]
    assert hall["new"]["loops"] == ["jfk"] and hall["nonspeech_output_rate"] == 100.0
    assert (
        main(["report", "--runs-dir", str(runs), "--reference", "ref", "--quiet", "--out", str(tmp_path / "l.md")]) == 0
    )
    table = (tmp_path / "l.md").read_text().split("## Hallucinations")[1]
    cand_row = next(line for line in table.splitlines() if line.endswith("| cand |"))
    head = next(line for line in table.splitlines() if line.startswith("| Implementation"))
    cells = dict(zip([c.strip() for c in head.split("|")], [c.strip() for c in cand_row.split("|")]))
    # jfk: 36 words added to 22: WER > 100 %; both runs have the two non-speech examples: said once, not per row
    assert [cells[f"{h} (examples)"] for h in ("Loops", "Bursts", "Output on non-speech", "Catastrophic")] == [
        "1",
        "1",
        "2",
        "1",
    ]
    assert "In every run: Non-speech examples: 2." in table and "Non-speech examples (examples)" not in head
    assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert 'table class="sortable hallucination"' in page and 'id="hallucination-filter"' in page
    assert 'id="cand--jfk" data-flags="loop burst catastrophic"' in page and 'data-flags="nonspeech_output"' in page


def test_loop_shortcut_misses_no_loop():
    """The cheap pre-check (spacings at which a word comes back) finds every loop the full search finds."""
    import random

    from whisperbench.scoring.hallucination import _runs

    rng = random.Random(0)
    for _ in range(2000):
        words = [rng.choice(["a", "b", "cd", "e"]) for _ in range(rng.randint(0, 24))]
        full = [r for r in _runs(words, range(1, len(words) // 2 + 1)) if r.copies >= 3 and r.words >= 5]
        found = loop_of("", " ".join(words))
        assert (found is None) == (not full)
        if full:
            assert found.words == max(r.words for r in full)


def test_thresholds_from_the_command_line_are_kept_and_used_by_the_gate(tmp_path, tiny_rows, capsys):
    """``--threshold hallucination.burst_words=4`` flags a planted 4-word burst the default (5) does not; the
    summary keeps the thresholds, a rescore without ``--threshold`` keeps them, and the gate judges new bursts with
    the reference run's thresholds. A bad threshold is one line and exit 2."""
    from whisperbench.cli import main
    from whisperbench.store.runs import open_run

    from .conftest import BUNDLED, record_run, write_jsonl

    rows = [dict(r, audio=str(BUNDLED / "shortform" / r["audio"])) for r in tiny_rows]
    manifest = write_jsonl(tmp_path / "m.jsonl", rows)
    runs = tmp_path / "runs"
    burst = lambda r: r["text"] + " and then some more" if r["id"] == "jfk" else r["text"]  # noqa: E731
    record_run(runs, manifest, rows, "ref", lambda r: r["text"])
    record_run(runs, manifest, rows, "cand", burst)
    assert open_run("cand", runs).summary.metrics["hallucination"]["bursts"] == 0  # 4 < 5 words
    gate = [
        "gate",
        "--reference",
        "ref",
        "--candidate",
        "cand",
        "--runs-dir",
        str(runs),
        "--min-qoi",
        "0",
        "--max-new-bursts",
        "0",
    ]
    assert main(gate) == 0
    for name in ("ref", "cand"):
        assert main(["rescore", name, "--runs-dir", str(runs), "--threshold", "hallucination.burst_words=4"]) == 0
    cand = open_run("cand", runs).summary.metrics["hallucination"]
    assert cand["bursts"] == 1 and cand["thresholds"]["burst_words"] == 4
    assert main(["rescore", "cand", "--runs-dir", str(runs)]) == 0  # no --threshold: the stored ones are kept
    assert open_run("cand", runs).summary.metrics["hallucination"]["thresholds"]["burst_words"] == 4
    capsys.readouterr()
    assert main(gate) == 1 and "new bursts: 1 example(s)" in capsys.readouterr().out
    for bad, said in (
        ("hallucination.burst=4", "unknown hallucination threshold(s) ['burst']"),
        ("hallucination.burst_words=many", "burst_words='many': expected int"),
        ("timing.collar=1", "metric 'timing' takes no options"),
        ("burst_words=4", "expected METRIC.NAME=VALUE"),
    ):
        assert main(["rescore", "cand", "--runs-dir", str(runs), "--threshold", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and err.count("\n") == 0, err


@pytest.mark.parametrize(
    "thresholds",
    [Thresholds(), Thresholds(burst_words=2, catastrophic_wer=50.0), Thresholds(loop_repeats=2, loop_words=4)],
)
def test_flags_read_from_the_score_table_equal_those_of_each_example(tmp_path, thresholds):
    """``compare`` and ``gate`` read the flags from the score table's columns (no text normalized or aligned
    again); they must be the per-object measures' to the example, under default and other thresholds."""
    import random

    from whisperbench.reports.hallucination import flagged
    from whisperbench.scoring.hallucination import KINDS
    from whisperbench.store.runs import RunStore, open_run

    rng = random.Random(3)
    words = "ask not what your country can do for you thank watching".split()
    texts = [
        ("Ask not what your country can do for you.", "ask not what your country " + LOOP, "ok"),
        ("", "Thank you.", "ok"),
        ("", "", "ok"),
        ("ask not", "thank you for watching", "ok"),
        ("ask not what your country", LOOP, "error"),
        ("no", "no no no no", "ok"),
        ("a", "thank you thank you", "ok"),
    ] + [
        (" ".join(rng.choices(words, k=8)), " ".join(rng.choices(words, k=rng.randint(0, 14))), "ok") for _ in range(60)
    ]
    store = RunStore(tmp_path / "run")
    store.write_info({"adapter": "recorded", "model": "none", "normalizer": "english", "status": "finished"})
    with store.open_for_append() as writer:
        for i, (ref, hyp, status) in enumerate(texts):
            writer.append(Prediction(f"e{i}", ref, hyp if status == "ok" else "", status=status))
    run = open_run(str(tmp_path / "run"))
    found = [example_hallucination(p, thresholds) for p in run.scored("english")]
    expected = {kind: {h.id for h in found if getattr(h, attr)} for kind, attr in KINDS.items()}
    expected["nonspeech"] = {h.id for h in found if h.nonspeech}
    assert flagged(run, "english", thresholds) == expected
    # summary.json's value: from the table's columns (as a run is finalized) and from the predictions alike
    from dataclasses import asdict

    from whisperbench.scoring.hallucination import summarize as summarize_hallucination
    from whisperbench.scoring.metrics import MetricContext

    options, scored = {"hallucination": asdict(thresholds)}, run.scored("english")
    from_table = summarize_hallucination(scored, MetricContext("english", options=options, table=run.score_table()))
    assert from_table == summarize_hallucination(scored, MetricContext("english", options=options))
    assert {kind: set(from_table["ids"][kind]) for kind in KINDS} == {kind: expected[kind] for kind in KINDS}
    assert from_table["longest_burst_words"] == max(h.burst_words for h in found)
    assert expected["loops"] and expected["bursts"] and expected["nonspeech_with_output"] and expected["catastrophic"]


def _periods_by_arrays(words, thresholds):
    """The spacings at which some word comes back ``loop_repeats`` times in a row, found independently: per spacing,
    every start compared at once as arrays of word numbers (what the scorer did before it visited word places)."""
    ids = np.array([{w: i for i, w in enumerate(dict.fromkeys(words))}[w] for w in words], dtype=np.int64)
    periods = set()
    for gap in range(1, thresholds.max_ngram + 1):
        span = len(ids) - (thresholds.loop_repeats - 1) * gap
        if span <= 0:
            break
        found = np.ones(span, dtype=bool)
        for k in range(1, thresholds.loop_repeats):
            found &= ids[:span] == ids[k * gap : k * gap + span]
        if found.any():
            periods.add(gap)
    return periods


def test_loop_spacings_equal_an_array_search_on_random_texts():
    """The loop finder's spacings equal an independent array search on 5,000 random texts of few distinct words
    (most with a word said three times, a third with a phrase repeated in them), under varied thresholds; and a
    million-word loop of one word is found in linear time."""
    import random
    import time

    from whisperbench.scoring.hallucination import Thresholds, _loop_periods

    rng = random.Random(7)
    found_some = 0
    for _ in range(5000):
        vocabulary = [f"w{i}" for i in range(rng.randint(1, 12))]
        words = [rng.choice(vocabulary) for _ in range(rng.randint(0, 60))]
        if rng.random() < 0.3:
            phrase = [rng.choice(vocabulary) for _ in range(rng.randint(1, 8))]
            at = rng.randint(0, len(words))
            words[at:at] = phrase * rng.randint(2, 5)
        thresholds = Thresholds(loop_repeats=rng.randint(2, 5), max_ngram=rng.randint(1, 25))
        expected = _periods_by_arrays(words, thresholds)
        assert _loop_periods(words, thresholds) == expected, (words, thresholds)
        found_some += bool(expected)
    assert found_some > 1000
    start = time.process_time()
    assert _loop_periods(["no"] * 1_000_000, Thresholds()) == set(range(1, 21))
    assert time.process_time() - start < 20
