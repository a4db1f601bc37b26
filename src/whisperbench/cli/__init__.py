"""The ``whisperbench`` command line: one module per command, each a thin layer over :mod:`whisperbench.api`.

Each command's module has ``register(sub)``, which adds its parser and options, and ``command(args)``, which
calls the API and prints; the options several commands share are in :mod:`whisperbench.cli.common`. A new
command is one module here and its name in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Any, Optional

from .. import __version__
from ..errors import WhisperbenchError
from ..redact import redact_text

#: the commands, one module each, in the order ``--help`` lists them
COMMANDS = (
    "run",
    "score",
    "rescore",
    "compare",
    "report",
    "export",
    "gate",
    "plan",
    "noise",
    "perturb",
    "subtitles",
    "align",
    "sweep",
    "runs",
    "adapters",
    "models",
    "datasets",
    "demo",
)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: every command, its options and help (docs/usage.md lists them)."""
    parser = argparse.ArgumentParser(
        prog="whisperbench", description="WER and QoI across Whisper implementations, on the same weights."
    )
    parser.add_argument("--version", action="version", version=f"whisperbench {__version__}")
    level = parser.add_mutually_exclusive_group()
    level.add_argument(
        "-v",
        "--verbose",
        dest="log_level",
        action="store_const",
        const=logging.DEBUG,
        default=logging.INFO,
        help="log debug messages too (default: progress, warnings, errors)",
    )
    level.add_argument(
        "-q",
        "--quiet",
        dest="log_level",
        action="store_const",
        const=logging.WARNING,
        help="log warnings and errors only (no progress lines)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


class _StderrHandler(logging.StreamHandler):
    """Log lines to whatever ``sys.stderr`` is when a line is written (tests swap it); warnings say so."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return f"{record.levelname.lower()}: {text}" if record.levelno >= logging.WARNING else text


def _configure_logging(level: int) -> None:
    logger = logging.getLogger("whisperbench")
    logger.setLevel(level)
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        logger.addHandler(_StderrHandler())


def main(argv: Optional[list[str]] = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv``); the exit code (bad input: one line and 2)."""
    args = build_parser().parse_args(argv)
    _configure_logging(args.log_level)
    try:
        return args.func(args)
    except WhisperbenchError as exc:  # every message redacted: a URL the user gave may carry a password
        print(f"error: {redact_text(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a read-only folder, a full disk: one line and exit 2 ("cannot judge"), never 1
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"error: {redact_text(str(exc.strerror or exc))}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished examples are kept; run the same command again to resume", file=sys.stderr)
        return 130
