"""Rows of a report section (one dict per row, the same keys in each) as a markdown or a sortable HTML table.

>>> print(markdown_table([{"run": "a|b", "WER %": 12.345, "note": None}]), end="")
| run | WER % | note |
|---|---|---|
| a\\|b | 12.35 | – |
>>> html_table([{"run": "<a>", "WER %": 1.0}], "speed").split("<tbody>")[1]
'<tr><td>&lt;a&gt;</td><td>1.00</td></tr></tbody></table>'
"""

from __future__ import annotations

import html
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
