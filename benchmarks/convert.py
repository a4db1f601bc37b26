"""Conversion memory and speed: a synthetic transformers checkpoint (default 560 MB float32) converted
to every format, each in its own process; prints peak RSS as a ratio to the checkpoint's size and seconds
per GB (issue 22: users convert large-v3, 1.55 B parameters, on laptops; the target is a peak of at most
1.5x the checkpoint).

    python benchmarks/convert.py [--width 768 --layers 6] [--formats openai,ggml,mlx,ctranslate2]

The baseline row is a process that only imports what the conversion imports (torch, transformers,
numpy): the part of the peak that is not the weights.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import load_verdict  # noqa: E402  (benchmarks/common.py)

sys.path.remove(str(Path(__file__).resolve().parent))  # benchmarks/jax.py would shadow the jax package

CHILD = """
import json, sys, time
from pathlib import Path
import torch, transformers, numpy  # what every conversion imports: the baseline
fmt, model, out = sys.argv[1:4]
start = time.perf_counter()
if fmt != "baseline":
    from whisperbench.models.resolve import export_model
    export_model(model, fmt, Path(out))
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the parent that forked this process
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": hwm / 1024}))
"""


def synthetic_checkpoint(folder: Path, width: int, layers: int) -> Path:
    """A random-weight transformers Whisper folder (large-v3's 128 mels and 51,866 tokens)."""
    from whisperbench.models.convert import write_transformers
    from whisperbench.models.synthetic import random_checkpoint

    dims = {
        "n_mels": 128,
        "n_vocab": 51866,
        "n_audio_ctx": 1500,
        "n_audio_state": width,
        "n_audio_head": width // 64,
        "n_audio_layer": layers,
        "n_text_ctx": 448,
        "n_text_state": width,
        "n_text_head": width // 64,
        "n_text_layer": layers,
    }
    target = folder / "synthetic-hf"
    target.mkdir()
    write_transformers(random_checkpoint(dims), target)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--formats", default="openai,ggml,mlx,ctranslate2")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="whisperbench-convert-"))
    env = {**os.environ, "WHISPERBENCH_CACHE": str(work / "cache")}
    source = synthetic_checkpoint(work, args.width, args.layers)
    size_mb = (source / "model.safetensors").stat().st_size / 1e6
    print(f"checkpoint: {size_mb:.0f} MB float32 safetensors (width {args.width}, {args.layers}+{args.layers} layers)")
    print(f"{'target':<14}{'peak MB':>9}{'peak/ckpt':>11}{'above baseline/ckpt':>21}{'s/GB':>8}")
    baseline = None
    for fmt in ["baseline", *args.formats.split(",")]:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, fmt, str(source), str(work / f"out-{fmt}")],
            capture_output=True,
            text=True,
            env=env,
        )
        if proc.returncode:
            print(f"{fmt:<14} failed: {proc.stderr.strip().splitlines()[-1]}")
            continue
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        baseline = baseline if baseline is not None else result["peak_mb"]
        above = (result["peak_mb"] - baseline) / size_mb
        print(
            f"{fmt:<14}{result['peak_mb']:>9.0f}{result['peak_mb'] / size_mb:>11.2f}{above:>21.2f}"
            f"{result['seconds'] / (size_mb / 1000):>8.1f}"
        )
    print(load_verdict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
