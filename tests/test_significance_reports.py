"""compare and gate with the paired tests (issue 36): compare --json's sign test against statsmodels on the
per-example counts it prints, --block-by, and the non-inferiority gate's three verdicts and exit codes.

The runs are recorded hypotheses (`whisperbench score`) on the shared short-form set (81 utterances, a speaker
column): the transcript with words dropped by rule, so every count is known.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from whisperbench.cli import main

from .conftest import read_manifest_rows, record_run, shared_manifest

statsmodels = pytest.importorskip("statsmodels", reason="statsmodels is the independent check of the tests")
from statsmodels.stats.descriptivestats import sign_test as sm_sign_test  # noqa: E402
from statsmodels.stats.weightstats import ztest  # noqa: E402


def _drop(words: int, rule):
    """An edit dropping the last ``words`` words of the rows ``rule(index)`` picks."""

    def edit(row):
        tokens = row["text"].split()
        return " ".join(tokens[:-words] if rule(row["_i"]) and len(tokens) > words else tokens)

    return edit


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    manifest = shared_manifest("shortform")
    rows = [dict(r, _i=i) for i, r in enumerate(read_manifest_rows(manifest))]
    runs_dir = tmp_path_factory.mktemp("significance") / "runs"
    record_run(runs_dir, manifest, rows, "ref", _drop(1, lambda i: i % 3 == 0))
    record_run(runs_dir, manifest, rows, "close", _drop(1, lambda i: i % 3 == 1))  # as many errors, elsewhere
    record_run(runs_dir, manifest, rows, "bad", _drop(3, lambda i: True))
    return runs_dir, rows


def _compare_json(runs_dir, candidate, capsys, *extra):
    capsys.readouterr()
    assert (
        main(
            [
                "compare",
                "--reference",
                "ref",
                "--candidate",
                candidate,
                "--runs-dir",
                str(runs_dir),
                "--json",
                "--examples",
                *extra,
            ]
        )
        == 0
    )
    return json.loads(capsys.readouterr().out)[0]


def _wer_difference(data):
    """``compare --json``'s WER difference: the WER's pairing ``paired["wer.increase"]`` (its one key), as the
    interval's fields."""
    paired = data["paired"]["wer.increase"]
    low, high = paired["interval"]
    return dict(paired, low=low, high=high)


@pytest.mark.parametrize("candidate", ["close", "bad"])
def test_compare_json_sign_test_and_mapsswe_match_statsmodels(runs, candidate, capsys):
    runs_dir, rows = runs
    data = _compare_json(runs_dir, candidate, capsys)
    diff = [e["candidate_errors"] - e["reference_errors"] for e in data["examples"]]
    sign = data["sign_test"]
    assert (sign["improved"], sign["regressed"]) == (sum(d < 0 for d in diff), sum(d > 0 for d in diff))
    assert sign["improved"] == data["improved"] and sign["regressed"] == data["regressed"]
    assert sign["p_value"] == pytest.approx(sm_sign_test(diff, mu0=0)[1])
    z, p = ztest(diff, value=0)
    assert data["mapsswe"]["z"] == pytest.approx(z) and data["mapsswe"]["p_value"] == pytest.approx(p)
    wer = _wer_difference(data)
    assert wer["estimate"] == pytest.approx(data["candidate_wer"] - data["reference_wer"])
    assert wer["low"] <= wer["estimate"] <= wer["high"]
    assert wer["resampling"]["method"] == "examples" and wer["resampling"]["units"] == len(rows)
    if candidate == "bad":
        assert wer["low"] > 0 and sign["p_value"] < 1e-6


