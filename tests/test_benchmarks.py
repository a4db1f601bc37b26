"""The benchmark scripts run: each at its smallest size, so a change that breaks one is caught here, not on the
day someone measures (their figures are in docs/benchmarks.md, measured by hand: machines are noisy)."""

import re
import subprocess
import sys

from .conftest import REPO


def test_scoring_benchmark_runs_at_its_smallest_size():
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "scoring.py"),
            "--sizes",
            "300,600",
            "--pairs",
            "30",
            "--variants",
            "60",
            "--parallel",
            "200",
            "--report-max",
            "600",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "equal to the in-memory path" in out.stdout and "600 predictions per run: compare" in out.stdout
    final = next(line for line in out.stdout.splitlines() if line.startswith("600 predictions per run"))
    assert "gate" in final and "report" in final


def test_the_cold_path_benchmark_runs_at_its_smallest_size():
    """``scoring.py --cold``: score, score, gate, compare and report as fresh processes, counts checked equal to the
    naive loop's (the script asserts it)."""
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "scoring.py"), "--cold", "--sizes", "100,200"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("counts identical") == 2 and "growth 100 -> 200" in out.stdout
    assert out.stdout.count("the naive loop (median of ") == 2  # score (candidate) timed five times, its median taken
    alone = r"score, one process \(--scoring-workers 1; median of [0-9.]+ s\)"  # once: below 20,000 both are one
    assert len(re.findall(alone, out.stdout)) == 2
    for step in ("score reference", "score candidate", "gate", "compare", "report"):
        assert f"    {step} " in out.stdout
    assert out.stdout.count("files, cache empty") == 2 and out.stdout.count("files, cache full") == 2
