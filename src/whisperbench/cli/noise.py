"""``whisperbench noise``: run-to-run noise of repeated runs (``api.noise``)."""

from __future__ import annotations

from typing import Any

from .common import add_runs_dir, print_json


def command(args) -> int:
    """``whisperbench noise``: run-to-run noise of repeated runs of one configuration."""
    from ..api import noise
    from ..reports.noise import format_noise

    report = noise(args.run, args.runs_dir)
    print_json(report.to_dict()) if args.json else print(format_noise(report))
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench noise`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser(
        "noise",
        help="run-to-run noise of repeated runs of one configuration: identical outputs, "
        "WER spread, regressions between repeats; flags non-determinism",
    )
    p.add_argument("run", nargs="+", help="two or more runs of one configuration on one dataset (names or folders)")
    add_runs_dir(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=command)