def test_compare_block_by_speaker_resamples_speakers(runs, capsys):
    runs_dir, rows = runs
    plain = _compare_json(runs_dir, "close", capsys)
    data = _compare_json(runs_dir, "close", capsys, "--block-by", "speaker")
    speakers = {r["speaker"] for r in rows}
    assert data["resampling"] == dict(data["resampling"], method="blocks", block_by="speaker", units=len(speakers))
    assert "blocked bootstrap by speaker" in _wer_difference(data)["resampling"]["description"]
    assert _wer_difference(data)["estimate"] == _wer_difference(plain)["estimate"]
    assert (_wer_difference(data)["low"], _wer_difference(data)["high"]) != (
        _wer_difference(plain)["low"],
        _wer_difference(plain)["high"],
    )
    assert data["sign_test"] == plain["sign_test"]  # tests of example pairs are not resampled
    capsys.readouterr()
    assert (
        main(
            [
                "compare",
                "--reference",
                "ref",
                "--candidate",
                "close",
                "--runs-dir",
                str(runs_dir),
                "--block-by",
                "speaker",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "sign test" in out and "MAPSSWE" in out and f"blocked bootstrap by speaker ({len(speakers)} blocks" in out


def test_block_by_a_missing_column_cannot_judge(runs, capsys):
    runs_dir, _ = runs
    code = main(
        [
            "gate",
            "--reference",
            "ref",
            "--candidate",
            "close",
            "--runs-dir",
            str(runs_dir),
            "--non-inferiority-margin",
            "1",
            "--block-by",
            "accent",
        ]
    )
    assert code == 2 and "no 'accent' value" in capsys.readouterr().err


def _gate(runs_dir, candidate, capsys, *extra):
    capsys.readouterr()
    code = main(["gate", "--reference", "ref", "--candidate", candidate, "--runs-dir", str(runs_dir), *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_non_inferiority_verdicts_and_exit_codes(runs, capsys):
    runs_dir, _ = runs
    data = _compare_json(runs_dir, "close", capsys)
    low, high = _wer_difference(data)["low"], _wer_difference(data)["high"]
    assert low < 0 < high  # as many errors as the reference, elsewhere: no difference shown
    code, out = _gate(runs_dir, "close", capsys, "--non-inferiority-margin", f"{high + 0.5:.2f}")
    assert code == 0 and "gate: PASS — non-inferior" in out
    # the margin holds but another criterion fails: the verdict line names that criterion, never "FAIL — non-inferior"
    code, out = _gate(runs_dir, "close", capsys, "--non-inferiority-margin", f"{high + 0.5:.2f}", "--min-qoi", "100")
    verdict = next(line for line in out.splitlines() if line.startswith("gate:"))
    assert code == 1 and verdict == "gate: FAIL (regression: QoI) — the margin alone: non-inferior", verdict
    margin = f"{high / 2:.3f}"  # inside the interval: neither side shown
    code, out = _gate(runs_dir, "close", capsys, "--non-inferiority-margin", margin)
    assert code == 1 and "FAIL (regression) — inconclusive (set too small)" in out
    assert "--inconclusive fail" in out
    code, out = _gate(runs_dir, "close", capsys, "--non-inferiority-margin", margin, "--inconclusive", "pass")
    assert code == 0 and "PASS — inconclusive (set too small)" in out
    code, out = _gate(runs_dir, "bad", capsys, "--non-inferiority-margin", "0.5", "--inconclusive", "pass")
    assert code == 1 and "regression shown" in out and "paired: sign test" in out


def test_non_inferiority_on_qoi_and_the_api(runs):
    import whisperbench as wb

    runs_dir, _ = runs
    result = wb.gate("ref", "bad", runs_dir=runs_dir, non_inferiority_qoi_margin=10.0)
    assert result.non_inferiority == "regression shown" and result.code == 1
    drop = result.comparison.significance.qoi_drop
    assert drop.low > 10.0 and drop.estimate == pytest.approx(100 - result.comparison.qoi)
    close = wb.gate("ref", "close", runs_dir=runs_dir, non_inferiority_qoi_margin=60.0, block_by="speaker")
    assert close.non_inferiority == "non-inferior" and close.code == 0
    assert close.comparison.significance.resampling.method == "blocks"


def test_gate_confidence_uses_the_blocked_intervals(runs, capsys):
    runs_dir, _ = runs
    code, out = _gate(
        runs_dir,
        "close",
        capsys,
        "--min-qoi",
        "50",
        "--max-wer-increase",
        "0",
        "--confidence",
        "95",
        "--block-by",
        "speaker",
    )
    assert code == 0 and "blocked bootstrap by speaker" in out and "paired 95% CI" in out
    import whisperbench as wb

    paired = wb.gate(
        "ref", "close", runs_dir=runs_dir, block_by="speaker", min_qoi=50
    ).comparison.significance.wer_difference
    joined = wb.compare("ref", "close", runs_dir=runs_dir).result.joined
    assert f"over the {joined} joined examples {paired.estimate:+.2f}, paired 95% CI [{paired.low:.2f}" in out


def test_gate_needs_a_threshold(runs, capsys):
    runs_dir, _ = runs
    assert main(["gate", "--reference", "ref", "--candidate", "close", "--runs-dir", str(runs_dir)]) == 2


def test_sweep_table_gives_holm_adjusted_p_values(runs):
    from whisperbench.reports.tradeoff import render_tradeoff_markdown, tradeoff_frame
    from whisperbench.store.runs import open_run

    runs_dir, _ = runs
    reference = open_run("ref", runs_dir)
    frame = tradeoff_frame([open_run("close", runs_dir), open_run("bad", runs_dir)], reference, min_qoi=50)
    rows = frame.set_index("Run")
    raw = [rows.loc[name, "ΔWER p"] for name in ("close", "bad")]
    smallest, largest = min(raw), max(raw)
    assert pd.isna(rows.loc["ref", "ΔWER p (Holm)"])
    holm_by_hand = {smallest: min(1, 2 * smallest), largest: min(1, max(2 * smallest, largest))}
    for name, p in zip(("close", "bad"), raw):
        assert rows.loc[name, "ΔWER p (Holm)"] == pytest.approx(holm_by_hand[p])
    assert "Holm-adjusted for the variants gated together" in render_tradeoff_markdown(frame, min_qoi=50)


def test_plan_command_and_the_gate_power_line(runs, capsys):
    from whisperbench.scoring.power import detectable_wer_increase, examples_for_qoi_drop

    runs_dir, rows = runs
    data = _compare_json(runs_dir, "close", capsys)
    diff = [e["candidate_errors"] - e["reference_errors"] for e in data["examples"]]
    words = [e["transcript_words"] for e in data["examples"]]
    capsys.readouterr()
    assert (
        main(
            [
                "plan",
                "--reference",
                "ref",
                "--candidate",
                "close",
                "--runs-dir",
                str(runs_dir),
                "--json",
                "--qoi-drop",
                "5",
            ]
        )
        == 0
    )
    plan = json.loads(capsys.readouterr().out)
    assert plan["examples"] == len(rows) and plan["basis"] == "paired differences observed"
    import numpy as np

    assert plan["sd_difference"] == pytest.approx(np.std(diff, ddof=1))
    assert plan["detectable_wer_increase"] == pytest.approx(
        detectable_wer_increase(np.std(diff, ddof=1), np.mean(words), len(rows))
    )
    assert plan["examples_for_qoi_drop"] == examples_for_qoi_drop(5.0)
    assert (
        main(["plan", "--reference", "ref", "--runs-dir", str(runs_dir), "--examples", "5000", "--wer-increase", "0.5"])
        == 0
    )
    out = capsys.readouterr().out
    assert "with 5000 examples" in out and "Poisson" in out and "WER increase of 0.5 points at 80% power" in out
    code, out = _gate(runs_dir, "close", capsys, "--min-qoi", "50")
    assert code == 0 and f"power: with {len(rows)} examples" in out


def test_compare_several_candidates_adjusts_for_multiplicity(runs, capsys):
    from whisperbench.scoring.significance import holm

    runs_dir, _ = runs
    capsys.readouterr()
    assert (
        main(
            [
                "compare",
                "--reference",
                "ref",
                "--candidate",
                "close",
                "--candidate",
                "bad",
                "--runs-dir",
                str(runs_dir),
                "--json",
            ]
        )
        == 0
    )
    close, bad = json.loads(capsys.readouterr().out)
    for name in ("sign_test", "mapsswe", "wer_difference"):
        p_values = [(_wer_difference(c) if name == "wer_difference" else c[name])["p_value"] for c in (close, bad)]
        expected = holm(p_values)
        assert [close["holm"][name], bad["holm"][name]] == pytest.approx(expected)
    assert close["holm"]["family"] == 2
    assert close["holm"]["sign_test"] >= close["sign_test"]["p_value"]
    assert "holm" not in _compare_json(runs_dir, "close", capsys)  # one candidate: no family
    assert (
        main(
            ["compare", "--reference", "ref", "--candidate", "close", "--candidate", "bad", "--runs-dir", str(runs_dir)]
        )
        == 0
    )
    assert "Holm-adjusted over 2 candidates" in capsys.readouterr().out


def _repeats(runs_dir, rows, edits):
    """Repeated runs of one configuration: the same recorded model file (rewritten before each), one run each."""
    from .conftest import write_jsonl

    hyp = runs_dir.parent / "repeated-model.jsonl"
    for name, edit in edits.items():
        if not (runs_dir / name).exists():
            write_jsonl(hyp, [{"id": r["id"], "hypothesis": edit(r)} for r in rows])
            manifest = shared_manifest("shortform")
            args = ["score", "--dataset", str(manifest), "--hypotheses", str(hyp), "--name", name]
            assert main(args + ["--runs-dir", str(runs_dir)]) == 0


def test_noise_of_repeated_runs_and_a_gate_that_must_hold_in_every_repeat(runs, capsys, tmp_path):
    runs_dir, rows = runs
    edits = {"rep1": _drop(1, lambda i: i % 3 == 0), "rep2": _drop(1, lambda i: i % 3 == 1), "rep3": _drop(3, bool)}
    _repeats(runs_dir, rows, edits)
    capsys.readouterr()
    assert main(["noise", "rep1", "rep2", "--runs-dir", str(runs_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    third = sum(1 for r in rows if r["_i"] % 3 == 2)  # the examples both leave whole
    assert report["examples"] == len(rows) and not report["deterministic"]
    assert report["identical_outputs"] == pytest.approx(100 * third / len(rows))
    assert report["same_errors"] == pytest.approx(100 * third / len(rows))
    assert report["wer_spread"] == pytest.approx(0.0)  # as many words dropped in each
    regressed = sum(1 for r in rows if r["_i"] % 3 == 1 and len(r["text"].split()) > 1)
    assert report["regressed_between_repeats"] == pytest.approx(100 * regressed / len(rows))
    assert main(["noise", "ref", "--runs-dir", str(runs_dir)]) == 2
    # not repeats: one run twice, two configurations (two recorded files): refused, never "deterministic"
    for pair in (["rep1", str(runs_dir / "rep1")], ["ref", "close"]):
        capsys.readouterr()
        assert main(["noise", *pair, "--runs-dir", str(runs_dir)]) == 2
        assert "deterministic" not in capsys.readouterr().out
    code, out = _gate(runs_dir, "rep2", capsys, "--non-inferiority-margin", "3", "--repeat", "rep3")
    assert code == 1 and "repeats: the verdict must hold in each of 2 candidate runs" in out
    assert "rep2: PASS — non-inferior" in out and "rep3: FAIL (regression) — regression shown" in out
    for repeat, why in (("rep2", "is rep2 itself"), ("close", "another configuration")):
        code, out = _gate(runs_dir, "rep2", capsys, "--non-inferiority-margin", "3", "--repeat", repeat)
        assert code == 2 and why in out


def test_the_report_flags_a_configuration_whose_repeats_disagree(tmp_path, tiny_rows, tiny_short):
    """Two runs of one configuration (the same recorded model path, so the same identity) whose outputs differ are
    one row of the report's run-to-run noise section, marked not deterministic; an identical third repeat of
    another configuration is deterministic; without repeats the section is absent."""
    from whisperbench.reports.noise import noise_frame, render_noise_markdown
    from whisperbench.store.runs import list_runs

    from .conftest import write_jsonl

    runs_dir = tmp_path / "runs"
    hyp = tmp_path / "model.jsonl"
    for name, edit in (("monday", lambda t: t), ("tuesday", lambda t: t.replace("the", "a", 1))):
        write_jsonl(hyp, [{"id": r["id"], "hypothesis": edit(r["text"])} for r in tiny_rows])
        assert (
            main(
                [
                    "score",
                    "--dataset",
                    str(tiny_short),
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
    assert render_noise_markdown(noise_frame(list_runs(runs_dir)[:1])) == ""
    record_run(runs_dir, tiny_short, tiny_rows, "other-a", lambda r: r["text"].upper())
    frame = noise_frame(list_runs(runs_dir))
    assert len(frame) == 1 and not frame.iloc[0]["Deterministic"]  # other-a has no repeat
    changed = sum("the" in r["text"] for r in tiny_rows)  # the outputs the edit changed
    assert frame.iloc[0]["Identical outputs %"] == pytest.approx(100.0 * (len(tiny_rows) - changed) / len(tiny_rows))
    assert main(["report", "--runs-dir", str(runs_dir), "--quiet"]) == 0
    text = (runs_dir / "leaderboard.md").read_text()
    assert "## Run-to-run noise" in text and "**NO**" in text and "monday, tuesday" in text
