"""The gate's named flags moved onto declared pairings (issue 67 item 2) say and decide what they did before: on
the committed store of a758ad9 (81 shared short-form utterances; the candidate loops, bursts and fails on some),
every case's printed verdict, exit code and JUnit XML equal what the gate of b88ee20 gave (recorded in
``tests/data/gate-b88ee20.json``, written by ``python tests/test_gate_aliases.py OUT`` at that commit); and each
pairing's generic limit (``--max METRIC.NAME=N``) gives the named flag's verdict.

Regenerate the record only from the commit it names, never from the code under test."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STORE = REPO / "tests" / "data" / "store-a758ad9"
RECORD = REPO / "tests" / "data" / "gate-b88ee20.json"

#: a quality criterion that passes, for the flags the gate does not take alone
QUALITY = ("--min-qoi", "0")
#: the gate's cases: flags after --reference ref --candidate cand (each named check, alone and together)
CASES = {
    "loops and bursts over": ["--max-new-loops", "0", "--max-new-bursts", "11", *QUALITY],
    "loops and bursts within": ["--max-new-loops", "12", "--max-new-bursts", "12", "--max-failed-pct", "5", *QUALITY],
    "memory and load over": ["--max-memory-increase", "0", "--max-load-increase", "1", "--max-failed-pct", "5"],
    "memory and load within": ["--max-memory-increase", "1", "--max-load-increase", "5", "--max-failed-pct", "5"],
    "non-speech": ["--max-nonspeech-output-rate", "5", *QUALITY],
    "timing": ["--max-timing-error-ms", "100", *QUALITY],
    "keywords": ["--must-keep-keywords"],
    "latency": ["--max-latency-p90", "1", "--confidence", "95"],
    "per language": ["--min-qoi-per-language", "90", "--confidence", "95", *QUALITY],
    "non-inferiority": ["--non-inferiority-margin", "5", "--non-inferiority-qoi-margin", "10", "--confidence", "95"],
    "aliases already": ["--min-qoi", "60", "--max-wer-increase", "20", "--max-formatting-drift", "10"],
    "everything": [
        *("--min-qoi", "60", "--max-wer-increase", "20", "--max-formatting-drift", "10", "--max-slowdown", "10"),
        *("--max-new-loops", "3", "--max-new-bursts", "30", "--max-nonspeech-output-rate", "5"),
        *("--max-timing-error-ms", "100", "--must-keep-keywords", "--max-latency-p90", "1"),
        *("--min-qoi-per-language", "90", "--non-inferiority-margin", "5", "--max-memory-increase", "1"),
        *("--max-load-increase", "5", "--max-failed-pct", "5", "--confidence", "95"),
    ],
}


def gate_outputs(runs: Path, capsys: object = None) -> dict[str, dict]:
    """Each case's exit code, printed verdict and JUnit XML on the runs under ``runs`` (``ref``, ``cand``)."""
    import contextlib
    import io

    from whisperbench.cli import main

    out = {}
    for name, flags in CASES.items():
        junit = runs / "junit.xml"
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            argv = ["gate", "--runs-dir", str(runs), "--reference", "ref", "--candidate", "cand"]
            code = main([*argv, *flags, "--junit", str(junit)])
        out[name] = {"code": code, "printed": printed.getvalue(), "junit": junit.read_text(encoding="utf-8")}
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    runs = tmp_path_factory.mktemp("gate") / "runs"
    shutil.copytree(STORE, runs)
    return runs


@pytest.fixture(scope="module")
def outputs(runs):
    return gate_outputs(runs)


@pytest.mark.parametrize("case", list(CASES))
def test_the_gate_says_and_decides_what_b88ee20_did(outputs, case):
    then = json.loads(RECORD.read_text(encoding="utf-8"))[case]
    now = outputs[case]
    assert (now["code"], now["printed"]) == (then["code"], then["printed"])
    assert now["junit"] == then["junit"]


def test_the_record_covers_each_check_both_ways():
    """The record is a real test of the moved checks: each one passes in one case and fails in another."""
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    for check in ("new loops", "new bursts", "peak memory", "load time"):
        states = {
            line.split("]")[0].strip(" [")
            for case in record.values()
            for line in case["printed"].splitlines()
            if line.strip().startswith("[") and f"] {check}:" in line
        }
        assert {"ok", "FAIL"} <= states, (check, states)


if __name__ == "__main__":  # record the cases at a commit: python tests/test_gate_aliases.py OUT.json
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        copied = Path(tmp) / "runs"
        shutil.copytree(STORE, copied)
        Path(sys.argv[1]).write_text(json.dumps(gate_outputs(copied), indent=1, ensure_ascii=False) + "\n")


