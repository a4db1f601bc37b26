"""Answers in the terminal (issue 39, item 2): `compare --examples N` shows the N worst regressions as an aligned
word diff, and the per-language table (with language-ID accuracy) when the dataset has languages. Runs are
recorded hypotheses of openai-whisper base and tiny.en on the bundled clips (no model)."""

from __future__ import annotations

import json
import re

import jiwer
import pytest

import whisperbench as wb
from whisperbench.cli import main
from whisperbench.reports.terminal import align_three, render_regressions
from whisperbench.scoring import normalize

from .conftest import BUNDLED, write_jsonl

BASE = BUNDLED / "recorded" / "openai-whisper-base.jsonl"
TINY_EN = BUNDLED / "recorded" / "openai-whisper-tiny.en.jsonl"
ANSI = re.compile(r"\033\[[0-9;]*m")


@pytest.fixture
def runs(tmp_path):
    runs = tmp_path / "runs"
    wb.score(BASE, "tiny-shortform", runs_dir=runs, name="base")
    wb.score(TINY_EN, "tiny-shortform", runs_dir=runs, name="tiny")
    return runs


@pytest.mark.parametrize(
    "pair",
    [
        ("ask not what your country can do", "ask what your country can can do"),
        ("a b c d", "x a c y d z"),
        ("one two", ""),
        ("", "hello there"),
    ],
)
def test_each_row_has_the_errors_jiwer_counts_and_keeps_the_words_in_order(pair):
    transcript, output = pair
    rows = align_three(transcript, output, output)
    assert len({len(row) for row in rows}) == 1  # one column per position, in every row
    kinds = [cell.kind for cell in rows[2]]
    if transcript and output:
        counted = jiwer.process_words(transcript, output)
        assert (kinds.count("sub"), kinds.count("del"), kinds.count("ins")) == (
            counted.substitutions,
            counted.deletions,
            counted.insertions,
        )
    assert " ".join(c.text for c in rows[0] if c.text) == transcript
    assert " ".join(c.text for c in rows[2] if c.text and c.kind != "del") == output


