"""Word timing on every implementation that aligns words: the text with and without ``--word-timestamps`` (must be
equal), word starts against openai-whisper's (parity) and against forced-aligned transcript words (ground truth).

The short-form set is the shared one (../shared/data/shortform, 81 LibriSpeech utterances) unless ``--dataset``
says otherwise. Its transcripts' words are first aligned with ``whisperbench align`` (openai-whisper's DTW on the
transcript, checkpoint ``--align-model``; docs/timestamps.md says what such times are worth); each implementation
then runs twice in its own process, ``whisperbench run`` without and with ``--word-timestamps``, on that manifest.
MLX on this CPU takes about a minute a clip with word timing: it runs the first ``--mlx-limit`` clips only.

    python benchmarks/word_timing.py [--dataset MANIFEST] [--limit N] [--mlx-limit 6] [--threads 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import run_implementation

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("WHISPERBENCH_SHARED_DATA", REPO.parent / "shared" / "data")) / "shortform"

#: label, adapter, options, options of the run without word timing only: every implementation here that aligns
#: words. whisper.cpp's DTW runs without flash attention, so its text is compared with a run that has it off too;
#: the row "whisper-cpp flash-attention" (its default, on, without word timing) shows what that choice alone changes.
IMPLEMENTATIONS = [
    ("openai-whisper", "openai-whisper", [], []),
    ("faster-whisper", "faster-whisper", [], []),
    ("transformers", "transformers", [], []),
    ("whisper-cpp", "whisper-cpp", [], ["flash_attn=false"]),
    ("whisper-cpp flash-attention", "whisper-cpp", [], []),
    ("whisper-cpp-python", "whisper-cpp", ["backend=whisper-cpp-python"], []),
    ("mlx", "mlx", [], []),
]


def _predictions(runs_dir: str, name: str) -> list:
    from whisperbench.store.runs import open_run

    return open_run(name, runs_dir).predictions


def _row(label: str, name: str, runs_dir: str, off: dict, on: dict, reference: list | None) -> str:
    from whisperbench.scoring.timing import parity

    plain, timed = _predictions(runs_dir, f"{name}-off"), _predictions(runs_dir, f"{name}-on")
    same = sum(a.hypothesis == b.hypothesis for a, b in zip(plain, timed))
    timing = on.get("timing") or {}
    truth = timing.get("word_start_error_ms") or {}
    refused = (timing.get("refused") or {}).get("examples", 0)
    against = parity(reference, timed, on["normalizer"]) if reference is not None else None
    parity_cell = (
        f"{against['median_ms']:.0f} / {against['p90_ms']:.0f} / {against['within_tolerance']:.1f}"
        if against
        else "(reference)"
        if reference is None
        else "–"
    )
    truth_cell = f"{truth['median']:.0f} / {truth['p90']:.0f} / {truth['within_100ms']:.1f}" if truth else "–"
    return (
        f"| {label} | {len(timed)} | {off['wer']:.2f} | {on['wer']:.2f} | {same} of {len(timed)} | {refused} | "
        f"{truth_cell} | {parity_cell} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default=str(SHARED / "manifest.jsonl"))
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--align-model", default="base")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--mlx-limit", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--keep", help="runs folder to keep (default: a temporary one)")
    parser.add_argument(
        "--only",
        help="comma-separated labels of IMPLEMENTATIONS to run (openai-whisper, the "
        "parity reference, always runs first; a kept run is resumed, not redone)",
    )
    args = parser.parse_args()
    runs_dir = args.keep or tempfile.mkdtemp(prefix="whisperbench-word-timing-")
    Path(runs_dir).mkdir(parents=True, exist_ok=True)
    words = str(Path(runs_dir) / "words.jsonl")
    if not Path(words).exists():
        command = [
            sys.executable,
            "-m",
            "whisperbench",
            "align",
            "--dataset",
            args.dataset,
            "--out",
            words,
            "--model",
            args.align_model,
        ] + (["--limit", str(args.limit)] if args.limit else [])
        subprocess.run(command, check=True)
    print(
        f"| implementation | clips | WER % without | WER % with | same text | times refused | word start vs "
        f"forced alignment ({args.align_model}) ms: median / p90 / % ≤ 100 ms | vs openai-whisper ms: median / "
        "p90 / % ≤ 100 ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    reference = None
    chosen = set(args.only.split(",")) | {"openai-whisper"} if args.only else None
    for label, adapter, options, off_only in IMPLEMENTATIONS:
        if chosen is not None and label not in chosen:
            continue
        limit = args.mlx_limit if adapter == "mlx" else args.limit
        common = dict(model=args.model, dataset=words, threads=args.threads, runs_dir=runs_dir, limit=limit)
        name = label.replace(", ", "-").replace(" ", "-")
        off = run_implementation(f"{name}-off", adapter, options + off_only, **common)
        on = run_implementation(f"{name}-on", adapter, options, **common, args=("--word-timestamps",))
        if off is None or on is None:
            continue
        print(_row(label, name, runs_dir, off, on, reference), flush=True)
        if reference is None:
            reference = _predictions(runs_dir, f"{name}-on")
    print(f"\nruns: {runs_dir}" + ("" if args.keep else " (temporary)"))


if __name__ == "__main__":
    main()
