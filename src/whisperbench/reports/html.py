"""A self-contained HTML report: leaderboard tables, WER-vs-RTFx and QoI plots, regression explorer.

One file with inline CSS, SVG and a few lines of JavaScript (column sorting: each table by its own column
index, numbers as numbers, cells without a value last); no network access needed to view it. Every
transcript and name is HTML-escaped.
"""

from __future__ import annotations

import html
import re
from datetime import datetime, timezone

import jiwer
import pandas as pd

from ..scoring import normalize
from ..scoring.metrics import Metric
from ..store.runs import StoredRun
from .charts import CHART_STYLE, Bar, Point, grouped_bars, scatter
from .compare import Comparison, compare_runs
from .hallucination import FILTER_HTML, FILTER_SCRIPT, explorer_flags
from .keywords import keywords_html
from .languages import language_frame, language_note, table_order
from .leaderboard import column_label, run_level_columns, shown_metrics
from .noise import noise_frame, noise_html
from .pairings import pairing_cells
from .robustness import robustness_frame, robustness_html
from .sections import Section, sections_html
from .speed import speed_html
from .streaming import latency_of, run_streaming, streaming_html
from .timing import timed_predictions, timing_bars, words_html

STYLE = """
:root{color-scheme:light dark;--fg:#222;--bg:#fff;--muted:#666;--line:#ccc;--head:#f2f2f2;--mark:#fff3c4}
@media (prefers-color-scheme:dark){:root{--fg:#e6e6e6;--bg:#16181c;--muted:#a0a0a0;--line:#444;--head:#262a30;
--mark:#4a3f12}}
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;padding:0 1em;color:var(--fg);background:var(--bg);
max-width:1180px}
a{color:#4a8fd8}h2{margin-top:1.6em;border-bottom:1px solid var(--line)}
table{border-collapse:collapse;margin:.5em 0 1.2em}
th,td{border:1px solid var(--line);padding:3px 7px;vertical-align:top}
th{background:var(--head);cursor:pointer;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums;
white-space:nowrap}small.ci{color:var(--muted)}
tr.ref td{font-weight:600}.muted{color:var(--muted)}.quiet{color:var(--muted);font-style:italic}
.once,.busy-line{background:var(--mark);padding:2px 6px;display:inline-block}
.wide{overflow-x:auto;max-width:100%}td code{word-break:break-all}
.sub{background:#ffe08a;color:#222}.del{background:#f7b6b6;color:#222;text-decoration:line-through}
.ins{background:#b9e6b9;color:#222}
.legend span{padding:0 4px;margin-right:8px}
details.more summary{cursor:pointer;color:var(--muted)}details.more dl{margin:.3em 0;max-width:26em}
details.more dt{font-weight:600;float:left;clear:left;margin-right:.5em}details.more dd{margin:0}
details.words{font-size:12px;margin-top:4px}details.words sub{color:var(--muted)}.moved{color:#a33}
table.glance td{min-width:6em}.pair{display:flex;gap:16px;flex-wrap:wrap}.pair figure{flex:1 1 540px}
figure{margin:.5em 0 1.2em}figcaption{font-weight:600;font-size:13px;margin-bottom:4px}
@media print{body{max-width:none;margin:0;color:#000;background:#fff}details.more{display:none}
th{background:#eee}a{color:#000}}
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
    """The RTFx cell; a ⚠ (its load said once above the table) when the run's machine was busy."""
    cell = _num(row["RTFx"], 1)
    if isinstance(row.get("Busy"), str) and 'data-value=""' not in cell:
        cell = cell.replace("</td>", f' <span class="busy" title="{_e(row["Busy"])}">⚠</span></td>')
    return cell


def _warning(row) -> str:
    """A run's warning beside its model (⚠ English-only model on other languages' labels), or ""."""
    warning = row.get("Warning")
    return f' <span class="busy warning">{_e(warning)}</span>' if isinstance(warning, str) and warning else ""


def _with_ci(value, interval, digits: int) -> str:
    """A figure with its 95 % interval beneath it in small type, sorted by the figure."""
    cell = _num(value, digits)
    if interval is None or 'data-value=""' in cell:
        return cell
    return cell.replace("</td>", f' <small class="ci">{interval.low:.1f}–{interval.high:.1f}</small></td>')


