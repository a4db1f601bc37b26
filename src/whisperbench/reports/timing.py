"""Timing in reports: the bar plot under the timing metric's section (the section itself is the metric's
:class:`~whisperbench.scoring.metrics.Display`, rendered by :mod:`whisperbench.reports.sections`), the timing
columns of ``compare`` and the gate, the word times of the regression explorer, and SRT / WebVTT subtitles of any
stored run. ``compare``'s figures are the ones summary.json stores (:mod:`whisperbench.scoring.timing` computed
them when the run was scored); a run stored before the metric existed has them computed from its predictions.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from ..core.json_files import safe_file_name
from ..scoring import normalize
from ..scoring.metrics import MetricContext
from ..scoring.timing import METRIC, PARITY_TOLERANCE_S, parity, start_shifts, summarize
from ..store.runs import StoredRun
from ..types import Prediction
from .sections import section_rows
from .subtitles import SUBTITLE_FORMATS

if TYPE_CHECKING:
    import pandas as pd


def run_timing(run: StoredRun) -> dict[str, Any] | None:
    """The run's ``timing`` figures as its summary.json stores them (the metric computed them once, when the run
    was scored); only a run scored before the metric existed has them computed from its predictions, by the same
    function (None: it stored no times; told by its score table, so a run without times is never read whole)."""
    if not run.num_predictions or not pc.any(run.score_table()["timed"]).as_py():
        return None
    stored = run.summary.metrics if run.summary is not None else {}
    if METRIC.name in stored and run.summary is not None and run.summary.normalizer == run.normalizer:
        return stored[METRIC.name]
    return summarize(run.predictions, MetricContext(run.normalizer, run.form))


def timed_predictions(run: StoredRun, ids: set[str]) -> dict[str, Prediction]:
    """The predictions of ``ids`` that carry word times (read a chunk at a time; nothing read when the run's score
    table says it stored no times)."""
    if not ids or not run.num_predictions or not pc.any(run.score_table()["timed"]).as_py():
        return {}
    found: dict[str, Prediction] = {}
    for chunk in run.store.prediction_chunks():
        found.update((p.id, p) for p in chunk if p.id in ids and p.words)
    return found


def _word_line(words: list[dict[str, Any]]) -> str:
    return " ".join(f"{html.escape(str(w.get('word', '')).strip())}<sub>{float(w['start']):.2f}</sub>" for w in words)


def words_html(reference: Prediction | None, candidate: Prediction | None, normalizer: str) -> str:
    """A regressed example's words with their start times (s) from both runs, and the transcript words both got
    right whose starts differ by more than the parity tolerance (100 ms); empty when neither run timed words."""
    if (reference is None or not reference.words) and (candidate is None or not candidate.words):
        return ""
    lines = [
        f"<div>{label}: {_word_line(pred.words) if pred is not None and pred.words else '–'}</div>"
        for label, pred in (("reference run", reference), ("candidate", candidate))
    ]
    if reference is not None and candidate is not None and reference.words and candidate.words:
        shifts = start_shifts(reference, candidate, normalizer, candidate_transcript=reference.transcript)
        words = normalize(reference.transcript, normalizer).split()
        moved = [
            f"{html.escape(words[i])} ({1000 * shift:+.0f} ms)"
            for i, shift in sorted(shifts.items())
            if abs(shift) > PARITY_TOLERANCE_S
        ]
        lines.append(
            f'<div class="moved">{len(moved)} of {len(shifts)} words both got right start more than '
            f"{PARITY_TOLERANCE_S * 1000:.0f} ms apart{': ' + ', '.join(moved) if moved else ''}</div>"
        )
    return f'<details class="words"><summary>word times</summary>{"".join(lines)}</details>'


def timing_bars(frame: pd.DataFrame) -> str:
    """Horizontal bars under the timing section: median and p90 of the utterance-start error, in ms, one pair per
    run of the leaderboard ``frame`` that has them ('' when none has)."""
    _, rows = section_rows(frame, METRIC)
    data = [(r["Run"], r["cells"]["Start err median ms"], r["cells"]["Start err p90 ms"]) for r in rows]
    data = [(run, median, p90) for run, median, p90 in data if median is not None and p90 is not None]
    if not data:
        return ""
    from .charts import Bar, grouped_bars

    bars = [
        Bar(str(run), name, value, series)
        for run, *figures in data
        for (name, series), value in zip((("median", 0), ("p90", 1)), figures)
    ]
    return "<h3>Utterance-start error: median and p90</h3>" + grouped_bars(
        bars,
        "utterance-start error ms (lower is better)",
        "timing",
        "Utterance-start error per run: median and p90 (ms)",
    )


def timing_columns(reference: StoredRun, candidate: StoredRun) -> dict[str, Any]:
    """``compare``'s timing columns: each run's median utterance-start error and the candidate's timing parity
    against the reference ({} when neither stored times)."""
    ref_timing, cand_timing = run_timing(reference), run_timing(candidate)
    if ref_timing is None and cand_timing is None:
        return {}
    shared = parity(reference.predictions, candidate.predictions, reference.normalizer)

    def median(timing: dict | None) -> float | None:
        return ((timing or {}).get("utterance_start_error_ms") or {}).get("median")

    return {
        "ref start err ms": median(ref_timing),
        "cand start err ms": median(cand_timing),
        "timing parity %": shared["within_tolerance"] if shared else None,
        "timing regressed": len(shared["regressed_examples"]) if shared else None,
    }


# ------------------------------------------------------------------------------------------ subtitles


#: a cue made from word times ends after a sentence mark, or at this many words or seconds
CUE_MAX_WORDS = 12
CUE_MAX_S = 6.0


def cues_from_words(words: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Subtitle cues ``{start, end, text}`` from word times (a run decoded without timestamp tokens stores words but
    no segments): a cue ends after a word that ends a sentence, or at :data:`CUE_MAX_WORDS` words or
    :data:`CUE_MAX_S` seconds.

    >>> cues_from_words([{"word": "Hi.", "start": 0.0, "end": 0.4}, {"word": "Bye", "start": 1.0, "end": 1.3}])
    [{'start': 0.0, 'end': 0.4, 'text': 'Hi.'}, {'start': 1.0, 'end': 1.3, 'text': 'Bye'}]
    """
    cues: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    for word in words:
        if current and (len(current) >= CUE_MAX_WORDS or float(word["end"]) - float(current[0]["start"]) > CUE_MAX_S):
            cues.append(current)
            current = []
        current.append(word)
        if str(word["word"]).rstrip().endswith((".", "?", "!")):
            cues.append(current)
            current = []
    if current:
        cues.append(current)
    return [
        {"start": float(c[0]["start"]), "end": float(c[-1]["end"]), "text": " ".join(str(w["word"]) for w in c)}
        for c in cues
    ]


def write_subtitles(run: StoredRun, out_dir: str | Path, fmt: str) -> tuple[list[Path], list[str]]:
    """One ``<id>.<fmt>`` per example that stored segments (else words, grouped into cues by
    :func:`cues_from_words`) in the subtitle format ``fmt``; returns the files and the ids without times."""
    render = SUBTITLE_FORMATS.get(fmt).render
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    written, untimed = [], []
    for pred in run.predictions:
        cues = pred.segments or (cues_from_words(pred.words) if pred.words else None)
        if not cues:
            untimed.append(pred.id)
            continue
        path = folder / f"{safe_file_name(pred.id)}.{fmt}"
        path.write_text(render(cues), encoding="utf-8")
        written.append(path)
    return written, untimed
