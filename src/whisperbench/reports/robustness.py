"""The robustness table: per implementation and per condition of a derived set (``whisperbench perturb``):
WER, QoI against the reference run on the same examples, and the hallucination counts — which implementation
breaks first under noise, and which one talks over silence.

Rows exist only for runs whose example ids carry a condition (``PARENT~CONDITION``).
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from ..scoring import hallucination
from ..scoring.conditions import SEPARATOR, condition_of, condition_order, noise_of, snr_of
from ..scoring.figures import grouped, table_figures
from ..scoring.metrics import MetricContext
from ..scoring.qoi import qoi_by
from ..store.runs import StoredRun
from .charts import ticks
from .compare import compare_runs
from .escape import md_cell

COUNTS = {
    "Loops": "loops",
    "Bursts": "bursts",
    "Output on non-speech": "nonspeech_with_output",
    "Catastrophic": "catastrophic",
}


def _qoi_by_condition(reference: StoredRun | None, run: StoredRun) -> dict[str, float | None]:
    if reference is None:
        return {}
    examples = compare_runs(reference, run).result.examples
    rows = qoi_by([condition_of(e.id) for e in examples], [e.regressed for e in examples])
    return {condition: row["qoi"] for condition, row in rows.items()}


def robustness_frame(runs: list[StoredRun], references: dict[str, StoredRun]) -> pd.DataFrame:
    """One row per (run, condition): examples, WER, words written on non-speech, QoI, hallucination counts; each
    condition's figures read from the run's score table grouped by condition (``scoring.figures.grouped``), as
    summary.json's are from the whole table."""
    rows = []
    for run in runs:
        reference = references.get(run.dataset_hash)
        normalizer = reference.normalizer if reference else run.normalizer
        table = run.score_table(normalizer)
        ids = table["id"].to_pylist()
        if not any(SEPARATOR in i for i in ids):
            continue
        qois = _qoi_by_condition(reference, run)
        parts = grouped(table, [condition_of(i) for i in ids])
        for condition in sorted(parts, key=condition_order):
            figures = table_figures(parts[condition])
            counts = hallucination.summarize((), MetricContext(normalizer, run.form, {}, parts[condition])) or {}
            rows.append(
                {
                    "Implementation": run.meta.label or run.meta.adapter,
                    "Reference": reference is run,
                    "Condition": condition,
                    "Noise": noise_of(condition),
                    "SNR dB": snr_of(condition),
                    "Examples": figures["num_examples"],
                    "Failed": figures["num_failed"],
                    "WER %": figures["wer"],
                    "Words on non-speech": _nonspeech_words(figures, counts),
                    "QoI %": qois.get(condition),
                    **{head: counts.get(key, 0) for head, key in COUNTS.items()},
                    "Run": run.name,
                }
            )
    return pd.DataFrame(rows)


def _nonspeech_words(figures: dict[str, Any], counts: dict) -> int | None:
    """Words written on a condition made only of non-speech (its errors are all insertions); None otherwise."""
    return figures["insertions"] if counts.get("nonspeech_examples") == figures["num_examples"] else None


def _number(value, digits: int) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.{digits}f}"


def _pivot(frame: pd.DataFrame, names: list[str], value: str, digits: int) -> str:
    """Implementations down, conditions across (clean, noise high to low SNR, others), ``value`` in the cells;
    only the conditions where some run has a value."""
    wide = frame.assign(Implementation=names).pivot_table(
        index="Implementation", columns="Condition", values=value, aggfunc="first", dropna=False
    )
    rows = [n for _, n in sorted(zip(~frame["Reference"], names), key=lambda pair: pair[0])]  # the reference first
    nonspeech = set(frame.loc[frame["Words on non-speech"].notna(), "Condition"])
    columns = sorted(wide.columns, key=lambda c: (c in nonspeech, condition_order(c)))  # non-speech clips last
    shown = [c for c in columns if wide[c].notna().any()]
    table = (
        wide.loc[list(dict.fromkeys(rows)), shown]
        .map(lambda v: _number(v, digits))
        .reset_index()
        .rename(columns=md_cell)
    )
    return table.to_markdown(index=False, disable_numparse=True)


