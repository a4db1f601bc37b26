"""A metric plug-in is contained (issue 69, item 1): whatever its kernel, ``finish`` or ``summarize`` raises —
``sys.exit`` included — fails that metric only (named in the log, counted), never the command nor its exit code;
its name and columns cannot take a built-in figure's place; what it prints at import or while it runs never
reaches stdout. Each plug-in here is a separate distribution (a ``.dist-info`` with ``entry_points.txt``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import BUNDLED

MANIFEST = BUNDLED / "shortform" / "manifest.jsonl"
RECORDED = BUNDLED / "recorded"


def _site(tmp_path: Path, code: str, name: str = "hostile") -> Path:
    """A folder holding the module ``hostile_metric`` (``code``) and its distribution's entry point ``name``."""
    site = tmp_path / "site"
    dist = site / "hostile_metric-1.0.dist-info"
    dist.mkdir(parents=True)
    (site / "hostile_metric.py").write_text(textwrap.dedent(code), encoding="utf-8")
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-metric\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(f"[whisperbench.metrics]\n{name} = hostile_metric:METRIC\n")
    return site


def _cli(args: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "whisperbench", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _score(site: Path, tmp_path: Path) -> Path:
    """The recorded base run as ``ref`` and tiny.en as ``cand`` (a regression: the gate fails it), scored with
    the plug-in installed; both commands must succeed."""
    runs = tmp_path / "runs"
    for name, file in (("ref", "openai-whisper-base.jsonl"), ("cand", "openai-whisper-tiny.en.jsonl")):
        args = ["score", "--dataset", str(MANIFEST), "--hypotheses", str(RECORDED / file), "--name", name]
        done = _cli([*args, "--runs-dir", str(runs)], site, tmp_path)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
    return runs


def _gate(site: Path, tmp_path: Path, runs: Path) -> subprocess.CompletedProcess:
    junit = tmp_path / "gate.xml"
    args = ["gate", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--junit", str(junit)]
    args += ["--max-wer-increase", "0", "--max-failed-pct", "100"]
    return _cli(args, site, tmp_path)


def _summary(runs: Path, name: str) -> dict:
    return json.loads((runs / name / "summary.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> tuple[Path, dict, dict]:
    """The two runs scored without any plug-in, their summaries, and the gate's verdict on them (a regression)."""
    tmp = tmp_path_factory.mktemp("plain")
    site = tmp / "empty"
    site.mkdir()
    runs = _score(site, tmp)
    gate = _gate(site, tmp, runs)
    assert gate.returncode == 1, gate.stdout + gate.stderr  # the regression the plug-ins below must not hide
    return runs, _summary(runs, "ref"), _summary(runs, "cand")


KERNEL_EXITS = """
    import sys
    from whisperbench.scoring.metrics import Metric

    def kernel(example):
        if example.id.endswith("1") or example.id.endswith("2"):
            sys.exit(0)
        raise KeyboardInterrupt  # not the user's Ctrl-C: a failure like any other
    METRIC = Metric("hostile", "exits", per_example=kernel, aggregate="sum")
"""

SUMMARIZE_RAISES = """
    import sys
    from whisperbench.scoring.metrics import Metric

    def summarize(predictions, context):
        print("noise from summarize")
        raise SystemExit(3)
    METRIC = Metric("hostile", "exits", summarize=summarize)
"""

FINISH_EXITS = """
    import sys
    from whisperbench.scoring.metrics import Metric

    METRIC = Metric("hostile", "exits", per_example=lambda e: {"n": 1.0}, aggregate="sum", finish=lambda v: sys.exit(0))
"""


@pytest.mark.parametrize("code", [KERNEL_EXITS, SUMMARIZE_RAISES, FINISH_EXITS], ids=["kernel", "summarize", "finish"])
def test_a_plugin_that_exits_or_raises_fails_its_metric_not_the_command(code, plain, tmp_path):
    _, ref_plain, cand_plain = plain
    site = _site(tmp_path, code)
    runs = _score(site, tmp_path)  # score writes summary.json
    cand = _summary(runs, "cand")
    for key in ("wer", "wer_ok", "num_failed", "num_examples", "cer"):
        assert cand[key] == cand_plain[key], key  # every built-in figure as without the plug-in
    assert "hostile" in cand
    gate = _gate(site, tmp_path, runs)
    assert gate.returncode == 1, gate.stdout + gate.stderr  # the verdict stays a regression, not exit 0
    assert "FAIL" in gate.stdout and (tmp_path / "gate.xml").is_file()
    assert "Traceback" not in gate.stderr
    rescored = _cli(["rescore", "cand", "--runs-dir", str(runs)], site, tmp_path)
    assert rescored.returncode == 0 and "Traceback" not in rescored.stderr, rescored.stderr
    assert _summary(runs, "cand")["wer"] == cand_plain["wer"]
    report = _cli(["report", "--runs-dir", str(runs), "--out", "board.md", "--quiet"], site, tmp_path)
    assert report.returncode == 0, report.stderr
    compared = _cli(
        ["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--json"], site, tmp_path
    )
    assert compared.returncode == 0, compared.stderr
    json.loads(compared.stdout)  # nothing the plug-in printed is in it
    assert "hostile" in compared.stderr or "hostile" in rescored.stderr  # the failure is named


def test_a_kernel_failure_is_counted_and_named(tmp_path, caplog):
    from whisperbench.scoring.metrics import Metric, ScoredExample
    from whisperbench.types import WordCounts

    def kernel(example):
        if example.id == "b":
            sys.exit(0)
        if example.id == "c":
            raise KeyboardInterrupt  # raised by the plug-in itself, not a Ctrl-C
        return {"n": 1.0}

    metric = Metric("exiting", "exits on b", per_example=kernel, aggregate="sum")
    examples = [ScoredExample(i, "ok", "a", "a", "a", "a", WordCounts(1, 0, 0, 0)) for i in "abcd"]
    columns = metric.columns_of(examples)
    assert columns == {"n": [1.0, None, None, 1.0], "errors": [0.0, 1.0, 1.0, 0.0]}
    assert metric.value_of(columns) == {"n": 2.0, "errors": 2}
    assert "exiting" in caplog.text and "SystemExit" in caplog.text


def test_a_real_ctrl_c_still_stops_a_kernel():
    import signal

    from whisperbench.scoring.metrics import Metric, ScoredExample
    from whisperbench.types import WordCounts

    def kernel(example):
        os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C arriving while the kernel runs
        return {"n": 1.0}

    metric = Metric("slow", "interrupted", per_example=kernel, aggregate="sum")
    # Python's own Ctrl-C handler, as a command or a notebook kernel has it: a library an earlier test loaded in
    # this process may have left SIGINT ignored, and an ignored Ctrl-C stops nothing
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            metric.columns_of([ScoredExample("a", "ok", "a", "a", "a", "a", WordCounts(1, 0, 0, 0))])
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # its handler given back
    finally:
        signal.signal(signal.SIGINT, before)


TOP_LEVEL_WER = """
    from whisperbench.scoring.metrics import Metric

    METRIC = Metric("hostile", "claims WER", per_example=lambda e: {"wer": 0.0}, top_level=True)
"""


def _named(name: str) -> str:
    return f"""
    from whisperbench.scoring.metrics import Metric

    METRIC = Metric({name!r}, "claims a field", summarize=lambda p, c: {{"x": 0}})
"""


@pytest.mark.parametrize(
    "code, entry",
    [(TOP_LEVEL_WER, "hostile"), (_named("num_failed"), "num_failed"), (_named("wer_ok"), "wer_ok")],
    ids=["top-level-wer", "num_failed", "wer_ok"],
)
def test_a_plugin_cannot_replace_a_builtin_figure(code, entry, plain, tmp_path):
    _, ref_plain, cand_plain = plain
    site = _site(tmp_path, code, entry)
    runs = _score(site, tmp_path)
    for name, plain_summary in (("ref", ref_plain), ("cand", cand_plain)):
        summary = _summary(runs, name)
        for key in ("wer", "wer_ok", "num_failed", "cer"):
            assert summary[key] == plain_summary[key], (name, key)
    board = _cli(["report", "--runs-dir", str(runs), "--out", "board.md", "--quiet"], site, tmp_path)
    assert board.returncode == 0, board.stderr
    assert "left out" in board.stderr  # the refused plug-in is named
    assert f"{cand_plain['wer']:.2f}" in (tmp_path / "board.md").read_text(encoding="utf-8")


def test_a_plugin_added_at_run_time_cannot_claim_a_builtin_place():
    from whisperbench.errors import OptionError
    from whisperbench.scoring.metrics import METRICS, Metric

    with pytest.raises(OptionError, match="top level or core"):
        METRICS.add(Metric("mine", "x", per_example=lambda e: {"wer": 0.0}, top_level=True))
    with pytest.raises(OptionError, match="num_failed"):
        METRICS.add(Metric("num_failed", "x", summarize=lambda p, c: None))


PRINTS_AT_IMPORT = """
    print("hello from a plug-in's import")
    from whisperbench.scoring.metrics import Metric

    def kernel(example):
        print("and from its kernel")
        return {"n": 1.0}
    METRIC = Metric("hostile", "prints", per_example=kernel, aggregate="sum")
"""


def test_what_a_plugin_prints_never_reaches_stdout(plain, tmp_path):
    runs = plain[0]
    site = _site(tmp_path, PRINTS_AT_IMPORT)
    compared = _cli(
        ["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--json"], site, tmp_path
    )
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)[0]["metrics"]["hostile"]["candidate"] == {"n": 6.0}
    assert "hello from a plug-in" in compared.stderr
    listed = _cli(["runs", "--runs-dir", str(runs), "--json"], site, tmp_path)
    assert listed.returncode == 0, listed.stderr
    json.loads(listed.stdout)


def _behaviour(kind: str, value):
    """A plug-in's code doing ``kind``: raise, exit, print, return junk, or behave."""

    def act(*_):
        if kind == "raise":
            raise ValueError("plug-in bug")
        if kind == "exit":
            sys.exit(value)
        if kind == "interrupt":
            raise KeyboardInterrupt  # raised by the plug-in itself, not the user's Ctrl-C
        if kind == "print":
            print("noise on stdout")
            return {"n": 1.0}
        if kind == "junk":
            return value
        return {"n": 1.0}

    return act


KINDS = ["raise", "exit", "interrupt", "print", "junk", "fine"]


def test_random_plugin_behaviours_never_change_a_builtin_figure(capsys):
    """Property: whatever a per-example kernel, ``finish`` and a run-level ``summarize`` do (raise, exit, print,
    return junk), summarizing the recorded run gives the built-in figures of the run without them and nothing on
    stdout."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from whisperbench.scoring.figures import summarize
    from whisperbench.scoring.metrics import METRICS, Metric
    from whisperbench.types import Prediction

    rows = [json.loads(line) for line in MANIFEST.read_text(encoding="utf-8").splitlines()]
    said = [
        json.loads(line) for line in (RECORDED / "openai-whisper-base.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    hypotheses = {row["id"]: row["hypothesis"] for row in said}
    predictions = [Prediction(r["id"], r["text"], hypotheses[r["id"]], audio_s=r["duration_s"]) for r in rows]
    plain = summarize(predictions, "english", "short").to_dict()
    junk = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.just({"n": "x"}), st.just({"n": float("inf")}))

    @settings(max_examples=40, deadline=None)
    @given(st.sampled_from(KINDS), st.sampled_from(KINDS), st.sampled_from(KINDS), junk)
    def check(kernel: str, finish: str, run_level: str, value) -> None:
        added = [
            Metric("prop_example", "x", per_example=_behaviour(kernel, value), finish=_behaviour(finish, value)),
            Metric("prop_run", "x", summarize=_behaviour(run_level, value)),
        ]
        for metric in added:
            METRICS.add(metric)
        try:
            capsys.readouterr()
            figures = summarize(predictions, "english", "short").to_dict()
            assert capsys.readouterr().out == ""
        finally:
            for metric in added:
                METRICS.remove(metric.name)
        for key, number in plain.items():
            assert figures[key] == number, key

    check()
