"""The keywords of a run, term by term (``scoring/keywords.py`` counts them; docs/keywords.md): the report's table
(worst terms first, with the examples where each was missed), what ``compare`` says of a candidate's keywords (the
paired recall difference and its bootstrap interval, the terms newly missed) and what ``gate --must-keep-keywords``
judges (the terms the reference wrote right in an example and the candidate misses there).
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..scoring.bootstrap import PairedTest, paired_rate_test
from ..scoring.keywords import TermRow, example_terms, missed_terms, term_table
from ..scoring.table import paired_columns
from .escape import md_cell, one_line

if TYPE_CHECKING:
    from ..store.runs import StoredRun

#: a :class:`~whisperbench.reports.compare.Comparison` (compare imports this module, not the other way round)
Comparison = Any

#: examples named per term in a table or a note (the rest counted)
SHOWN = 5


def keyword_examples(run: StoredRun) -> list[tuple[str, str, str, list[str]]]:
    """Each example with terms: id, transcript, hypothesis (empty for a failed one), terms."""
    return [
        (p.id, p.transcript, p.hypothesis if p.status == "ok" else "", terms)
        for p in run.predictions
        if (terms := example_terms(p.extra))
    ]


def run_terms(run: StoredRun) -> list[TermRow]:
    """The run's per-term rows, worst recall first (:func:`~whisperbench.scoring.keywords.term_table`)."""
    return term_table(keyword_examples(run))


def newly_missed(reference: StoredRun, candidate: StoredRun) -> dict[str, list[str]]:
    """``{term: [example ids]}``: where the reference wrote every occurrence of the term right and the candidate
    misses one (examples both runs have; the candidate's terms)."""
    ref = missed_terms(keyword_examples(reference))
    lost: dict[str, list[str]] = {}
    for (example_id, term), missed in missed_terms(keyword_examples(candidate)).items():
        if missed and ref.get((example_id, term)) == 0:
            lost.setdefault(term, []).append(example_id)
    return lost


def describe_lost(lost: dict[str, list[str]]) -> str:
    """``term (ids…), …`` of :func:`newly_missed`, one line."""
    return ", ".join(f"{one_line(term)} ({_ids(ids)})" for term, ids in sorted(lost.items()))


def paired_recall(c: Comparison, confidence: float = 0.95) -> PairedTest | None:
    """Candidate minus reference keyword recall (points) over the examples both runs have terms in, with its paired
    bootstrap interval (``scoring/bootstrap.paired_rate_test``); None without such examples."""
    normalizer = c.reference.normalizer
    tables = c.reference.score_table(normalizer), c.candidate.score_table(normalizer)
    names = ("keywords.true_positives", "keywords.occurrences")
    if any(name not in table.column_names for table in tables for name in names):
        return None
    ref, cand, totals = paired_columns(*tables, *names)
    return paired_rate_test(ref, cand, totals, confidence) if totals.sum() else None


def keyword_notes(c: Comparison) -> list[str]:
    """``compare``'s keyword lines: both recalls, the paired difference and interval, the terms newly missed."""
    sides = c.metrics.get("keywords") or {}
    ref, cand = ((sides.get(side) or {}).get("recall") for side in ("reference", "candidate"))
    if ref is None or cand is None:
        return []
    line = f"keywords: recall {ref:.1f}% → {cand:.1f}%"
    paired = paired_recall(c)
    if paired is not None:
        line += f" (paired {paired.delta:+.1f} points, {paired.interval.confidence:.0%} CI {paired.interval})"
    lost = c.keywords_lost or {}  # computed once per comparison: the gate's keywords.lost reads it too
    return [line] + ([f"keywords newly missed: {describe_lost(lost)}"] if lost else [])


def _ids(ids: list[str]) -> str:
    more = f" +{len(ids) - SHOWN}" if len(ids) > SHOWN else ""
    return ", ".join(one_line(i) for i in ids[:SHOWN]) + more


def _recall(row: TermRow) -> str:
    return "–" if row.recall is None else f"{row.recall:.1f}"


def _runs_with_terms(runs: Iterable[StoredRun]) -> list[tuple[StoredRun, list[TermRow]]]:
    return [(run, rows) for run in runs if (rows := run_terms(run))]


def render_keywords_markdown(runs: Iterable[StoredRun]) -> str:
    """Per run with keywords, its terms as a markdown table, worst first (empty text when no run has any)."""
    parts = []
    for run, rows in _runs_with_terms(runs):
        lines = [
            f"### Keywords of {md_cell(run.name)}",
            "",
            "| Term | Occurrences | Recall % | Missed in |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {md_cell(r.term)} | {r.occurrences} | {_recall(r)} | {md_cell(_ids(r.missed_in))} |" for r in rows
        ]
        parts.append("\n".join(lines))
    return "\n\n## Keywords by term\n\n" + "\n\n".join(parts) + "\n" if parts else ""


def keywords_html(runs: Iterable[StoredRun]) -> str:
    """Per run with keywords, its terms as a sortable HTML table, worst first (empty text when no run has any)."""
    parts = []
    for run, rows in _runs_with_terms(runs):
        body = "".join(
            f'<tr><td>{html.escape(r.term)}</td><td class="num">{r.occurrences}</td>'
            f'<td class="num" data-value="{"" if r.recall is None else r.recall}">{_recall(r)}</td>'
            f"<td>{html.escape(_ids(r.missed_in))}</td></tr>"
            for r in rows
        )
        parts.append(
            f'<h3>Keywords of {html.escape(run.name)}</h3><table class="sortable keywords"><thead><tr><th>Term</th>'
            f"<th>Occurrences</th><th>Recall %</th><th>Missed in</th></tr></thead><tbody>{body}</tbody></table>"
        )
    return "<h2>Keywords by term</h2>" + "".join(parts) if parts else ""
