"""``whisperbench export``: a run's per-example rows to a file, or runs to MLflow or W&B."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import WhisperbenchError
from ..redact import redact_text
from .common import add_runs_dir


def command(args) -> int:
    """``whisperbench export``: a run's per-example rows (CSV/JSON) or the run to MLflow or W&B."""
    from ..store import list_runs, open_run

    reference = open_run(args.reference, args.runs_dir) if args.reference else None
    if args.to:
        runs = list_runs(args.runs_dir) if args.all else [open_run(name, args.runs_dir) for name in args.run]
        if not runs:
            raise WhisperbenchError(f"export: no runs named, and none in {args.runs_dir}" if args.all else
                                    "export: name a run (or --all)")
        return _export_to_tracker(args, runs, reference)
    if args.all or len(args.run) != 1:
        raise WhisperbenchError("export --out writes one run: name exactly one (--all goes with --to)")
    run = open_run(args.run[0], args.runs_dir)
    from ..reports.export import example_frame

    frame = example_frame(run, reference)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".csv":
        frame.to_csv(out, index=False)
    elif out.suffix.lower() in (".jsonl", ".json"):
        frame.to_json(out, orient="records", lines=out.suffix.lower() == ".jsonl", force_ascii=False)
    else:
        raise WhisperbenchError(f"{out}: export to .csv, .jsonl or .json")
    print(f"wrote {len(frame)} examples to {out}", file=sys.stderr)
    return 0


#: experiment trackers: the module in reports/ that publishes (``<name>_export``) and its options from the CLI
_TRACKERS = {
    "mlflow": lambda a: {"tracking_uri": a.tracking_uri, "experiment": a.experiment},
    "wandb": lambda a: {"project": a.project, "entity": a.entity},
}


def _export_to_tracker(args, runs, reference) -> int:
    import importlib

    from ..reports.tracking import tracked_run

    module = importlib.import_module(f"whisperbench.reports.{args.to}_export")
    for run in runs:  # each publishes on its own: a failure names its run, those done stay done
        print(redact_text(module.publish(tracked_run(run, reference), **_TRACKERS[args.to](args))))
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench export`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("export", help="a run's per-example results as CSV/JSON lines, or the run to MLflow or W&B")
    p.add_argument("run", nargs="*", help="run name (under --runs-dir) or run folder; with --to, several")
    p.add_argument("--all", action="store_true", help="with --to: every run in --runs-dir (e.g. a whole sweep)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="FILE.csv, FILE.jsonl or FILE.json")
    where.add_argument("--to", choices=sorted(_TRACKERS),
                       help="an experiment tracker: params, metrics, the per-example table and the reports "
                            "(a re-export updates the same tracker run)")
    p.add_argument("--reference", help="join a reference run: its output, errors, the regression flag and QoI")
    add_runs_dir(p)
    p.add_argument("--tracking-uri", help="mlflow: tracking URI (default: MLFLOW_TRACKING_URI, else MLflow's)")
    p.add_argument("--experiment", help="mlflow: experiment name (default: whisperbench)")
    p.add_argument("--project", help="wandb: project (default: whisperbench); WANDB_MODE=offline works offline")
    p.add_argument("--entity", help="wandb: entity (team or user; default: yours)")
    p.set_defaults(func=command)
