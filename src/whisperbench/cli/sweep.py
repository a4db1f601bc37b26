"""``whisperbench sweep``: every compressed variant of a model, and the quality-against-size table."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .common import add_column_args, add_runs_dir, columns, finite, fmt, names, pct, print_json, whole


def command(args) -> int:
    """``whisperbench sweep``: every compressed variant of a model against one reference (``api.sweep``), and the
    size table."""
    from ..api import sweep
    from ..core.ranges import GATE_LIMITS, check_limits

    # the verdict's limits checked before the first variant runs (not after all of them)
    check_limits({"min_qoi": args.min_qoi, "max_wer_increase": args.max_wer_increase}, GATE_LIMITS)

    def report_entry(entry, number: int, total: int) -> None:
        summary = entry.summary
        result = (
            f"WER {pct(summary.wer)}, {fmt(summary.model_size_mb, 1)} MB"
            if summary is not None and entry.status == "finished"
            else f"{entry.status}: {entry.error}"
        )
        took = f" ({entry.wall_s:.0f} s)" if entry.wall_s is not None else ""
        print(f"[{number}/{total}] {entry.variant.label}: {result}{took}", file=sys.stderr, flush=True)

    result = sweep(
        args.model,
        args.dataset,
        implementations=names(args.implementations),
        variants=names(args.variants),
        reference=args.reference,
        runs_dir=args.runs_dir,
        options=args.option or [],
        parallel=args.parallel,
        columns=columns(args),
        report=report_entry,
        limit=args.limit,
        timeout_s=args.timeout_s,
    )
    if result.reference is None:
        first = result.entries[0]
        print(f"error: the reference ({first.variant.label}) did not run: {first.error}", file=sys.stderr)
        return 2
    return _sweep_report(args, result.entries, result.reference, result.wall_s, result.dataset)


def _sweep_report(args, entries, reference_name: str, wall_s: float, dataset_name: str) -> int:
    from ..core.json_files import write_json_atomic
    from ..reports.leaderboard import ci_columns
    from ..reports.tradeoff import (
        render_tradeoff_html,
        render_tradeoff_markdown,
        tradeoff_frame,
    )
    from ..store.runs import open_run

    reference = open_run(reference_name, args.runs_dir)
    runs = [open_run(e.run, args.runs_dir) for e in entries if e.status == "finished"]
    not_run = [e.to_dict() for e in entries if e.status != "finished"]
    frame = tradeoff_frame(runs, reference, args.min_qoi, args.max_wer_increase)
    title = f"{args.model} on {dataset_name}: quality against size (reference {reference.meta.label})"
    markdown = render_tradeoff_markdown(frame, not_run, title, args.min_qoi)
    markdown += f"\nOne sweep command, {len(entries)} variants, {wall_s / 60:.1f} min wall time.\n"
    stem = Path(args.runs_dir) / f"tradeoff_{Path(args.model).name}_{dataset_name}"
    out = Path(args.out or f"{stem}.md")
    out.write_text(markdown, encoding="utf-8")
    html_out = Path(args.html or f"{stem}.html")
    html_out.write_text(render_tradeoff_html(frame, not_run, title, args.min_qoi), encoding="utf-8")
    write_json_atomic(
        Path(f"{stem}.json"),
        {"reference": reference_name, "wall_s": wall_s, "variants": [e.to_dict() for e in entries]},
    )
    if args.json:
        print_json(
            {
                "reference": reference_name,
                "wall_s": wall_s,
                "variants": [e.to_dict() for e in entries],
                "table": json.loads(frame.drop(columns=ci_columns(frame)).to_json(orient="records")),
            }
        )
    else:
        print(markdown)
    print(f"wrote {out}, {html_out} and {stem}.json", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench sweep`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("sweep", help="run every compressed variant of a model; a quality-against-size table")
    p.add_argument("--model", required=True, help="see `whisperbench models`")
    p.add_argument("--dataset", required=True, help="manifest, folder, bundled name or hf:NAME[:CONFIG]:SPLIT")
    p.add_argument(
        "--implementations",
        metavar="ADAPTER,...",
        help="adapters whose variants to run (default: faster-whisper, whisper-cpp, mlx, jax, ane-pytorch, "
        "transformers); `whisperbench adapters NAME` lists an adapter's variants",
    )
    p.add_argument(
        "--variants",
        metavar="NAME,...",
        help="only these variants (a name such as int8 or q5_0, or a label such as whisper-cpp-q5_0)",
    )
    p.add_argument(
        "--reference", help="an existing run to compare against (default: openai-whisper on the same model, run first)"
    )
    add_runs_dir(p)
    p.add_argument("--limit", type=whole, help="only the first N examples")
    p.add_argument(
        "--option",
        "-o",
        action="append",
        metavar="KEY=VALUE",
        help="decoding option for every variant (threads, language, …); repeat -o for several",
    )
    p.add_argument("--timeout-s", type=finite, help="per-call limit in seconds (see `run --timeout-s`)")
    p.add_argument(
        "--parallel",
        "--jobs",
        type=whole,
        default=1,
        metavar="N",
        help="run up to N variants at once, each in its own process, with threads per variant lowered so "
        "that N x threads <= cores (default 1: one after another; the same runs and scores)",
    )
    p.add_argument("--min-qoi", type=finite, help="also give each variant the release gate's verdict at this QoI")
    p.add_argument("--max-wer-increase", type=finite, help="with --min-qoi: the gate's maximum WER increase in points")
    p.add_argument("--out", help="markdown table (default: tradeoff_MODEL_DATASET.md in --runs-dir)")
    p.add_argument("--html", help="HTML page with the plots (default: tradeoff_MODEL_DATASET.html in --runs-dir)")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    add_column_args(p)
    p.set_defaults(func=command)
