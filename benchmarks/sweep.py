"""What a sweep costs beyond the inference it runs, from a finished sweep's own records (one sweep: one run).

For every finished variant, from its run.json and summary.json:

- Σinfer: the time spent in the implementation's transcribe calls (what RTFx is made of);
- in-run harness overhead: the inference loop's wall time minus Σinfer (audio decoding, scoring, fsync'd
  writes, the child-process hop of adapters that isolate themselves);
- model load and warm-up, timed apart in the run;
- outside the run: the variant's wall time in the sweep minus the run's loop, load and warm-up: the process
  spawns, the throwaway load that fills the conversion cache first (a conversion on a first sweep), the
  dataset check and the summary.

Printed per variant and in total, as percentages of Σinfer; the target is an in-run overhead within 2 %.

    python benchmarks/sweep.py runs/tradeoff_tiny.en_manifest.json [--runs-dir runs]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", help="the sweep's tradeoff_MODEL_DATASET.json")
    parser.add_argument("--runs-dir", help="where its runs are (default: the record's folder)")
    args = parser.parse_args(argv)
    record = _read(Path(args.record))
    runs = Path(args.runs_dir or Path(args.record).parent)
    totals = dict(infer=0.0, loop=0.0, load=0.0, outside=0.0, wall=0.0)
    print(f"{'variant':<32} {'Σinfer s':>9} {'in-run %':>9} {'load s':>7} {'outside s':>10} {'outside %':>10}")
    for entry in record["variants"]:
        if entry["status"] != "finished":
            print(f"{entry['label']:<32} {entry['status']}")
            continue
        info, summary = _read(runs / entry["run"] / "run.json"), _read(runs / entry["run"] / "summary.json")
        infer, loop = summary["infer_s"], summary.get("wall_s") or 0.0
        load = (info.get("load_s") or 0.0) + (info.get("warmup_s") or 0.0)
        resumed = entry["wall_s"] < loop  # run by an earlier sweep: its wall time here is not the run's
        outside = 0.0 if resumed else entry["wall_s"] - loop - load
        for key, value in (
            ("infer", infer),
            ("loop", loop),
            ("load", load),
            ("outside", outside),
            ("wall", entry["wall_s"]),
        ):
            totals[key] += value
        if resumed:
            print(
                f"{entry['label']:<32} {infer:>9.1f} {100 * (loop - infer) / infer:>9.2f} {load:>7.1f} "
                f"{'(resumed)':>10} {'':>10}"
            )
            continue
        print(
            f"{entry['label']:<32} {infer:>9.1f} {100 * (loop - infer) / infer:>9.2f} {load:>7.1f} {outside:>10.1f} "
            f"{100 * outside / infer:>10.1f}"
        )
    if totals["infer"]:
        print(
            f"\nall finished variants: Σinfer {totals['infer']:.0f} s, in-run harness overhead "
            f"{100 * (totals['loop'] - totals['infer']) / totals['infer']:.2f} % of Σinfer (target ≤ 2 %), load and "
            f"warm-up {totals['load']:.0f} s, outside the runs of this invocation {totals['outside']:.0f} s "
            f"({100 * totals['outside'] / totals['infer']:.1f} % of Σinfer), sweep wall {record['wall_s'] / 60:.1f} min"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
