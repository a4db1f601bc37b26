"""Speed and memory of mlx-whisper against openai-whisper on the same clips and weights, in one run.

Each configuration runs in its own process (``whisperbench run``), so peak RSS is its own. Printed:
WER, RTFx (Σ audio / Σ inference, load and warm-up excluded) and peak RSS, with their ratios to
openai-whisper. On Linux, mlx[cpu] does its matrix products in the reference BLAS its wheel bundles
(one thread, no SIMD kernels), so expect a small fraction of openai-whisper's speed; ``--blas openblas``
adds float32 on the system OpenBLAS (the adapter's ``blas`` option, ``threads`` threads). On Apple
silicon MLX runs on Metal and the rows compare what users there run.
``--quantized`` adds q8 and q4 on top of float32 (on the Linux CPU, quantized float16 is ~30x slower).

    python benchmarks/mlx.py [--dataset tiny-shortform] [--model tiny.en] [--threads 2] [--limit N]
                             [--quantized] [--blas openblas|PATH] [--skip-bundled]
"""

from __future__ import annotations

from common import benchmark_parser, print_ratio_table, run_all

REFERENCE = [("openai-whisper", "openai-whisper", [])]
BUNDLED_BLAS = [
    ("mlx-float32", "mlx", ["dtype=float32"]),
    ("mlx-float16", "mlx", ["dtype=float16"]),
]
QUANTIZED = [
    ("mlx-q8-float32", "mlx", ["dtype=float32", "quantization=q8"]),
    ("mlx-q4-float32", "mlx", ["dtype=float32", "quantization=q4"]),
]


def configurations(args) -> list[tuple[str, str, list[str]]]:
    mlx_rows = BUNDLED_BLAS + (QUANTIZED if args.quantized else [])
    chosen = REFERENCE + ([] if args.skip_bundled else mlx_rows)
    if args.blas:
        suffix = "openblas" if args.blas == "openblas" else "blas"
        chosen += [
            (f"{label}-{suffix}", adapter, [*options, f"blas={args.blas}"]) for label, adapter, options in mlx_rows
        ]
    return chosen


def main() -> int:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--quantized", action="store_true", help="also run q8 and q4 (on float32)")
    parser.add_argument("--blas", default="", help="also run on this BLAS: 'openblas' or a library path (Linux)")
    parser.add_argument("--skip-bundled", action="store_true", help="leave out the rows on the wheel's own BLAS")
    args = parser.parse_args()
    results = run_all(
        configurations(args), model=args.model, dataset=args.dataset, threads=args.threads, limit=args.limit
    )
    if "openai-whisper" not in results or len(results) < 2:
        print("need openai-whisper and at least one mlx configuration")
        return 1
    print_ratio_table(
        f"{args.model} on {args.dataset}, {args.threads} thread(s) (MLX uses them only on OpenBLAS; "
        "the bundled BLAS has one), one run",
        results,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
