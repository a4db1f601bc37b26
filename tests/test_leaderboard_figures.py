"""The leaderboard reads a run's figures where they are stored (summary.json: computed once, when the run was
scored), never computing them a second time; only under another normalizer than the run was scored with are WER,
examples and failures those of its score table under that normalizer, and RTFx (which no normalizer changes)
stays the stored one."""

from __future__ import annotations

import json

from whisperbench import load_run, score
from whisperbench.reports import leaderboard_frame

from .conftest import BUNDLED


def _planted(tmp_path, name: str):
    """A scored run whose summary.json figures are planted (WER 12.345, RTFx 7): only a reader of summary.json
    shows them."""
    score(
        BUNDLED / "recorded" / "openai-whisper-base.jsonl",
        BUNDLED / "shortform" / "manifest.jsonl",
        runs_dir=tmp_path,
        name=name,
    )
    path = tmp_path / name / "summary.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["wer"] != 12.345 and stored.get("rtfx") is None  # recorded hypotheses carry no times
    path.write_text(json.dumps(dict(stored, wer=12.345, rtfx=7.0)), encoding="utf-8")
    return load_run(tmp_path / name), stored


def test_the_leaderboard_shows_summary_json_s_figures(tmp_path):
    run, stored = _planted(tmp_path, "a")
    row = leaderboard_frame([run], {}).iloc[0]
    assert (row["WER %"], row["RTFx"]) == (12.345, 7.0)
    assert (row["Examples"], row["Failed"]) == (stored["num_examples"], stored["num_failed"])


def test_under_another_normalizer_the_table_s_figures_and_the_stored_rtfx(tmp_path):
    run, _ = _planted(tmp_path, "a")
    reference = _scored_basic(tmp_path, "openai-whisper-tiny.en.jsonl", "ref")
    assert reference.normalizer == "basic" != run.normalizer
    row = leaderboard_frame([run], {run.dataset_hash: reference}).set_index("Run").loc["a"]
    basic = _scored_basic(tmp_path, "openai-whisper-base.jsonl", "basic")
    assert basic.summary.normalizer == "basic"
    assert row["WER %"] == basic.summary.wer != 12.345  # the basic normalizer's, from the table: not the planted
    assert row["RTFx"] == 7.0  # RTFx depends on no normalizer: the stored one


def _scored_basic(runs_dir, recorded, name):
    """A bundled recorded run scored with the basic normalizer."""
    return score(
        BUNDLED / "recorded" / recorded,
        BUNDLED / "shortform" / "manifest.jsonl",
        runs_dir=runs_dir,
        name=name,
        normalizer="basic",
    )
