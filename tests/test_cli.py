"""The command line end to end: score, compare, report, gate (exit codes, JUnit), listings."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from whisperbench.cli import main

from .conftest import write_jsonl


@pytest.fixture
def runs(recorded_runs):
    """The recorded reference, good and bad runs (conftest)."""
    return recorded_runs


def test_compare_json(runs, capsys):
    assert (
        main(
            [
                "compare",
                "--reference",
                "ref",
                "--candidate",
                "good",
                "--candidate",
                "bad",
                "--runs-dir",
                str(runs),
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    good, bad = data
    assert good["qoi"] == 100.0 and good["improved"] == 1 and good["candidate_wer"] == 0.0
    assert bad["regressed"] == 5 and bad["qoi"] == pytest.approx(100 / 6)
    assert good["same_dataset"] and not good["only_in_reference"]


def test_gate_exit_codes_and_junit(runs, tmp_path, capsys):
    junit = tmp_path / "gate.xml"
    assert main(["gate", "--reference", "ref", "--candidate", "good", "--min-qoi", "90", "--runs-dir", str(runs)]) == 0
    assert (
        main(
            [
                "gate",
                "--reference",
                "ref",
                "--candidate",
                "bad",
                "--min-qoi",
                "90",
                "--runs-dir",
                str(runs),
                "--junit",
                str(junit),
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert "FAIL (regression)" in out and "worst regressed examples" in out
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite[@name='whisperbench-gate']")
    assert suite.get("failures") == "1" and suite.find("testcase[@name='QoI']/failure") is not None
    examples = root.find("testsuite[@name='whisperbench-examples']")  # each regressed example a failed case
    assert examples.get("tests") == "6" and examples.get("failures") == "5" == str(len(examples.findall("*/failure")))
    assert root.get("failures") == "6"
    assert (
        main(
            [
                "gate",
                "--reference",
                "ref",
                "--candidate",
                "good",
                "--min-qoi",
                "0",
                "--max-wer-increase",
                "0",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )
    assert main(["gate", "--reference", "ref", "--candidate", "nope", "--min-qoi", "90", "--runs-dir", str(runs)]) == 2


def test_gate_cannot_judge_other_dataset_or_missing_ids(runs, tmp_path, tiny_rows, local_manifest):
    manifest = local_manifest(tiny_rows[:3])
    hyp = write_jsonl(tmp_path / "few.jsonl", [{"id": r["id"], "hypothesis": r["text"]} for r in tiny_rows[:3]])
    assert (
        main(["score", "--dataset", str(manifest), "--hypotheses", str(hyp), "--name", "few", "--runs-dir", str(runs)])
        == 0
    )
    assert main(["gate", "--reference", "ref", "--candidate", "few", "--min-qoi", "0", "--runs-dir", str(runs)]) == 2
    assert (
        main(
            [
                "gate",
                "--reference",
                "ref",
                "--candidate",
                "few",
                "--min-qoi",
                "0",
                "--min-coverage",
                "50",
                "--runs-dir",
                str(runs),
            ]
        )
        == 2
    )  # still another dataset (content hash)


def test_report_markdown_and_csv(runs, tmp_path, capsys):
    out = tmp_path / "board.md"
    assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--out", str(out)]) == 0
    text = out.read_text()
    assert "## Short-form" in text and "`bad`" in text
    assert "## Long-form" not in text and "_No runs._" not in text  # no long-form run: no empty section
    assert "English-only model:" not in text and "⚠ busy:" not in text  # notes only for marks that appear
    row = next(line for line in text.splitlines() if "`good`" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    # a recorded run has no weights: no size; each figure with its interval in one cell (the compact table)
    assert cells[1:7] == ["good.jsonl", "–", "tiny-shortform", "0.00 (0.0–0.0)", "100.0 (100.0–100.0)", "–"]
    csv_out = tmp_path / "board.csv"
    assert main(["report", "--runs-dir", str(runs), "--reference", "ref", "--out", str(csv_out), "--quiet"]) == 0
    import pandas as pd

    frame = pd.read_csv(csv_out)
    assert set(frame["Run"]) == {"ref", "good", "bad"}
    assert frame.loc[frame["Run"] == "ref", "QoI %"].item() == 100.0
    bad = frame.loc[frame["Run"] == "bad"].iloc[0]
    assert bad["WER CI low"] <= bad["WER %"] <= bad["WER CI high"]


def test_score_warns_about_unknown_ids_and_fails_missing_ones(tmp_path, tiny_rows, tiny_short, capsys):
    rows = [{"id": r["id"], "hypothesis": r["text"]} for r in tiny_rows[1:]] + [{"id": "stranger", "hypothesis": "x"}]
    hyp = write_jsonl(tmp_path / "h.jsonl", rows)
    assert (
        main(
            [
                "score",
                "--dataset",
                str(tiny_short),
                "--hypotheses",
                str(hyp),
                "--name",
                "s",
                "--runs-dir",
                str(tmp_path / "r"),
                "--json",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "stranger" in captured.err
    assert json.loads(captured.out)["num_failed"] == 1


def test_errors_are_one_line_not_tracebacks(tmp_path, capsys):
    assert (
        main(["run", "--adapter", "nope", "--model", "m", "--dataset", "tiny-shortform", "--runs-dir", str(tmp_path)])
        == 2
    )
    assert "unknown adapter 'nope'" in capsys.readouterr().err
    assert main(["run", "--adapter", "recorded", "--model", "m", "--dataset", str(tmp_path / "none.jsonl")]) == 2


def test_console_script_lists_adapters_and_models():
    out = subprocess.run(
        [sys.executable, "-m", "whisperbench", "adapters", "--json"], capture_output=True, text=True, check=True
    ).stdout
    names = {row["adapter"] for row in json.loads(out)}
    assert {"recorded", "openai-whisper", "faster-whisper", "transformers"} <= names
    models = subprocess.run(
        [sys.executable, "-m", "whisperbench", "models", "--json"], capture_output=True, text=True, check=True
    ).stdout
    assert {"tiny.en", "base"} <= {m["name"] for m in json.loads(models)}


def test_gate_refuses_to_judge_a_candidate_with_failures(runs, tmp_path, tiny_rows, tiny_short):
    rows = [{"id": r["id"], "hypothesis": r["text"]} for r in tiny_rows[1:]]  # the first id is missing: failed
    hyp = write_jsonl(tmp_path / "gappy.jsonl", rows)
    assert (
        main(
            [
                "score",
                "--dataset",
                str(tiny_short),
                "--hypotheses",
                str(hyp),
                "--name",
                "gappy",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )
    assert main(["gate", "--reference", "ref", "--candidate", "gappy", "--min-qoi", "0", "--runs-dir", str(runs)]) == 2
    assert (
        main(
            [
                "gate",
                "--reference",
                "ref",
                "--candidate",
                "gappy",
                "--min-qoi",
                "0",
                "--max-failed-pct",
                "20",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )


def test_gate_with_confidence_fails_only_significant_regressions(runs, capsys):
    # "good" vs "ref": QoI 100; ask for more than is possible to see the CI decide, not the point estimate
    assert main(["gate", "--reference", "ref", "--candidate", "bad", "--min-qoi", "40", "--runs-dir", str(runs)]) == 1
    assert (
        main(
            [
                "gate",
                "--reference",
                "ref",
                "--candidate",
                "bad",
                "--min-qoi",
                "40",
                "--confidence",
                "95",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )  # 1 of 6 without regression: CI reaches 50 %, not significant
    assert "95% CI" in capsys.readouterr().out
    assert (
        main(
            [
                "gate",
                "--reference",
                "ref",
                "--candidate",
                "bad",
                "--min-qoi",
                "0",
                "--max-wer-increase",
                "5",
                "--confidence",
                "95",
                "--runs-dir",
                str(runs),
            ]
        )
        == 1
    )  # +39 points is significant


def test_export_per_example_results_for_pandas(runs, tmp_path):
    import pandas as pd

    out = tmp_path / "bad.csv"
    assert main(["export", "bad", "--reference", "ref", "--out", str(out), "--runs-dir", str(runs)]) == 0
    frame = pd.read_csv(out)
    assert len(frame) == 6 and frame["regressed"].sum() == 5
    assert (frame["errors"] == frame["substitutions"] + frame["deletions"] + frame["insertions"]).all()
    lines = tmp_path / "bad.jsonl"
    assert main(["export", "bad", "--out", str(lines), "--runs-dir", str(runs)]) == 0
    assert len(pd.read_json(lines, lines=True)) == 6


def test_without_a_terminal_no_bar_but_one_line_per_phase(tmp_path, tiny_rows, tiny_short):
    hyp = write_jsonl(tmp_path / "h.jsonl", [{"id": r["id"], "hypothesis": r["text"]} for r in tiny_rows])
    cmd = [sys.executable, "-m", "whisperbench", "score", "--dataset", str(tiny_short), "--hypotheses", str(hyp)]
    cmd += ["--name", "q", "--runs-dir", str(tmp_path / "r")]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert "\r" not in proc.stderr and "ex/s" not in proc.stderr and "WER 0.00%" in proc.stdout
    lines = proc.stderr.splitlines()
    assert any("6 example(s): reading the hypotheses file" in line for line in lines), proc.stderr  # no model here
    assert any("first result after" in line for line in lines) and any("6/6 done" in line for line in lines)
    assert len(lines) <= 8  # a line per phase, not per example
    again = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    assert "reading the hypotheses file" not in again and "0 computed, 6 stored already" in again, again


def test_a_closed_pipe_keeps_the_gates_verdict_and_q_works_after_the_command(tmp_path, tiny_rows, local_manifest):
    """``whisperbench gate … | head -3``: the reader gone, the gate still exits with its verdict (here 1), never
    2 "Broken pipe"; ``-q`` after the command name is the same as before it."""
    import os
    import subprocess
    import sys

    from .conftest import record_run

    runs = tmp_path / "runs"
    manifest = local_manifest(tiny_rows)
    record_run(runs, manifest, tiny_rows, "ref", lambda r: r["text"])
    record_run(runs, manifest, tiny_rows, "bad", lambda r: "completely wrong words")
    gate = [sys.executable, "-m", "whisperbench", "gate", "--reference", "ref", "--candidate", "bad"]
    gate += ["--runs-dir", str(runs), "--min-qoi", "90"]
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line
    try:
        closed = subprocess.run(gate, stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert closed.returncode == 1, closed.stderr
    assert "Broken pipe" not in closed.stderr
    quiet = subprocess.run(gate + ["-q"], capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 1 and "FAIL" in quiet.stdout
