"""The speed gate measured for real: the same configuration run three times (no slowdown may be shown between
repeats) and known changes that must be detected — threads 2 → 1 and beam 1 → 5 for faster-whisper, float32 →
int8 for faster-whisper, q5_0 → f16 for whisper.cpp — each a fresh `whisperbench run` on the same set, then
`whisperbench gate --max-slowdown 10` on wall time and on CPU time (whisper.cpp computes in a worker process: wall
time only). Prints, per pair, the slowdown with its interval and the verdict, and the load the machine ran under.

    python benchmarks/speed_gate.py [--dataset ../shared/data/shortform] [--model tiny.en] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_verdict, run_implementation  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "shortform"
FW = "faster-whisper"
#: label -> (adapter, options, threads)
CONFIGURATIONS = {
    "fw-a": (FW, ["compute_type=int8"], 2),
    "fw-b": (FW, ["compute_type=int8"], 2),
    "fw-c": (FW, ["compute_type=int8"], 2),
    "fw-1-thread": (FW, ["compute_type=int8"], 1),
    "fw-beam5": (FW, ["compute_type=int8", "beam_size=5"], 2),
    "fw-float32": (FW, ["compute_type=float32"], 2),
    "wc-q5_0": ("whisper-cpp", ["quantization=q5_0"], 2),
    "wc-f16": ("whisper-cpp", ["quantization=f16"], 2),
}
#: (reference, candidate, what the gate must say: "no slowdown" or "slower")
PAIRS = [
    ("fw-a", "fw-b", "no slowdown"),
    ("fw-a", "fw-c", "no slowdown"),
    ("fw-b", "fw-c", "no slowdown"),
    ("fw-a", "fw-1-thread", "slower"),
    ("fw-a", "fw-beam5", "slower"),
    ("fw-a", "fw-float32", "slower"),
    ("wc-q5_0", "wc-f16", "either"),
]


def gate(reference: str, candidate: str, runs_dir: str, basis: str) -> dict:
    """``whisperbench gate --max-slowdown 10`` on ``basis``: exit code and the speed check's line."""
    cmd = [sys.executable, "-m", "whisperbench", "gate", "--reference", reference, "--candidate", candidate]
    cmd += ["--runs-dir", runs_dir, "--max-slowdown", "10", "--speed-basis", basis, "--min-coverage", "0"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    line = next((x.strip() for x in proc.stdout.splitlines() if "] speed:" in x), proc.stderr.strip()[-200:])
    return {"code": proc.returncode, "line": line}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default=str(SHARED) if SHARED.exists() else "tiny-shortform")
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as runs_dir:
        ran = {}
        for label, (adapter, options, threads) in CONFIGURATIONS.items():
            summary = run_implementation(
                label,
                adapter,
                options,
                model=args.model,
                dataset=args.dataset,
                threads=threads,
                runs_dir=runs_dir,
                limit=args.limit,
            )
            if summary:
                ran[label] = summary
                print(f"{label:12s} RTFx {summary['rtfx']:6.2f}  WER {summary['wer']:6.2f} %", flush=True)
        print(f"\n{args.model} on {args.dataset}: gate --max-slowdown 10 (exit 0 pass, 1 regression, 2 cannot judge)")
        for reference, candidate, expected in PAIRS:
            if reference not in ran or candidate not in ran:
                continue
            for basis in ("wall", "cpu"):
                result = gate(reference, candidate, runs_dir, basis)
                print(f"  {reference} -> {candidate} [{basis}; expected: {expected}] exit {result['code']}: "
                      f"{result['line']}")  # fmt: skip
        info = {label: json.loads((Path(runs_dir) / label / "run.json").read_text()) for label in ran}
        busy = [label for label, i in info.items() if (i.get("machine_load") or {}).get("busy")]
        print(f"runs timed on a busy machine: {', '.join(busy) or 'none'}")
    print(load_verdict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
