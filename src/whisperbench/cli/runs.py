"""``whisperbench runs``: list a folder's runs, or remove some (``api.runs``, ``api.remove_runs``)."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import OptionError
from .common import add_runs_dir, print_json


def command(args) -> int:
    """``whisperbench runs`` / ``runs remove``: list the runs of a folder, or remove some."""
    from ..api import remove_runs, runs
    from ..reports.runs import human_size, render_runs

    if args.action == "list":
        if args.names:
            raise OptionError("runs: list takes no run names (did you mean `runs remove NAME…`?)")
        rows = runs(args.runs_dir)
        if args.json:
            print_json([row.to_json() for row in rows])
        else:
            print(render_runs(rows) if rows else f"no runs in {args.runs_dir}")
        return 0
    if not args.names:
        raise OptionError("runs remove: name the runs to remove (see `whisperbench runs`)")
    rows = runs(args.runs_dir, args.names)  # every name checked before anything is asked or removed
    print(render_runs(rows))
    size = human_size(sum(r.size_bytes for r in rows))
    if not args.yes and not sys.stdin.isatty():
        print("runs remove: no terminal to confirm on: nothing removed; add --yes to remove them", file=sys.stderr)
        return 2
    if not args.yes and not _confirm(f"remove these {len(rows)} run(s), {size}?"):
        print("nothing removed")
        return 1
    for path in remove_runs(args.names, args.runs_dir):
        print(f"removed {path}")
    return 0


def _confirm(question: str) -> bool:
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:  # no terminal to ask: no
        return False
    return answer.strip().lower() in ("y", "yes")


def register(sub: Any) -> None:
    """Add ``whisperbench runs`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser(
        "runs",
        help="list the runs in --runs-dir (status, coverage, model, size); `runs remove NAME…`",
        description="List runs: name, status (finished, incomplete, running, stopped, empty, "
        "unreadable), coverage, failed examples, model, implementation, dataset, date and "
        "size on disk. Example: whisperbench runs --runs-dir runs/demo; whisperbench runs "
        "remove old_run other_run --yes",
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=["list", "remove"],
        default="list",
        help="list (default) or remove the named runs (asks first; a run another process writes is never removed)",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="remove: run names (under --runs-dir) or run folders")
    add_runs_dir(p)
    p.add_argument("--yes", "-y", action="store_true", help="remove: do not ask for confirmation")
    p.add_argument("--json", action="store_true", help="list: print the rows as JSON")
    p.set_defaults(func=command)
