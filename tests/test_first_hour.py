"""Smaller things a newcomer met in the first hour (issue 70, item 7), each as it was met."""

from __future__ import annotations

import json
import logging

import whisperbench as wb
from whisperbench.cli import main

from .conftest import record_run


def test_report_q_is_quiet_like_quiet_everywhere(recorded_runs, capsys):
    """``report -q`` printed the markdown where ``--quiet`` did not: -q and --quiet are one flag, before or after the
    command's name."""
    runs = str(recorded_runs)
    assert main(["report", "--runs-dir", runs, "--reference", "ref"]) == 0
    assert "| " in capsys.readouterr().out
    for flags in (["report", "-q"], ["report", "--quiet"], ["-q", "report"]):
        assert main([*flags, "--runs-dir", runs, "--reference", "ref"]) == 0
        captured = capsys.readouterr()
        assert captured.out == "" and "wrote " in captured.err, flags


def test_a_dataset_is_iterable():
    """``for e in wb.load_dataset(...)`` raised "'Dataset' object is not iterable"."""
    dataset = wb.load_dataset("tiny-shortform")
    assert [e.id for e in dataset] == [e.id for e in dataset.examples] and dataset[0] is dataset.examples[0]


def test_the_power_line_of_identical_runs_sizes_no_wer_increase(tmp_path, tiny_rows, tiny_short, capsys):
    """On two runs with the same output the power line said the gate "catches a WER increase of 0.00 points": with
    no spread of per-example differences nothing can be sized, and the line says so."""
    for name in ("a", "b"):
        record_run(tmp_path, tiny_short, tiny_rows, name, lambda r: " ".join(r["text"].split()[1:]))  # errors
    args = ["gate", "--reference", "a", "--candidate", "b", "--runs-dir", str(tmp_path), "--allow-self-comparison"]
    args += ["--min-qoi", "95"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "WER increase of 0.00 points" not in out and "no WER increase can be sized" in out, out


def test_a_process_pool_asking_for_more_threads_than_cpus_warns(monkeypatch, caplog, tiny_short):
    """``--workers 4 -o threads=2`` on 2 CPUs ran 5x slower than one process, without a word."""
    from whisperbench.adapters import DecodingOptions
    from whisperbench.harness import RunRequest, runner

    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    request = RunRequest("recorded", "h.jsonl", str(tiny_short), workers=4, decoding=DecodingOptions(threads=2))
    with caplog.at_level(logging.WARNING, logger="whisperbench"):
        runner._warn_oversubscribed(request)
        runner._warn_oversubscribed(
            RunRequest("recorded", "h.jsonl", str(tiny_short), workers=2, decoding=DecodingOptions(threads=1))
        )
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "4 workers x 2 threads = 8 threads on 2 usable CPU(s)" in warned[0], warned


def test_the_drift_panel_writes_punctuation_as_text_does():
    """The HTML drift panel showed "Printing , in": no space before a closing mark, marked or not."""
    from whisperbench.reports.html import formatting_diff_html

    same = formatting_diff_html("Printing, in the only sense.", "Printing, in the only sense.")
    assert same == "Printing, in the only sense."
    changed = formatting_diff_html("Printing, in the only sense", "printing in the only sense.")
    assert " ," not in changed and changed.endswith('sense<span class="ins">.</span>'), changed


def test_compare_by_language_leaves_out_what_its_header_says_and_empty_columns(
    tmp_path, tiny_rows, local_manifest, capsys
):
    """``compare``'s by-language table was 167 columns wide for one candidate: its Dataset and Run columns repeat
    the header, and a Language ID column empty for every run stayed."""
    from whisperbench.cli import main as cli

    rows = [dict(r, language="en") for r in tiny_rows]
    manifest = local_manifest(rows)
    runs = str(tmp_path / "runs")
    for name, edit in (("ref", lambda t: t), ("cand", lambda t: t.lower())):
        hyp = tmp_path / f"{name}.jsonl"
        hyp.write_text("".join(json.dumps({"id": r["id"], "hypothesis": edit(r["text"])}) + "\n" for r in rows))
        assert (
            cli(["score", "--dataset", str(manifest), "--hypotheses", str(hyp), "--name", name, "--runs-dir", runs])
            == 0
        )
    capsys.readouterr()
    assert cli(["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", runs]) == 0
    out = capsys.readouterr().out
    table = out[out.index("## By language") :].split("\n\n")[1]
    header = table.splitlines()[0]
    assert "Language" in header and "QoI %" in header
    assert not any(name in header for name in ("Dataset", "| Run", "Language ID")), header
    assert max(len(line) for line in table.splitlines()) < 130, table  # was 167


def test_the_quick_tier_leaves_out_every_test_on_a_model_running_fixture():
    """Issue 70 item 4: single "quick" tests waited 172 s (a word-timing test, the first to ask for the session's
    model runs) and 153 s (the trade-off table's module setup) on a busy machine. A test asking for a fixture that
    converts or runs a model is heavy whatever its own measured time."""
    import subprocess
    import sys

    from .conftest import REPO

    files = ["tests/test_word_timing.py", "tests/test_sweep.py", "tests/test_implementations.py"]
    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *files,
            "--co",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not slow and not heavy",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    quick = [line for line in listed.splitlines() if "::" in line]
    assert quick, listed  # some quick tests stay (the pure ones)
    for slow in ("test_word_starts_agree_with_openai_whisper", "test_tradeoff_table_numbers_are_the_stored_runs"):
        assert not any(slow in line for line in quick), quick
