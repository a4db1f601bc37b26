"""The report section of every metric that declares one (:class:`~whisperbench.scoring.metrics.Display`:
hallucination, timing, and any installed metric's), from the registry alone: the leaderboard frame carries each
run's value of such a metric (:func:`value_column`), and this module renders one table per metric, in markdown
and HTML, one row per run that has a value, with the metric's note under it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..scoring.metrics import Metric, displayed_metrics
from .escape import md_cell, md_heading
from .tables import said_once, said_once_text

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


@dataclass(frozen=True)
class Section:
    """One section of the HTML report: its anchor ``key``, ``title``, the ``html`` and whether it ``speaks`` (has a
    figure that differs between runs or is not zero; a section that does not is one sentence)."""

    key: str
    title: str
    html: str
    speaks: bool = True


def said_in_every_run(shown: list[str], rows: list[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """The headings to show per run and those whose figure every run shares (zero, or the same in two runs or
    more: said once above the table)."""
    keep, once = said_once([r["cells"] for r in rows], shown)
    return [h for h in shown if h in keep], once


def quiet_sentence(metric: Metric, once: dict[str, Any]) -> str:
    """The one sentence of a section with nothing to say: "No loops, bursts or output on non-speech in any run."
    when every figure is zero, else the figures every run shares."""
    assert metric.display is not None
    if all(not value for value in once.values()):
        return f"No {metric.display.short} in any run."
    return f"{metric.display.title}, the same in every run: {said_once_text(once)}."


def sections_markdown(frame: pd.DataFrame) -> str:
    """Every displayed metric's markdown section (empty text for a metric no run has a value of)."""
    return "".join(_markdown(frame, metric) for metric in displayed_metrics())


def _markdown(frame: pd.DataFrame, metric: Metric) -> str:
    assert metric.display is not None
    shown, rows = section_rows(frame, metric)
    if not rows:
        return ""
    shown, once = said_in_every_run(shown, rows)
    lines = ["", f"## {metric.display.title}", ""]
    if not shown:
        return "\n".join(lines + [quiet_sentence(metric, once), ""])
    if once:
        lines += [f"In every run: {said_once_text(once)}.", ""]
    lines += [
        "| Implementation | Dataset | " + " | ".join(md_heading(metric.display.heading(h)) for h in shown) + " | Run |",
        "|" + "---|" * (len(shown) + 3),
    ]
    for r in rows:
        name = f"**{md_cell(r['Implementation'])}** (reference)" if r["Reference"] else md_cell(r["Implementation"])
        cells = " | ".join(_text(r["cells"][h]) for h in shown)
        lines.append(f"| {name} | {md_cell(r['Dataset'])} | {cells} | {md_cell(r['Run'])} |")
    return "\n".join(lines + ["", metric.display.note, ""] if metric.display.note else lines + [""])


def sections_html(frame: pd.DataFrame) -> list[Section]:
    """Every displayed metric's HTML section (a sortable table and its note, or one sentence when it has nothing to
    say), for the metrics some run has."""
    return [part for part in (_html(frame, metric) for metric in displayed_metrics()) if part]


def _html(frame: pd.DataFrame, metric: Metric) -> Section | None:
    assert metric.display is not None
    shown, rows = section_rows(frame, metric)
    if not rows:
        return None
    display = metric.display
    title = f'<div id="section-{html.escape(metric.name)}"></div><h2>{html.escape(display.title)}</h2>'
    shown, once = said_in_every_run(shown, rows)
    if not shown:
        sentence = f'<p class="quiet">{html.escape(quiet_sentence(metric, once))}</p>'
        return Section(f"section-{metric.name}", display.title, title + sentence, speaks=False)
    head = (
        "<tr><th>Implementation</th><th>Dataset</th>"
        + "".join(f"<th>{html.escape(display.heading(h))}</th>" for h in shown)
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
    every = f'<p class="once">In every run: {html.escape(said_once_text(once))}.</p>' if once else ""
    note = f'<p class="muted">{html.escape(display.note)}</p>' if display.note else ""
    table = (
        f'<div class="wide"><table class="sortable {html.escape(metric.name)}"><thead>{head}</thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
    return Section(f"section-{metric.name}", display.title, title + every + table + note)


def flat_values(value: dict[str, Any] | None, metric: Metric) -> dict[str, float | None]:
    """``{"METRIC.KEY": number}`` of each displayed column of one run's value (CSV columns, tracker metrics)."""
    assert metric.display is not None
    cells = metric.display.cells(value)
    return {f"{metric.name}.{key}": cells[heading] for heading, key in metric.display.columns.items()}


def _text(value: float | None) -> str:
    if value is None:
        return "–"
    return str(value) if isinstance(value, int) else f"{value:.1f}"


def _data(value: float | None) -> str:
    return "" if value is None else str(value)