#: the paired figures the leaderboard's own columns show (the rest are under each run's "more")
MAIN = ("QoI %",)


def _details(row, metrics: list[Metric], run_columns: list[str]) -> str:
    """Everything else of one run, behind a disclosure: status, failures, format drift, each metric's column."""
    facts = {
        "Run": f"<code>{_e(row['Run'])}</code>",
        "Status": _e(row["Status"]),
        "Failed": _e(row["Failed"]),
        **{heading: _figure(row.get(heading), 1) for heading in pairing_cells({}) if heading not in MAIN},
        **{column_label(m): _figure(row.get(m.label), 2) for m in metrics},
        **{column: _figure(row.get(column), 2) for column in run_columns},
        "Long-form algorithm": _e(row.get("Long-form algorithm") or "") or None,
    }
    items = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in facts.items() if v not in (None, "–"))
    return f'<td><details class="more"><summary>more</summary><dl>{items}</dl></details></td>'


def _figure(value, digits: int) -> str | None:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    return f"{value:.{digits}f}"


LEADERBOARD_HEAD = (
    '<tr><th title="the implementation (its label); the reference run in bold">Implementation</th><th>Model</th>'
    '<th title="the weights as the implementation loaded them (its file or folder on disk)">Size MB</th>'
    '<th title="word error rate over normalized text, with its 95 % bootstrap interval">WER % <small>95 % CI</small>'
    '</th><th title="% of examples whose WER is no higher than the reference run\'s, with its 95 % interval">QoI % '
    '<small>95 % CI</small></th><th title="Σ audio seconds / Σ inference seconds (higher is faster)">RTFx ×</th>'
    "<th>Examples</th><th>Details</th></tr>"
)


def _leaderboard_table(frame: pd.DataFrame) -> str:
    """One dataset's runs: implementation, model, size, WER and QoI with their intervals, RTFx and examples; the
    rest of each run behind a disclosure. A line above names the runs timed on a busy machine, with the load."""
    metrics, run_columns = shown_metrics(frame), run_level_columns(frame)
    rows = []
    for _, r in frame.iterrows():
        name = _e(r["Implementation"]) + (' <span class="muted">(reference)</span>' if r["Reference"] else "")
        name += "" if r["Finished"] else f' <span class="status unfinished">({_e(r["Status"])})</span>'
        rows.append(
            f'<tr class="{"ref" if r["Reference"] else ""}" data-run="{_e(r["Run"])}"><td>{name}</td>'
            f"<td>{_e(r['Model'])}{_warning(r)}</td>{_num(r.get('Size MB'), 1)}"
            f"{_with_ci(r['WER %'], r['WER CI'], 2)}{_with_ci(r['QoI %'], r['QoI CI'], 1)}{_rtfx(r)}"
            f"{_num(r['Examples'], 0)}{_details(r, metrics, run_columns)}</tr>"
        )
    line = _busy_line(frame)
    return (
        f'{line}<table class="sortable leaderboard"><thead>{LEADERBOARD_HEAD}</thead><tbody>{"".join(rows)}</tbody>'
        "</table>"
    )


def _busy_line(frame: pd.DataFrame) -> str:
    """One line above a table naming its runs timed on a busy machine, with the load ('' when none was): when
    every run was, it says so once, each distinct load once."""
    busy = [(str(r["Run"]), str(r["Busy"])) for _, r in frame.iterrows() if isinstance(r.get("Busy"), str)]
    if not busy:
        return ""
    if len(busy) == len(frame) > 1:
        loads = "; ".join(dict.fromkeys(why for _, why in busy))
        text = f"Every run's RTFx here was measured on a busy machine ({loads}): not comparable, judge on CPU time."
    else:
        text = "RTFx measured on a busy machine: " + "; ".join(f"{run} ({why})" for run, why in busy) + "."
    return f'<p class="busy-line">⚠ {_e(text)}</p>'


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
        f'<div class="wide"><table class="sortable languages"><thead>{head}</thead><tbody>{"".join(rows)}</tbody>'
        f'</table></div><p class="muted">{_e(language_note(frame))}</p>'
    )


def _ci(interval) -> str:
    return "<td>–</td>" if interval is None else f"<td>{interval.low:.1f}–{interval.high:.1f}</td>"


