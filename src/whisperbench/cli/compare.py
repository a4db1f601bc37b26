"""``whisperbench compare``: WER, QoI and paired tests of candidates against a reference (``api.compare_all``)."""

from __future__ import annotations

import math
import sys
from typing import Any

from ..reports.gate_thresholds import SPEED_BASES
from .common import (
    add_runs_dir,
    confidence_fraction,
    finite,
    print_json,
    significance_args,
    significance_options,
    whole,
)


def command(args) -> int:
    """``whisperbench compare``: WER, QoI and paired tests of candidates against a reference (table or JSON)."""
    from ..api import compare_all, load_run
    from ..reports import comparison_table

    reference = load_run(args.reference, args.runs_dir)
    comparisons = compare_all(
        reference,
        args.candidate,
        args.runs_dir,
        confidence=confidence_fraction(args.confidence),
        speed_basis=args.speed_basis,
        allow_different_machines=args.allow_different_machines,
        **significance_args(args),
    )
    if args.json:
        print_json(
            [
                dict(c.to_json(with_examples=args.examples is not None), hallucination=c.hallucination.to_json())
                for c in comparisons
            ]
        )
        return 0
    print(_fitted(comparison_table(comparisons), args.wide))
    _print_compare_notes(comparisons)
    _print_languages(reference, comparisons)
    if args.examples:
        _print_regressions(comparisons, args.examples)
    return 0


#: the widest table printed one row per candidate; a wider one is printed one row per figure (``--wide``: never)
MAX_WIDTH = 120


def _fitted(table, wide: bool) -> str:
    """The comparison table as markdown: one row per candidate when it fits :data:`MAX_WIDTH` columns (or with
    ``--wide``), else transposed (one row per figure, one column per candidate)."""
    cells = table.astype(object).map(_cell)  # mixed columns; a figure that does not apply shows "–", never "nan"
    text = cells.to_markdown(index=False, floatfmt=".2f")
    if wide or max(len(line) for line in text.splitlines()) <= MAX_WIDTH:
        return text
    vertical = cells.set_index("candidate").T
    vertical.index.name = "figure"
    return vertical.to_markdown()


def _cell(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.2f}" if isinstance(value, float) else value


def _print_languages(reference, comparisons) -> None:
    from ..reports.languages import language_frame, render_language_markdown

    runs = [reference] + [c.candidate for c in comparisons if c.candidate is not reference]
    text = render_language_markdown(language_frame(runs, {reference.dataset_hash: reference}), compact=True)
    if text:
        print("\n" + text.rstrip())


def _print_regressions(comparisons, n: int) -> None:
    import os

    from ..reports.terminal import render_regressions

    # NO_COLOR wins (no-color.org); FORCE_COLOR colours a pipe or a CI log that shows ANSI colours
    tty = sys.stdout.isatty() and os.environ.get("TERM") != "dumb"
    colour = not os.environ.get("NO_COLOR") and (tty or bool(os.environ.get("FORCE_COLOR")))
    for c in comparisons:
        print("\n" + render_regressions(c, n, colour=colour))


def _print_compare_notes(comparisons) -> None:
    for c in comparisons:
        for note in c.notes + [c.speed.line()]:
            print(f"  {c.candidate.name}: {note}")


def register(sub: Any) -> None:
    """Add ``whisperbench compare`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser(
        "compare",
        help="QoI and WER of candidate runs against a reference run, with paired tests "
        "(sign test, MAPSSWE, bootstrap interval of the WER difference)",
    )
    p.add_argument("--reference", required=True, help="run name (under --runs-dir) or run folder")
    p.add_argument(
        "--candidate",
        required=True,
        action="append",
        help="run compared with the reference (repeat --candidate for several)",
    )
    add_runs_dir(p)
    p.add_argument("--json", action="store_true", help="print the comparisons as JSON")
    p.add_argument(
        "--examples",
        nargs="?",
        type=whole,
        const=10,
        metavar="N",
        help="the N worst regressions (default 10) as an aligned, coloured word diff of the transcript, "
        "the reference run and the candidate; with --json: every example's comparison",
    )
    p.add_argument(
        "--confidence",
        type=finite,
        default=95.0,
        metavar="PCT",
        help="confidence of the bootstrap intervals (default %(default)g)",
    )
    p.add_argument(
        "--wide",
        action="store_true",
        help=f"one table row per candidate even when wider than {MAX_WIDTH} columns (else one row per figure)",
    )
    p.add_argument(
        "--speed-basis",
        choices=SPEED_BASES,
        default="wall",
        help="the per-example time the speed comparison pairs: wall time of the call, or the process's CPU time",
    )
    p.add_argument(
        "--allow-different-machines",
        action="store_true",
        help="compare speed even when the runs were made on different machines "
        "(CPU model, cores; a hypotheses file's device)",
    )
    significance_options(p)
    p.set_defaults(func=command)
