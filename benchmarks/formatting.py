"""Formatted text per implementation: the ``formatting`` metric (F-WER, WER_C, WER_PC, PER, casing, ITN examples,
over the examples whose transcript is formatted) and the formatting parity against a reference run (the share of
examples whose output differs from the reference implementation's in punctuation, casing or numbers only).

It reads finished runs (``whisperbench run`` made them: see docs/measuring.md for the commands), rescores each from
its raw output with today's code, compares each with the reference run of its model and dataset, and prints one
markdown table. Nothing is timed: the figures are a function of the stored outputs.

    python benchmarks/formatting.py RUNS_DIR --reference tiny.en=ow-tiny.en --reference base=ow-base [--out FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import whisperbench as wb


def _pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def row(run: Any, reference: Any | None) -> dict[str, str]:
    """One run's cells: its label, model, examples, WER, the formatting figures and, against ``reference`` (another
    run on the same dataset), the formatting parity."""
    summary = wb.rescore(run)
    fmt = summary.metrics.get("formatting") or {}
    parity = None
    if reference is not None and reference.store.path != run.store.path:
        parity = wb.compare(reference, run, significance=False).formatting_parity
    parity = parity or {}
    return {
        "run": run.name,
        "implementation": run.meta.label or run.meta.adapter,
        "model": str(run.meta.model),
        "examples": str(summary.num_examples),
        "WER %": _pct(summary.wer, 2),
        "formatted": str(fmt.get("examples", 0)),
        "F-WER %": _pct(fmt.get("f_wer"), 2),
        "WER_C %": _pct(fmt.get("wer_c"), 2),
        "WER_PC %": _pct(fmt.get("wer_pc"), 2),
        "PER %": _pct(fmt.get("per")),
        "casing %": _pct(fmt.get("casing_error_rate")),
        "ITN": str(fmt.get("itn_examples", "–")),
        "drift % (vs ref)": _pct(parity.get("drift_pct")) if parity else "reference" if reference else "–",
        "number drift": str(parity.get("number_drift_examples", "–")),
        "PER vs ref %": _pct(parity.get("per")) if parity else "–",
        "casing vs ref %": _pct(parity.get("casing_error_rate")) if parity else "–",
    }


def main(argv: list[str] | None = None) -> int:
    """Print (and with ``--out`` write) the table of every finished run in RUNS_DIR."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs_dir", type=Path)
    parser.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="MODEL=RUN",
        help="the reference run of a model (repeatable)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    references = dict(pair.split("=", 1) for pair in args.reference)
    runs = [run for run in wb.runs(args.runs_dir) if run.status == "finished"]
    rows = []
    for info in sorted(runs, key=lambda r: (str(r.model), r.dataset, r.name)):
        run = wb.load_run(info.name, args.runs_dir)
        ref_name = references.get(str(run.meta.model))
        reference = wb.load_run(ref_name, args.runs_dir) if ref_name else None
        if reference is not None and reference.dataset_hash != run.dataset_hash:
            reference = next(
                (
                    wb.load_run(r.name, args.runs_dir)
                    for r in runs
                    if r.adapter == reference.meta.adapter
                    and str(r.model) == str(run.meta.model)
                    and wb.load_run(r.name, args.runs_dir).dataset_hash == run.dataset_hash
                ),
                None,
            )
        rows.append(row(run, reference) | {"dataset": run.meta.dataset.name})
    columns = [
        "implementation",
        "model",
        "dataset",
        "examples",
        "WER %",
        "formatted",
        "F-WER %",
        "WER_C %",
        "WER_PC %",
        "PER %",
        "casing %",
        "ITN",
        "drift % (vs ref)",
        "number drift",
        "PER vs ref %",
        "casing vs ref %",
        "run",
    ]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(r[c] for c in columns) + " |" for r in rows]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