def _series(frame: pd.DataFrame) -> dict[str, int]:
    """A colour per dataset, in the frame's order."""
    return {name: number for number, name in enumerate(dict.fromkeys(frame["Dataset"]))}


def _scatter(frame: pd.DataFrame) -> str:
    """WER % (y) against RTFx (x): one labelled dot per run (its implementation, and its dataset when there are
    several), the reference a grey diamond, ticks on both axes."""
    points = frame.dropna(subset=["WER %", "RTFx"])
    if points.empty:
        return '<p class="muted">No timed runs to plot.</p>'
    colour = _series(points)
    several = len(colour) > 1
    dots = [
        Point(
            f"{r['Implementation']}" + (f" · {r['Dataset']}" if several else ""),
            float(r["RTFx"]),
            float(r["WER %"]),
            bool(r["Reference"]),
            colour[r["Dataset"]],
            f"{r['Run']}: WER {r['WER %']:.2f} %, RTFx {r['RTFx']:.1f}",
        )
        for _, r in points.iterrows()
    ]
    return scatter(
        dots,
        "RTFx × (audio seconds per inference second; right is faster)",
        "WER % (lower is better)",
        "wer-rtfx",
        "WER % against RTFx ×, one point per run (grey diamond: the reference)",
    )


def _qoi_bars(frame: pd.DataFrame) -> str:
    """QoI % per run, grouped by dataset; the reference (100 % by definition) drawn apart in grey."""
    bars = frame.dropna(subset=["QoI %"])
    if bars.empty:
        return '<p class="muted">No reference: QoI not computed.</p>'
    return grouped_bars(
        [
            Bar(str(r["Dataset"]), str(r["Implementation"]), float(r["QoI %"]), reference=bool(r["Reference"]))
            for _, r in bars.iterrows()
        ],
        "QoI % (examples no worse than the reference's; higher is better)",
        "qoi",
        "QoI % per run, by dataset (grey: the reference, 100 % by definition)",
    )


def _language_bars(languages: pd.DataFrame) -> str:
    """The headline error rate and QoI per language as grouped bars (one group per language, a bar per run)."""
    ordered = table_order(languages)
    colour = {name: number for number, name in enumerate(dict.fromkeys(ordered["Implementation"]))}
    charts = []
    for column, axis, css in (
        ("Error %", "WER % (CER % where written without spaces; lower is better)", "lang-error"),
        ("QoI %", "QoI % (examples no worse than the reference's; higher is better)", "lang-qoi"),
    ):
        bars = [
            Bar(
                f"{r['Language']} · {r['Metric']}" if r["Language"] != "macro" else "macro (mean over languages)",
                str(r["Implementation"]),
                float(r[column]),
                colour[r["Implementation"]],
                bool(r["Reference"]),
            )
            for _, r in ordered.iterrows()
            if r[column] is not None and not pd.isna(r[column])
        ]
        title = (
            "WER % per language (CER % where written without spaces)" if column == "Error %" else "QoI % per language"
        )
        charts.append(grouped_bars(bars, axis, css, f"{title}, a bar per run", width=570))
    return '<div class="pair">' + "".join(charts) + "</div>"


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


def _wer_increase(example) -> float | None:
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
    anchor = _anchor(comparison.candidate.name)
    if not regressed:
        return f'<h3 id="{anchor}">{title}</h3><p class="muted">No regressed examples.</p>'
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
        f'<h3 id="{anchor}">{title}: {comparison.result.regressed} regressed of {comparison.result.joined}{shown}</h3>'
        f'<div class="wide"><table class="sortable explorer"><thead>{head}</thead><tbody>{"".join(rows)}</tbody>'
        "</table></div>"
    )


def formatting_diff_html(reference: str, candidate: str) -> str:
    """The candidate's raw output with the tokens (words and punctuation marks, case kept) that differ from the
    reference run's marked: what a formatting-only change looks like."""
    from rapidfuzz.distance import Levenshtein

    from ..scoring.formatting import tokens

    ref, cand = tokens(reference), tokens(candidate)
    marked: list[tuple[str, str]] = []  # (token, its HTML)
    for op in Levenshtein.opcodes(ref, cand):
        part = cand[op.dest_start : op.dest_end]
        if op.tag == "equal":
            marked += [(t, _e(t)) for t in part]
        elif part:
            marked += [(t, f'<span class="{"ins" if op.tag == "insert" else "sub"}">{_e(t)}</span>') for t in part]
        else:
            marked += [(t, f'<span class="del">{_e(t)}</span>') for t in ref[op.src_start : op.src_end]]
    # written as text is: no space before a mark that closes ("Printing, in", not "Printing , in")
    return "".join(("" if i == 0 or _CLOSING.match(t) else " ") + html for i, (t, html) in enumerate(marked))


