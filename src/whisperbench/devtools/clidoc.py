"""docs/cli.md, the command-line reference, generated from the parser so that it cannot drift from it.

``python -m whisperbench.devtools.clidoc`` prints the page; ``--write`` writes docs/cli.md; ``--check`` exits 1
when the file differs (the test suite compares too). The page is rendered from the parser's actions
(names, values, choices, defaults, help), not from argparse's ``--help`` text, whose layout changes with
the Python version and the terminal's width.

>>> import argparse
>>> p = argparse.ArgumentParser(prog="x", description="Does x.")
>>> _ = p.add_argument("--limit", type=int, metavar="N", help="at most N examples (default %(default)s)", default=3)
>>> print(option_row(p._actions[1]))
| `--limit N` | at most N examples (default 3) |
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "cli.md"

_HEADER = """# Command-line reference

[README](../README.md) · [usage](usage.md) · [python](python.md)

Every command and every option of `whisperbench`, generated from the parser itself
(`python -m whisperbench.devtools.clidoc --write`; a test fails when this page and the parser differ).
[usage.md](usage.md) shows the commands together and how they are used; `whisperbench CMD --help` says the same
as this page.
"""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _value(action: argparse.Action) -> str:
    """What the option takes, as ``--help`` writes it: nothing for a flag, ``{a,b}`` for choices, the metavar."""
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        name = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    elif action.choices is not None:
        name = "{" + ",".join(map(str, action.choices)) + "}"
    else:
        name = action.dest.upper() if action.option_strings else action.dest
    if action.nargs in ("*", "+"):
        return f"{name} ..." if action.nargs == "+" else f"[{name} ...]"
    return f"[{name}]" if action.nargs == "?" else name


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%" in text:
        params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
        if isinstance(params.get("choices"), (list, tuple)):
            params["choices"] = ", ".join(map(str, params["choices"]))
        text = text % params
    return _cell(text)


def option_row(action: argparse.Action) -> str:
    """One table row: the option's names with what it takes, and its help."""
    value = _value(action)
    if action.option_strings:
        names = ", ".join(f"`{name}{' ' + value if value else ''}`" for name in action.option_strings)
    else:
        names = f"`{value}`"
    return f"| {names} | {_help(action)} |"


def _commands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: (choice.help or "").replace("%%", "%") for choice in action._choices_actions}
    return {name: (helps.get(name, ""), command) for name, command in action.choices.items()}


def _section(name: str, summary: str, command: argparse.ArgumentParser) -> list[str]:
    lines = [f"## whisperbench {name}", "", _cell(summary)]
    if command.description:
        lines += ["", _cell(command.description)]
    rows = [a for a in command._actions if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS]
    lines += ["", "| argument or option | what it does |", "|---|---|", *map(option_row, rows), ""]
    return lines


def render() -> str:
    """The whole page, from :func:`whisperbench.cli.build_parser`."""
    from ..cli import build_parser

    parser = build_parser()
    commands = _commands(parser)
    lines = [_HEADER, "Before the command: `-v`/`--verbose`, `-q`/`--quiet` (also accepted after it), `--version`.", ""]
    lines += [f"- [`{name}`](#whisperbench-{name}): {_cell(summary)}" for name, (summary, _) in commands.items()]
    lines.append("")
    for name, (summary, command) in commands.items():
        lines += _section(name, summary, command)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    """``--write`` the page, ``--check`` it (exit 1 when it differs), or print it."""
    text = render()
    if "--write" in argv:
        PAGE.write_text(text, encoding="utf-8")
        return 0
    if "--check" in argv:
        same = PAGE.exists() and PAGE.read_text(encoding="utf-8") == text
        if not same:
            sys.stderr.write(f"{PAGE} differs from the parser: python -m whisperbench.devtools.clidoc --write\n")
        return 0 if same else 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
