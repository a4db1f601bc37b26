"""``whisperbench gate``: the release gate (``api.gate``); exit 0 pass, 1 regression, 2 cannot judge."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from ..errors import WhisperbenchError
from .common import add_runs_dir, confidence_fraction, finite, significance_args, significance_options, whole


def command(args) -> int:
    """``whisperbench gate``: the release gate; exit 0 pass, 1 regression, 2 cannot judge."""
    from ..api import gate, load_run
    from ..reports import format_gate, junit_xml
    from ..reports.gate import cannot_judge_xml

    try:
        reference = load_run(args.reference, args.runs_dir)
        candidate = load_run(args.candidate, args.runs_dir)
        result = gate(
            reference,
            candidate,
            thresholds=thresholds_of(args),
            repeats=args.repeat,
            runs_dir=args.runs_dir,
            **significance_args(args),
        )
    except WhisperbenchError as exc:
        if args.junit:  # CI shows why it could not judge, not a missing report
            _write_junit(args.junit, cannot_judge_xml(str(exc)))
        print(f"gate: CANNOT JUDGE: {exc}", file=sys.stderr)
        return 2
    if args.junit:  # written before the verdict is printed: an unwritable path is an error, never a PASS
        _write_junit(args.junit, junit_xml(result))
    print(format_gate(result))
    return result.code


def thresholds_of(args) -> Any:
    """The ``GateThresholds`` the flags give (``--confidence`` in %, the record's a fraction), checked."""
    from ..reports.gate_thresholds import GateThresholds

    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(GateThresholds)}
    values["confidence"] = confidence_fraction(values["confidence"])
    return GateThresholds.of(values)


def add_threshold_flags(p: Any) -> None:
    """One flag per ``GateThresholds`` field, its help and kind from the field (the one definition)."""
    from ..reports.gate_thresholds import GateThresholds, flag

    for f in dataclasses.fields(GateThresholds):
        meta = f.metadata
        kind, default = meta["kind"], f.default
        shown = f" (default {default:g}%%)" if isinstance(default, float) else ""
        kinds: dict[str, dict[str, Any]] = {
            "flag": {"action": "store_true"},
            "choice": {"choices": meta["choices"], "default": default},
            "metric": {"action": "append", "metavar": meta["metavar"]},
            "count": {"type": whole, "metavar": meta["metavar"]},
        }
        extra = kinds.get(kind, {"type": finite, "metavar": meta["metavar"], "default": default})
        p.add_argument(flag(f.name), help=meta["help"].replace("%", "%%") + shown, **extra)


def _write_junit(path: str, xml: str) -> None:
    try:
        Path(path).write_text(xml, encoding="utf-8")
    except OSError as exc:
        raise WhisperbenchError(f"cannot write the JUnit file {path}: {exc.strerror or exc}") from exc


def register(sub: Any) -> None:
    """Add ``whisperbench gate`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("gate", help="release gate: exit 0 pass, 1 regression, 2 cannot judge")
    p.add_argument("--reference", required=True, help="the run users get today (name under --runs-dir or folder)")
    p.add_argument("--candidate", required=True, help="the run to release (name under --runs-dir or folder)")
    add_runs_dir(p)
    add_threshold_flags(p)
    significance_options(p)
    p.add_argument(
        "--repeat",
        action="append",
        metavar="RUN",
        help="another run of the candidate's configuration (repeat --repeat for several): the verdict "
        "must hold in each; the worst is reported (see `whisperbench noise`); --max-slowdown is judged once on "
        "every repeat pooled",
    )
    p.add_argument("--junit", help="write JUnit XML here")
    p.set_defaults(func=command)
