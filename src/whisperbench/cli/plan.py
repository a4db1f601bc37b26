"""``whisperbench plan``: power and size of a gate (``api.plan``)."""

from __future__ import annotations

from typing import Any

from .common import add_runs_dir, finite, print_json, whole


def command(args) -> int:
    """``whisperbench plan``: the smallest detectable WER increase and QoI drop, or the examples needed."""
    from ..api import plan
    from ..reports.gate import format_plan

    result = plan(
        args.reference,
        candidate=args.candidate,
        runs_dir=args.runs_dir,
        examples=args.examples,
        wer_increase=args.wer_increase,
        qoi_drop=args.qoi_drop,
        alpha=args.alpha,
        power=args.power / 100.0,
        baseline_regressed=args.baseline_regressed,
    )
    if args.json:
        print_json(result.to_dict())
        return 0
    print(format_plan(result, pointer=False))
    for asked, needed, what in (
        (result.wer_increase, result.examples_for_wer_increase, "a WER increase of {} points"),
        (result.qoi_drop, result.examples_for_qoi_drop, "a QoI drop of {} points"),
    ):
        if asked:
            print(
                f"examples needed to detect {what.format(f'{asked:g}')} at {result.power:.0%} power: {needed} "
                f"(spread from {result.basis}"
                + ("; --candidate measures it on a real candidate instead)" if not args.candidate else ")")
            )
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench plan`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser(
        "plan",
        help="power and size: the smallest WER increase and QoI drop a gate detects at 80 %% "
        "power, and the examples needed for a given one (docs/statistics.md)",
    )
    p.add_argument("--reference", required=True, help="the reference run: its per-example errors and words")
    p.add_argument(
        "--candidate",
        help="a candidate run (e.g. an earlier one): use the observed paired spread "
        "instead of the reference's Poisson noise",
    )
    add_runs_dir(p)
    p.add_argument("--examples", type=whole, metavar="N", help="plan for N examples (default: the reference's)")
    p.add_argument("--wer-increase", type=finite, metavar="POINTS", help="also: examples needed to detect this")
    p.add_argument("--qoi-drop", type=finite, metavar="POINTS", help="also: examples needed to detect this")
    p.add_argument("--alpha", type=finite, default=0.05, help="the test's level (default %(default)s)")
    p.add_argument("--power", type=finite, default=80.0, metavar="PCT", help="the power (default %(default)g)")
    p.add_argument(
        "--baseline-regressed",
        type=finite,
        default=0.0,
        metavar="PCT",
        help="%% of examples that regress between two runs of one configuration (default 0: deterministic)",
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=command)
