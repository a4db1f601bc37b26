"""A self-contained HTML report: leaderboard tables, WER-vs-RTFx and QoI plots, regression explorer.

One file with inline CSS, SVG and a few lines of JavaScript (column sorting: each table by its own column
index, numbers as numbers, cells without a value last); no network access needed to view it. Every
transcript and name is HTML-escaped.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Optional

import jiwer
import pandas as pd

from ..store import StoredRun
from ..scoring import normalize
from .compare import Comparison, compare_runs
from .hallucination import FILTER_HTML, FILTER_SCRIPT, explorer_flags
from .leaderboard import shown_metrics
from .languages import language_frame, language_note, table_order
from .robustness import robustness_frame, robustness_html
from .noise import noise_frame, noise_html
from .speed import speed_html
from .streaming import streaming_html
from .sections import sections_html
from .timing import timed_predictions, timing_bars, words_html

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 8px;vertical-align:top}
th{background:#f2f2f2;cursor:pointer}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.ref td{font-weight:600}.muted{color:#777}
.sub{background:#ffe08a}.del{background:#f7b6b6;text-decoration:line-through}.ins{background:#b9e6b9}
.legend span{padding:0 4px;margin-right:8px}svg text{font-size:11px}
.plot-legend{font-size:12px;columns:2;margin-top:0}
details.words{font-size:12px;margin-top:4px}details.words sub{color:#777}.moved{color:#a33}
"""

SORT_SCRIPT = """
document.querySelectorAll('table.sortable').forEach(table => table.tHead.querySelectorAll('th').forEach(th =>
  th.addEventListener('click', () => {
    const col = th.cellIndex, body = table.tBodies[0], rows = Array.from(body.rows);
    const text = r => { const c = r.cells[col]; return c ? (c.dataset.value ?? c.textContent).trim() : ''; };
    const numeric = rows.every(r => text(r) === '' || !isNaN(Number(text(r))));
    const dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    const order = (a, b) => { const x = text(a), y = text(b);
      if (x === '' || y === '') return (x === '') - (y === '');  // cells without a value last, either way
      return (numeric ? Number(x) - Number(y) : x.localeCompare(y)) * dir; };
    rows.sort(order).forEach(r => body.appendChild(r));
  })));
document.body.dataset.ready = 'yes';
"""


def _e(value) -> str:
    return html.escape("" if value is None else str(value))


def _num(value, digits: int) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return '<td class="num" data-value="">–</td>'
    return f'<td class="num" data-value="{value}">{value:.{digits}f}</td>'


def _rtfx(row) -> str:
    """The RTFx cell; flagged when the run's machine was busy (its speed is not comparable)."""
    cell = _num(row["RTFx"], 1)
    if row.get("RTFx reliable", True) is False and 'data-value=""' not in cell:
        cell = cell.replace(
            "</td>",
            ' <span class="busy" title="the machine was busy during this run: speed not comparable">⚠ busy</span></td>',
        )
    return cell


def _warning(row) -> str:
    """A run's warning beside its model (⚠ English-only model on other languages' labels), or ""."""
    warning = row.get("Warning")
    return f' <span class="busy warning">{_e(warning)}</span>' if isinstance(warning, str) and warning else ""


def _ci(interval) -> str:
    return "<td>–</td>" if interval is None else f"<td>{interval.low:.1f}–{interval.high:.1f}</td>"


