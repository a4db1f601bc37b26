"""``whisperbench export``: a run's per-example rows to a file, or runs to MLflow or W&B."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import WhisperbenchError
from .common import add_runs_dir


def command(args) -> int:
    """``whisperbench export``: a run's per-example rows (CSV/JSON; ``api.export``) or runs to MLflow or W&B
    (``api.publish``)."""
    from ..api import export, load_run, publish
    from ..store.runs import list_runs

    reference = load_run(args.reference, args.runs_dir) if args.reference else None
    if args.to:
        runs = list_runs(args.runs_dir) if args.all else [load_run(name, args.runs_dir) for name in args.run]
        if not runs:
            raise WhisperbenchError(
                f"export: no runs named, and none in {args.runs_dir}" if args.all else "export: name a run (or --all)"
            )
        for run in runs:  # each publishes on its own: a failure names its run, those done stay done
            print(publish(run, args.to, reference=reference, **_options(args)))
        return 0
    if args.all or len(args.run) != 1:
        raise WhisperbenchError("export --out writes one run: name exactly one (--all goes with --to)")
    frame = export(args.run[0], args.out, reference=reference, runs_dir=args.runs_dir)
    print(f"wrote {len(frame)} examples to {args.out}", file=sys.stderr)
    return 0


def _options(args) -> dict[str, Any]:
    """The options ``--to``'s tracker takes, from the flags of the same names (an unset flag: its default)."""
    from ..reports.trackers import TRACKERS

    return {name: getattr(args, name, None) for name in TRACKERS.get(args.to).options}


def register(sub: Any) -> None:
    """Add ``whisperbench export`` and its options to the sub-command parsers ``sub``."""
    from ..reports.trackers import TRACKERS

    p = sub.add_parser("export", help="a run's per-example results as CSV/JSON lines, or the run to MLflow or W&B")
    p.add_argument("run", nargs="*", help="run name (under --runs-dir) or run folder; with --to, several")
    p.add_argument("--all", action="store_true", help="with --to: every run in --runs-dir (e.g. a whole sweep)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="FILE.csv, FILE.jsonl or FILE.json")
    where.add_argument(
        "--to",
        choices=TRACKERS.names(),
        help="an experiment tracker: params, metrics, the per-example table and the reports "
        "(a re-export updates the same tracker run)",
    )
    p.add_argument("--reference", help="join a reference run: its output, errors, the regression flag and QoI")
    add_runs_dir(p)
    p.add_argument("--tracking-uri", help="mlflow: tracking URI (default: MLFLOW_TRACKING_URI, else MLflow's)")
    p.add_argument("--experiment", help="mlflow: experiment name (default: whisperbench)")
    p.add_argument("--project", help="wandb: project (default: whisperbench); WANDB_MODE=offline works offline")
    p.add_argument("--entity", help="wandb: entity (team or user; default: yours)")
    p.set_defaults(func=command)
