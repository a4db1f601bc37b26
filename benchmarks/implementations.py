"""Speed and memory of each local implementation on the same clips and weights, in one run.

Each implementation runs in its own process (``whisperbench run``), so peak RSS is that
implementation's alone. Printed: RTFx (Σ audio / Σ inference, load and warm-up excluded), peak RSS,
both as ratios to openai-whisper, and the harness's own overhead (loop wall time minus inference
time, as % of the loop wall time; audio decoding, scoring and the fsync'd store write count as
overhead). Machines are noisy: compare the ratios of one run, not seconds across runs.

    python benchmarks/implementations.py [--dataset tiny-shortform] [--model tiny.en] [--threads 2]
"""

from __future__ import annotations

from common import benchmark_parser, print_ratio_table, run_all

IMPLEMENTATIONS = [
    ("openai-whisper", "openai-whisper", []),
    ("faster-whisper-fp32", "faster-whisper", ["compute_type=float32"]),
    ("faster-whisper-int8", "faster-whisper", ["compute_type=int8"]),
    ("transformers", "transformers", []),
]


def main() -> int:
    parser = benchmark_parser(__doc__)
    args = parser.parse_args()
    results = run_all(IMPLEMENTATIONS, model=args.model, dataset=args.dataset, threads=args.threads, limit=args.limit)
    if not results:
        print("no implementation ran")
        return 1
    print_ratio_table(
        f"{args.model} on {args.dataset}, {args.threads} thread(s), one run",
        results,
        extra=(("overhead %", 12, lambda s: f"{s['harness_overhead_pct']:.2f}"),),
        note="ow = openai-whisper; overhead target <= 2 %",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
