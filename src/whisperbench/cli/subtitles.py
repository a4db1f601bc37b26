"""``whisperbench subtitles``: SRT or WebVTT files of a run's stored segments (else its words)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import WhisperbenchError
from .common import add_runs_dir


def command(args) -> int:
    """``whisperbench subtitles``: SRT or WebVTT files of a run's segments, one per example."""
    from ..reports.timing import write_subtitles
    from ..store import open_run

    run = open_run(args.run, args.runs_dir)
    out = args.out or str(Path("subtitles") / run.name)
    written, untimed = write_subtitles(run, out, args.format)
    if not written:
        raise WhisperbenchError(
            f"run {run.name} stored no segment or word times: run it with --word-timestamps "
            "(short-form is decoded without timestamp tokens, so it stores no segments; "
            "long-form always does)"
        )
    print(
        f"wrote {len(written)} {args.format} file(s) to {out}"
        + (f"; {len(untimed)} example(s) without times: {', '.join(untimed[:5])}" if untimed else "")
    )
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench subtitles`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("subtitles", help="SRT or WebVTT subtitles (one file per example) of a run's stored segments")
    p.add_argument("run", help="run name (under --runs-dir) or run folder")
    p.add_argument("--format", choices=("srt", "vtt"), default="srt", help="subtitle format (default: srt)")
    p.add_argument("--out", help="folder to write <id>.srt / <id>.vtt into (default: subtitles/RUN)")
    add_runs_dir(p)
    p.set_defaults(func=command)
