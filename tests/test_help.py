"""Every command and every option of the CLI says what it does (``whisperbench CMD --help``)."""

from __future__ import annotations

import argparse

from whisperbench.cli import build_parser


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_and_option_has_help():
    parser = build_parser()
    commands = _subcommands(parser)
    assert {"run", "score", "rescore", "compare", "report", "export", "gate", "demo"} <= set(commands)
    missing = []
    for name, command in commands.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not (action.help or "").strip():
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing


def test_repeatable_options_say_so():
    commands = _subcommands(build_parser())
    for name, command in commands.items():
        for action in command._actions:
            if isinstance(action, argparse._AppendAction):
                assert "repeat" in action.help.lower(), f"{name} {action.option_strings}: {action.help}"
