"""``whisperbench rescore``: a run's summary recomputed from its stored raw outputs."""

from __future__ import annotations

from typing import Any

from ..scoring.normalize import normalizer_names
from .common import add_runs_dir, add_threshold_arg, metric_options, pct, print_json


def command(args) -> int:
    """``whisperbench rescore``: recompute a run's summary from its stored raw outputs."""
    from ..api import load_run, rescore

    run = load_run(args.run, args.runs_dir)
    summary = rescore(run, normalizer=args.normalizer, thresholds=metric_options(args) or None)
    print_json(summary.to_dict()) if args.json else print(
        f"run {run.name}: WER {pct(summary.wer)} with normalizer {summary.normalizer}"
    )
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench rescore`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("rescore", help="recompute a run's summary from its stored raw predictions")
    p.add_argument("run", help="run name (under --runs-dir) or run folder")
    add_runs_dir(p)
    p.add_argument(
        "--normalizer",
        choices=normalizer_names(),
        help="score with this normalizer instead of the run's own (recorded in summary.json)",
    )
    add_threshold_arg(p)
    p.add_argument("--json", action="store_true", help="print the new summary as JSON")
    p.set_defaults(func=command)
