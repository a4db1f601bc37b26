"""Quality against size: the variants of a model side by side, with the Pareto front marked.

One row per run: implementation, variant, size of the weights as loaded (MB), WER and QoI against one
reference (with bootstrap CIs), RTFx and peak memory. A variant is **on the front** when no other
variant is both no larger and no worse on QoI, and strictly better on one of the two: the smallest
model for each level of quality. With a minimum QoI, each variant also gets the release gate's verdict
against the same reference. Variants that did not run are listed with the reason.

>>> pareto_front([(100, 99.0), (50, 99.0), (40, 80.0), (60, 70.0)])
[False, True, True, False]
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd

from ..scoring.significance import holm
from ..store.runs import StoredRun
from .escape import md_cell
from .gate import VERDICTS, GateResult, evaluate_gate
from .leaderboard import _fmt, _fmt_ci, leaderboard_frame


def pareto_front(points: Sequence[tuple[float | None, float | None]]) -> list[bool]:
    """For (size, quality) points, whether each is on the front (smaller is better, higher quality is better);
    a point without both values is never on it."""

    def dominates(a: tuple, b: tuple) -> bool:
        return a[0] <= b[0] and a[1] >= b[1] and (a[0] < b[0] or a[1] > b[1])

    known = [p[0] is not None and p[1] is not None and not pd.isna(p[0]) and not pd.isna(p[1]) for p in points]
    return [
        ok and not any(other_ok and dominates(other, p) for other, other_ok in zip(points, known))
        for p, ok in zip(points, known)
    ]


def tradeoff_frame(
    runs: list[StoredRun],
    reference: StoredRun,
    min_qoi: float | None = None,
    max_wer_increase: float | None = None,
) -> pd.DataFrame:
    """The trade-off table of ``runs`` (the reference among them or not) against ``reference``."""
    runs = [reference] + [run for run in runs if run.store.path != reference.store.path]
    frame = leaderboard_frame(runs, {reference.dataset_hash: reference})
    by_name = {run.name: run for run in runs}
    frame["Adapter"] = [by_name[name].meta.adapter for name in frame["Run"]]
    frame["Variant"] = [by_name[name].meta.variant or "" for name in frame["Run"]]
    frame["Peak MB"] = [peak_memory_mb(by_name[name]) for name in frame["Run"]]
    frame["Front"] = pareto_front(list(zip(frame["Size MB"], frame["QoI %"])))
    if min_qoi is not None:
        gates = [
            None
            if is_reference
            else evaluate_gate(reference, by_name[name], min_qoi=min_qoi, max_wer_increase=max_wer_increase)
            for name, is_reference in zip(frame["Run"], frame["Reference"])
        ]
        frame["Gate"] = ["reference" if gate is None else VERDICTS[gate.code] for gate in gates]
        p_values = [_wer_p(gate) for gate in gates]
        frame["ΔWER p"] = p_values
        frame["ΔWER p (Holm)"] = holm(p_values)
    return frame.sort_values(
        ["Adapter", "Size MB", "Variant"], ascending=[True, False, True], na_position="last"
    ).reset_index(drop=True)


def peak_memory_mb(run: StoredRun) -> float | None:
    """Peak RSS of the process that held the model: the run's, or its worker's where the adapter keeps the
    model in a child process (whisper.cpp, ``--isolate``)."""
    measured = [run.summary.peak_rss_mb if run.summary else None, run.meta.adapter_info.get("worker_peak_rss_mb")]
    known = [value for value in measured if value]
    return max(known) if known else None


def _wer_p(gate: GateResult | None) -> float | None:
    """The paired bootstrap's two-sided p of a gated variant's WER difference (None for the reference)."""
    sig = gate.comparison.significance if gate else None
    return sig.wer_difference.p_value if sig and sig.wer_difference else None


def _shown(frame: pd.DataFrame, markdown: bool = True) -> pd.DataFrame:
    """The table's text cells: numbers formatted, names escaped for markdown (or left for HTML to escape)."""
    cell = md_cell if markdown else str
    strong = "**" if markdown else ""
    shown = pd.DataFrame(
        {
            "Implementation": [
                f"{strong}{cell(a)}{strong} (reference)" if ref else cell(a)
                for a, ref in zip(frame["Adapter"], frame["Reference"])
            ],
            "Variant": frame["Variant"].map(cell),
            "Size MB": frame["Size MB"].map(lambda v: _fmt(v, 1)),
            "WER %": frame["WER %"].map(lambda v: _fmt(v, 2)),
            "WER 95% CI": frame["WER CI"].map(_fmt_ci),
            "QoI %": frame["QoI %"].map(lambda v: _fmt(v, 1)),
            "QoI 95% CI": frame["QoI CI"].map(_fmt_ci),
            "RTFx": [
                _fmt(v, 1) + ("" if ok or _fmt(v, 1) == "–" else " ⚠ busy")
                for v, ok in zip(frame["RTFx"], frame["RTFx reliable"])
            ],
            "Peak MB": frame["Peak MB"].map(lambda v: _fmt(v, 0)),
            "Failed": frame["Failed"].map(str),
            "Front": frame["Front"].map(lambda on: "◆" if on else ""),
        }
    )
    if "Gate" in frame:
        shown["Gate"] = frame["Gate"]
        shown["ΔWER p (Holm)"] = [
            "–" if pd.isna(p) else _fmt(p, 3) + (" *" if p <= 0.05 else "") for p in frame["ΔWER p (Holm)"]
        ]
    shown["Run"] = frame["Run"].map(lambda v: f"`{md_cell(v)}`" if markdown else v)
    return shown