def test_compare_examples_shows_the_worst_regressions_aligned(runs, capsys):
    args = ["compare", "--reference", "base", "--candidate", "tiny", "--runs-dir", str(runs), "--examples", "3"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "tiny vs base: 1 regressed of 6, the 1 worst:" in out and "1998-15444-0000: +9 errors" in out
    assert not ANSI.search(out)  # not a terminal: no colour codes
    rows = {label: [] for label in ("transcript", "reference", "candidate")}
    for line in out.splitlines():
        label = line.split(" ", 1)[0]
        if label in rows:
            rows[label] += line[len(label) :].split()
    hypotheses = {json.loads(line)["id"]: json.loads(line)["hypothesis"] for line in TINY_EN.read_text().splitlines()}
    manifest = {
        json.loads(line)["id"]: json.loads(line)["text"]
        for line in (BUNDLED / "shortform" / "manifest.jsonl").read_text().splitlines()
    }
    assert rows["transcript"] == normalize(manifest["1998-15444-0000"], "english").split()
    written = [w.lstrip("~+") for w in rows["candidate"] if set(w) != {"*"}]  # * marks a word left out
    assert written == normalize(hypotheses["1998-15444-0000"], "english").split()
    assert any(w.startswith("~") for w in rows["candidate"])  # no colour: each error's kind is marked
    assert "~word substituted  *** left out  +word inserted" in out


def _words(text: str, label: str) -> list[str]:
    return [w.lstrip("~+") for line in text.splitlines() if line.startswith(label) for w in line.split()[1:]]


def test_colour_where_the_terminal_takes_it(runs):
    comparison = wb.compare("base", "tiny", runs_dir=runs)
    coloured = render_regressions(comparison, 1, colour=True, width=80)
    plain = render_regressions(comparison, 1, width=80)
    assert "\033[33m" in coloured and "~" not in ANSI.sub("", coloured)  # colour tells the kinds: no marks
    for label in ("transcript", "reference", "candidate"):
        assert _words(ANSI.sub("", coloured), label) == _words(plain, label)
    assert max(len(line) for line in render_regressions(comparison, 1, width=60).splitlines()) <= 80
    assert all(
        len(line) <= 60
        for line in render_regressions(comparison, 1, width=60).splitlines()
        if line.startswith(("transcript", "reference", "candidate"))
    )


def test_force_color_colours_a_pipe_and_no_color_wins(runs, capsys, monkeypatch):
    args = ["compare", "--reference", "base", "--candidate", "tiny", "--runs-dir", str(runs), "--examples", "1"]
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert main(args) == 0
    assert ANSI.search(capsys.readouterr().out)
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(args) == 0
    assert not ANSI.search(capsys.readouterr().out)


def test_compare_prints_the_language_table_with_language_id_accuracy(tmp_path, local_manifest, tiny_rows, capsys):
    labelled = local_manifest([dict(r, language="de" if i < 2 else "en") for i, r in enumerate(tiny_rows)])
    hypotheses = [json.loads(line) for line in BASE.read_text().splitlines()]
    said = {r["id"]: ("de" if i == 0 else "en") for i, r in enumerate(tiny_rows)}  # the 2nd German clip: wrong
    detected = write_jsonl(tmp_path / "detected.jsonl", [dict(h, language=said[h["id"]]) for h in hypotheses])
    runs = tmp_path / "runs"
    wb.score(BASE, labelled, runs_dir=runs, name="ref")
    wb.score(detected, labelled, runs_dir=runs, name="cand")
    capsys.readouterr()
    assert main(["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    section = out[out.index("## By language") :].splitlines()
    table = [[c.strip() for c in line.split("|")[1:-1]] for line in section if line.startswith("| ")]
    head = table[0]
    rows = {(r[0], r[1]): dict(zip(head, r)) for r in table[1:]}  # (the |:---| line starts otherwise)
    assert rows[("de", "recorded detected")]["Language ID %"] == "50.0"  # 1 of 2 German clips said de
    assert rows[("en", "recorded detected")]["Language ID %"] == "100.0"
    assert rows[("macro", "recorded detected")]["Language ID %"] == "75.0"
    # the dataset and the runs are compare's heading: the language table does not repeat them in every row
    assert "Run" not in head and "Dataset" not in head, head
    assert rows[("de", "**recorded openai-whisper-base** (reference)")]["Language ID %"] == "–"  # reported none
    stored = wb.load_run("cand", runs).summary.language_id["by_language"]
    assert stored == {
        "de": {"labelled": 2, "correct": 1, "accuracy": 50.0},
        "en": {"labelled": 4, "correct": 4, "accuracy": 100.0},
    }
    summary = json.loads((runs / "cand" / "summary.json").read_text())  # a run scored before by_language existed
    del summary["language_id"]["by_language"]
    (runs / "cand" / "summary.json").write_text(json.dumps(summary))
    assert main(["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs)]) == 0
    assert capsys.readouterr().out.count("| 50.0 ") == 1  # the same accuracy, counted from its predictions
    assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--format", "html", "--quiet"]) == 0
    assert "<th>Language ID %</th>" in (runs / "leaderboard.html").read_text()


def test_the_compare_table_fits_120_columns_and_wide_keeps_one_row_per_candidate(tmp_path, capsys):
    """One candidate's table is wider than a terminal: printed one row per figure; ``--wide`` keeps the wide
    layout (one row per candidate) for scripts that want it."""
    from whisperbench.api import RECORDED

    runs = tmp_path / "runs"
    for name, file in (("base", "openai-whisper-base.jsonl"), ("tiny", "openai-whisper-tiny.en.jsonl")):
        assert main(["score", "--dataset", "tiny-shortform", "--hypotheses", str(RECORDED / file), "--name", name,
                     "--runs-dir", str(runs)]) == 0  # fmt: skip
    capsys.readouterr()
    compare = ["compare", "--reference", "base", "--candidate", "tiny", "--runs-dir", str(runs)]
    assert main(compare) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert max(len(line) for line in table) <= 120
    assert any(line.startswith("| QoI %") and "83.33" in line for line in table)
    assert main(compare + ["--wide"]) == 0
    wide = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert max(len(line) for line in wide) > 120 and "QoI %" in wide[0] and wide[2].startswith("| tiny ")
