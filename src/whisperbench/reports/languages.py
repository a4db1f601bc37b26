"""Per-language results: the headline error rate (WER, or CER for languages written without spaces) and QoI
against the reference, each with its bootstrap CI, and the macro average over languages.

Rows exist only for runs whose examples carry a language label (a manifest's ``language`` column).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..core.languages import headline_metric
from ..scoring import qoi_interval, wer_interval
from ..scoring.arrays import FALSE, text
from ..scoring.figures import by_language, identified_by_language
from ..scoring.table import CHAR_COUNTS, WORD_COUNTS, column
from ..store.runs import StoredRun
from .compare import compare_runs
from .escape import md_cell
from .weights import english_only_on

ENGLISH_ONLY = "⚠ English-only model"  # beside a run whose English-only model met this language's labels


def language_frame(runs: list[StoredRun], references: dict[str, StoredRun], confidence: float = 0.95) -> pd.DataFrame:
    """One row per (run, language): examples, metric, error rate and CI, QoI and CI; plus a ``macro`` row per run
    (the mean over its languages of the error rate and of QoI)."""
    rows = []
    for run in runs:
        reference = references.get(run.dataset_hash)
        normalizer = reference.normalizer if reference else run.normalizer
        table = run.score_table(normalizer)
        languages = sorted(name for name in pc.unique(table["language_label"]).to_pylist() if name)
        if not languages:
            continue
        result = compare_runs(reference, run).result if reference is not None else None
        misused = english_only_on(run.meta, languages)
        identified = _identified(run)
        figures = by_language(table)["languages"]
        per_run = []
        for language in languages:
            errors, units = _headline_counts(table, language)
            part = result.for_language(language) if result is not None else None
            per_run.append(
                {
                    "Implementation": run.meta.label or run.meta.adapter,
                    "Language": language,
                    "Metric": headline_metric(language).upper(),
                    "Examples": figures[language]["num_examples"],
                    "Error %": figures[language]["error_rate"],
                    "Error CI": wer_interval(errors, units, confidence),
                    "QoI %": part.qoi if part is not None else None,
                    "QoI CI": qoi_interval(part, confidence) if part is not None else None,
                    "Reference": reference is run,
                    "Run": run.name,
                    "Dataset": run.meta.dataset.name,
                    "Normalizer": normalizer,
                    "Status": "" if run.coverage.finished else str(run.coverage),  # shown beside an unfinished run
                    "Warning": ENGLISH_ONLY if language in misused else "",
                    "Language ID %": identified.get(language),
                }
            )
        rows += per_run + [_macro(per_run)]
    return pd.DataFrame(rows)


def _identified(run: StoredRun) -> dict[str, float]:
    """Per language label: % of its examples whose language the implementation identified right (failed ones
    count as wrong), when it chose the language itself (summary.json ``language_id`` with reported languages);
    else {} (a forced language, or an implementation that reports none). From summary.json; a run scored before
    it kept them per language is counted from its predictions by the same function that scores them."""
    identified = (run.summary.language_id if run.summary else None) or {}
    if not identified.get("reported"):
        return {}
    by_language = identified.get("by_language")
    if by_language is None:
        by_language = identified_by_language([p for p in run.predictions if p.language_label])
    return {language: row["accuracy"] for language, row in by_language.items()}


def _headline_counts(table: pa.Table, language: str) -> tuple[np.ndarray, np.ndarray]:
    """Per example of ``language``: headline errors and reference units (characters for CER languages)."""
    names = CHAR_COUNTS if headline_metric(language) == "cer" else WORD_COUNTS
    rows = pc.filter(table, pc.fill_null(pc.equal(table["language_label"], text(language)), FALSE))
    hits, subs, dels, ins = (column(rows, name) for name in names)
    return subs + dels + ins, hits + subs + dels


def _macro(rows: list[dict]) -> dict:
    def mean(key: str) -> float | None:
        values = [r[key] for r in rows if r[key] is not None]
        return sum(values) / len(values) if values else None

    return dict(
        rows[0],
        Language="macro",
        Metric="–",
        Examples=sum(r["Examples"] for r in rows),
        Warning="",
        **{
            "Error %": mean("Error %"),
            "Error CI": None,
            "QoI %": mean("QoI %"),
            "QoI CI": None,
            "Language ID %": mean("Language ID %"),
        },
    )


def table_order(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows as the tables show them: by language, then implementation, each run's macro row last."""
    return frame.assign(_macro=frame["Language"] == "macro").sort_values(
        ["_macro", "Language", "Implementation"], kind="stable"
    )


def render_language_markdown(frame: pd.DataFrame, compact: bool = False) -> str:
    """The per-language table (markdown), or "" when no run has language labels. ``compact`` (``compare``, whose
    header names the runs and their dataset): without the Dataset and Run columns, and without Language ID % when
    no run reports one."""
    if frame.empty:
        return ""

    def number(value, digits=2) -> str:
        return "–" if value is None or pd.isna(value) else f"{value:.{digits}f}"

    def interval(ci) -> str:
        return "–" if ci is None or (isinstance(ci, float) and pd.isna(ci)) else f"{ci.low:.1f}–{ci.high:.1f}"

    shown = pd.DataFrame(
        {
            "Language": frame["Language"].map(md_cell),
            "Implementation": [
                (f"**{md_cell(n)}** (reference)" if ref else md_cell(n))
                + (f" ({md_cell(status)})" if status else "")
                + (f" {warning}" if warning else "")
                for n, ref, status, warning in zip(
                    frame["Implementation"], frame["Reference"], frame["Status"], frame["Warning"]
                )
            ],
            "Metric": frame["Metric"],
            "Examples": frame["Examples"].map(str),
            "Error %": frame["Error %"].map(number),
            "Error 95% CI": frame["Error CI"].map(interval),
            "QoI %": frame["QoI %"].map(lambda v: number(v, 1)),
            "QoI 95% CI": frame["QoI CI"].map(interval),
            "Language ID %": frame["Language ID %"].map(lambda v: number(v, 1)),
            "Dataset": frame["Dataset"].map(md_cell),
            "Run": frame["Run"].map(lambda v: f"`{md_cell(v)}`"),
        }
    )
    if compact:
        empty = ["Language ID %"] if (shown["Language ID %"] == "–").all() else []
        shown = shown.drop(columns=["Dataset", "Run", *empty])
    table = shown.loc[table_order(frame).index].to_markdown(index=False, disable_numparse=True)
    return "## By language\n\n" + table + "\n\n" + language_note(frame) + "\n"


def language_note(frame: pd.DataFrame) -> str:
    """What the per-language table's units are and which normalizers scored it (one text for every format)."""
    normalizers = sorted(set(frame["Normalizer"]))
    folded = [n for n in normalizers if "+" in n]
    return (
        "Error %: WER, or CER (characters, spaces left out) for zh, ja, th, lo, my and yue, written without "
        "spaces, and for ko, written with spaces whose use varies between writers (spacing is not counted). "
        "QoI compares the same units. Language ID %: examples whose language the implementation identified right "
        "(– where the language was forced or not reported). macro: the mean over a run's languages. Normalizer: "
        + ", ".join(normalizers)
        + (" (+zh-hans: traditional Chinese characters folded to simplified before scoring)" if folded else "")
        + "."
    )
