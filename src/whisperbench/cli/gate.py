"""``whisperbench gate``: the release gate (``api.gate``); exit 0 pass, 1 regression, 2 cannot judge."""

from __future__ import annotations

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
        result = gate(reference, candidate, min_qoi=args.min_qoi, max_wer_increase=args.max_wer_increase,
                      min_coverage=args.min_coverage, max_failed_pct=args.max_failed_pct,
                      confidence=confidence_fraction(args.confidence),
                      min_qoi_per_language=args.min_qoi_per_language,
                      allow_self_comparison=args.allow_self_comparison, max_new_loops=args.max_new_loops,
                      max_new_bursts=args.max_new_bursts, max_nonspeech_output_rate=args.max_nonspeech_output_rate,
                      max_timing_error_ms=args.max_timing_error_ms,
                      non_inferiority_margin=args.non_inferiority_margin,
                      non_inferiority_qoi_margin=args.non_inferiority_qoi_margin, inconclusive=args.inconclusive,
                      repeats=args.repeat, runs_dir=args.runs_dir, **significance_args(args))
    except WhisperbenchError as exc:
        if args.junit:  # CI shows why it could not judge, not a missing report
            _write_junit(args.junit, cannot_judge_xml(str(exc)))
        print(f"gate: CANNOT JUDGE: {exc}", file=sys.stderr)
        return 2
    if args.junit:  # written before the verdict is printed: an unwritable path is an error, never a PASS
        _write_junit(args.junit, junit_xml(result))
    print(format_gate(result))
    return result.code


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
    p.add_argument("--min-qoi", type=finite, help="minimum QoI in percent (the gate needs it, --max-wer-increase or a "
                                                 "non-inferiority margin)")
    p.add_argument("--max-wer-increase", type=finite, help="maximum WER increase in points")
    p.add_argument("--min-qoi-per-language", type=finite, metavar="PCT",
                   help="also require this QoI within every labelled language (a release that holds English but "
                        "regresses German fails)")
    p.add_argument("--min-coverage", type=finite, default=100.0,
                   help="%% of reference examples the candidate must share (default 100)")
    p.add_argument("--max-failed-pct", type=finite, default=0.0,
                   help="%% of candidate examples allowed to fail before the gate refuses to judge (default 0)")
    p.add_argument("--confidence", type=finite, metavar="PCT",
                   help="fail only on significant regressions at this confidence (e.g. 95): bootstrap CIs")
    p.add_argument("--max-new-loops", type=whole, metavar="N",
                   help="fail when more than N examples loop (a phrase repeated ≥ 3 times over ≥ 5 words, beyond "
                        "the transcript) in the candidate but not in the reference")
    p.add_argument("--max-new-bursts", type=whole, metavar="N",
                   help="fail when more than N examples have a burst (≥ 5 consecutive inserted words) the reference "
                        "does not")
    p.add_argument("--max-nonspeech-output-rate", type=finite, metavar="PCT",
                   help="fail when the candidate writes text on more than PCT %% of the non-speech examples "
                        "(empty transcript; see `whisperbench perturb --nonspeech`)")
    p.add_argument("--max-timing-error-ms", type=finite, metavar="MS",
                   help="also fail when the candidate's median utterance-start error (dataset times), else its median "
                        "word-start difference from the reference run, exceeds MS")
    p.add_argument("--non-inferiority-margin", type=finite, metavar="POINTS",
                   help="non-inferiority: pass only if the upper bound of the WER increase's CI (--confidence, default "
                        "95) is below POINTS; verdict non-inferior, inconclusive (set too small) or regression shown")
    p.add_argument("--non-inferiority-qoi-margin", type=finite, metavar="POINTS",
                   help="non-inferiority on QoI: the upper bound of the QoI drop (%% of examples regressed) below POINTS")
    p.add_argument("--inconclusive", choices=("fail", "pass"), default="fail",
                   help="exit code of an inconclusive non-inferiority verdict: fail (1, default) or pass (0)")
    significance_options(p)
    p.add_argument("--repeat", action="append", metavar="RUN",
                   help="another run of the candidate's configuration (repeat --repeat for several): the verdict "
                        "must hold in each; the worst is reported (see `whisperbench noise`)")
    p.add_argument("--junit", help="write JUnit XML here")
    p.add_argument("--allow-self-comparison", action="store_true",
                   help="judge even when both sides are one run (same folder, run id or predictions); without it "
                        "that is refused (exit 2): a run compared with itself always passes")
    p.set_defaults(func=command)
