"""``whisperbench subtitles``: SRT or WebVTT files of a run's stored segments (else its words)."""

from __future__ import annotations

from typing import Any

from .common import add_runs_dir


def command(args) -> int:
    """``whisperbench subtitles``: SRT or WebVTT files of a run's segments, one per example."""
    from ..api import subtitles

    done = subtitles(args.run, args.out, format=args.format, runs_dir=args.runs_dir)
    print(
        f"wrote {len(done.written)} {args.format} file(s) to {done.folder}"
        + (f"; {len(done.untimed)} example(s) without times: {', '.join(done.untimed[:5])}" if done.untimed else "")
    )
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench subtitles`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("subtitles", help="SRT or WebVTT subtitles (one file per example) of a run's stored segments")
    p.add_argument("run", help="run name (under --runs-dir) or run folder")
    from ..reports.subtitles import SUBTITLE_FORMATS

    p.add_argument(
        "--format", choices=SUBTITLE_FORMATS.names(), default="srt", help="subtitle format (default: %(default)s)"
    )
    p.add_argument("--out", help="folder to write <id>.srt / <id>.vtt into (default: subtitles/RUN)")
    add_runs_dir(p)
    p.set_defaults(func=command)
