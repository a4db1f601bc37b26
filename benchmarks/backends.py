"""Scale-out on one machine: 1 vs N workers, in-process vs Ray on the same work, harness overhead.

Every configuration is one ``whisperbench run`` in its own process over the same examples, with the
same threads per worker (``--threads``, default: cores / N), so the ratios of one run of this script
compare like with like. Printed per configuration: the inference loop's wall time (``wall_s``:
model loading excluded in-process and on Ray; a process pool's includes its workers' start), Σ
inference time, RTFx (Σ audio / Σ inference: per-example speed) and throughput (Σ audio / wall:
what parallelism buys), the overhead (wall − Σ inference) as a % of Σ inference (one worker only),
load time and peak RSS of the model-holding process, and the end-to-end time of the command
(process start, Ray start, model load included). Then the ratios.

Then a sweep (``--sweep-variants``, default faster-whisper's float32 and int8 against a reference run made
first) one variant after another and with ``--parallel N`` (N = --workers), one thread per variant both
times, each into its own runs folder: the transcripts and summary figures are checked equal, and the
parallel efficiency is printed: the wall time the variants' own times in the parallel sweep allow (the
longest, or their sum / N if larger) over the parallel sweep's wall time, beside the plain speed-up and how
much running side by side slowed each variant (CPU sharing, not the harness).

    python benchmarks/backends.py [--dataset PATH] [--limit 40] [--workers 2] \
        [--adapter faster-whisper -o compute_type=int8] [--sweep-only | --skip-sweep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_verdict  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "shortform" / "manifest.jsonl"


def run(label: str, args: argparse.Namespace, threads: int, runs_dir: str, extra: list[str]) -> dict | None:
    cmd = [
        sys.executable,
        "-m",
        "whisperbench",
        "run",
        "--adapter",
        args.adapter,
        "--model",
        args.model,
        "--dataset",
        args.dataset,
        "--runs-dir",
        runs_dir,
        "--name",
        label,
        "--json",
        "-o",
        f"threads={threads}",
    ]
    cmd += [item for option in args.option for item in ("-o", option)] + extra
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    end_to_end = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"{label}: failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        return None
    summary = json.loads(proc.stdout)
    summary["end_to_end_s"] = end_to_end
    summary["throughput"] = summary["audio_s"] / summary["wall_s"] if summary.get("wall_s") else None
    parallel = "--workers" in extra and extra[extra.index("--workers") + 1] != "1"  # Σ inference spans workers
    summary["overhead_pct_of_infer"] = (
        100.0 * (summary["wall_s"] - summary["infer_s"]) / summary["infer_s"]
        if summary.get("wall_s") and summary["infer_s"] and not parallel
        else None
    )
    info = json.loads((Path(runs_dir) / label / "run.json").read_text())
    summary["hypotheses"] = {
        p["id"]: p["hypothesis"]
        for p in map(json.loads, (Path(runs_dir) / label / "predictions.jsonl").read_text().splitlines())
    }
    summary["backend_info"] = info.get("backend_info")
    return summary


def fmt(value: float | None, spec: str = ".2f") -> str:
    return "n/a" if value is None else format(value, spec)


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "n/a"


def _quiet_run(cmd: list[str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"failed: {' '.join(cmd)}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return proc


def sweep(args: argparse.Namespace, parallel: int, runs_dir: Path) -> dict | None:
    """One ``whisperbench sweep`` (its record, and every finished variant's transcripts and summary)."""
    cmd = [
        sys.executable,
        "-m",
        "whisperbench",
        "sweep",
        "--model",
        args.model,
        "--dataset",
        args.dataset,
        "--implementations",
        args.adapter,
        "--variants",
        args.sweep_variants,
        "--reference",
        "reference",
        "--runs-dir",
        str(runs_dir),
        "-o",
        "threads=1",
        "--parallel",
        str(parallel),
        "--json",
    ]
    proc = _quiet_run(cmd + (["--limit", str(args.limit)] if args.limit else []))
    if proc.returncode != 0:
        return None
    record = json.loads(proc.stdout)
    runs = {}
    for entry in record["variants"]:
        if entry["status"] != "finished":
            print(f"  {entry['label']}: {entry['status']}: {entry['error']}")
            continue
        folder = runs_dir / entry["run"]
        summary = json.loads((folder / "summary.json").read_text())
        lines = (folder / "predictions.jsonl").read_text().splitlines()
        runs[entry["label"]] = {
            "wall_s": entry["wall_s"],
            "infer_s": summary["infer_s"],
            "figures": {
                k: summary.get(k)
                for k in ("wer", "cer", "substitutions", "deletions", "insertions", "num_failed", "model_size_mb")
            },
            "hypotheses": {p["id"]: p["hypothesis"] for p in map(json.loads, lines)},
        }
    return {"wall_s": record["wall_s"], "runs": runs}


def sweep_efficiency(args: argparse.Namespace, n: int, tmp: Path) -> None:
    """A sweep one variant at a time against the same sweep with ``--parallel n``: equal results, efficiency."""
    print(
        f"\nsweep of {args.adapter} {args.sweep_variants}: one variant at a time vs --parallel {n} "
        f"(1 thread per variant both times)",
        flush=True,
    )
    template = tmp / "reference"
    cmd = [
        sys.executable,
        "-m",
        "whisperbench",
        "run",
        "--adapter",
        args.adapter,
        "--model",
        args.model,
        "--dataset",
        args.dataset,
        "--runs-dir",
        str(template),
        "--name",
        "reference",
        "-o",
        "threads=1",
    ]
    if _quiet_run(cmd + (["--limit", str(args.limit)] if args.limit else [])).returncode != 0:
        return
    results = {}
    for parallel in (1, n):
        runs_dir = tmp / f"sweep-{parallel}"
        shutil.copytree(template, runs_dir)
        results[parallel] = sweep(args, parallel, runs_dir)
    one, many = results[1], results[n]
    if not one or not many or not many["runs"]:
        return
    for label, run in many["runs"].items():
        alone = one["runs"].get(label, {}).get("wall_s")
        print(
            f"  {label:<28} alone {fmt(alone, '6.1f')} s, side by side {run['wall_s']:6.1f} s "
            f"(Σinfer {fmt(one['runs'].get(label, {}).get('infer_s'), '.1f')} → {run['infer_s']:.1f} s)"
        )
    same = all(
        one["runs"].get(label, {}).get(key) == run[key]
        for label, run in many["runs"].items()
        for key in ("hypotheses", "figures")
    )
    same = same and one["runs"].keys() == many["runs"].keys()
    times = [run["wall_s"] for run in many["runs"].values()]
    allowed = max(max(times), sum(times) / n)
    sharing = (
        sum(r["infer_s"] for r in many["runs"].values()) / sum(r["infer_s"] for r in one["runs"].values())
        if one["runs"]
        else None
    )
    print(f"  identical transcripts and summary figures, sequential vs parallel: {'yes' if same else 'NO'}")
    print(
        f"  sweep wall: one at a time {one['wall_s']:.1f} s, --parallel {n} {many['wall_s']:.1f} s "
        f"(speed-up {ratio(one['wall_s'], many['wall_s'])}; side by side each variant's Σinfer was "
        f"{fmt(sharing)}x its time alone: CPU sharing)"
    )
    print(
        f"  parallel efficiency: {100 * allowed / many['wall_s']:.1f} % of what the variants' own times allow "
        f"({allowed:.1f} s: the longest, or their sum / {n}) (target >= 95 %)"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default=str(SHARED) if SHARED.exists() else "tiny-shortform")
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--adapter", default="faster-whisper")
    parser.add_argument("-o", "--option", action="append", default=None)
    parser.add_argument("--workers", type=int, default=max(2, len(os.sched_getaffinity(0))))
    parser.add_argument("--threads", type=int, help="threads per worker (default: cores / workers, at least 1)")
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--sweep-variants", default="float32,int8", help="--adapter's variants the sweep runs")
    parts = parser.add_mutually_exclusive_group()
    parts.add_argument("--skip-sweep", action="store_true", help="only the backends")
    parts.add_argument("--sweep-only", action="store_true", help="only the sweep, one at a time vs --parallel")
    args = parser.parse_args(argv)
    args.option = args.option if args.option is not None else ["compute_type=int8"]
    cores = len(os.sched_getaffinity(0))
    n = args.workers
    threads = args.threads or max(1, cores // n)
    configs = [
        ("in-process", []),
        ("pool-1", ["--backend", "process-pool", "--workers", "1"]),
        (f"pool-{n}", ["--backend", "process-pool", "--workers", str(n)]),
    ]
    if not args.skip_ray:
        configs += [
            ("ray-1", ["--backend", "ray", "--workers", "1"]),
            (f"ray-{n}", ["--backend", "ray", "--workers", str(n)]),
        ]
    print(
        f"{args.adapter} {' '.join(args.option)} {args.model} on {args.dataset} (limit {args.limit}), "
        f"{threads} thread(s) per worker, {cores} cores, load average {os.getloadavg()[0]:.1f}\n"
    )
    if args.sweep_only:
        with tempfile.TemporaryDirectory() as tmp:
            sweep_efficiency(args, n, Path(tmp))
        return 0
    results = {}
    with tempfile.TemporaryDirectory() as runs_dir:
        for label, extra in configs:
            summary = run(label, args, threads, runs_dir, extra)
            if summary:
                results[label] = summary
                print(
                    f"{label:>10}: wall {fmt(summary['wall_s'], '7.1f')} s  Σinfer {summary['infer_s']:7.1f} s  "
                    f"RTFx {fmt(summary['rtfx'], '5.1f')}  "
                    f"throughput {fmt(summary['throughput'], '5.1f')}x real time  "
                    f"overhead {fmt(summary['overhead_pct_of_infer'], '5.1f')} % of Σinfer  "
                    f"load {fmt(summary['load_s'], '.1f')} s  peak RSS {fmt(summary['peak_rss_mb'], '.0f')} MiB  "
                    f"end-to-end {summary['end_to_end_s']:.1f} s",
                    flush=True,
                )
    base = results.get("in-process")
    if not base:
        return 1
    same = [label for label, s in results.items() if s["hypotheses"] == base["hypotheses"]]
    print(
        f"\nidentical transcripts to in-process: {', '.join(same)}"
        f"{'' if len(same) == len(results) else ' (others differ!)'}"
    )
    print("\nratios (one run of this script):")
    for label in ("pool", "ray"):
        one, many = results.get(f"{label}-1"), results.get(f"{label}-{n}")
        if one and many:
            print(
                f"  {label}: {n} workers vs 1: throughput {ratio(many['throughput'], one['throughput'])}, "
                f"wall {ratio(one['wall_s'], many['wall_s'])} shorter; per-example RTFx "
                f"{ratio(many['rtfx'], one['rtfx'])} (CPU sharing shows here)"
            )
    ray_one = results.get("ray-1")
    if ray_one:
        print(
            f"  in-process vs Ray (1 worker, same work): wall Ray/in-process "
            f"{ratio(ray_one['wall_s'], base['wall_s'])}, "
            f"Σinfer {ratio(ray_one['infer_s'], base['infer_s'])}, end-to-end "
            f"{ratio(ray_one['end_to_end_s'], base['end_to_end_s'])}"
        )
    print(
        f"  harness overhead, in-process: {fmt(base['overhead_pct_of_infer'])} % of Σinfer "
        f"(audio decoding, scoring, fsync'd writes; summary's harness_overhead_pct = "
        f"{fmt(base.get('harness_overhead_pct'))} % of wall)"
    )
    if ray_one:
        print(f"  overhead on Ray, 1 actor: {fmt(ray_one['overhead_pct_of_infer'])} % of Σinfer")
    if not args.skip_sweep:
        with tempfile.TemporaryDirectory() as tmp:
            sweep_efficiency(args, n, Path(tmp))
    return 0


if __name__ == "__main__":
    code = main()
    print(load_verdict())
    raise SystemExit(code)
