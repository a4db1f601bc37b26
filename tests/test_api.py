"""The public Python API (whisperbench.api, re-exported at the package's top level) on recorded real outputs."""

from __future__ import annotations

import doctest
import json
import logging
import subprocess
import sys

import jiwer
import pytest
from whisper_normalizer.english import EnglishTextNormalizer

import whisperbench as wb
from whisperbench.cli import main

from .conftest import REPO

RECORDED = REPO / "datasets" / "tiny" / "recorded"


@pytest.fixture
def runs(tmp_path):
    """base (reference) and tiny.en (candidate) scored on the bundled short-form clips."""
    wb.score(RECORDED / "openai-whisper-base.jsonl", "tiny-shortform", runs_dir=tmp_path, name="base")
    wb.score(RECORDED / "openai-whisper-tiny.en.jsonl", "tiny-shortform", runs_dir=tmp_path, name="tiny")
    return tmp_path


def _independent_qoi() -> float:
    """QoI by hand: jiwer's WER of each file's hypothesis, whisper_normalizer's English normalizer."""
    norm = EnglishTextNormalizer()
    texts = {
        row["id"]: row["text"]
        for row in map(json.loads, (REPO / "datasets/tiny/shortform/manifest.jsonl").read_text().splitlines())
    }

    def wers(name):
        rows = map(json.loads, (RECORDED / name).read_text().splitlines())
        return {r["id"]: jiwer.wer(norm(texts[r["id"]]), norm(r["hypothesis"])) for r in rows}

    ref, cand = wers("openai-whisper-base.jsonl"), wers("openai-whisper-tiny.en.jsonl")
    return 100.0 * sum(cand[i] <= ref[i] for i in texts) / len(texts)