def render_tradeoff_markdown(
    frame: pd.DataFrame,
    not_run: Sequence[dict] = (),
    title: str = "Quality against size",
    min_qoi: float | None = None,
) -> str:
    """The markdown table; ``not_run``: dicts with label, status and error of the variants without a result."""
    parts = [f"## {md_cell(title)}", ""]
    parts += [_shown(frame).to_markdown(index=False, disable_numparse=True) if not frame.empty else "_No runs._", ""]
    parts.append(
        "Size MB: the weights as the implementation loaded them (file or folder on disk). QoI: % of examples "
        "whose WER is no higher than the reference's. ◆: on the Pareto front (no other variant is both "
        "no larger and no lower on QoI). 95% CI: bootstrap over examples (2000 resamples, seed 0)."
        + (
            f" Gate: the release gate at QoI ≥ {min_qoi:g} % against the same reference. ΔWER p (Holm): the "
            "paired bootstrap's two-sided p of each variant's WER difference from the reference, "
            "Holm-adjusted for the variants gated together (* ≤ 0.05: a difference shown over the whole "
            "sweep)."
            if min_qoi
            else ""
        )
    )
    if not_run:
        parts += ["", "Not run:", ""]
        parts += [
            f"- {md_cell(item['label'])}: {item['status']}: {md_cell(item.get('error') or '')}" for item in not_run
        ]
    return "\n".join(parts) + "\n"


def _plot(frame: pd.DataFrame, column: str, better: str) -> str:
    """SVG: ``column`` (y) against size (x); numbered points, the front drawn as a step line."""
    points = frame.dropna(subset=["Size MB", column]).sort_values("Size MB").reset_index(drop=True)
    if points.empty:
        return '<p class="muted">Nothing to plot.</p>'
    width, height, pad = 620, 300, 48
    x_max, y_lo = points["Size MB"].max() * 1.08, min(points[column].min(), 0.0)
    y_hi = max(points[column].max() * 1.05, 1.0)
    sx = lambda v: pad + (width - 2 * pad) * v / x_max  # noqa: E731
    sy = lambda v: height - pad - (height - 2 * pad) * (v - y_lo) / (y_hi - y_lo)  # noqa: E731
    front_flags = pareto_front(list(zip(points["Size MB"], points[column] if better == "higher" else -points[column])))
    front = points[front_flags]
    parts = [
        f'<svg class="plot tradeoff" data-metric="{html.escape(column)}" width="{width}" height="{height}" '
        f'role="img" aria-label="{html.escape(column)} against size">',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#999"/>',
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#999"/>',
        f'<text x="{width / 2 - 60}" y="{height - 10}">size MB (0 – {x_max:.0f})</text>',
        f'<text x="4" y="{pad - 14}">{html.escape(column)} ({better} is better; {y_lo:.0f} – {y_hi:.0f})</text>',
    ]
    if len(front) > 1:
        path = " ".join(f"{sx(s):.1f},{sy(v):.1f}" for s, v in zip(front["Size MB"], front[column]))
        parts.append(f'<polyline class="front" points="{path}" fill="none" stroke="#c0392b" stroke-dasharray="4 3"/>')
    for number, r in points.iterrows():
        x, y = sx(r["Size MB"]), sy(r[column])
        label = f"{r['Adapter']} {r['Variant']}".strip()
        colour = "#c0392b" if front_flags[number] else "#3a6ea5"
        parts.append(
            f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}"><title>'
            f"{html.escape(label)}: {column} {r[column]:.2f}, {r['Size MB']:.1f} MB</title></circle>"
            f'<text x="{x + 5:.1f}" y="{y - 5 - 9 * (number % 3):.1f}">{number + 1}</text>'
        )
    legend = "".join(
        f"<li>{html.escape((str(r['Adapter']) + ' ' + str(r['Variant'])).strip())}: "
        f"{r[column]:.2f}, {r['Size MB']:.1f} MB</li>"
        for _, r in points.iterrows()
    )
    return "".join(parts) + f'</svg><ol class="plot-legend">{legend}</ol>'


def render_tradeoff_html(
    frame: pd.DataFrame,
    not_run: Sequence[dict] = (),
    title: str = "Quality against size",
    min_qoi: float | None = None,
) -> str:
    """A self-contained page: the table, QoI and WER against size (front drawn in red), what did not run."""
    from .html import SORT_SCRIPT, STYLE

    table = _shown(frame, markdown=False).to_html(index=False, escape=True, classes="sortable tradeoff", border=0)
    missing = "".join(
        f"<li>{html.escape(item['label'])}: {html.escape(item['status'])}: {html.escape(item.get('error') or '')}</li>"
        for item in not_run
    )
    body = (
        f"<h1>{html.escape(title)}</h1>{table}"
        f"<h2>QoI against size</h2>{_plot(frame, 'QoI %', 'higher')}"
        f"<h2>WER against size</h2>{_plot(frame, 'WER %', 'lower')}"
        + (f"<h2>Not run</h2><ul>{missing}</ul>" if missing else "")
        + (f'<p class="muted">Gate: QoI ≥ {min_qoi:g} % against the reference.</p>' if min_qoi else "")
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}<script>{SORT_SCRIPT}</script></body></html>"
    )