@pytest.mark.parametrize(
    "named, generic",
    [
        ({"max_new_loops": 0}, {"max": {"hallucination.new_loops": 0.0}}),
        ({"max_new_loops": 12}, {"max": {"hallucination.new_loops": 12.0}}),
        ({"max_new_bursts": 11}, {"max": {"hallucination.new_bursts": 11.0}}),
        ({"max_memory_increase": 0.0}, {"max": {"speed.memory": 0.0}}),
        ({"max_memory_increase": 1.0}, {"max": {"speed.memory": 1.0}}),
        ({"max_load_increase": 1.0}, {"max": {"speed.load": 1.0}}),
        ({"max_load_increase": 5.0}, {"max": {"speed.load": 5.0}}),
    ],
)
def test_a_moved_named_flag_is_its_pairing_s_bound(runs, named, generic):
    """``--max-new-loops N`` is ``--max hallucination.new_loops=N``, ``--max-memory-increase PCT`` is ``--max
    speed.memory=PCT`` (and so for bursts and load time): the same check, words and exit code, through one
    mechanism; the cases above pass and fail on this store (12 new loops and bursts, memory +0.1 %, load +1.8 %)."""
    from whisperbench import gate

    by_flag, by_key = (
        gate("ref", "cand", runs_dir=runs, min_qoi=0.0, max_failed_pct=5.0, **limits) for limits in (named, generic)
    )
    judged = [[(c.name, c.passed, c.detail, c.blocking) for c in r.checks] for r in (by_flag, by_key)]
    assert judged[0] == judged[1] and by_flag.code == by_key.code
    assert len(judged[0]) == 7  # the five comparability checks, QoI ≥ 0 and the one limit


def test_the_moved_figures_show_in_compare_json(runs, capsys):
    """The pairings the moved flags judge are compare's figures too (``paired`` in ``--json``), equal to what the
    gate judged: 12 new loops, 12 new bursts, memory and load time against the reference in %."""
    from whisperbench.cli import main

    capsys.readouterr()
    assert main(["compare", "--runs-dir", str(runs), "--reference", "ref", "--candidate", "cand", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)[0]
    paired, new = data["paired"], data["hallucination"]["new"]
    assert paired["hallucination.new_loops"]["value"] == len(new["loops"]) == 12
    assert paired["hallucination.new_bursts"]["value"] == len(new["bursts"]) == 12
    runs_json = [json.loads((runs / name / "run.json").read_text()) for name in ("ref", "cand")]
    memory = 100.0 * (runs_json[1]["peak_rss_mb"] / runs_json[0]["peak_rss_mb"] - 1.0)
    assert (
        paired["speed.memory"]["value"] == pytest.approx(memory) == pytest.approx(data["speed"]["memory_increase_pct"])
    )
    load = 100.0 * (runs_json[1]["load_s"] / runs_json[0]["load_s"] - 1.0)
    assert paired["speed.load"]["value"] == pytest.approx(load)


@pytest.fixture(scope="module")
def keyword_runs(tmp_path_factory):
    """docs/keywords.md's runs: base wrote "poisoning" and "two duties" right in 1998-15444-0000, tiny.en did not;
    and tiny.en against itself (a copy) keeps every term."""
    from whisperbench.cli import main

    runs = tmp_path_factory.mktemp("keywords") / "runs"
    recorded, keywords = (
        REPO / "datasets" / "tiny" / "recorded",
        REPO / "datasets" / "tiny" / "shortform" / "keywords.txt",
    )
    for name, hyps in (
        ("base", "openai-whisper-base"),
        ("tiny", "openai-whisper-tiny.en"),
        ("tiny2", "openai-whisper-tiny.en"),
    ):
        argv = ["score", "--dataset", "tiny-shortform", "--hypotheses", str(recorded / f"{hyps}.jsonl")]
        assert main([*argv, "--keywords", str(keywords), "--runs-dir", str(runs), "--name", name]) == 0
    return runs


@pytest.mark.parametrize(
    "reference, candidate, code",
    [("base", "tiny", 1), ("tiny", "tiny2", 0)],
)
def test_must_keep_keywords_is_keywords_lost_at_most_0(keyword_runs, reference, candidate, code):
    """``--must-keep-keywords`` is ``--max keywords.lost=0``: the same check, words and exit code (two terms lost:
    FAIL naming them; a copy of the candidate: ok); ``--max keywords.lost=2`` allows the two; compare shows the
    count."""
    from whisperbench import compare, gate

    runs = {"runs_dir": keyword_runs}
    by_flag, by_key = (
        gate(reference, candidate, **runs, allow_self_comparison=True, **limits)
        for limits in ({"must_keep_keywords": True}, {"max": {"keywords.lost": 0.0}})
    )
    judged = [[(c.name, c.passed, c.detail, c.blocking) for c in r.checks] for r in (by_flag, by_key)]
    assert judged[0] == judged[1] and by_flag.code == by_key.code == code
    kept = next(c for c in by_flag.checks if c.name == "keywords kept")
    lost = compare(reference, candidate, **runs).paired["keywords.lost"].value
    if code:
        assert kept.detail == "newly missed: poisoning (1998-15444-0000), two duties (1998-15444-0000)" and lost == 2
        assert gate(reference, candidate, **runs, max={"keywords.lost": 2.0}).code == 0
    else:
        assert kept.detail == "every term the reference wrote right is kept" and lost == 0
