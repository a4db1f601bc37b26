"""The ``whisperbench`` command line: one module per command, each a thin layer over :mod:`whisperbench.api`.

Each command's module has ``register(sub)``, which adds its parser and options, and ``command(args)``, which
calls the API and prints; the options several commands share are in :mod:`whisperbench.cli.common`. A new
command is one module here and its name in :data:`BUILTIN` (the order ``--help`` lists them in); another package
adds one through the entry-point group ``whisperbench.commands`` (:data:`COMMANDS`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import Any, NoReturn

from ..core.redact import redact_text
from ..core.registry import Registry
from ..errors import WhisperbenchError

#: the built-in commands, one module each, in the order ``--help`` lists them
BUILTIN = (
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


def _command_name(module: Any) -> str:
    return getattr(module, "NAME", module.__name__.rpartition(".")[2])


def _is_command(module: Any) -> bool:
    return callable(getattr(module, "register", None)) and callable(getattr(module, "command", None))


#: every command: the modules of :data:`BUILTIN`, then installed packages' (entry-point group
#: ``whisperbench.commands``, pointing at a module with ``register(sub)`` and ``command(args)``, named by its
#: ``NAME`` or its module name)
COMMANDS: Registry[Any] = Registry(
    "command",
    builtin=lambda: [importlib.import_module(f"{__name__}.{name}") for name in BUILTIN],
    kind=_is_command,
    group="whisperbench.commands",
    name_of=_command_name,
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command, its options and help (docs/usage.md lists them); with ``command``,
    the name of a built-in one, that command alone (the same parser for its arguments: no other command's module
    and no installed plug-in is imported, and a plug-in never takes a built-in name)."""
    parser = argparse.ArgumentParser(
        prog="whisperbench", description="WER and QoI across Whisper implementations, on the same weights."
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show program's version number and exit")
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
    modules = [importlib.import_module(f"{__name__}.{command}")] if command in BUILTIN else COMMANDS.items()
    for module in modules:
        module.register(sub)
    for command_parser in sub.choices.values():  # -q / -v after the command name too (`report … -q`)
        _add_log_level(command_parser)
    return parser


class _Version(argparse.Action):
    """``--version``: the installed version, read from the package metadata only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        import whisperbench

        print(f"whisperbench {whisperbench.__version__}")  # on stdout, as argparse's own version action
        parser.exit()


def _add_log_level(parser: argparse.ArgumentParser) -> None:
    """``-v`` and ``-q`` on a sub-command (where it does not use those letters itself), leaving the level
    given before the command name as it is when they are not given."""
    taken = parser._option_string_actions  # argparse keeps no public view of the flags a parser has
    group = parser.add_mutually_exclusive_group()
    for flags, level, what in (
        (("-v", "--verbose"), logging.DEBUG, "log debug messages too"),
        (("-q", "--quiet"), logging.WARNING, "log warnings and errors only (no progress lines)"),
    ):
        free = [f for f in flags if f not in taken]
        if free:
            group.add_argument(
                *free, dest="log_level", action="store_const", const=level, default=argparse.SUPPRESS, help=what
            )


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


def _closed_streams_to_devnull() -> None:
    """A command started with its stdout or stderr closed (``gate … >&-``, ``score … 2>&-``: Python then has no
    ``sys.stdout``/``sys.stderr``) writes that stream to the null device, which takes the closed descriptor (the
    lowest free one: no file opened later takes it, nor does a child inherit it closed): the command runs and
    exits with its own code (the gate's verdict), saying nothing there."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 (open for the process's life)


class _PipeSafe:
    """``sys.stdout`` that survives a closed pipe (``whisperbench gate … | head -3``): once the reader has gone,
    further output goes nowhere and the command still ends with its own exit code (the gate's verdict)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._silence()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._silence()

    def _silence(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())  # what is still buffered, and the interpreter's flush at exit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _builtin_named(argv: list[str]) -> str | None:
    """The built-in command ``argv`` names, where only log levels come before it (``--help`` and ``--version``
    there, or no command, take the whole parser).

    >>> _builtin_named(["-q", "gate", "--help"]), _builtin_named(["--help"]), _builtin_named(["no-such-command"])
    ('gate', None, None)
    """
    for arg in argv:
        if arg not in ("-v", "--verbose", "-q", "--quiet"):
            return arg if arg in BUILTIN else None
    return None


def entry() -> NoReturn:
    """The ``whisperbench`` command (and ``python -m whisperbench``): :func:`main` on ``sys.argv``, its code the
    process's exit status (the interpreter ends as usual: every exit handler and finalizer runs)."""
    raise SystemExit(main())


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv``); the exit code (bad input: one line and 2)."""
    if argv is None and not isinstance(sys.stdout, _PipeSafe):  # the real command line, not a caller's capture
        _closed_streams_to_devnull()
        sys.stdout = _PipeSafe(sys.stdout)
    args = build_parser(_builtin_named(sys.argv[1:] if argv is None else argv)).parse_args(argv)
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
