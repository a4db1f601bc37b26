"""``whisperbench score``: hypotheses made elsewhere stored and scored as a run (``harness.request.score_request``)."""

from __future__ import annotations

from typing import Any

from .common import add_run_args, columns, execute, metric_options


def command(args) -> int:
    """``whisperbench score``: store given hypotheses as a run and score them (its request made and executed)."""
    from ..harness.request import score_request

    request = score_request(
        args.hypotheses,
        args.dataset,
        runs_dir=args.runs_dir,
        name=args.name,
        limit=args.limit,
        skip_invalid=args.skip_invalid,
        normalizer=args.normalizer,
        form=args.form,
        dataset_name=args.dataset_name,
        columns=columns(args),
        keywords=args.keywords,
        overwrite=args.overwrite,
        label=args.label,
        scoring_workers=args.scoring_workers,
        metric_options=metric_options(args),
    )
    return execute(request, args.json)


def register(sub: Any) -> None:
    """Add ``whisperbench score`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("score", help="turn a hypotheses file (id, hypothesis) made elsewhere into a run")
    p.add_argument(
        "--dataset",
        required=True,
        help="the dataset the hypotheses were made on: manifest, audio folder, bundled name or hf:...",
    )
    p.add_argument("--hypotheses", required=True, help="JSONL with id and hypothesis per line")
    add_run_args(p)
    p.set_defaults(func=command)