def _leaderboard_table(frame: pd.DataFrame) -> str:
    metrics = {m.label: m for m in shown_metrics(frame)}
    metric_heads = "".join(
        f'<th title="{_e(m.description)} ({m.better} is better)">{_e(m.label)}</th>' for m in metrics.values()
    )
    head = (
        '<tr><th>Implementation</th><th>Model</th><th title="the weights as the implementation loaded them (its '
        'file or folder on disk)">Size MB</th><th>Dataset</th><th>WER %</th><th>WER 95% CI</th>'
        '<th>QoI %</th><th>QoI 95% CI</th><th title="% of examples whose output differs from the reference '
        "run's in punctuation, casing or numbers only\">Format drift %</th><th>RTFx</th><th>Examples</th>"
        f"<th>Failed</th><th>Status</th>{metric_heads}<th>Run</th></tr>"
    )
    rows = []
    for _, r in frame.iterrows():
        name = _e(r["Implementation"]) + (' <span class="muted">(reference)</span>' if r["Reference"] else "")
        rows.append(
            f'<tr class="{"ref" if r["Reference"] else ""}"><td>{name}</td><td>{_e(r["Model"])}{_warning(r)}</td>'
            f"{_num(r.get('Size MB'), 1)}<td>{_e(r['Dataset'])}</td>{_num(r['WER %'], 2)}{_ci(r['WER CI'])}"
            f"{_num(r['QoI %'], 1)}"
            f"{_ci(r['QoI CI'])}{_num(r.get('Format drift %'), 1)}{_rtfx(r)}"
            f"{_num(r['Examples'], 0)}{_num(r['Failed'], 0)}"
            f'<td class="status{"" if r["Finished"] else " unfinished"}">{_e(r["Status"])}</td>'
            + "".join(_num(r.get(name), 2) for name in metrics)
            + f"<td><code>{_e(r['Run'])}</code></td></tr>"
        )
    return f'<table class="sortable leaderboard"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _language_table(frame: pd.DataFrame) -> str:
    """Per language and run: the headline error rate (WER or CER) and QoI with CIs; macro rows last."""
    head = (
        "<tr><th>Language</th><th>Implementation</th><th>Metric</th><th>Examples</th><th>Error %</th>"
        "<th>Error 95% CI</th><th>QoI %</th><th>QoI 95% CI</th><th>Language ID %</th><th>Dataset</th>"
        "<th>Run</th></tr>"
    )
    rows = []
    for _, r in table_order(frame).iterrows():
        name = _e(r["Implementation"]) + (' <span class="muted">(reference)</span>' if r["Reference"] else "")
        name += f' <span class="status unfinished">({_e(r["Status"])})</span>' if r["Status"] else ""
        name += _warning(r)
        rows.append(
            f'<tr class="{"ref" if r["Reference"] else ""}"><td>{_e(r["Language"])}</td><td>{name}</td>'
            f"<td>{_e(r['Metric'])}</td>{_num(r['Examples'], 0)}{_num(r['Error %'], 2)}{_ci(r['Error CI'])}"
            f"{_num(r['QoI %'], 1)}{_ci(r['QoI CI'])}{_num(r.get('Language ID %'), 1)}"
            f"<td>{_e(r.get('Dataset'))}</td><td><code>{_e(r['Run'])}</code></td></tr>"
        )
    return (
        f'<table class="sortable languages"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
        f'<p class="muted">{_e(language_note(frame))}</p>'
    )


def _scatter(frame: pd.DataFrame) -> str:
    """SVG: WER (y) against RTFx (x, log-free linear), one labelled dot per run."""
    points = frame.dropna(subset=["WER %", "RTFx"])
    if points.empty:
        return '<p class="muted">No timed runs to plot.</p>'
    width, height, pad = 560, 260, 40
    x_max = max(points["RTFx"].max() * 1.1, 1.0)
    y_max = max(points["WER %"].max() * 1.2, 1.0)
    sx = lambda v: pad + (width - 2 * pad) * v / x_max  # noqa: E731
    sy = lambda v: height - pad - (height - 2 * pad) * v / y_max  # noqa: E731
    parts = [
        f'<svg class="plot wer-rtfx" width="{width}" height="{height}" role="img" '
        f'aria-label="WER against RTFx"><line x1="{pad}" y1="{height - pad}" x2="{width - pad}" '
        f'y2="{height - pad}" stroke="#999"/><line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" '
        f'stroke="#999"/><text x="{width / 2}" y="{height - 8}">RTFx (higher is faster)</text>'
        f'<text x="4" y="{pad - 12}">WER % (lower is better)</text>'
        f'<text x="{pad}" y="{height - pad + 14}">0</text><text x="{width - pad}" y="{height - pad + 14}">'
        f'{x_max:.0f}</text><text x="4" y="{pad + 4}">{y_max:.0f}</text>'
    ]
    legend = []
    for number, (_, r) in enumerate(points.iterrows(), start=1):  # numbered dots: labels never collide
        x, y = sx(r["RTFx"]), sy(r["WER %"])
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="#3a6ea5"><title>{_e(r["Implementation"])}: '
            f"WER {r['WER %']:.2f} %, RTFx {r['RTFx']:.1f}</title></circle>"
            f'<text x="{x + 5:.1f}" y="{y - 5 - 9 * ((number - 1) % 2):.1f}">{number}</text>'
        )
        legend.append(f"<li>{_e(r['Implementation'])}: WER {r['WER %']:.2f} %, RTFx {r['RTFx']:.1f}</li>")
    return "".join(parts) + f'</svg><ol class="plot-legend">{"".join(legend)}</ol>'


def _qoi_bars(frame: pd.DataFrame) -> str:
    bars = frame.dropna(subset=["QoI %"])
    if bars.empty:
        return '<p class="muted">No reference: QoI not computed.</p>'
    row_h, width, label_w = 22, 560, 220
    parts = [f'<svg class="plot qoi" width="{width}" height="{row_h * len(bars) + 10}" role="img" aria-label="QoI">']
    for i, (_, r) in enumerate(bars.iterrows()):
        w = (width - label_w - 60) * r["QoI %"] / 100.0
        reference = bool(r.get("Reference"))  # 100 % by definition: drawn apart, labelled, not a result
        name = _e(r["Implementation"]) + (" (reference)" if reference else "")
        fill = "#bbbbbb" if reference else "#6aa56a"
        weight = ' font-weight="bold"' if reference else ""
        parts.append(
            f'<text x="0" y="{i * row_h + 15}"{weight}>{name}</text>'
            f'<rect x="{label_w}" y="{i * row_h + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{fill}"/>'
            f'<text x="{label_w + w + 4:.1f}" y="{i * row_h + 15}">{r["QoI %"]:.1f} %</text>'
        )
    return "".join(parts) + "</svg>"


