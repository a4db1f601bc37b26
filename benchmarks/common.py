"""What every benchmark script shares: one ``whisperbench run`` per implementation, in its own process.

A separate process per implementation keeps peak RSS its own; adapters that hold the model in a worker
process (whisper.cpp) report that worker's peak as ``worker_peak_rss_mb`` in run.json, used instead.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

Column = tuple[str, int, Callable[[dict], str]]  # header, width, format(summary)


def run_implementation(
    label: str,
    adapter: str,
    options: list[str],
    *,
    model: str,
    dataset: str,
    threads: int,
    runs_dir: str,
    limit: int | None = None,
    preload: str = "",
    args: tuple[str, ...] = (),
) -> dict | None:
    """Summary of one run (``peak_mb`` = the model-holding process's peak), or None when it could not run.

    ``preload`` names a module to import first (an adapter not yet built in); ``args`` are further
    ``whisperbench run`` arguments (e.g. ``("--long-form", "chunked")``).
    """
    entry = (
        ["-m", "whisperbench"]
        if not preload
        else ["-c", f"import sys, {preload}; from whisperbench.cli import main; raise SystemExit(main(sys.argv[1:]))"]
    )
    cmd = [
        sys.executable,
        *entry,
        "run",
        "--adapter",
        adapter,
        "--model",
        model,
        "--dataset",
        dataset,
        "--runs-dir",
        runs_dir,
        "--name",
        label,
        "--json",
        "-o",
        f"threads={threads}",
    ]
    for option in options:
        cmd += ["-o", option]
    if limit:
        cmd += ["--limit", str(limit)]
    cmd += list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        reason = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        print(f"{label}: skipped ({reason})")
        return None
    summary = json.loads(proc.stdout)
    info = json.loads((Path(runs_dir) / label / "run.json").read_text())
    adapter_info = info.get("adapter_info") or {}
    summary["peak_mb"] = adapter_info.get("worker_peak_rss_mb") or summary["peak_rss_mb"]
    summary["versions"] = adapter_info.get("versions", {})
    return summary


def ratio(value: float | None, base: float | None) -> float:
    return value / base if value and base else float("nan")


def run_all(
    configurations: list[tuple[str, str, list[str]]],
    *,
    model: str,
    dataset: str,
    threads: int,
    limit: int | None = None,
) -> dict[str, dict]:
    """``label -> summary`` for every (label, adapter, options) that ran, in order, in one temp runs dir."""
    results = {}
    with tempfile.TemporaryDirectory() as runs_dir:
        for label, adapter, options in configurations:
            summary = run_implementation(
                label, adapter, options, model=model, dataset=dataset, threads=threads, runs_dir=runs_dir, limit=limit
            )
            if summary:
                results[label] = summary
    return results


_LOAD_AT_START = None


def watch_load() -> None:
    """Note the machine's load before the benchmark runs (called on import of this module, and again by a
    benchmark that starts later)."""
    global _LOAD_AT_START
    from whisperbench.harness.environment import load_snapshot

    _LOAD_AT_START = load_snapshot()


def load_verdict() -> str:
    """One line: how busy other processes kept the machine while the benchmark ran (its own child processes
    excluded), and whether its figures can be called final (at most a quarter of the usable CPUs busy with
    others, and < 10 % of CPU time stolen)."""
    from whisperbench.harness.environment import load_snapshot, machine_load

    end = load_snapshot()
    load = machine_load(_LOAD_AT_START or end, end)
    facts = (
        f"other processes kept {load['other_cpus_busy']} of {load['usable_cpus']} CPU(s) busy, "
        f"steal {load['steal_pct']} %"
    )
    if load["busy"]:
        return f"PRELIMINARY figures ({facts}): rerun on a quiet machine before publishing them"
    return f"final figures: measured on a quiet machine ({facts})"


watch_load()


def print_ratio_table(
    title: str, results: dict[str, dict], *, extra: tuple[Column, ...] = (), note: str = "ow = openai-whisper"
) -> None:
    """WER, RTFx and peak memory per run, with speed and memory as ratios to the openai-whisper run."""
    base = results.get("openai-whisper") or {}
    columns: list[Column] = [
        ("WER %", 8, lambda s: f"{s['wer']:.2f}"),
        ("RTFx", 8, lambda s: f"{s['rtfx']:.2f}" if s["rtfx"] else "-"),
        ("RTFx/ow", 9, lambda s: f"{ratio(s['rtfx'], base.get('rtfx')):.2f}"),
        ("peak MiB", 10, lambda s: f"{s['peak_mb']:.0f}"),
        ("mem/ow", 8, lambda s: f"{ratio(s['peak_mb'], base.get('peak_mb')):.2f}"),
        ("load s", 8, lambda s: f"{s['load_s']:.2f}"),
        *extra,
    ]
    width = max([len("implementation"), *map(len, results)]) + 2
    header = f"{'implementation':<{width}}" + "".join(f"{name:>{w}}" for name, w, _ in columns)
    print(f"\n{title}\n{header}\n{'-' * len(header)}")
    for label, summary in results.items():
        print(f"{label:<{width}}" + "".join(f"{fmt(summary):>{w}}" for _, w, fmt in columns))
    if note:
        print(note)
    print(load_verdict())


def benchmark_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every implementation benchmark takes: dataset, model, threads, limit."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--dataset", default="tiny-shortform")
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int)
    return parser
