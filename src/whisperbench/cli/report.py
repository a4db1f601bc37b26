"""``whisperbench report``: the leaderboard of a folder of runs (``api.report``)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from ..reports.document import DOCUMENTS
from .common import add_runs_dir


def command(args) -> int:
    """``whisperbench report``: the leaderboard of the runs of a folder (markdown, HTML, CSV or a model card)."""
    from ..api import report

    board = report(
        args.runs_dir,
        out=args.out,
        format=args.format,
        references=args.reference,
        reference_adapter=args.reference_adapter,
        title=args.title,
    )
    for line in board.notes:
        print(line, file=sys.stderr)
    if board.text is not None and getattr(args, "log_level", logging.INFO) < logging.WARNING:  # -q: no markdown
        print(board.text)
    print(f"wrote {board.path}", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench report`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser(
        "report",
        help="leaderboard (markdown, HTML, CSV or a Hugging Face model-card section) of every run in --runs-dir",
    )
    add_runs_dir(p)
    p.add_argument(
        "--reference",
        action="append",
        help="reference run name (one per dataset; repeat for several); default: the references the "
        "demo recorded in --runs-dir, else --reference-adapter's plainest run",
    )
    p.add_argument(
        "--reference-adapter",
        default="openai-whisper",
        help="for datasets without a --reference, the run of this adapter (default openai-whisper)",
    )
    p.add_argument("--out", help="file to write (default: leaderboard.md, or .html/.csv with --format, in --runs-dir)")
    p.add_argument(
        "--format",
        choices=sorted(DOCUMENTS.names()),
        help="default: from --out's extension; hf: a model-card section (model-index metadata and a "
        "WER / QoI / size table per dataset) to paste into a Hugging Face README.md",
    )
    p.add_argument("--title", default="Whisper leaderboard", help="the leaderboard's heading")
    p.add_argument(  # the same -q/--quiet as every command's, before or after its name: no markdown printed either
        "-q",
        "--quiet",
        dest="log_level",
        action="store_const",
        const=logging.WARNING,
        default=argparse.SUPPRESS,
        help="do not print the markdown; log warnings and errors only",
    )
    p.set_defaults(func=command)
