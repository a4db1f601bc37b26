"""Long-form strategies on one long file, in one run: native vs harness sequential vs chunked (batch 1 / N).

The file is the shared long-form set (../shared/data/longform) concatenated, repeated up to
``--minutes`` (default 10), with the concatenated human transcripts as its reference. Each
configuration runs in its own process (``whisperbench run``), so its peak RSS is its own. Printed:
WER, RTFx, the speed-up of chunked batch N over chunked batch 1 (the same windows, the same decode:
only batching differs) and over the implementation's native long-form algorithm, and peak RSS.
``--memory 2,10,60`` also runs the chunked strategy on files of those many minutes and prints peak
RSS against duration (the harness streams windows; the native algorithms hold the whole audio).

    python benchmarks/longform.py [--adapter openai-whisper] [--minutes 10] [--batch 8,16] [--threads 2]
                                  [--memory 2,10,60]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf
from common import load_verdict, ratio, run_implementation

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("WHISPERBENCH_SHARED_DATA", REPO.parent / "shared" / "data")) / "longform"
SAMPLE_RATE = 16_000


def build_long_file(folder: Path, minutes: float) -> Path:
    """A manifest with one file of at least ``minutes`` built from the shared long-form set."""
    import sys

    sys.path.insert(0, str(REPO / "src"))
    from whisperbench.datasets.audio import load_audio

    rows = [json.loads(line) for line in (SHARED / "manifest.jsonl").read_text().splitlines() if line.strip()]
    audio_path = folder / f"long_{minutes:g}min.flac"
    texts, total = [], 0
    with sf.SoundFile(audio_path, "w", SAMPLE_RATE, 1, format="FLAC", subtype="PCM_16") as out:
        while total < minutes * 60 * SAMPLE_RATE:
            for row in rows:
                samples = load_audio(str(SHARED / row["audio"]))
                out.write(np.clip(samples, -1, 1))
                texts.append(row["text"])
                total += len(samples)
                if total >= minutes * 60 * SAMPLE_RATE:
                    break
    manifest = folder / f"long_{minutes:g}min.jsonl"
    manifest.write_text(
        json.dumps({"id": f"long-{minutes:g}min", "audio": audio_path.name, "text": " ".join(texts)}) + "\n"
    )
    return manifest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--adapter", default="openai-whisper", help="an adapter with batch_size (openai-whisper, transformers, jax)"
    )
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--batch", default="8", help="comma-separated chunked batch sizes besides 1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--memory", help="comma-separated minutes: peak RSS of chunked vs duration")
    args = parser.parse_args()
    if not (SHARED / "manifest.jsonl").exists():
        print(f"shared long-form data not found at {SHARED} (set WHISPERBENCH_SHARED_DATA)")
        return 1
    batches = [int(b) for b in args.batch.split(",") if b.strip()]
    configurations = [
        ("native", []),
        ("sequential", ["--long-form", "sequential"]),
        ("chunked-b1", ["--long-form", "chunked"]),
    ] + [(f"chunked-b{b}", ["--long-form", "chunked", "-o", f"batch_size={b}"]) for b in batches]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        manifest = build_long_file(folder, args.minutes)
        results = {}
        for label, extra in configurations:
            summary = run_implementation(
                label,
                args.adapter,
                [],
                model=args.model,
                dataset=str(manifest),
                threads=args.threads,
                runs_dir=str(folder / "runs"),
                args=tuple(extra),
            )
            if summary:
                results[label] = summary
        audio_min = next(iter(results.values()))["audio_s"] / 60 if results else 0
        print(f"\n{args.adapter} {args.model}, one {audio_min:.1f} min file, {args.threads} threads, one run")
        header = f"{'strategy':<14}{'WER %':>8}{'RTFx':>8}{'x chunked-b1':>14}{'x native':>10}{'peak MiB':>10}"
        print(header + "\n" + "-" * len(header))
        base, native = results.get("chunked-b1", {}), results.get("native", {})
        for label, s in results.items():
            print(
                f"{label:<14}{s['wer']:>8.2f}{s['rtfx']:>8.2f}{ratio(s['rtfx'], base.get('rtfx')):>14.2f}"
                f"{ratio(s['rtfx'], native.get('rtfx')):>10.2f}{s['peak_mb']:>10.0f}"
            )
        if args.memory:
            print(
                f"\npeak RSS against duration ({args.adapter}, chunked batch {batches[-1] if batches else 1} vs native)"
            )
            print(f"{'minutes':>8}{'chunked MiB':>13}{'native MiB':>12}")
            for minutes in (float(m) for m in args.memory.split(",")):
                long_manifest = build_long_file(folder, minutes)
                row = []
                for label, extra in [
                    ("chunked", ["--long-form", "chunked", "-o", f"batch_size={batches[-1] if batches else 1}"]),
                    ("native", []),
                ]:
                    summary = run_implementation(
                        f"mem-{minutes:g}-{label}",
                        args.adapter,
                        [],
                        model=args.model,
                        dataset=str(long_manifest),
                        threads=args.threads,
                        runs_dir=str(folder / "runs"),
                        args=tuple(extra),
                    )
                    row.append(summary["peak_mb"] if summary else float("nan"))
                print(f"{minutes:>8g}{row[0]:>13.0f}{row[1]:>12.0f}")
    return 0


if __name__ == "__main__":
    code = main()
    print(load_verdict())
    raise SystemExit(code)
