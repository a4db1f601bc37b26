"""Adapter options declared once (type, default, allowed values, help), parsed once, listed by
``whisperbench adapters NAME``; every bad value is one :class:`OptionError` line.

>>> declared = {"concurrency": Option(4, "parallel requests"), "mode": Option("a", "how", choices=("a", "b"))}
>>> parse_options("demo", declared, {"concurrency": "8"})
{'concurrency': 8, 'mode': 'a'}
>>> parse_options("demo", declared, {"concurrency": "four"})
Traceback (most recent call last):
...
whisperbench.errors.OptionError: adapter demo: option concurrency='four' is not an integer (parallel requests)
>>> parse_options("demo", declared, {"mode": "c"})
Traceback (most recent call last):
...
whisperbench.errors.OptionError: adapter demo: option mode='c' is not one of a, b
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.ranges import Range
from ..errors import OptionError

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Option:
    """One option: its default (whose type is the option's type unless ``value_type`` says it), what it does,
    allowed values; ``nullable``: ``none``/``null``/empty give None (an option whose default is None). A number is
    checked when it is parsed, before any run starts: within ``range`` where the option declares one, else
    finite and not negative (NaN, infinity and ``-1`` are no seconds, counts or thresholds).

    >>> Option(None, "a threshold", value_type=float, nullable=True).parse("decoding", "t", "none") is None
    True
    >>> Option(1.0, "seconds per chunk", range=Range(0, open_low=True)).parse("adapter x", "chunk_s", "0")
    Traceback (most recent call last):
    ...
    whisperbench.errors.OptionError: adapter x: option chunk_s must be a finite number above 0, got 0.0
    >>> Option(0.5, "a share").parse("adapter x", "share", "nan")
    Traceback (most recent call last):
    ...
    whisperbench.errors.OptionError: adapter x: option share must be a finite number from 0, got nan
    """

    default: Any
    help: str = ""
    choices: tuple = ()
    value_type: type | None = None
    nullable: bool = False
    #: the numbers it takes (None: finite and not negative; a whole number for an integer option)
    range: Range | None = None

    @property
    def kind(self) -> str:
        """boolean, integer, number or text."""
        return {bool: "boolean", int: "integer", float: "number"}.get(self.value_type or type(self.default), "text")

    def parse(self, owner: str, key: str, raw: Any) -> Any:
        """The typed value of ``key=raw``; an OptionError naming ``owner`` (e.g. ``adapter mlx``) when it is bad."""
        value = self._convert(owner, key, raw)
        if self.kind in ("integer", "number") and value is not None and not isinstance(value, bool):
            limits = self.range or Range(0, integer=self.kind == "integer")
            checked = limits.check(f"{owner}: option {key}", value)
            value = checked if self.kind == "number" else int(checked)
        if self.choices and value not in self.choices:
            allowed = ", ".join(str(c) if c != "" else "(empty)" for c in self.choices)
            raise OptionError(f"{owner}: option {key}={raw!r} is not one of {allowed}")
        return value

    def _convert(self, owner: str, key: str, raw: Any) -> Any:
        if self.nullable and isinstance(raw, str) and raw.strip().lower() in ("none", "null", ""):
            return None
        if not isinstance(raw, str) or self.kind == "text":
            return raw
        text = raw.strip()
        try:
            if self.kind == "boolean":
                if text.lower() not in _TRUE + _FALSE:
                    raise ValueError
                return text.lower() in _TRUE
            return int(text) if self.kind == "integer" else float(text)
        except ValueError:
            article = "an" if self.kind == "integer" else "a"
            why = f" ({self.help})" if self.help else ""
            raise OptionError(f"{owner}: option {key}={raw!r} is not {article} {self.kind}{why}") from None


def declared(options: Mapping[str, Any]) -> dict[str, Option]:
    """An adapter's ``options`` as :class:`Option` s (a plain value is an undocumented text option)."""
    return {key: value if isinstance(value, Option) else Option(value) for key, value in options.items()}


def parse_options(adapter: str, options: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """Typed settings: every declared option's default, overridden by the given ``KEY=VALUE`` strings."""
    table = declared(options)
    unknown = sorted(set(given) - set(table))
    if unknown:
        known = ", ".join(sorted(table)) or "none"
        raise OptionError(f"adapter {adapter} has no option(s) {', '.join(unknown)} (adapter options: {known})")
    return {
        key: option.parse(f"adapter {adapter}", key, given[key]) if key in given else option.default
        for key, option in table.items()
    }


def describe_options(options: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rows for ``whisperbench adapters NAME``: name, type, default, allowed values, help."""
    return [
        {
            "option": key,
            "type": option.kind,
            "default": option.default,
            "choices": list(option.choices),
            "help": option.help,
        }
        for key, option in declared(options).items()
    ]
