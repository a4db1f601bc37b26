"""The report section of every metric that declares one (:class:`~whisperbench.scoring.metrics.Display`:
hallucination, timing, and any installed metric's), from the registry alone: the leaderboard frame carries each
run's value of such a metric (:func:`value_column`), and this module renders one table per metric, in markdown
and HTML, one row per run that has a value, with the metric's note under it.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Optional

from ..scoring.metrics import Metric, displayed_metrics
from .escape import md_cell

if TYPE_CHECKING:
    import pandas as pd


def value_column(metric: Metric) -> str:
    """The leaderboard frame's column holding each run's value of ``metric`` (a dict; None: no value)."""
    return f"section:{metric.name}"


def section_rows(frame: pd.DataFrame, metric: Metric) -> tuple[list[str], list[dict[str, Any]]]:
    """The headings shown (those some run has a number for) and one row per run with a value: its implementation,
    whether it is a reference, its dataset, each heading's number and its run name."""
    assert metric.display is not None
    column = value_column(metric)
    rows = []
    for _, r in frame.iterrows() if column in frame else ():
        if not isinstance(r[column], dict):
            continue
        cells = metric.display.cells(r[column])
        rows.append({**{key: r[key] for key in ("Implementation", "Reference", "Dataset", "Run")}, "cells": cells})
    shown = [h for h in metric.display.columns if any(row["cells"][h] is not None for row in rows)]
    return shown, rows


def sections_markdown(frame: pd.DataFrame) -> str:
    """Every displayed metric's markdown section (empty text for a metric no run has a value of)."""
    return "".join(_markdown(frame, metric) for metric in displayed_metrics())


def _markdown(frame: pd.DataFrame, metric: Metric) -> str:
    assert metric.display is not None
    shown, rows = section_rows(frame, metric)
    if not rows:
        return ""
    lines = [
        "",
        f"## {md_cell(metric.display.title)}",
        "",
        "| Implementation | Dataset | " + " | ".join(md_cell(h) for h in shown) + " | Run |",
        "|" + "---|" * (len(shown) + 3),
    ]
    for r in rows:
        name = f"**{md_cell(r['Implementation'])}** (reference)" if r["Reference"] else md_cell(r["Implementation"])
        cells = " | ".join(_text(r["cells"][h]) for h in shown)
        lines.append(f"| {name} | {md_cell(r['Dataset'])} | {cells} | {md_cell(r['Run'])} |")
    return "\n".join(lines + ["", md_cell(metric.display.note), ""] if metric.display.note else lines + [""])


def sections_html(frame: pd.DataFrame) -> list[str]:
    """Every displayed metric's HTML section (a sortable table and its note), for the metrics some run has."""
    return [part for part in (_html(frame, metric) for metric in displayed_metrics()) if part]


def _html(frame: pd.DataFrame, metric: Metric) -> str:
    assert metric.display is not None
    shown, rows = section_rows(frame, metric)
    if not rows:
        return ""
    head = (
        "<tr><th>Implementation</th><th>Dataset</th>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in shown)
        + "<th>Run</th></tr>"
    )
    body = []
    for r in rows:
        mark = ' <span class="muted">(reference)</span>' if r["Reference"] else ""
        cells = "".join(
            f'<td class="num" data-value="{_data(r["cells"][h])}">{_text(r["cells"][h])}</td>' for h in shown
        )
        body.append(
            f'<tr class="{"ref" if r["Reference"] else ""}"><td>{html.escape(str(r["Implementation"]))}{mark}</td>'
            f"<td>{html.escape(str(r['Dataset']))}</td>{cells}<td><code>{html.escape(str(r['Run']))}</code></td></tr>"
        )
    note = f'<p class="muted">{html.escape(metric.display.note)}</p>' if metric.display.note else ""
    return (
        f"<h2>{html.escape(metric.display.title)}</h2>"
        f'<table class="sortable {html.escape(metric.name)}"><thead>{head}</thead><tbody>{"".join(body)}</tbody>'
        f"</table>{note}"
    )


def flat_values(value: Optional[dict[str, Any]], metric: Metric) -> dict[str, Optional[float]]:
    """``{"METRIC.KEY": number}`` of each displayed column of one run's value (CSV columns, tracker metrics)."""
    assert metric.display is not None
    cells = metric.display.cells(value)
    return {f"{metric.name}.{key}": cells[heading] for heading, key in metric.display.columns.items()}


def _text(value: Optional[float]) -> str:
    if value is None:
        return "–"
    return str(value) if isinstance(value, int) else f"{value:.1f}"


def _data(value: Optional[float]) -> str:
    return "" if value is None else str(value)
