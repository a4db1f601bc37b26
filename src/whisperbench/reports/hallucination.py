"""Hallucinations in reports: what a candidate does that its reference does not (``compare``, the gate) and the
regression explorer's flags. The measures are :mod:`whisperbench.scoring.hallucination`'s; the per-run counts
are the metric's own report section (its ``Display``: :mod:`whisperbench.reports.sections`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..scoring.hallucination import KINDS, Measures, Thresholds, loop_words_under, loops_stored
from ..scoring.metrics import stored_options
from ..store.runs import StoredRun


def flagged(run: StoredRun, normalizer: str, thresholds: Thresholds = Thresholds()) -> dict[str, set[str]]:
    """Example ids of ``run`` per kind (``loops``, ``bursts``, ``nonspeech_with_output``, ``catastrophic``),
    scored with ``normalizer``; also ``nonspeech`` (every example whose normalized transcript is empty). Read
    from the run's score table; only loops under other than the default loop thresholds are looked for again."""
    table = run.score_table(normalizer)
    measures = Measures.of_table(table)
    loops = None if loops_stored(thresholds) else _loop_words(run, normalizer, thresholds, measures.ids)
    return {kind: set(measures.ids[flag].tolist()) for kind, flag in measures.flags(thresholds, loops).items()}


def _loop_words(run: StoredRun, normalizer: str, thresholds: Thresholds, ids: np.ndarray) -> np.ndarray:
    """Per example id of ``ids``, the words of its loop under ``thresholds`` (0: none)."""
    scored = {p.id: p for p in run.scored(normalizer)}
    return loop_words_under([scored[i] for i in ids.tolist()], thresholds)


@dataclass
class HallucinationDiff:
    """What the candidate hallucinates on examples where the reference does not (sorted ids per kind)."""

    new: dict[str, list[str]] = field(default_factory=dict)  # loops, bursts, nonspeech_with_output, catastrophic
    nonspeech: int = 0  # examples with an empty normalized transcript (in the candidate run)
    nonspeech_with_output: list[str] = field(default_factory=list)  # the candidate's, new or not

    @property
    def nonspeech_output_rate(self) -> float | None:
        """% of non-speech examples on which the candidate wrote something; None without any."""
        return 100.0 * len(self.nonspeech_with_output) / self.nonspeech if self.nonspeech else None

    def to_json(self) -> dict:
        """The new loops and bursts as JSON (``compare --json``)."""
        return {
            "new": self.new,
            "nonspeech_examples": self.nonspeech,
            "nonspeech_with_output": self.nonspeech_with_output,
            "nonspeech_output_rate": self.nonspeech_output_rate,
        }


def run_thresholds(run: StoredRun) -> Thresholds:
    """The hallucination thresholds ``run`` was scored with (``--threshold``, kept in its summary), else the
    defaults."""
    stored = stored_options(run.summary.metrics if run.summary else {})
    return Thresholds.from_options(stored.get("hallucination", {}))


def hallucination_diff(reference: StoredRun, candidate: StoredRun) -> HallucinationDiff:
    """The candidate's hallucinations that the reference does not have on the same example (by id), both judged
    with the reference run's thresholds."""
    normalizer, thresholds = reference.normalizer, run_thresholds(reference)
    ref, cand = flagged(reference, normalizer, thresholds), flagged(candidate, normalizer, thresholds)
    new = {kind: sorted(cand[kind] - ref[kind]) for kind in KINDS}
    return HallucinationDiff(new, len(cand["nonspeech"]), sorted(cand["nonspeech_with_output"]))


def describe_ids(ids: list[str], limit: int = 10) -> str:
    """``a, b, c …`` (at most ``limit`` ids named), or ``none``."""
    return (", ".join(ids[:limit]) + (" …" if len(ids) > limit else "")) if ids else "none"


def explorer_flags(run: StoredRun, normalizer: str) -> Callable[[str], list[str]]:
    """Per example id of ``run``, the kinds of hallucination its output has (``loop``, ``burst``,
    ``nonspeech_output``, ``catastrophic``: the explorer's filter), read from its score table under the default
    thresholds (:func:`flagged`), never rescored."""
    found = flagged(run, normalizer)

    def kinds(example_id: str) -> list[str]:
        return [attr for kind, attr in KINDS.items() if example_id in found[kind]]

    return kinds


#: the regression explorer's filter: show only the rows whose candidate output has one kind of hallucination
FILTER_HTML = (
    '<p><label>Show: <select id="hallucination-filter"><option value="">every regressed example</option>'
    + "".join(f'<option value="{attr}">{attr.replace("_", " ")}</option>' for attr in KINDS.values())
    + "</select></label></p>"
)
FILTER_SCRIPT = """
document.getElementById('hallucination-filter')?.addEventListener('change', ev => {
  const kind = ev.target.value;
  document.querySelectorAll('table.explorer tbody tr').forEach(r => {
    r.style.display = !kind || (r.dataset.flags || '').split(' ').includes(kind) ? '' : 'none'; });
});
"""
