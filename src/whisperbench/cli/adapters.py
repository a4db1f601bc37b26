"""``whisperbench adapters``: the implementations, whether installed, their options and variants."""

from __future__ import annotations

from typing import Any

from .common import print_json


def command(args) -> int:
    """``whisperbench adapters``: the implementations, whether installed, their options and variants."""
    from ..adapters import get_adapter
    from ..api import list_adapters

    if args.name:
        cls = get_adapter(args.name)
        rows = list_adapters(args.name)
        if args.json:
            print_json(rows)
            return 0
        print(f"{cls.name}: {cls.description}\noptions (-o KEY=VALUE):")
        for row in rows:
            allowed = f" one of {', '.join(map(str, row['choices']))};" if row["choices"] else ""
            print(f"  {row['option']:<28} {row['type']:<8} default {row['default']!r};{allowed} {row['help']}")
        if cls.variants:
            print("variants (whisperbench sweep):")
            for name, options in cls.variants.items():
                refused = cls.variant_refused(name) if not cls.missing() else None
                said = " ".join(f"-o {k}={v}" for k, v in options.items())
                print(f"  {name:<28} {said}{'  (not here: ' + refused + ')' if refused else ''}")
        print("decoding options for every adapter: see `whisperbench run --help` (-o language=…, beam_size=…)")
        return 0

    rows = list_adapters()
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            print(f"{row['adapter']:<16} {row['status']:<50} {row['description']}")
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench adapters`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("adapters", help="list adapters and whether they are installed; NAME: its options")
    p.add_argument("name", nargs="?", help="an adapter: list its options (type, default, allowed values, help)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=command)
