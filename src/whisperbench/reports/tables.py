"""Rows of a report section (one dict per row, the same keys in each) as a markdown or a sortable HTML table.

>>> print(markdown_table([{"run": "a|b", "WER %": 12.345, "note": None}]), end="")
| run | WER % | note |
|---|---|---|
| a\\|b | 12.35 | – |
>>> html_table([{"run": "<a>", "WER %": 1.0}], "speed").split("<tbody>")[1]
'<tr><td>&lt;a&gt;</td><td>1.00</td></tr></tbody></table>'
>>> said_once([{"run": "a", "loops": 0, "note": "x"}, {"run": "b", "loops": 0, "note": "x"}], ["loops", "note"])
(['run'], {'loops': 0, 'note': 'x'})
>>> rows, above = said_above([{"run": "a", "note": "slow"}, {"run": "b", "note": "slow"}, {"run": "c"}], "note")
>>> [row.get("note") for row in rows], above
(['see (1) above', 'see (1) above', None], ['(1) slow: a, b'])
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from .escape import md_cell


def cell_text(value: Any) -> str:
    """A cell as text: "–" for a figure that does not apply, floats to two decimals."""
    if value is None:
        return "–"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """A markdown table of ``rows`` ('' without rows)."""
    if not rows:
        return ""
    columns = list(rows[0])
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    return head + "".join("| " + " | ".join(md_cell(cell_text(row[c])) for c in columns) + " |\n" for row in rows)


def html_table(rows: list[dict[str, Any]], css_class: str) -> str:
    """A sortable HTML table of ``rows`` ('' without rows)."""
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell_text(v))}</td>" for v in row.values()) + "</tr>" for row in rows
    )
    return f'<table class="sortable {css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def said_once(rows: Sequence[dict[str, Any]], columns: Iterable[str]) -> tuple[list[str], dict[str, Any]]:
    """Which of ``columns`` to show per row and which to say once above the table: a column whose value is zero (or
    absent) in every row, or the same in every row of two or more, holds for every row. Returns the columns kept, in
    order, and ``{column: the value every row has}``; the rows' other keys are kept as they are."""
    keep, once = [], {}
    names = list(rows[0]) if rows else []
    candidates = set(columns)
    for name in names:
        values = [row[name] for row in rows]
        same = all(v == values[0] for v in values)
        if name in candidates and same and (len(rows) > 1 or values[0] in (0, None)):
            once[name] = values[0]
        else:
            keep.append(name)
    return keep, once


def said_once_text(once: dict[str, Any]) -> str:
    """The values every row shares, as one phrase: "loops: 0, note: x" (absent values left out)."""
    return ", ".join(f"{name}: {cell_text(value)}" for name, value in once.items() if value is not None)


def said_above(rows: list[dict[str, Any]], column: str, key: str = "run") -> tuple[list[dict[str, Any]], list[str]]:
    """A note that several rows (not all: :func:`said_once` says those) share in ``column``, said once above the
    table, numbered, with the rows it holds for (by ``key``); each such cell points at it."""
    counts: dict[Any, int] = {}
    for row in rows:
        if row.get(column):
            counts[row[column]] = counts.get(row[column], 0) + 1
    shared = [note for note, count in counts.items() if count > 1]
    lines = [
        f"({number}) {note}: {', '.join(str(row[key]) for row in rows if row.get(column) == note)}"
        for number, note in enumerate(shared, start=1)
    ]
    out = [
        {**row, column: f"see ({shared.index(row[column]) + 1}) above"} if row.get(column) in shared else row
        for row in rows
    ]
    return out, lines