def test_compare_qoi_is_what_the_cli_prints_and_jiwer_agrees(runs, capsys):
    qoi = wb.compare(wb.load_run("base", runs_dir=runs), wb.load_run("tiny", runs_dir=runs)).qoi
    capsys.readouterr()
    assert main(["compare", "--reference", "base", "--candidate", "tiny", "--runs-dir", str(runs), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)[0]["qoi"]
    assert qoi == printed
    assert qoi == pytest.approx(_independent_qoi(), abs=1e-9) and qoi < 100  # base is better on one clip


def test_gate_and_frame_agree_with_compare(runs):
    comparison = wb.compare(runs / "base", runs / "tiny")
    assert wb.gate("base", "tiny", min_qoi=comparison.qoi, runs_dir=runs).code == 0
    assert wb.gate("base", "tiny", min_qoi=comparison.qoi + 1, runs_dir=runs).code == 1
    frame = wb.to_frame("tiny", reference="base", runs_dir=runs)
    assert len(frame) == 6 and int(frame["regressed"].sum()) == comparison.result.regressed


def test_score_warns_about_unknown_ids_in_the_library(tmp_path, caplog):
    hyp = tmp_path / "h.jsonl"
    hyp.write_text('{"id": "jfk", "hypothesis": "and so"}\n{"id": "nope", "hypothesis": "x"}\n')
    with caplog.at_level(logging.WARNING, logger="whisperbench"):
        run = wb.score(hyp, "tiny-shortform", runs_dir=tmp_path / "runs", name="s")
    assert any("nope" in r.getMessage() and "not in the dataset" in r.getMessage() for r in caplog.records)
    assert run.summary.num_failed == 5  # the clips it lacks are failed and counted, never dropped


def test_evaluate_runs_an_adapter_into_a_store(tmp_path):
    run = wb.evaluate(
        "recorded",
        str(RECORDED / "faster-whisper-tiny.en.jsonl"),
        "tiny-shortform",
        runs_dir=tmp_path,
        name="fw",
        limit=3,
    )
    assert run.name == "fw" and len(run.predictions) == 3 and len(wb.load_dataset("tiny-shortform", limit=3)) == 3
    assert wb.load_run(tmp_path / "fw").summary == run.summary


def test_quiet_hides_progress_but_not_warnings(tmp_path):
    hyp = tmp_path / "h.jsonl"
    hyp.write_text('{"id": "jfk", "hypothesis": "and so"}\n{"id": "nope", "hypothesis": "x"}\n')
    args = ["score", "--dataset", "tiny-shortform", "--hypotheses", str(hyp), "--runs-dir", str(tmp_path)]
    loud = subprocess.run([sys.executable, "-m", "whisperbench", *args, "--name", "a"], capture_output=True, text=True)
    quiet = subprocess.run(
        [sys.executable, "-m", "whisperbench", "-q", *args, "--name", "b"], capture_output=True, text=True
    )
    assert "6 example(s): reading the hypotheses file" in loud.stderr and "6 example(s)" not in quiet.stderr
    assert "warning: 1 id(s)" in loud.stderr and "warning: 1 id(s)" in quiet.stderr


def test_the_python_page_runs_as_a_doctest():
    result = doctest.testfile(str(REPO / "docs" / "python.md"), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 5 and result.failed == 0, result


def test_a_datasets_dataset_in_memory_is_the_same_data_as_its_manifest():
    datasets = pytest.importorskip("datasets")
    root = REPO / "datasets" / "tiny" / "shortform"
    rows = [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines()]
    columns = {
        "audio": [str(root / r["audio"]) for r in rows],
        "text": [r["text"] for r in rows],
        "id": [r["id"] for r in rows],
    }
    table = datasets.Dataset.from_dict(columns).cast_column("audio", datasets.Audio())
    in_memory, from_file = wb.load_dataset(table, name="tiny"), wb.load_dataset(root / "manifest.jsonl")
    assert [e.id for e in in_memory.examples] == [r["id"] for r in rows]
    assert in_memory.content_hash == from_file.content_hash  # same audio bytes and transcripts


def test_report_and_export_write_what_the_cli_writes(runs, capsys):
    """The CLI's report and export are the API's: the same files, byte for byte."""
    board = wb.report(runs, references=["base"], out=runs / "api.md")
    assert main(["report", "--runs-dir", str(runs), "--reference", "base", "--out", str(runs / "cli.md")]) == 0
    assert (runs / "cli.md").read_text() == board.text == (runs / "api.md").read_text()
    assert {run.name for run in board.references.values()} == {"base"}
    frame = wb.export("tiny", runs / "api.jsonl", reference="base", runs_dir=runs)
    assert (
        main(["export", "tiny", "--reference", "base", "--runs-dir", str(runs), "--out", str(runs / "cli.jsonl")]) == 0
    )
    assert (runs / "cli.jsonl").read_text() == (runs / "api.jsonl").read_text()
    assert int(frame["regressed"].sum()) == wb.compare(runs / "base", runs / "tiny").result.regressed
    with pytest.raises(wb.api.WhisperbenchError, match="export to .csv, .jsonl or .json"):
        wb.export("tiny", runs / "tiny.xlsx", runs_dir=runs)
    with pytest.raises(wb.api.WhisperbenchError, match="no such run"):
        wb.report(runs, references=["nope"])


def test_every_trackers_options_are_export_flags_and_publish_parameters():
    """The command line passes a tracker's options from the flags of their names to its publish function."""
    import argparse
    import inspect

    from whisperbench.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    flags = {action.dest for action in sub.choices["export"]._actions}
    assert wb.api.TRACKERS.names() == ["mlflow", "wandb"]
    for tracker in wb.api.TRACKERS.items():
        assert set(tracker.options) <= flags, tracker.name
        assert set(tracker.options) <= set(inspect.signature(tracker.function()).parameters), tracker.name


def test_demo_is_an_api_function_returning_what_it_made(tmp_path):
    """``wb.demo`` is the command's whole logic: the runs, the reference, the leaderboard text and file, the failures
    (the command only prints the markdown and turns failures into its exit code)."""
    from .conftest import needs_adapter

    needs_adapter("openai-whisper", "tiny.en")
    result = wb.demo(limit=1, short_only=True, implementations="openai-whisper", runs_dir=tmp_path / "demo")
    assert result.runs == result.references == ["openai-whisper_tiny.en_tiny-shortform"]
    assert result.failed == 0 and result.leaderboard == tmp_path / "demo" / "leaderboard.md"
    assert result.leaderboard.read_text(encoding="utf-8") == result.markdown and "openai-whisper" in result.markdown
    assert wb.load_run(result.runs[0], tmp_path / "demo").summary.num_examples == 1
    with pytest.raises(wb.api.WhisperbenchError, match="unexpected keyword"):
        wb.demo(limti=1, runs_dir=tmp_path / "x")


def test_a_default_run_name_carries_the_options_and_api_errors_name_keywords(tmp_path):
    """Issue 70 item 5: ``evaluate(..., options={"compute_type": "int8"})`` after a plain run of the same adapter
    was refused ("exists with a different decoding … pass --name"). The default name now carries each option that
    sets a run apart (the thread count aside: it resumes), and an error raised through the API names its keywords."""
    hyp = str(wb.api.RECORDED / "openai-whisper-base.jsonl")
    runs = str(tmp_path)
    plain = wb.evaluate("recorded", hyp, "tiny-shortform", runs_dir=runs)
    beam = wb.evaluate("recorded", hyp, "tiny-shortform", runs_dir=runs, options={"beam_size": 5})
    threads = wb.evaluate("recorded", hyp, "tiny-shortform", runs_dir=runs, options={"threads": 1})
    assert plain.name == threads.name == "recorded_openai-whisper-base.jsonl_tiny-shortform"
    assert beam.name == "recorded_openai-whisper-base.jsonl_tiny-shortform_beam_size-5"
    other = str(wb.api.RECORDED / "openai-whisper-tiny.en.jsonl")
    with pytest.raises(wb.errors.RunStoreError) as caught:
        wb.evaluate("recorded", other, "tiny-shortform", runs_dir=runs, name=plain.name)
    message = str(caught.value)
    assert "pass name=... for a new run or overwrite=True to replace it" in message and "--" not in message
