"""Scoring ahead (``whisperbench.scoring.prescore``): a recorded run's pairs scored by a helper process while the
run is written. The figures must be those of scoring at the end, to the last digit, and counted independently."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import random
import signal
import time

import jiwer
import pytest

from whisperbench import api
from whisperbench.scoring import normalize, prescore
from whisperbench.scoring.summary import PARALLEL_MIN, score_texts
from whisperbench.store import open_run

pytestmark = pytest.mark.skipif(not prescore.available(), reason="scoring ahead needs fork (not on this system)")

PAIRS = [
    ("Mr. Smith paid $5 for 2 apples.", "mister smith paid five dollars for two apples", None),
    ("It's colour, isn't it?", "its color isnt it", None),
    ("語言識別，準確率", "语言识别准确率", "zh"),
    ("Guten Tag, Frau Müller.", "guten tag frau muller", "de"),
    ("one two three", "", None),
]


def test_a_pair_scored_ahead_is_the_pair_scored_now_and_only_that_pair():
    alone = [score_texts(t, h, language, "english", True) for t, h, language in PAIRS]
    with prescore.ScoresAhead(PAIRS, "english", True, score_texts):
        assert prescore.collect(finish=True) == len(PAIRS)
        assert [score_texts(t, h, language, "english", True) for t, h, language in PAIRS] == alone
        assert all(prescore.lookup(pair, "english", True) is not None for pair in PAIRS)
        transcript, hypothesis, language = PAIRS[0]
        for other in ((transcript, hypothesis + " x", language), (transcript, hypothesis, "en")):
            assert prescore.lookup(other, "english", True) is None  # another text or language: never its score
        assert prescore.lookup(PAIRS[0], "basic", True) is None  # another normalizer: never
        assert prescore.lookup(PAIRS[0], "english", False) is None
    assert prescore.lookup(PAIRS[0], "english", True) is None  # forgotten when the run ends


def test_the_helper_is_gone_when_the_run_fails_and_collect_without_one_takes_nothing():
    pairs = PAIRS * 50_000  # longer than the with-block lasts
    with pytest.raises(RuntimeError):
        with prescore.ScoresAhead(pairs, "english", True, score_texts):
            assert len(multiprocessing.active_children()) == 1
            raise RuntimeError("the run failed")
    assert multiprocessing.active_children() == []
    assert prescore.collect() == 0 and prescore.lookup(PAIRS[0], "english", True) is None


def test_a_helper_stopped_at_once_leaves_nothing_and_the_run_goes_on():
    """Stopped before its first chunk, perhaps before it starts: no score kept, no error, no process left."""
    with prescore.ScoresAhead(PAIRS * 50_000, "english", True, score_texts):
        assert prescore.collect() >= 0
    assert prescore.lookup(PAIRS[0], "english", True) is None and multiprocessing.active_children() == []


def test_a_helper_killed_midway_costs_the_run_nothing_but_its_unfinished_chunk(caplog):
    """Fault injection: the helper killed (as the kernel's OOM killer would) while it scores; what it finished is
    kept, a warning says so, and every kept score is the one scored now."""
    pairs = [(f"word {i} here", f"word {i} there", None) for i in range(200_000)]
    with prescore.ScoresAhead(pairs, "english", True, score_texts) as ahead:
        time.sleep(0.5)
        os.kill(ahead._process.pid, signal.SIGKILL)
        taken = prescore.collect()
        assert 0 < taken < len(pairs) and "exit code -9" in caplog.text
        kept = [pair for pair in pairs if prescore.lookup(pair, "english", True) is not None]
        assert len(kept) == taken
        for pair in kept[:: max(1, len(kept) // 50)]:
            ahead_score = score_texts(*pair, "english", True)
            assert ahead_score == score_texts(pair[0], pair[1], "de", "english", True)  # "de": not in the memo


def _pairs_files(tmp_path, tiny_rows, count: int):
    """A manifest of ``count`` distinct transcripts (one audio file) and hypotheses with random word edits; every
    50th hypothesis has spaces around it (the harness strips them: scored at the end, not ahead), one is missing."""
    from tests.conftest import BUNDLED

    rng = random.Random(5)
    audio = str(BUNDLED / "shortform" / tiny_rows[1]["audio"])
    words = [w.strip(",.") for row in tiny_rows for w in row["text"].split()]
    rows, hyps = [], []
    for i in range(count):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + f" {i}."
        hyp = [w if rng.random() > 0.1 else rng.choice(words) for w in text.split() if rng.random() > 0.05]
        rows.append({"id": f"u{i:05d}", "audio": audio, "text": text})
        if i != 7:
            hyps.append({"id": f"u{i:05d}", "hypothesis": (" %s " if i % 50 == 0 else "%s") % " ".join(hyp)})
    manifest, hypotheses = tmp_path / "manifest.jsonl", tmp_path / "hyps.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    hypotheses.write_text("".join(json.dumps(h) + "\n" for h in hyps), encoding="utf-8")
    return manifest, hypotheses, rows, {h["id"]: h["hypothesis"] for h in hyps}


def _finishing_collect(monkeypatch) -> tuple[list[int], set]:
    """Make every collect wait until the helper has scored all it reads; what it took, and the (normalizer,
    characters) keys the memo holds then."""
    taken: list[int] = []
    keys: set = set()
    collect = prescore.collect

    def finished_collect(finish: bool = False) -> int:
        taken.append(collect(finish=True))
        keys.update(prescore._MEMO)
        return taken[-1]

    monkeypatch.setattr(prescore, "collect", finished_collect)
    return taken, keys


def test_a_score_with_pairs_scored_ahead_has_the_figures_of_one_without(tmp_path, tiny_rows, monkeypatch):
    """Every pair scored ahead (the helper finishes before the end's scoring takes them), against the same run
    with no helper: the same summary and score table; the counts equal jiwer's on the normalized texts."""
    manifest, hypotheses, rows, hyps = _pairs_files(tmp_path, tiny_rows, PARALLEL_MIN + 1000)
    monkeypatch.setenv("WHISPERBENCH_CACHE", str(tmp_path / "cache"))
    taken, _ = _finishing_collect(monkeypatch)
    ahead = api.score(hypotheses, manifest, runs_dir=tmp_path / "runs", name="ahead")
    assert taken[0] == len(rows) - 1  # every hypothesis the file has, the missing one excepted
    with monkeypatch.context() as altered:  # each kept score altered: the run uses every one, padded ones included
        altered.setattr(prescore, "collect", _tampering(prescore.collect))
        tampered = api.score(hypotheses, manifest, runs_dir=tmp_path / "runs", name="tampered")
    assert tampered.summary is not None and tampered.summary.insertions == len(rows) - 1
    monkeypatch.setattr(prescore, "available", lambda: False)
    at_end = api.score(hypotheses, manifest, runs_dir=tmp_path / "runs", name="at-end")
    assert prescore.lookup(("x", "x", None), "english", True) is None  # nothing kept after the run

    measured = ("wall_s", "harness_overhead_pct", "peak_rss_mb", "load_s", "first_result_s")
    timeless = functools.partial(_without, keys=(*measured, "rtfx_reliable", "rtfx_unreliable_why"))  # the load
    assert ahead.summary is not None and at_end.summary is not None
    assert timeless(ahead.summary.to_dict()) == timeless(at_end.summary.to_dict())
    tables = [open_run(str(tmp_path / "runs" / name)).score_table() for name in ("ahead", "at-end")]
    assert tables[0].drop_columns(["infer_s", "cpu_s"]).equals(tables[1].drop_columns(["infer_s", "cpu_s"]))

    present = [r for r in rows if r["id"] in hyps]
    counted = jiwer.process_words([normalize(r["text"]) for r in present], [normalize(hyps[r["id"]]) for r in present])
    missing = len(normalize(rows[7]["text"]).split())  # the example without a hypothesis: every word deleted
    summary = ahead.summary
    assert summary is not None
    assert (summary.hits, summary.substitutions, summary.deletions, summary.insertions) == (
        counted.hits,
        counted.substitutions,
        counted.deletions + missing,
        counted.insertions,
    )
    assert summary.num_failed == 1


def test_the_command_line_s_helper_reads_the_files_before_the_request_and_every_score_is_used(
    tmp_path, tiny_rows, monkeypatch, capsys
):
    """``whisperbench score`` starts its helper from the two files before it makes its request
    (``harness.ahead.scores_ahead_of_file``): every pair the file has is scored ahead, with the normalizer the run
    takes, and the run's figures are those of one without a helper."""
    from whisperbench.cli import main

    manifest, hypotheses, rows, _ = _pairs_files(tmp_path, tiny_rows, PARALLEL_MIN + 1000)
    monkeypatch.setenv("WHISPERBENCH_CACHE", str(tmp_path / "cache"))
    taken, keys = _finishing_collect(monkeypatch)
    args = ["score", "--hypotheses", str(hypotheses), "--dataset", str(manifest), "--runs-dir", str(tmp_path / "runs")]
    assert main([*args, "--name", "ahead", "--json"]) == 0
    ahead = json.loads(capsys.readouterr().out)
    assert taken[0] == len(rows) - 1 and keys == {("english", True)}  # every pair the file has, the run's normalizer
    monkeypatch.setattr(prescore, "collect", _tampering(prescore.collect))  # fault injection: each kept score altered
    assert main([*args, "--name", "tampered", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["insertions"] == len(rows) - 1  # the end's scoring took every one
    monkeypatch.setattr(prescore, "available", lambda: False)
    assert main([*args, "--name", "plain", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    measured = ("wall_s", "harness_overhead_pct", "peak_rss_mb", "load_s", "first_result_s")
    keys_out = (*measured, "rtfx_reliable", "rtfx_unreliable_why")
    assert _without(ahead, keys_out) == _without(plain, keys_out)
    helpers = [p for p in multiprocessing.active_children() if p.name == "whisperbench-score-ahead"]
    assert not prescore.running() and helpers == []  # (the scoring pool's workers may still be exiting: by design)


def _tampering(collect):
    """``collect``, then each kept score made one insertion and nothing else: a run that uses them all counts one
    insertion per pair scored ahead."""

    def tampered(finish: bool = False) -> int:
        taken = collect(finish)
        for memo in prescore._MEMO.values():
            for key, packed in memo.items():
                memo[key] = (*packed[:3], (0, 0, 0, 1), packed[4])
        return taken

    return tampered


def _without(record: dict, keys: tuple[str, ...]) -> dict:
    return {k: v for k, v in record.items() if k not in keys}


def test_a_helper_reading_the_files_that_guessed_the_normalizer_wrong_changes_nothing(tmp_path, tiny_rows, monkeypatch):
    """The helper started before the dataset loads reads the manifest itself and picks the normalizer from its
    first rows' languages (English here); the rows after them are German, so the run takes the basic normalizer:
    none of the helper's scores may be used, and the figures are those of a run without a helper."""
    manifest, hypotheses, rows, _ = _pairs_files(tmp_path, tiny_rows, PARALLEL_MIN + 1000)
    for i, row in enumerate(rows):
        row["language"] = "en" if i < 2 * prescore.CHUNK else "de"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setenv("WHISPERBENCH_CACHE", str(tmp_path / "cache"))
    taken, keys = _finishing_collect(monkeypatch)
    guessed = api.score(hypotheses, manifest, runs_dir=tmp_path / "runs", name="guessed")
    assert guessed.summary is not None and guessed.summary.normalizer == "basic"
    assert taken[0] == len(rows) - 1  # every pair the file has scored ahead…
    assert keys == {("english", True)}  # …with the normalizer guessed: no score the run looks up (basic) is there
    monkeypatch.setattr(prescore, "available", lambda: False)
    plain = api.score(hypotheses, manifest, runs_dir=tmp_path / "runs", name="plain")
    measured = ("wall_s", "harness_overhead_pct", "peak_rss_mb", "load_s", "first_result_s")
    keys = (*measured, "rtfx_reliable", "rtfx_unreliable_why")
    assert plain.summary is not None
    assert _without(guessed.summary.to_dict(), keys) == _without(plain.summary.to_dict(), keys)


def test_a_manifest_the_helper_cannot_read_fails_the_run_as_before_and_leaves_no_helper(
    tmp_path, tiny_rows, monkeypatch
):
    """A bad line late in a large manifest: the helper's reading fails quietly, the run says which line, and no
    process is left behind."""
    manifest, hypotheses, rows, _ = _pairs_files(tmp_path, tiny_rows, PARALLEL_MIN + 1000)
    with open(manifest, "a", encoding="utf-8") as fh:
        fh.write('{"id": "broken", "audio": \n')
    monkeypatch.setenv("WHISPERBENCH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(api.WhisperbenchError, match=rf"line {len(rows) + 1}: invalid JSON"):
        api.score(hypotheses, manifest, runs_dir=tmp_path / "runs", name="broken")
    assert multiprocessing.active_children() == [] and not prescore.running()


def test_the_helper_reads_each_row_s_id_transcript_and_language_as_the_load_maps_them(tmp_path, tiny_rows):
    """What the helper reads of a manifest (text-only examples, a third of the load's work) is what the run holds:
    ids from the id column or the audio file's name, mapped columns, language labels in any form, a missing or
    non-ASCII transcript; otherwise every pair it scores would be missed at the end (never wrong: only wasted)."""
    from tests.conftest import BUNDLED
    from whisperbench.datasets import load_dataset, unchecked_examples
    from whisperbench.types import ColumnMap

    audio = str(BUNDLED / "shortform" / tiny_rows[1]["audio"])
    rows = [
        {"utt": "a", "wav": audio, "sentence": "Guten Tag.", "language": "German"},
        {"wav": audio.replace("jfk", "jfk"), "sentence": "no id: the audio file names it", "language": "en-US"},
        {"utt": "c", "wav": audio, "sentence": "caf\u00e9 \u4f60\u597d", "language": "zh"},
        {"utt": "d", "wav": audio, "sentence": None},
        {"utt": "e", "wav": audio, "sentence": 42, "language": "fra"},
    ]
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    columns = ColumnMap.of({"id": "utt", "audio": "wav", "text": "sentence"})
    assert len(load_dataset(str(manifest), columns=columns, skip_invalid=True).dataset.examples) == 4
    for spec, cols in ((str(manifest), columns), ("tiny-shortform", ColumnMap()), ("tiny-longform", ColumnMap())):
        loaded = load_dataset(spec, columns=cols, skip_invalid=True).dataset.examples
        read = {
            ex.id: (ex.text, ex.language) for chunk in unchecked_examples(spec, columns=cols, chunk=2) for ex in chunk
        }
        assert loaded and {e.id: (e.text, e.language) for e in loaded}.items() <= read.items(), spec
