"""The leaderboard: one table for short-form and one for long-form datasets, from run stores."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from ..scoring import Interval, wer_interval
from ..scoring.engine import rescored
from ..scoring.figures import table_figures
from ..scoring.metrics import (
    Metric,
    MetricContext,
    column_metrics,
    displayed_metrics,
    metric_named,
    nested_metrics,
    run_level_metrics,
    run_metrics,
    stored_options,
)
from ..scoring.table import column as table_column
from ..scoring.table import metric_values
from ..store.runs import StoredRun
from .compare import compare_runs, run_level_cells
from .escape import md_cell
from .pairings import INTERVALS, Paired, paired_figures, pairing_cells
from .sections import flat_values, value_column
from .speed import busy_why
from .weights import english_only_languages, english_only_note, model_label, size_mb

REFERENCES_FILE = "references.json"  # in a runs folder: the reference runs its maker (e.g. the demo) used


def pick_references(
    runs: list[StoredRun], names: Iterable[str] = (), adapter: str | None = None
) -> dict[str, StoredRun]:
    """Reference run per dataset content hash: a run named in ``names``, else a finished run of ``adapter`` — the
    one labelled exactly ``adapter`` (no options) first, then the shortest label, then by name: never an accident
    of sort order, never a stopped or partial run."""
    wanted = set(names)
    chosen: dict[str, StoredRun] = {}
    for run in runs:
        if run.name in wanted:
            chosen[run.dataset_hash] = run
    if adapter:

        def plainness(run: StoredRun) -> tuple:
            label = run.meta.label or ""
            return (label != adapter, len(label), run.name)

        for run in sorted((r for r in runs if r.meta.adapter == adapter and r.coverage.finished), key=plainness):
            chosen.setdefault(run.dataset_hash, run)
    return chosen


def default_references(runs: list[StoredRun], runs_dir: str | Path, adapter: str | None) -> dict[str, StoredRun]:
    """The references of a report given none: those recorded in ``runs_dir`` (by the demo), else ``adapter``'s
    plainest run; finished runs only (a stopped or partial run is never a reference)."""
    finished = [run for run in runs if run.coverage.finished]
    return pick_references(finished, recorded_references(runs_dir), adapter)


def describe_references(references: dict[str, StoredRun]) -> list[str]:
    """One line per dataset saying which run is its reference (what a report prints), or that there is none."""
    if not references:
        return ["no finished reference run: QoI not computed (name one with --reference)"]
    return [
        f"reference for {run.meta.dataset.name}: {run.name} ({run.meta.label or run.meta.adapter}, {run.coverage})"
        for run in sorted(references.values(), key=lambda r: (r.meta.dataset.name, r.name))
    ]


def _figures(run: StoredRun, normalizer: str) -> dict:
    """The run's figures the table shows (WER, RTFx, examples, failures): summary.json's, stored when the run was
    scored, where it was scored with ``normalizer``; else its score table's under ``normalizer`` (RTFx, which no
    normalizer changes, still the stored one)."""
    stored = run.summary
    if stored is not None and stored.normalizer == normalizer:
        return {name: getattr(stored, name) for name in FIGURES}
    figures = table_figures(run.score_table(normalizer))
    return {name: figures[name] for name in FIGURES} | ({"rtfx": stored.rtfx} if stored is not None else {})


#: the figures of :func:`_figures` (summary.json's keys)
FIGURES = ("wer", "rtfx", "num_examples", "num_failed")


def _paired(run: StoredRun, reference: StoredRun | None, confidence: float) -> dict[str, Paired]:
    """The run's paired figures against its dataset's reference (:mod:`whisperbench.reports.pairings`); the
    reference's own row only those where higher is better (a share of examples no worse: QoI's 100 %), never a
    difference, ratio or parity of a run with itself."""
    if reference is None:
        return {}
    keep = (lambda pairing: pairing.better == "higher") if reference is run else None
    return paired_figures(compare_runs(reference, run), confidence, keep)


def interval_cells(paired: dict[str, Paired]) -> dict[str, Interval | None]:
    """``{"<heading> CI": interval}`` of every declared pairing of a kind with an interval (``QoI CI``); None
    where this comparison has none."""
    cells: dict[str, Interval | None] = {ci_heading(heading): None for heading in pairing_cells({}, INTERVALS)}
    for figure in paired.values():
        if figure.interval is not None and figure.confidence is not None:
            cells[ci_heading(figure.heading)] = Interval(*figure.interval, figure.confidence)
    return cells


def ci_heading(heading: str) -> str:
    """The column of a figure's interval: ``QoI %`` -> ``QoI CI``.

    >>> ci_heading("QoI %"), ci_heading("zcount.more_z")
    ('QoI CI', 'zcount.more_z CI')
    """
    return f"{heading.removesuffix(' %')} CI"


def _metric_values(run: StoredRun, normalizer: str) -> dict:
    """The registered metrics' values (hallucination, timing…): summary.json's when the run was scored with
    ``normalizer``, else computed afresh from its predictions."""
    if normalizer == run.normalizer and run.summary is not None:
        return dict(run.summary.metrics)
    scored = [rescored(p, normalizer) for p in run.predictions]
    options = stored_options(run.summary.metrics if run.summary else {})  # the thresholds it was scored with
    return run_metrics(scored, MetricContext(normalizer, run.form, options)) | metric_values(
        run.score_table(normalizer), nested_metrics()
    )


def recorded_references(runs_dir: str | Path) -> list[str]:
    """The reference run names recorded in ``runs_dir`` (by the demo), or none."""
    path = Path(runs_dir) / REFERENCES_FILE
    try:
        return [str(name) for name in json.loads(path.read_text(encoding="utf-8")).get("references", [])]
    except (OSError, ValueError, AttributeError):
        return []


def record_references(runs_dir: str | Path, names: Iterable[str]) -> None:
    """Record ``names`` as the reference runs of ``runs_dir`` (the demo's choice, read back by ``report``)."""
    from ..core.json_files import write_json_atomic

    write_json_atomic(Path(runs_dir) / REFERENCES_FILE, {"references": sorted(set(names))})


def leaderboard_frame(
    runs: list[StoredRun], references: dict[str, StoredRun], confidence: float = 0.95
) -> pd.DataFrame:
    """One row per run: WER (normalized, corpus-level), QoI against its dataset's reference, RTFx,
    with bootstrap confidence intervals (examples resampled, seeded) for WER and QoI."""
    rows = []
    for run in runs:
        reference = references.get(run.dataset_hash)
        normalizer = reference.normalizer if reference else run.normalizer
        summary = _figures(run, normalizer) | _metric_values(run, normalizer)
        wer_ci = headline_interval(run.score_table(normalizer), metric_named("wer"), confidence)
        paired = _paired(run, reference, confidence)
        rows.append(
            {
                "Form": run.form,
                "Implementation": run.meta.label or run.meta.adapter,
                "Reference": reference is run,
                "Model": model_label(run.meta),
                "Warning": english_only_note(english_only_languages(run)),
                "Size MB": size_mb(run.meta),
                "Dataset": run.meta.dataset.name,
                "WER %": summary["wer"],
                "WER CI": wer_ci,
                **pairing_cells(paired),  # QoI %, Format drift %…: every metric's declared pairing
                **interval_cells(paired),  # QoI CI…: each pairing's interval where it has one
                "RTFx": summary["rtfx"],
                "RTFx reliable": busy_why(run) is None,
                "Busy": busy_why(run),
                "Examples": summary["num_examples"],
                "Failed": summary["num_failed"],
                "Status": str(run.coverage),
                "Finished": run.coverage.finished,
                "Long-form algorithm": run.meta.adapter_info.get("long_form_algorithm", ""),
                **metric_cells(run.score_table(normalizer)),
                **{value_column(metric): summary.get(metric.name) for metric in displayed_metrics()},
                **run_level_cells(summary, displayed=False),  # a run-level metric without a section: its headline
                "Run": run.name,
            }
        )
    frame = pd.DataFrame(rows)
    if not frame.empty:
        # a stopped or partial run's WER covers only what it stored: it never tops its dataset's table
        frame = frame.assign(_unfinished=~frame["Finished"].astype(bool))
        frame = frame.sort_values(["Form", "Dataset", "_unfinished", "WER %", "Implementation"], na_position="last")
        frame = frame.drop(columns="_unfinished")
    return frame.reset_index(drop=True)


def metric_cells(table) -> dict[str, float | None]:
    """Each per-example metric's headline value for one run (a column headed by its ``label``: "CER %", "formatting"),
    the core WER aside (the fixed "WER %" column)."""
    values = metric_values(table)
    return {metric.label: metric.headline_of(values.get(metric.name)) for metric in column_metrics()}


def headline_interval(table, metric: Metric, confidence: float = 0.95):
    """The bootstrap interval of ``metric``'s headline when it is a pooled rate (its ``ratios``: WER, CER, F-WER…),
    resampling the run's examples; None for any other headline."""
    pair = metric.ratios.get(metric.headline or "")
    names = [f"{metric.name}.{part}" for part in pair] if pair else []
    if not names or any(name not in table.column_names for name in names):
        return None
    errors, units = (np.nan_to_num(table_column(table, name).astype(float)) for name in names)
    return wer_interval(errors, units, confidence)


def shown_metrics(frame: pd.DataFrame) -> list[Metric]:
    """The per-example metrics with a column of their own in a leaderboard frame that some run has a value of, in
    registry order."""
    return [m for m in column_metrics() if m.label in frame and frame[m.label].notna().any()]


def run_level_columns(frame: pd.DataFrame) -> list[str]:
    """The columns of run-level metrics without a section of their own (:func:`run_level_cells`) that some run has
    a number in, in the frame's order."""
    names = {m.heading or m.name for m in run_level_metrics() if m.display is None}
    return [c for c in frame.columns if (c in names or str(c).split(".")[0] in names) and frame[c].notna().any()]


def column_label(metric: Metric) -> str:
    """The heading that names a metric's figure and its unit: its ``heading`` ("CER %"), else, for a pooled rate,
    its headline spelt as a figure ("f_wer" -> "F-WER %"), else its name.

    >>> column_label(metric_named("formatting")), column_label(metric_named("cer"))
    ('F-WER %', 'CER %')
    """
    if metric.heading:
        return metric.heading
    if metric.headline and metric.headline in metric.ratios:
        return f"{metric.headline.upper().replace('_', '-')} %"
    return metric.name


def metric_columns(frame: pd.DataFrame) -> list[str]:
    """The headings of :func:`shown_metrics`' columns."""
    return [m.label for m in shown_metrics(frame)]


def model_cell(frame: pd.DataFrame) -> list[str]:
    """The Model column as the tables show it: the model, and its warning when it has one (⚠ English-only…)."""
    warnings = frame["Warning"] if "Warning" in frame else [""] * len(frame)
    return [f"{model} {warning}" if warning else str(model) for model, warning in zip(frame["Model"], warnings)]


def flat_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard with each CI split into numeric low/high columns (for CSV and pandas)."""
    flat = frame.copy()
    intervals = ci_columns(frame)
    for name in intervals:
        flat[f"{name} low"] = [ci.low if isinstance(ci, Interval) else None for ci in frame[name]]
        flat[f"{name} high"] = [ci.high if isinstance(ci, Interval) else None for ci in frame[name]]
    for metric in displayed_metrics():  # a section's value as one numeric column per displayed key
        column = value_column(metric)
        if column in flat:
            values = [flat_values(v if isinstance(v, dict) else None, metric) for v in flat.pop(column)]
            flat = flat.assign(**{name: [v[name] for v in values] for name in values[0]}) if values else flat
    return flat.drop(columns=intervals, errors="ignore")


def ci_columns(frame: pd.DataFrame) -> list[str]:
    """The frame's interval columns (WER's and each pairing's: ``WER CI``, ``QoI CI``…)."""
    return [name for name in frame.columns if str(name).endswith(" CI")]


def _fmt(value, digits: int) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "–"
    return f"{value:.{digits}f}"


def _fmt_ci(interval) -> str:
    return (
        "–"
        if interval is None or (isinstance(interval, float) and pd.isna(interval))
        else f"{interval.low:.1f}–{interval.high:.1f}"
    )


#: the markdown document's length at most (characters): a GitHub comment or Actions job summary holds 65,536
MARKDOWN_LIMIT = 60_000
#: of which the leaderboard's tables may take this much; the sections after it take what is left, each whole or
#: replaced by one line pointing at the HTML report
LEADERBOARD_BUDGET = 45_000
#: the compact table's columns (the rest of each run is in the HTML report and the CSV)
COMPACT = ["Implementation", "Model", "Size MB", "Dataset", "WER % (95% CI)", "QoI % (95% CI)", "RTFx", "Status", "Run"]


def _with_ci(value, interval, digits: int) -> str:
    figure = _fmt(value, digits)
    return figure if figure == "–" or _fmt_ci(interval) == "–" else f"{figure} ({_fmt_ci(interval)})"


def _table_lines(frame: pd.DataFrame) -> list[str]:
    """The compact leaderboard's rows as markdown lines (the header and its rule first)."""
    rows = []
    for (_, r), model in zip(frame.iterrows(), model_cell(frame)):
        name = f"**{md_cell(r['Implementation'])}** (reference)" if r["Reference"] else md_cell(r["Implementation"])
        rtfx = _fmt(r["RTFx"], 1)
        busy = " ⚠ busy" if isinstance(r.get("Busy"), str) and rtfx != "–" else ""
        cells = [
            name,
            md_cell(model),
            _fmt(r.get("Size MB"), 1),
            md_cell(r["Dataset"]),
            _with_ci(r["WER %"], r["WER CI"], 2),
            _with_ci(r["QoI %"], r["QoI CI"], 1),
            rtfx + busy,
            md_cell(r["Status"]),
            f"`{md_cell(r['Run'])}`",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return ["| " + " | ".join(COMPACT) + " |", "|" + "---|" * len(COMPACT), *rows]


def _within(frame: pd.DataFrame, lines: list[str], budget: int) -> tuple[list[str], int]:
    """The table's lines cut to ``budget`` characters: the references and each dataset's best runs by WER kept
    first (round by round: every dataset's first, then second…), in the table's order; and how many were left out."""
    head, rows = lines[:2], lines[2:]
    if sum(len(line) + 1 for line in lines) <= budget:
        return lines, 0
    rank = frame.groupby("Dataset", sort=False).cumcount().to_numpy() + (~frame["Reference"].astype(bool)).to_numpy()
    order = sorted(range(len(rows)), key=lambda i: (rank[i], i))
    used, kept = sum(len(line) + 1 for line in head), set()
    for i in order:
        if used + len(rows[i]) + 1 > budget:
            break
        used += len(rows[i]) + 1
        kept.add(i)
    return head + [rows[i] for i in sorted(kept)], len(rows) - len(kept)


def render_markdown(
    frame: pd.DataFrame,
    references: dict[str, StoredRun],
    title: str = "Whisper leaderboard",
    stamp: str | None = None,
) -> str:
    """The markdown leaderboard: short-form and long-form tables, with how the figures were made (``stamp``:
    when, default now; a fixed one makes the same runs give the same text)."""
    stamp = stamp or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    refs = ", ".join(sorted({f"`{md_cell(r.name)}`" for r in references.values()})) or "none (QoI not computed)"
    parts = [f"# {md_cell(title)}", "", f"Generated by whisperbench on {stamp}. Reference run(s): {refs}.", ""]
    tables = []
    for form, heading in (("short", "Short-form (≤ 30 s per example)"), ("long", "Long-form (> 30 s)")):
        part = frame[frame["Form"] == form] if not frame.empty else frame
        if part.empty:
            continue  # a form without runs gets no section
        share = LEADERBOARD_BUDGET * len(part) // len(frame)  # each form its share of the budget, by its runs
        lines, left_out = _within(part, _table_lines(part), share)
        tables.append("\n".join(lines))
        parts += [f"## {heading}", "", tables[-1], ""]
        if left_out:
            parts += [
                f"_{left_out} more run(s), the worst of their dataset on WER, left out to fit a pull request's "
                "comment: the HTML report and the CSV have every run._",
                "",
            ]
    if not tables:
        parts += ["_No runs._", ""]
    return "\n".join(parts + [_footnotes("\n".join(tables)), ""])


def _footnotes(tables: str) -> str:
    """How the figures were made; a note on a mark (⚠ busy, ⚠ English-only, Format drift) only where it appears."""
    notes = [
        "WER: Σ(substitutions + deletions + insertions) / Σ transcript words over Whisper-normalized text; "
        "failed examples count as empty hypotheses. QoI: % of examples whose WER is no higher than the "
        "reference's on the same example (joined by id). 95% CI: bootstrap over examples (2000 resamples, "
        "seed 0; above 50,000 examples the resampled sums are drawn from their normal limit).",
        "RTFx: Σ audio seconds / Σ inference seconds, model load and warm-up excluded; Status: examples stored of "
        "the dataset's, and whether the run finished (a stopped run's figures cover only what it stored). Format "
        "drift, CER, F-WER and the other metrics' columns: the HTML report and the CSV.",
        "⚠ busy: other processes kept the machine busy during that run (load or CPU steal recorded in its "
        "run.json): its speed is not comparable."
        if "⚠ busy" in tables
        else "",
        "Size MB: the weights as the implementation loaded them (its file or folder on disk: a conversion in that "
        "format's precision, e.g. openai-whisper's float32 copy of float16 weights).",
        "⚠ English-only model: a model that transcribes English only (a name ending in .en, or its vocabulary) on "
        "examples labelled in other languages: their WER says nothing of the implementation."
        if "English-only" in tables
        else "",
    ]
    return " ".join(note for note in notes if note)