_CLOSING = re.compile(r"[.,;:!?)\]}%…»”’]")


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


def _comparisons(runs: list[StoredRun], references: dict[str, StoredRun]) -> list[Comparison]:
    """Each run with a reference run on its dataset, compared with it (once: the explorer, the drift and the
    overview use them)."""
    out = []
    for run in runs:
        reference = references.get(run.dataset_hash)
        if reference is not None and reference is not run:
            out.append(compare_runs(reference, run))
    return out


def _anchor(run_name: str) -> str:
    return "explore-" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in run_name)


def _best_worst(part: pd.DataFrame, column: str, higher: bool) -> tuple[str, str]:
    """The best and the worst run of one dataset on ``column`` (name and figure), '–' without a figure."""
    shown = part.dropna(subset=[column])
    if shown.empty:
        return "–", "–"
    ordered = shown.sort_values(column, ascending=not higher)

    def cell(r) -> str:
        return f"{_e(r['Implementation'])} <b>{r[column]:.{1 if 'QoI' in column else 2}f}</b>"

    best, worst = ordered.iloc[0], ordered.iloc[-1]
    return cell(best), (cell(worst) if len(ordered) > 1 else '<span class="muted">one run</span>')


def _overview(frame: pd.DataFrame, comparisons: list[Comparison], sections: list[Section]) -> str:
    """The first screen: per dataset the best and worst run on WER and QoI (the reference aside for QoI), what
    regressed against the reference (examples, linked to the explorer), and which sections below have anything
    to say."""
    regressed: dict[str, list[str]] = {}
    for c in comparisons:
        if c.result.regressed:
            regressed.setdefault(c.candidate.meta.dataset.name, []).append(
                f'<a href="#{_anchor(c.candidate.name)}">{_e(c.candidate.meta.label or c.candidate.name)}</a> '
                f"{c.result.regressed} of {c.result.joined}"
            )
    rows = []
    for dataset, part in frame.groupby("Dataset", sort=False):
        wer_best, wer_worst = _best_worst(part, "WER %", higher=False)
        qoi_best, qoi_worst = _best_worst(part[~part["Reference"].astype(bool)], "QoI %", higher=True)
        worse = "; ".join(regressed.get(str(dataset), [])) or '<span class="muted">none</span>'
        rows.append(
            f'<tr><td>{_e(dataset)}</td><td class="num">{len(part)}</td><td>{wer_best}</td><td>{wer_worst}</td>'
            f"<td>{qoi_best}</td><td>{qoi_worst}</td><td>{worse}</td></tr>"
        )
    speaking = [f'<a href="#{s.key}">{_e(s.title)}</a>' for s in sections if s.speaks]
    quiet = [f'<a href="#{s.key}">{_e(s.title)}</a>' for s in sections if not s.speaks]
    said = "Sections with something to say: " + (" · ".join(speaking) or "none") + "."
    said += f" Nothing to report: {' · '.join(quiet)}." if quiet else ""
    return (
        '<h2 id="overview">At a glance</h2><table class="glance"><thead><tr><th>Dataset</th><th>Runs</th>'
        "<th>Best WER %</th><th>Worst WER %</th><th>Best QoI %</th><th>Worst QoI %</th>"
        "<th>Regressed examples against the reference</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table><p>{said}</p>"
    )


def _form_sections(frame: pd.DataFrame) -> list[str]:
    """The leaderboard of each form (one table per dataset) with its WER-against-speed and QoI charts."""
    parts = []
    for form, heading in (("short", "Short-form (≤ 30 s per example)"), ("long", "Long-form (> 30 s)")):
        part = frame[frame["Form"] == form] if not frame.empty else frame
        parts.append(f'<h2 id="form-{form}">{heading}</h2>')
        if part.empty:
            parts.append('<p class="muted">No runs.</p>')
            continue
        for dataset, rows in part.groupby("Dataset", sort=False):
            parts += [f"<h3>{_e(dataset)}</h3>", _leaderboard_table(rows)]
        parts += ["<h3>WER against speed</h3>", _scatter(part), "<h3>QoI against the reference</h3>", _qoi_bars(part)]
    return parts