def render_robustness_markdown(frame: pd.DataFrame) -> str:
    """The markdown section "Robustness": WER, QoI and words written on non-speech by condition (one column per
    condition), then every figure per (run, condition)."""
    if frame.empty:
        return ""
    names = [
        f"**{md_cell(n)}** (reference)" if ref else md_cell(n)
        for n, ref in zip(frame["Implementation"], frame["Reference"])
    ]
    parts = [
        "",
        "## Robustness",
        "",
        "Derived sets of `whisperbench perturb` (`NOISE@SNR`: SNR in dB). WER %:",
        "",
        _pivot(frame, names, "WER %", 1),
        "",
    ]
    if frame["QoI %"].notna().any():
        parts += ["QoI % against the reference run on the same examples:", "", _pivot(frame, names, "QoI %", 1), ""]
    if frame["Words on non-speech"].notna().any():
        parts += [
            "Words written on non-speech audio (the transcript is empty; 0 is right):",
            "",
            _pivot(frame, names, "Words on non-speech", 0),
            "",
        ]
    long = pd.DataFrame(
        {
            "Implementation": names,
            "Condition": frame["Condition"].map(md_cell),
            "Examples": frame["Examples"].map(str),
            "WER %": frame["WER %"].map(lambda v: _number(v, 2)),
            "QoI %": frame["QoI %"].map(lambda v: _number(v, 1)),
            "Words on non-speech": frame["Words on non-speech"].map(lambda v: _number(v, 0)),
            **{head: frame[head].map(str) for head in COUNTS},
            "Failed": frame["Failed"].map(str),
        }
    )
    long = long.loc[
        frame.assign(_o=frame["Condition"].map(condition_order))
        .sort_values(["_o", "Implementation"], kind="stable")
        .index
    ]
    parts += [
        "Per run and condition, with the hallucination counts (docs/robustness.md):",
        "",
        long.to_markdown(index=False, disable_numparse=True),
        "",
    ]
    return "\n".join(parts)


def robustness_html(frame: pd.DataFrame) -> str:
    """HTML: a WER-against-SNR curve per implementation and noise, and the long table; empty without rows."""
    if frame.empty:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(str(r['Implementation']))}</td><td>{html.escape(str(r['Condition']))}</td>"
        f'<td class="num">{r["Examples"]}</td><td class="num">{_number(r["WER %"], 2)}</td>'
        f'<td class="num">{_number(r["QoI %"], 1)}</td><td class="num">{_number(r["Words on non-speech"], 0)}</td>'
        + "".join(f'<td class="num">{r[h]}</td>' for h in COUNTS)
        + "</tr>"
        for _, r in frame.iterrows()
    )
    head = "".join(
        f"<th>{html.escape(h)}</th>"
        for h in ["Implementation", "Condition", "Examples", "WER %", "QoI %", "Words on non-speech", *COUNTS]
    )
    return (
        f'<h2>Robustness</h2>{_curves(frame)}<div class="wide"><table class="sortable robustness"><thead><tr>{head}'
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _curves(frame: pd.DataFrame) -> str:
    """SVG: WER (y) against SNR (x, clean at the right), one polyline per implementation and noise kind."""
    noisy = frame.dropna(subset=["SNR dB", "WER %"])
    if noisy.empty:
        return ""
    clean = frame[frame["Condition"] == "clean"].set_index("Implementation")["WER %"]
    snrs = sorted(noisy["SNR dB"].unique())
    xs = snrs + [snrs[-1] + 10]  # the clean point, 10 dB right of the highest SNR
    width, height, pad = 560, 260, 44
    y_max = max(float(noisy["WER %"].max()), float(clean.max()) if len(clean) else 0.0, 1.0) * 1.1
    sx = lambda v: pad + (width - 2 * pad) * (v - xs[0]) / max(xs[-1] - xs[0], 1)  # noqa: E731
    sy = lambda v: height - pad - (height - 2 * pad) * v / y_max  # noqa: E731
    colors = ["#3a6ea5", "#c0504d", "#6aa56a", "#8064a2", "#f79646", "#4bacc6", "#777"]
    parts = [
        f'<svg class="chart robustness-curve" width="{width}" height="{height}" role="img" aria-label="WER '
        f'against SNR"><g class="axis"><line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}"/>'
        f'<text class="x-label" x="{width / 2 - 40}" y="{height - 8}">SNR dB (right: clean)</text>'
        f'<text class="y-label" x="4" y="{pad - 12}">WER % (lower is better)</text>'
    ]
    parts += [
        f'<text x="{sx(x) - 8:.1f}" y="{height - pad + 14}">{"clean" if i == len(snrs) else f"{x:g}"}</text>'
        for i, x in enumerate(xs)
    ]
    parts += [
        f'<text x="{pad - 4}" y="{sy(t) + 4:.1f}" text-anchor="end">{t:g}</text>'
        for t in ticks(0.0, y_max)
        if t <= y_max
    ]
    parts.append("</g>")
    legend = []
    for number, ((name, noise), group) in enumerate(noisy.groupby(["Implementation", "Noise"], sort=True)):
        points = sorted(zip(group["SNR dB"], group["WER %"]))
        if name in clean.index and pd.notna(clean[name]):
            points.append((xs[-1], float(clean[name])))
        color = colors[number % len(colors)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
        parts.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}">'
            f"<title>{html.escape(f'{name}, {noise}')}</title></polyline>"
        )
        legend.append(f'<li><span style="color:{color}">■</span> {html.escape(f"{name}, {noise} noise")}</li>')
    return "".join(parts) + f'</svg><ul class="plot-legend">{"".join(legend)}</ul>'
