"""Speed and memory of each local implementation on the same clips and weights, in one run.

Each implementation runs in its own process (``whisperbench run``), so peak RSS is that
implementation's alone. Printed: RTFx (Σ audio / Σ inference, load and warm-up excluded), peak RSS,
both as ratios to openai-whisper, and the harness's own overhead (loop wall time minus inference
time, as % of the loop wall time; audio decoding, scoring and the fsync'd store write count as
overhead). Machines are noisy: compare the ratios of one run, not seconds across runs.

    python benchmarks/implementations.py [--dataset tiny-shortform] [--model tiny.en] [--threads 2]
"""

from __future__ import annotations

import argparse

from common import ratio, run_all

IMPLEMENTATIONS = [
    ("openai-whisper", "openai-whisper", []),
    ("faster-whisper-fp32", "faster-whisper", ["compute_type=float32"]),
    ("faster-whisper-int8", "faster-whisper", ["compute_type=int8"]),
    ("transformers", "transformers", []),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="tiny-shortform")
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    results = run_all(IMPLEMENTATIONS, model=args.model, dataset=args.dataset, threads=args.threads,
                      limit=args.limit)
    if not results:
        print("no implementation ran")
        return 1
    base = results.get("openai-whisper")
    print(f"\n{args.model} on {args.dataset}, {args.threads} thread(s), one run")
    header = f"{'implementation':<22}{'WER %':>8}{'RTFx':>8}{'RTFx/ow':>9}{'peak MiB':>10}{'mem/ow':>8}" \
             f"{'load s':>8}{'overhead %':>12}"
    print(header)
    print("-" * len(header))
    for label, s in results.items():
        speed = ratio(s["rtfx"], base and base["rtfx"])
        memory = ratio(s["peak_mb"], base and base["peak_mb"])
        print(f"{label:<22}{s['wer']:>8.2f}{s['rtfx']:>8.1f}{speed:>9.2f}{s['peak_mb']:>10.0f}{memory:>8.2f}"
              f"{s['load_s']:>8.2f}{s['harness_overhead_pct']:>12.2f}")
    print("ow = openai-whisper; overhead target <= 2 %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
