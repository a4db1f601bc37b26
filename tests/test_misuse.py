"""Silent misuse said out loud (issue 39, item 3): an English-only model on labels in other languages is warned
about before the run and marked in every table; a refused resume lists the settings that differ. Runs are
recorded hypotheses of tiny.en and base on the bundled clips (no model)."""

from __future__ import annotations

import logging

import pytest

import whisperbench as wb
from whisperbench.cli import main
from whisperbench.errors import RunStoreError
from whisperbench.reports.weights import english_only_on
from whisperbench.store.run_info import RunInfo

from .conftest import BUNDLED

TINY_EN = BUNDLED / "recorded" / "openai-whisper-tiny.en.jsonl"  # hypotheses of an English-only model
BASE = BUNDLED / "recorded" / "openai-whisper-base.jsonl"


@pytest.fixture
def german(local_manifest, tiny_rows):
    """The bundled clips with 2 rows labelled German (a QA set mixing languages)."""
    return local_manifest([dict(r, language="de" if i < 2 else "en") for i, r in enumerate(tiny_rows)])


class _Seen(logging.Handler):
    """Each warning, with whether the run had stored anything when it was said."""

    def __init__(self, predictions):
        super().__init__(logging.WARNING)
        self.predictions, self.seen = predictions, []

    def emit(self, record):
        self.seen.append((record.getMessage(), self.predictions.exists()))


def test_an_english_only_model_on_german_labels_is_warned_before_the_run(tmp_path, german, caplog):
    seen = _Seen(tmp_path / "runs" / "en-only" / "predictions.jsonl")
    logging.getLogger("whisperbench").addHandler(seen)
    try:
        wb.score(TINY_EN, german, runs_dir=tmp_path / "runs", name="en-only")
    finally:
        logging.getLogger("whisperbench").removeHandler(seen)
    warned = [(message, stored) for message, stored in seen.seen if "English-only model" in message]
    assert len(warned) == 1 and "2 of 6 examples are labelled in other languages (de)" in warned[0][0]
    assert warned[0][1] is False  # said before the run stored anything
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="whisperbench"):
        wb.score(BASE, german, runs_dir=tmp_path / "runs", name="multi")
    assert not any("English-only" in r.getMessage() for r in caplog.records)


def test_the_run_summary_repeats_it(tmp_path, german, capsys):
    hypotheses = ["score", "--dataset", str(german), "--runs-dir", str(tmp_path / "runs"), "--hypotheses"]
    assert main(hypotheses + [str(TINY_EN), "--name", "en-only"]) == 0
    assert "  warning: " in capsys.readouterr().out
    assert main(hypotheses + [str(BASE), "--name", "multi"]) == 0
    assert "warning" not in capsys.readouterr().out


def test_the_tables_mark_it(tmp_path, german, capsys):
    runs = tmp_path / "runs"
    wb.score(BASE, german, runs_dir=runs, name="multi")
    wb.score(TINY_EN, german, runs_dir=runs, name="en-only")
    for fmt in ("md", "html", "csv"):
        assert main(["report", "--runs-dir", str(runs), "--reference", "multi", "--format", fmt, "--quiet"]) == 0
    lines = (runs / "leaderboard.md").read_text().splitlines()
    assert "⚠ English-only model, labels in de" in next(line for line in lines if "`en-only`" in line)
    assert "English-only" not in next(line for line in lines if "`multi`" in line)
    assert any(line.startswith("WER: ") and "⚠ English-only model: a model" in line for line in lines)  # its note
    languages = [line for line in lines if line.startswith("| de ") or line.startswith("| en ")]
    marked = [line.split("|")[1].strip() for line in languages if "⚠ English-only model" in line]
    assert marked == ["de"], languages  # only the German rows of the English-only run
    assert "⚠ English-only model, labels in de" in (runs / "leaderboard.html").read_text()
    assert "English-only model, labels in de" in (runs / "leaderboard.csv").read_text()
    capsys.readouterr()
    assert main(["compare", "--reference", "multi", "--candidate", "en-only", "--runs-dir", str(runs)]) == 0
    assert "is English-only, yet examples are labelled de" in capsys.readouterr().out


def test_english_only_comes_from_the_weights_before_the_name():
    assert english_only_on(
        RunInfo(model="my-finetune", adapter_info={"weights": {"multilingual": False}}), ["de", "en"]
    ) == ["de"]
    assert english_only_on(RunInfo(model="odd.en", adapter_info={"weights": {"multilingual": True}}), ["de"]) == []
    assert english_only_on(RunInfo(model="tiny.en"), ["en"]) == []


def test_a_refused_resume_lists_the_settings_that_differ(tmp_path):
    runs = tmp_path / "runs"
    wb.evaluate("recorded", str(BASE), "tiny-shortform", runs_dir=runs, name="r", options={"beam_size": 5})
    with pytest.raises(RunStoreError) as refused:
        wb.evaluate(
            "recorded",
            str(BASE),
            "tiny-shortform",
            runs_dir=runs,
            name="r",
            options={"beam_size": 1, "temperature": 0.2},
        )
    text = str(refused.value)
    assert "exists with a different decoding" in text
    assert "decoding beam_size: 1 (the stored run: 5)" in text
    assert "decoding temperature: 0.2 (the stored run: 0.0)" in text
    assert "threads" not in text  # not part of what a run is


def test_compare_names_the_decoding_settings_that_differ(tmp_path, capsys):
    runs = tmp_path / "runs"
    wb.evaluate("recorded", str(BASE), "tiny-shortform", runs_dir=runs, name="a", options={"beam_size": 5})
    wb.evaluate("recorded", str(BASE), "tiny-shortform", runs_dir=runs, name="b", options={"beam_size": 1})
    capsys.readouterr()
    assert main(["compare", "--reference", "a", "--candidate", "b", "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "b: settings that differ from the reference: decoding beam_size: 1 (the reference: 5)" in out
