"""Speed per implementation against openai-whisper, on the same weights: each implementation a fresh
`whisperbench run` (2 threads) on the shared short-form (and long-form) set, then the figures `report`'s Speed
section gives — the per-example wall-time ratio to openai-whisper with its 95 % bootstrap interval, RTFx,
CPU core-seconds per audio second, ms per decoded token, the wait for the first transcript, load time (cold, and
again in the same process with caches warm: ``run --warm-load``) and peak memory — printed as one markdown table
per model and set, with the load the machine ran under.

    python benchmarks/speed_table.py [--models tiny.en,base] [--sets shortform,longform] [--keep DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_verdict, run_implementation  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
REFERENCE = "openai-whisper"
#: label -> (adapter, options); the reference first
IMPLEMENTATIONS = {
    REFERENCE: (REFERENCE, []),
    "faster-whisper float32": ("faster-whisper", ["compute_type=float32"]),
    "faster-whisper int8": ("faster-whisper", ["compute_type=int8"]),
    "whisper.cpp f16": ("whisper-cpp", ["quantization=f16"]),
    "whisper.cpp q5_0": ("whisper-cpp", ["quantization=q5_0"]),
    "transformers": ("transformers", []),
    "jax": ("jax", []),
}
#: implementations left out of the long-form set (none: JAX, which has no native long-form algorithm, runs it on the
#: harness's chunked windows)
SHORT_ONLY: tuple[str, ...] = ()


def _cell(value: float | None, spec: str) -> str:
    return "–" if value is None else f"{value:{spec}}"


def table(runs_dir: Path, labels: list[str]) -> list[str]:
    """The markdown rows of the runs in ``runs_dir`` against the openai-whisper run."""
    import whisperbench as wb
    from whisperbench.reports.speed import compare_speed

    reference = wb.load_run(str(runs_dir / REFERENCE))
    rows = [
        "| implementation | WER % | time × openai-whisper [95% CI] | RTFx | core-s / audio-s | ms / token "
        "| first result s | load s | warm load s | peak MiB |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label in labels:
        folder = runs_dir / label.replace(" ", "_")
        if not (folder / "summary.json").exists():
            continue
        run = wb.load_run(str(folder))
        s = run.summary
        ratio = "(reference)"
        if label != REFERENCE:
            stats = compare_speed(reference, run).stats
            ratio = (
                "–"
                if stats is None or stats.ratio is None
                else f"×{stats.ratio:.3f} [×{stats.low:.3f}, ×{stats.high:.3f}]"
            )
        peak = (run.meta.adapter_info or {}).get("worker_peak_rss_mb") or s.peak_rss_mb
        rows.append(
            f"| {label} | {s.wer:.2f} | {ratio} | {_cell(s.rtfx, '.1f')} | {_cell(s.core_s_per_audio_s, '.3f')} | "
            f"{_cell(s.ms_per_token, '.1f')} | {_cell(s.first_result_s, '.2f')} | {_cell(s.load_s, '.2f')} | "
            f"{_cell(s.load_warm_s, '.2f')} | {_cell(peak, ',.0f')} |"
        )
    return rows


def measure(model: str, dataset: Path, runs_dir: Path, long_form: bool, limit: int | None) -> list[str]:
    labels = [label for label in IMPLEMENTATIONS if not (long_form and label in SHORT_ONLY)]
    for label in labels:
        if (runs_dir / label.replace(" ", "_") / "summary.json").exists():
            continue
        adapter, options = IMPLEMENTATIONS[label]
        run_implementation(
            label.replace(" ", "_"),
            adapter,
            options,
            model=model,
            dataset=str(dataset),
            threads=2,
            runs_dir=str(runs_dir),
            limit=limit,
            args=("--warm-load",),  # the second load in the same process, caches warm (load_warm_s)
        )
    return table(runs_dir, labels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--sets", default="shortform,longform", help="sets of ../shared/data")
    parser.add_argument("--keep", help="keep the runs in this folder (default: a temporary one)")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(args.keep or scratch)
        for name in args.sets.split(","):
            dataset = SHARED / name / "manifest.jsonl"
            if not dataset.exists():
                print(f"{name}: skipped (no {dataset})")
                continue
            for model in args.models.split(","):
                rows = measure(model, dataset, root / f"{name}-{model}", name == "longform", args.limit)
                print(f"\n### {name}, {model}, 2 threads\n")
                print("\n".join(rows))
    print("\n" + load_verdict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