def alignment_html(transcript: str, hypothesis_text: str, normalizer: str) -> str:
    """The word alignment of a hypothesis against the transcript (normalized), errors marked."""
    ref, hyp = normalize(transcript, normalizer), normalize(hypothesis_text, normalizer)
    if not ref.split() or not hyp.split():
        marked = [f'<span class="del">{_e(w)}</span>' for w in ref.split()]
        marked += [f'<span class="ins">{_e(w)}</span>' for w in hyp.split()]
        return " ".join(marked)
    out = jiwer.process_words(ref, hyp)
    transcript_words, hyp_words = out.references[0], out.hypotheses[0]
    marked = []
    for chunk in out.alignments[0]:
        r = transcript_words[chunk.ref_start_idx : chunk.ref_end_idx]
        h = hyp_words[chunk.hyp_start_idx : chunk.hyp_end_idx]
        if chunk.type == "equal":
            marked += [_e(w) for w in r]
        elif chunk.type == "substitute":
            marked += [f'<span class="sub" title="was: {_e(a)}">{_e(b)}</span>' for a, b in zip(r, h)]
        elif chunk.type == "delete":
            marked += [f'<span class="del">{_e(w)}</span>' for w in r]
        else:
            marked += [f'<span class="ins">{_e(w)}</span>' for w in h]
    return " ".join(marked)


EXPLORER_ROWS = 500  # regressed examples shown per comparison in the explorer


def _wer_increase(example) -> Optional[float]:
    if example.reference_wer is None or example.candidate_wer is None:
        return None
    return example.candidate_wer - example.reference_wer


def _explorer(comparison: Comparison) -> str:
    # the worst first (by Δ errors, then id), at most EXPLORER_ROWS: a million-example run stays a readable page
    regressed = comparison.result.worst(min(comparison.result.regressed, EXPLORER_ROWS))
    coverage = comparison.candidate.coverage
    title = f"{_e(comparison.candidate.name)} vs {_e(comparison.reference.name)}" + (
        "" if coverage.finished else f' <span class="status unfinished">({_e(coverage)})</span>'
    )
    if not regressed:
        return f'<h3>{title}</h3><p class="muted">No regressed examples.</p>'
    normalizer = comparison.reference.normalizer
    ids = {e.id for e in regressed}
    ref_timed, cand_timed = timed_predictions(comparison.reference, ids), timed_predictions(comparison.candidate, ids)
    rows, flags = [], explorer_flags(comparison.candidate, normalizer)
    for e in regressed:
        rows.append(
            f'<tr class="regressed" id="{_e(comparison.candidate.name)}--{_e(e.id)}" '
            f'data-flags="{_e(" ".join(flags(e.id)))}"><td>{_e(e.id)}</td>'
            f'<td class="num" data-value="{e.delta_errors}">+{e.delta_errors}</td>'
            f"{_num(_wer_increase(e), 1)}"
            f"{_num(e.reference_wer, 1)}{_num(e.candidate_wer, 1)}"
            f'<td class="transcript">{_e(e.transcript)}</td>'
            f'<td class="hyp-ref">{_e(e.reference_hypothesis)}<br><small>{alignment_html(e.transcript, e.reference_hypothesis, normalizer)}</small></td>'  # noqa: E501
            f'<td class="hyp-cand">{_e(e.candidate_hypothesis)}'
            f'{" <b>(failed)</b>" if e.candidate_failed else ""}<br><small class="alignment">'
            f"{alignment_html(e.transcript, e.candidate_hypothesis, normalizer)}</small>"
            f"{words_html(ref_timed.get(e.id), cand_timed.get(e.id), normalizer)}</td></tr>"
        )
    head = (
        "<tr><th>Example</th><th>Δ errors</th><th>Δ WER (points)</th><th>Ref WER %</th><th>Cand WER %</th>"
        "<th>Transcript</th>"
        "<th>Reference output (aligned)</th><th>Candidate output (aligned)</th></tr>"
    )
    shown = "" if len(regressed) == comparison.result.regressed else f" (the {len(regressed)} worst shown)"
    return (
        f"<h3>{title}: {comparison.result.regressed} regressed of {comparison.result.joined}{shown}</h3>"
        f'<table class="sortable explorer"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
    )