def _sections(frame: pd.DataFrame, runs: list[StoredRun], references: dict[str, StoredRun]) -> list[Section]:
    """The sections below the leaderboards, each marked whether it has anything to say."""
    out = []
    languages = language_frame(runs, references)
    if not languages.empty:
        body = _language_bars(languages) + (
            '<details class="more"><summary>Every language and run as a table</summary>'
            + _language_table(languages)
            + "</details>"
        )
        out.append(Section("by-language", "By language", '<h2 id="by-language">By language</h2>' + body))
    for section in sections_html(frame):
        if section.key == "section-timing" and section.speaks:
            section = Section(section.key, section.title, section.html + timing_bars(frame))
        out.append(section)
    for key, title, text in (
        ("keywords", "Keywords", keywords_html(runs)),
        ("robustness", "Robustness", robustness_html(robustness_frame(runs, references))),
        ("section-speed", "Speed", speed_html(runs, references)),
        ("streaming", "Streaming", streaming_html(runs, references) + _latency_chart(runs)),
        ("noise", "Run-to-run noise", noise_html(noise_frame(runs))),
    ):
        if text:
            out.append(Section(key, title, f'<div id="{key}"></div>{text}'))
    return out


def _latency_chart(runs: list[StoredRun]) -> str:
    """Each streaming run's latency percentiles (p50, p90, p99 s) as grouped bars, '' without one."""
    bars = []
    for run in runs:
        latency = latency_of(run_streaming(run))
        if latency is None:
            continue
        name, figure = latency
        for q in ("p50", "p90", "p99"):
            if isinstance(figure.get(q), (int, float)):
                bars.append(Bar(f"{run.name} · {name}", q, float(figure[q]), {"p50": 0, "p90": 1, "p99": 3}[q]))
    if not bars:
        return ""
    return grouped_bars(
        bars, "latency s (lower is better)", "latency", "Streaming latency per run: p50, p90 and p99 (s)"
    )


def render_html(
    frame: pd.DataFrame,
    runs: list[StoredRun],
    references: dict[str, StoredRun],
    title: str = "Whisper leaderboard",
    stamp: str | None = None,
) -> str:
    """The whole report as one HTML document (``stamp``: when it was made, default now): the overview first, the
    leaderboards, then the sections with something to say (the others one sentence each), the explorer."""
    stamp = stamp or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    comparisons = _comparisons(runs, references)
    sections = _sections(frame, runs, references)
    parts = [f'<h1>{_e(title)}</h1><p class="muted">Generated by whisperbench on {stamp}.</p>']
    if not frame.empty:
        parts.append(_overview(frame, comparisons, sections))
    parts += _form_sections(frame)
    parts += [section.html for section in sections]
    parts.append(
        '<h2 id="explorer">Regression explorer</h2><p class="legend">Alignment against the normalized transcript: '
        '<span class="sub">substitution</span><span class="del">deletion</span>'
        '<span class="ins">insertion</span>. Click a column to sort.</p>' + FILTER_HTML
    )
    parts += [_explorer(c) for c in comparisons] or ['<p class="muted">No candidate runs with a reference.</p>']
    drift = [_formatting_drift(c) for c in comparisons]
    if any(drift):
        parts += [
            '<h2>Formatting drift</h2><p class="legend">Outputs whose normalized words equal the reference '
            "run's but whose punctuation, casing or numbers differ (QoI cannot see them): "
            '<span class="sub">changed</span><span class="ins">added</span><span class="del">dropped</span>.</p>',
            *drift,
        ]
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f'<meta name="viewport" content="width=device-width"><style>{STYLE}{CHART_STYLE}</style></head>'
        f"<body>{''.join(parts)}<script>{SORT_SCRIPT}{FILTER_SCRIPT}</script></body></html>"
    )


def write_html(
    path: str, frame: pd.DataFrame, runs: list[StoredRun], references: dict[str, StoredRun], title: str | None = None
) -> None:
    """Write the HTML report (:func:`render_html`) to ``path``."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render_html(frame, runs, references, title or "Whisper leaderboard"))
