"""A run-level metric is paired like a per-example one (issue 67 item 2): once declared, its stored value shows on
both sides in ``compare --json`` and the gate's ``--max-increase`` / ``--max-decrease`` judge its numbers, with
no gate field or check written for it. The figure is checked against a count made here from the hypotheses."""

from __future__ import annotations

import json

import pytest

from whisperbench.cli import main
from whisperbench.scoring.metrics import METRICS, Metric

from .conftest import BUNDLED


def _empty_outputs(scored, context):
    """The run's successful examples whose raw output is empty (a run-level figure)."""
    return {"empty": sum(p.status == "ok" and not p.hypothesis.strip() for p in scored), "kind": "count"}


@pytest.fixture
def empties(tmp_path):
    METRICS.add(Metric("empties", "successful examples with an empty output (a test metric)", _empty_outputs))
    rows = [json.loads(line) for line in (BUNDLED / "recorded" / "openai-whisper-base.jsonl").read_text().splitlines()]
    blanked = {rows[1]["id"], rows[4]["id"]}
    for name, blank in (("ref", set()), ("cand", blanked)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(
            "".join(json.dumps(dict(r, hypothesis="" if r["id"] in blank else r["hypothesis"])) + "\n" for r in rows)
        )
        assert (
            main(
                [
                    "score",
                    "--dataset",
                    "tiny-shortform",
                    "--hypotheses",
                    str(path),
                    "--name",
                    name,
                    "--runs-dir",
                    str(tmp_path),
                ]
            )
            == 0
        )
    yield tmp_path, len(blanked)
    METRICS.remove("empties")


def test_a_run_level_metric_shows_on_both_sides_of_compare_json(empties, capsys):
    runs, blanked = empties
    capsys.readouterr()
    assert main(["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--json"]) == 0
    pair = json.loads(capsys.readouterr().out)[0]["metrics"]["empties"]
    assert (pair["reference"]["empty"], pair["candidate"]["empty"]) == (0, blanked)
    assert pair["headline"] == "empty" and pair["better"] == "lower"


@pytest.mark.parametrize("limit, code", [(2, 0), (1, 1)])
def test_the_gate_judges_a_run_level_metric_by_its_declaration(empties, capsys, limit, code):
    runs, blanked = empties
    args = ["gate", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--min-qoi", "0"]
    assert main(args + ["--max-increase", f"empties.empty={limit}"]) == code
    assert f"empties.empty 0 → {blanked} (increase +{blanked}, allowed ≤ {limit})" in capsys.readouterr().out


def test_a_non_numeric_key_of_a_run_level_metric_cannot_be_judged(empties, capsys):
    runs, _ = empties
    args = ["gate", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--min-qoi", "0"]
    assert main(args + ["--max-increase", "empties.kind=0"]) == 2
    assert "empties.kind: no value" in capsys.readouterr().out


@pytest.mark.parametrize(
    "option, code",
    [
        ("--max=empties.empty=2", 0),
        ("--max=empties.empty=1", 1),
        ("--min=empties.empty=3", 1),
        ("--max=cer.cer=100", 0),
    ],
)
def test_min_and_max_bound_the_candidates_own_value(empties, capsys, option, code):
    runs, _ = empties
    args = ["gate", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), option]
    assert main(args) == code
    assert option.split("=")[1] in capsys.readouterr().out
