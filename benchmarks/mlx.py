"""Speed and memory of mlx-whisper against openai-whisper on the same clips and weights, in one run.

Each configuration runs in its own process (``whisperbench run``), so peak RSS is its own. Printed:
WER, RTFx (Σ audio / Σ inference, load and warm-up excluded) and peak RSS, with their ratios to
openai-whisper. On Linux, mlx[cpu] runs on the CPU with the reference BLAS it bundles (one thread),
so expect a fraction of openai-whisper's speed there; the row is meant for Apple silicon (Metal).
``--quantized`` adds q8 and q4 on top of float32 (on the Linux CPU, quantized float16 is ~30x slower).

    python benchmarks/mlx.py [--dataset tiny-shortform] [--model tiny.en] [--threads 2] [--limit N] [--quantized]
"""

from __future__ import annotations

import argparse

from common import ratio, run_all

CONFIGURATIONS = [
    ("openai-whisper", "openai-whisper", []),
    ("mlx-float32", "mlx", ["dtype=float32"]),
    ("mlx-float16", "mlx", ["dtype=float16"]),
]
QUANTIZED = [
    ("mlx-q8-float32", "mlx", ["dtype=float32", "quantization=q8"]),
    ("mlx-q4-float32", "mlx", ["dtype=float32", "quantization=q4"]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="tiny-shortform")
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--quantized", action="store_true", help="also run q8 and q4 (on float32)")
    args = parser.parse_args()
    results = run_all(CONFIGURATIONS + (QUANTIZED if args.quantized else []), model=args.model, dataset=args.dataset, threads=args.threads,
                      limit=args.limit)
    base = results.get("openai-whisper")
    if not base or len(results) < 2:
        print("need openai-whisper and at least one mlx configuration")
        return 1
    print(f"\n{args.model} on {args.dataset}, {args.threads} thread(s) asked (MLX has no thread setting), one run")
    header = f"{'implementation':<16}{'WER %':>8}{'RTFx':>8}{'RTFx/ow':>9}{'peak MiB':>10}{'mem/ow':>8}{'load s':>8}"
    print(header)
    print("-" * len(header))
    for label, s in results.items():
        print(f"{label:<16}{s['wer']:>8.2f}{s['rtfx']:>8.2f}{ratio(s['rtfx'], base['rtfx']):>9.3f}"
              f"{s['peak_mb']:>10.0f}{ratio(s['peak_mb'], base['peak_mb']):>8.2f}{s['load_s']:>8.2f}")
    print("ow = openai-whisper")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
