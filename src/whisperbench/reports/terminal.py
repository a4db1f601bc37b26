"""Answers in the terminal (``compare --examples N``): the worst regressions as an aligned word diff of the
transcript, the reference run's output and the candidate's, coloured where the terminal takes colour.

Each output is aligned against the normalized transcript (the alignment WER counts); the two alignments are
merged on the transcript's words, so a column holds one transcript word and what each run wrote for it, and a
word a run inserted gets a column of its own. Without colour (a pipe, a CI log, ``NO_COLOR``), a substituted word
is marked ``~``, an inserted one ``+`` and a deleted one shows as ``*``, and the legend says so.

>>> rows = align_three("ask not what your country", "ask what your country", "ask not what you country can")
>>> [" ".join(cell.text or "-" for cell in row) for row in rows]
['ask not what your country -', 'ask *** what your country -', 'ask not what you country can']
>>> [cell.kind for cell in rows[2]]
['equal', 'equal', 'equal', 'sub', 'equal', 'ins']
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

import jiwer

from ..scoring import normalize
from .compare import Comparison
from .escape import one_line

#: ANSI colours per kind of cell (substitution, deletion, insertion)
COLOURS = {"sub": "\033[33m", "del": "\033[31m", "ins": "\033[32m"}
#: without colour: the mark before a substituted or inserted word (a deleted word is already ``*``)
MARKS = {"sub": "~", "ins": "+"}
RESET = "\033[0m"
LABELS = ("transcript", "reference", "candidate")


@dataclass(frozen=True)
class Cell:
    """One word of one row: its text ("" where the row has nothing in that column) and how it aligns."""

    text: str
    kind: str = "equal"  # equal, sub, del (a transcript word this run left out), ins, gap (nothing here)


@dataclass
class _Aligned:
    """One output against the transcript: per transcript word what the output has, and its insertions per gap."""

    cells: list[Cell]
    inserted: dict[int, list[str]] = field(default_factory=dict)  # before transcript word i (len: at the end)


def _align(reference: list[str], hypothesis: list[str]) -> _Aligned:
    deleted = [Cell("*" * len(word), "del") for word in reference]
    if not reference or not hypothesis:
        return _Aligned(deleted, {0: list(hypothesis)} if hypothesis else {})
    out = jiwer.process_words(" ".join(reference), " ".join(hypothesis))
    aligned = _Aligned(deleted)
    for chunk in out.alignments[0]:
        words = hypothesis[chunk.hyp_start_idx : chunk.hyp_end_idx]
        if chunk.type == "insert":
            aligned.inserted.setdefault(chunk.ref_start_idx, []).extend(words)
        elif chunk.type in ("equal", "substitute"):
            kind = "equal" if chunk.type == "equal" else "sub"
            for offset, word in enumerate(words):
                aligned.cells[chunk.ref_start_idx + offset] = Cell(word, kind)
    return aligned


def align_three(transcript: str, reference_output: str, candidate_output: str) -> list[list[Cell]]:
    """Three rows of equal length (transcript, reference run, candidate) over the given (normalized) texts."""
    words = transcript.split()
    runs = [_align(words, text.split()) for text in (reference_output, candidate_output)]
    rows: list[list[Cell]] = [[], [], []]
    for gap in range(len(words) + 1):
        inserts = [run.inserted.get(gap, []) for run in runs]
        for j in range(max(len(i) for i in inserts)):
            rows[0].append(Cell("", "gap"))
            for row, inserted in zip(rows[1:], inserts):
                row.append(Cell(inserted[j], "ins") if j < len(inserted) else Cell("", "gap"))
        if gap < len(words):
            rows[0].append(Cell(words[gap]))
            for row, run in zip(rows[1:], runs):
                row.append(run.cells[gap])
    return rows


def _shown(cell: Cell, colour: bool) -> str:
    """The cell's text as printed: marked by its kind when there is no colour to tell it."""
    text = one_line(cell.text)
    return text if colour or not text else MARKS.get(cell.kind, "") + text


def _paint(cell: Cell, width: int, colour: bool) -> str:
    text = _shown(cell, colour).ljust(width)
    return f"{COLOURS[cell.kind]}{text}{RESET}" if colour and cell.kind in COLOURS else text


def render_alignment(
    rows: list[list[Cell]], colour: bool = False, width: int | None = None, labels: tuple[str, ...] = LABELS
) -> str:
    """The aligned rows as text, wrapped at ``width`` columns (default: the terminal's), each line labelled."""
    width = width or shutil.get_terminal_size((100, 24)).columns
    label_width = max(len(label) for label in labels) + 2
    widths = [max(len(_shown(row[i], colour)) for row in rows) for i in range(len(rows[0]))] if rows[0] else []
    blocks: list[str] = []
    start = 0
    while start < len(widths) or not blocks:
        end, used = start, label_width
        while end < len(widths) and (end == start or used + widths[end] + 1 <= width):
            used += widths[end] + 1
            end += 1
        lines = [
            label.ljust(label_width) + " ".join(_paint(row[i], widths[i], colour) for i in range(start, end))
            for label, row in zip(labels, rows)
        ]
        blocks.append("\n".join(line.rstrip() for line in lines))
        start = end
    return "\n\n".join(blocks)


def render_regressions(comparison: Comparison, n: int, colour: bool = False, width: int | None = None) -> str:
    """The ``n`` worst regressions of ``comparison`` (most added errors first), each with its error counts and
    an aligned word diff; or a line saying there are none."""
    result = comparison.result
    worst = result.worst(n)
    head = (
        f"{comparison.candidate.name} vs {comparison.reference.name}: {result.regressed} regressed of "
        f"{result.joined}" + (f", the {len(worst)} worst:" if worst else "")
    )
    if not worst:
        return head
    normalizer = comparison.reference.normalizer
    parts = [head]
    for example in worst:
        rates = f"{_rate(example.reference_wer)} → {_rate(example.candidate_wer)} {example.metric.upper()}"
        language = f", {example.language}" if example.language else ""
        failed = ", the candidate failed" if example.candidate_failed else ""
        parts.append(f"\n{one_line(example.id)}: +{example.delta_errors} errors ({rates}{language}{failed})")
        texts = [
            normalize(text, normalizer)
            for text in (example.transcript, example.reference_hypothesis, example.candidate_hypothesis)
        ]
        parts.append(render_alignment(align_three(*texts), colour, width))
    if colour:
        legend = (Cell("substitution", "sub"), Cell("deletion", "del"), Cell("insertion", "ins"))
        key = "  ".join(_paint(cell, 0, colour) for cell in legend) + "  (normalized text; * marks a word left out)"
    else:
        key = "~word substituted  *** left out  +word inserted  (normalized text)"
    parts.append("\n" + key)
    return "\n".join(parts)


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} %"