def formatting_diff_html(reference: str, candidate: str) -> str:
    """The candidate's raw output with the tokens (words and punctuation marks, case kept) that differ from the
    reference run's marked: what a formatting-only change looks like."""
    from rapidfuzz.distance import Levenshtein

    from ..scoring.formatting import tokens

    ref, cand = tokens(reference), tokens(candidate)
    marked = []
    for op in Levenshtein.opcodes(ref, cand):
        part = cand[op.dest_start : op.dest_end]
        if op.tag == "equal":
            marked += [_e(t) for t in part]
        elif part:
            marked += [f'<span class="{"ins" if op.tag == "insert" else "sub"}">{_e(t)}</span>' for t in part]
        else:
            marked += [f'<span class="del">{_e(t)}</span>' for t in ref[op.src_start : op.src_end]]
    return " ".join(marked)


def _formatting_drift(comparison: Comparison) -> str:
    """The examples whose output differs from the reference run's in formatting only (the first ones by id)."""
    parity = comparison.formatting_drift or {}
    ids = set(parity.get("drift_ids") or ())
    if not ids:
        return ""
    shown = {e.id: e for e in comparison.result.examples if e.id in ids}
    rows = "".join(
        f"<tr><td>{_e(i)}</td><td>{_e(shown[i].reference_hypothesis)}</td>"
        f"<td>{formatting_diff_html(shown[i].reference_hypothesis, shown[i].candidate_hypothesis)}</td></tr>"
        for i in sorted(shown)
    )
    title = f"{_e(comparison.candidate.name)} vs {_e(comparison.reference.name)}"
    more = "" if len(ids) == parity["drift_examples"] else f" (the first {len(ids)} shown)"
    return (
        f"<h3>{title}: formatting differs on {parity['drift_examples']} of {parity['examples']} examples whose "
        f'words agree{more}</h3><table class="sortable drift"><thead><tr><th>Example</th>'
        "<th>Reference output</th><th>Candidate output (formatting differences marked)</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def render_html(
    frame: pd.DataFrame,
    runs: list[StoredRun],
    references: dict[str, StoredRun],
    title: str = "Whisper leaderboard",
    stamp: Optional[str] = None,
) -> str:
    """The whole report as one HTML document (``stamp``: when it was made, default now)."""
    stamp = stamp or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sections = [f'<h1>{_e(title)}</h1><p class="muted">Generated by whisperbench on {stamp}.</p>']
    for form, heading in (("short", "Short-form (≤ 30 s per example)"), ("long", "Long-form (> 30 s)")):
        part = frame[frame["Form"] == form] if not frame.empty else frame
        sections.append(f"<h2>{heading}</h2>")
        if part.empty:
            sections.append('<p class="muted">No runs.</p>')
            continue
        sections += [
            _leaderboard_table(part),
            "<h3>WER against speed</h3>",
            _scatter(part),
            "<h3>QoI against the reference</h3>",
            _qoi_bars(part),
        ]
    languages = language_frame(runs, references)
    if not languages.empty:
        sections += ["<h2>By language</h2>", _language_table(languages)]
    sections += [*sections_html(frame), timing_bars(frame), robustness_html(robustness_frame(runs, references))]
    sections.append(speed_html(runs, references))
    sections += [streaming_html(runs, references), noise_html(noise_frame(runs))]
    sections.append(
        '<h2>Regression explorer</h2><p class="legend">Alignment against the normalized transcript: '
        '<span class="sub">substitution</span><span class="del">deletion</span>'
        '<span class="ins">insertion</span>. Click a column to sort.</p>' + FILTER_HTML
    )
    explorer: list[str] = []
    drift: list[str] = []
    for run in runs:
        reference = references.get(run.dataset_hash)
        if reference is not None and reference is not run:
            comparison = compare_runs(reference, run)
            explorer.append(_explorer(comparison))
            drift.append(_formatting_drift(comparison))
    sections += explorer or ['<p class="muted">No candidate runs with a reference.</p>']
    if any(drift):
        sections += [
            '<h2>Formatting drift</h2><p class="legend">Outputs whose normalized words equal the reference '
            "run's but whose punctuation, casing or numbers differ (QoI cannot see them): "
            '<span class="sub">changed</span><span class="ins">added</span><span class="del">dropped</span>.</p>',
            *drift,
        ]
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{STYLE}</style></head><body>{''.join(sections)}<script>{SORT_SCRIPT}{FILTER_SCRIPT}</script></body></html>"
    )


def write_html(
    path: str, frame: pd.DataFrame, runs: list[StoredRun], references: dict[str, StoredRun], title: Optional[str] = None
) -> None:
    """Write the HTML report (:func:`render_html`) to ``path``."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render_html(frame, runs, references, title or "Whisper leaderboard"))
