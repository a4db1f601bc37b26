"""Speed and memory of the ``jax`` adapter (Flax Whisper, Whisper JAX's model) at batch 1 / 4 / 16
against openai-whisper and faster-whisper, on the same clips and weights, in one run.

Each configuration runs in its own process (``whisperbench run``), so peak RSS is its own. Printed:
WER, RTFx (Σ audio / Σ inference; load, warm-up and jit compilation excluded), its ratio to
openai-whisper, peak RSS and the compile time of the jit-compiled (batch, max length) programs (one
without and one with timestamps), which is part of load time and reported apart. A short-form batch runs until its
longest transcript
ends, and a partial last batch is filled up to the compiled batch size: both cost real compute.
``--bfloat16`` adds batch 16 in bfloat16 (the computation dtype Whisper JAX uses on TPUs and A100s).

    python benchmarks/jax.py [--dataset tiny-shortform] [--model tiny.en] [--threads 2] [--limit N] [--bfloat16]
"""

from __future__ import annotations

from common import benchmark_parser, print_ratio_table, ratio, run_all

CONFIGURATIONS = [
    ("openai-whisper", "openai-whisper", []),
    ("faster-whisper-fp32", "faster-whisper", ["compute_type=float32"]),
    ("jax-b1", "jax", ["batch_size=1"]),
    ("jax-b4", "jax", ["batch_size=4"]),
    ("jax-b16", "jax", ["batch_size=16"]),
]
BFLOAT16 = [("jax-b16-bf16", "jax", ["batch_size=16", "dtype=bfloat16"])]


def main() -> int:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--bfloat16", action="store_true", help="also run batch 16 in bfloat16")
    args = parser.parse_args()
    results = run_all(
        CONFIGURATIONS + (BFLOAT16 if args.bfloat16 else []),
        model=args.model,
        dataset=args.dataset,
        threads=args.threads,
        limit=args.limit,
    )
    base = results.get("openai-whisper")
    if not base or not any(label.startswith("jax") for label in results):
        print("need openai-whisper and at least one jax configuration")
        return 1
    print_ratio_table(
        f"{args.model} on {args.dataset}, {args.threads} thread(s), one run",
        results,
        extra=(("compile s", 11, lambda s: str(s.get("compile_s", "-"))),),
        note="ow = openai-whisper; load s includes compile s (jax); RTFx excludes both",
    )
    jax_runs = {label: s for label, s in results.items() if label.startswith("jax-b") and "bf16" not in label}
    if "jax-b1" in jax_runs:
        scaling = ", ".join(
            f"{label} {ratio(s['rtfx'], jax_runs['jax-b1']['rtfx']):.2f}x" for label, s in jax_runs.items()
        )
        print(f"batching, RTFx relative to jax-b1: {scaling}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
