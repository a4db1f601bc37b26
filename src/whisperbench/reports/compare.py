"""Compare stored runs: WER of each and QoI of candidates against a reference, as pandas tables."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import WhisperbenchError
from ..scoring import QoiResult
from ..scoring.formatting import formatting_drift
from ..scoring.metrics import column_metrics, per_example_metrics, registered, run_level_metrics
from ..scoring.qoi_table import qoi_tables
from ..scoring.significance import PairedSignificance, SignificanceSettings, holm, paired_significance
from ..scoring.table import metric_values, table_wer
from ..store.runs import StoredRun
from .hallucination import HallucinationDiff, hallucination_diff
from .keywords import keyword_examples, newly_missed
from .pairings import Paired, paired_figures, pairing_cells
from .speed import SpeedComparison, compare_speed
from .streaming import run_streaming
from .timing import timing_columns
from .weights import weights_relation

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Comparison:
    """A candidate run against a reference run: the per-example QoI result, both WERs, whether the datasets and weights
    match, timing columns, paired significance, Holm-adjusted p-values, per-example metrics on both sides,
    formatting parity and the notes compare prints."""

    reference: StoredRun
    candidate: StoredRun
    result: QoiResult
    reference_wer: float | None
    candidate_wer: float | None
    same_dataset: bool
    weights: str = "unknown"  # see reports.weights.weights_relation
    timing: dict = field(default_factory=dict)  # see reports.timing.timing_columns ({} without stored times)
    #: the sign test, MAPSSWE and bootstrap intervals (see scoring.significance); None when not asked for
    significance: PairedSignificance | None = None
    #: with several candidates against one reference: Holm-adjusted p-values over them (see :func:`adjust_holm`)
    holm: dict = field(default_factory=dict)
    #: every per-example metric's run value on each side: ``{metric: {"reference": {...}, "candidate": {...}}}``
    metrics: dict = field(default_factory=dict)
    #: how :attr:`speed` is computed: the basis (wall or cpu), whether runs of different machines are compared, the
    #: bootstrap's settings and blocks (id -> label)
    speed_basis: str = "wall"
    allow_different_machines: bool = False
    speed_settings: SignificanceSettings = field(default_factory=SignificanceSettings)
    speed_groups: dict[str, Any] | None = None
    #: what ``compare`` prints under its table for this candidate (weights, unjoined examples, new hallucinations,
    #: paired tests, English-only models, differing settings); filled by the API (:mod:`whisperbench.reports.notes`)
    notes: list = field(default_factory=list)

    @cached_property
    def formatting_parity(self) -> dict | None:
        """The candidate's formatting against the reference run's output on the examples both transcribed
        (:func:`~whisperbench.scoring.formatting.formatting_parity`), computed when first asked for: a gate, a plan
        or a noise report that does not read it never tokenizes every output."""
        return self.result.examples.formatting_parity(self.reference.normalizer)

    @cached_property
    def formatting_drift(self) -> dict | None:
        """The drift part of :attr:`formatting_parity` (examples, drift count and %, number drift, ids) without
        aligning every output pair: what the tables and the drift gate show (the same figures as the parity's)."""
        return formatting_drift(*self.result.examples.drifted_outputs(self.reference.normalizer))

    @cached_property
    def speed(self) -> SpeedComparison:
        """The candidate's speed, memory and load time against the reference's (:mod:`whisperbench.reports.speed`),
        computed when first read: a report that shows no speed never bootstraps the times."""
        return compare_speed(
            self.reference,
            self.candidate,
            basis=self.speed_basis,
            settings=self.speed_settings,
            groups=self.speed_groups,
            allow_different_machines=self.allow_different_machines,
        )

    @cached_property
    def hallucination(self) -> HallucinationDiff:
        """The candidate's hallucinations the reference does not have on the same example, and its output on
        non-speech (:func:`~whisperbench.reports.hallucination.hallucination_diff`), computed when first read."""
        return hallucination_diff(self.reference, self.candidate)

    @cached_property
    def keywords_lost(self) -> dict[str, list[str]] | None:
        """``{term: [example ids]}`` the candidate newly misses where the reference wrote the term right
        (:func:`~whisperbench.reports.keywords.newly_missed`); None when the reference run has no keywords. Its
        score table tells (no ``keywords.`` column: no example with terms) without reading every prediction."""
        if not any(name.startswith("keywords.") for name in self.tables[0].column_names):
            return None
        return newly_missed(self.reference, self.candidate) if keyword_examples(self.reference) else None

    @cached_property
    def tables(self) -> tuple[Any, Any]:
        """Both runs' score tables under the reference's normalizer (what every figure of the comparison reads)."""
        normalizer = self.reference.normalizer
        return self.reference.score_table(normalizer), self.candidate.score_table(normalizer)

    @cached_property
    def paired(self) -> dict[str, Paired]:
        """Every metric's declared pairing (:mod:`whisperbench.reports.pairings`) by ``METRIC.NAME``, at the
        comparison's confidence: compare's table and ``--json``, the leaderboard and the gate read these."""
        return paired_figures(self, self.speed_settings.confidence)

    @property
    def qoi(self) -> float | None:
        """QoI %: the share of joined examples whose WER did not rise (None when none joined)."""
        return self.result.qoi

    def _significance_json(self) -> dict:
        """The paired tests (sign test, MAPSSWE, Wilcoxon, the QoI drop, the resampling); the WER difference with
        its interval and p-value is ``paired["wer.increase"]`` (the WER's pairing), so it has one key."""
        tests = self.significance.to_dict() if self.significance else {}
        tests.pop("wer_difference", None)
        return tests

    def _streaming_json(self) -> dict:
        """``{"streaming": {"reference": …, "candidate": …}}`` when either side is a stream (its summary figures)."""
        sides = {"reference": run_streaming(self.reference), "candidate": run_streaming(self.candidate)}
        return {"streaming": sides} if any(sides.values()) else {}

    def to_json(self, with_examples: bool = False) -> dict:
        """The comparison as JSON (``compare --json``): WERs, QoI, weights relation, significance, examples."""
        return {
            "reference": self.reference.name,
            "candidate": self.candidate.name,
            "reference_wer": self.reference_wer,
            "candidate_wer": self.candidate_wer,
            "same_dataset": self.same_dataset,
            "weights": self.weights,
            **({"timing": self.timing} if self.timing else {}),
            "normalizer": self.reference.normalizer,
            **(self._significance_json() if self.significance else {}),
            **({"holm": self.holm} if self.holm else {}),
            **({"metrics": self.metrics} if self.metrics else {}),
            "paired": {key: figure.to_json() for key, figure in self.paired.items()},
            **({"notes": self.notes} if self.notes else {}),
            **({"formatting_parity": self.formatting_parity} if self.formatting_parity else {}),
            "speed": self.speed.to_json(),
            **self._streaming_json(),
            **self.result.to_json(with_examples),
        }


def compare_runs(
    reference: StoredRun,
    candidate: StoredRun,
    significance: SignificanceSettings | None = None,
    groups: Mapping[str, Any] | None = None,
    *,
    speed_basis: str = "wall",
    allow_different_machines: bool = False,
) -> Comparison:
    """QoI and WER of ``candidate`` against ``reference``, scored with the reference's normalizer, and the paired
    speed on ``speed_basis`` (wall or CPU time; runs of different machines only with ``allow_different_machines``).

    Computed from the runs' score tables (columns, stored beside the predictions and rebuilt when stale):
    the same figures as ``summarize`` and ``qoi`` on their predictions. With ``significance`` also the paired
    tests and intervals (:func:`significance_of`; ``groups``: example id -> block label, with
    ``significance.block_by``).
    """
    normalizer = reference.normalizer
    ref_table, cand_table = reference.score_table(normalizer), candidate.score_table(normalizer)
    result = qoi_tables(ref_table, cand_table, normalizer)
    return Comparison(
        reference=reference,
        candidate=candidate,
        result=result,
        reference_wer=table_wer(ref_table),
        candidate_wer=table_wer(cand_table),
        same_dataset=bool(reference.dataset_hash) and reference.dataset_hash == candidate.dataset_hash,
        weights=weights_relation(reference.meta, candidate.meta),
        timing=timing_columns(reference, candidate),
        significance=significance_of(result, significance, groups) if significance else None,
        metrics=paired_metric_values(ref_table, cand_table) | run_metric_values(reference, candidate),
        speed_basis=speed_basis,
        allow_different_machines=allow_different_machines,
        speed_settings=significance or SignificanceSettings(),
        speed_groups=dict(groups) if groups is not None else None,
    )


def paired_metric_values(ref_table: Any, cand_table: Any) -> dict[str, dict[str, Any]]:
    """Each per-example metric's run value on both sides (computed from the score tables), with its headline
    column and which way is better."""
    ref, cand = metric_values(ref_table), metric_values(cand_table)
    out = {}
    for metric in per_example_metrics():
        if metric.name in ref or metric.name in cand:
            value = cand.get(metric.name) or ref.get(metric.name)
            out[metric.name] = {
                "reference": ref.get(metric.name),
                "candidate": cand.get(metric.name),
                "headline": metric.headline_column(value),
                "better": metric.better,
            }
    return out


def run_metric_values(reference: StoredRun, candidate: StoredRun) -> dict[str, dict[str, Any]]:
    """Each run-level metric's value on both sides as the runs' summary.json holds it (the metric computed it once,
    when the run was scored), with its headline column and which way is better: ``compare --json`` shows it and
    the gate's ``--max-increase`` / ``--max-decrease`` judge its numbers as a per-example metric's. A side scored
    under another normalizer than the reference's has no value (the gate cannot judge it; ``rescore`` can)."""
    normalizer = reference.normalizer
    stored = [
        run.summary.metrics if run.summary is not None and run.summary.normalizer == normalizer else {}
        for run in (reference, candidate)
    ]
    out = {}
    for metric in registered():
        ref, cand = (values.get(metric.name) for values in stored)
        if metric.columnar or (ref is None and cand is None):
            continue
        out[metric.name] = {
            "reference": ref,
            "candidate": cand,
            "headline": metric.headline_column(cand or ref),
            "better": metric.better,
        }
    return out


def adjust_holm(comparisons: list[Comparison]) -> None:
    """Set each comparison's ``holm``: its sign-test, MAPSSWE and bootstrap WER p-values Holm-adjusted over all
    the ``comparisons`` (one family: several candidates against one reference). Nothing for fewer than two."""
    if len(comparisons) < 2:
        return
    tests = {
        "sign_test": lambda s: s.sign_test.p_value,
        "mapsswe": lambda s: s.mapsswe.p_value if s.mapsswe else None,
        "wilcoxon": lambda s: s.wilcoxon.p_value if s.wilcoxon else None,
        "wer_difference": lambda s: s.wer_difference.p_value if s.wer_difference else None,
    }
    adjusted = {
        name: holm([get(c.significance) if c.significance else None for c in comparisons])
        for name, get in tests.items()
    }
    for i, comparison in enumerate(comparisons):
        comparison.holm = {name: values[i] for name, values in adjusted.items()} | {"family": len(comparisons)}


def paired_counts(result: QoiResult) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The joined examples' ids, reference errors, candidate errors and transcript words (or characters)."""
    return result.examples.paired_counts()


def significance_of(
    result: QoiResult, settings: SignificanceSettings, groups: Mapping[str, Any] | None = None
) -> PairedSignificance:
    """The paired significance of a QoI result's joined examples; with ``settings.block_by``, ``groups`` gives
    each example's block (every joined example needs one)."""
    ids, ref, cand, words = paired_counts(result)
    labels = None
    if settings.block_by:
        labels = _labels(ids, groups or {}, settings.block_by)
    return paired_significance(
        ref,
        cand,
        words,
        groups=labels,
        block_by=settings.block_by,
        confidence=settings.confidence,
        resamples=settings.resamples,
        seed=settings.seed,
        chunk=settings.chunk,
    )


def _labels(ids: list[str], groups: Mapping[str, Any], column: str) -> list[Any]:
    missing = [i for i in ids if groups.get(i) in (None, "")]
    if missing:
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        raise WhisperbenchError(
            f"--block-by {column}: {len(missing)} of {len(ids)} joined examples have no "
            f"{column!r} value ({shown}); every example needs one to resample by blocks"
        )
    return [groups[i] for i in ids]


def comparison_table(comparisons: Iterable[Comparison]) -> pd.DataFrame:
    """One row per comparison: WERs, QoI with counts, weights relation, and the paired tests when computed."""
    import pandas as pd  # on use: gate needs no table (importing pandas takes 0.2 s)

    rows = []
    for c in comparisons:
        r = c.result
        rows.append(
            {
                "candidate": c.candidate.name,
                "reference": c.reference.name,
                "ref WER %": c.reference_wer,
                "cand WER %": c.candidate_wer,
                # QoI %, ΔWER with its interval, format drift, slowdown: every metric's declared pairing
                **pairing_cells(c.paired, intervals=c.speed_settings.confidence),
                "joined": r.joined,
                "improved": r.improved,
                "unchanged": r.unchanged,
                "regressed": r.regressed,
                "cand failed": r.candidate_failed,
                "unjoined": len(r.only_in_reference) + len(r.only_in_candidate),
                "same dataset": c.same_dataset,
                "weights": c.weights,
                "cand status": str(c.candidate.coverage),
                **c.timing,
                **{  # the metrics' own columns (CER, formatting…); WER has its columns above
                    m.label: m.headline_of(c.metrics[m.name]["candidate"])
                    for m in column_metrics()
                    if m.name in c.metrics
                },
                **run_level_cells({name: sides.get("candidate") for name, sides in c.metrics.items()}),
                **(_significance_columns(c.significance) if c.significance else {}),
                **({"ΔWER p (Holm)": c.holm.get("wer_difference")} if c.holm else {}),
            }
        )
    return pd.DataFrame(rows)


def run_level_cells(values: Mapping[str, Any], displayed: bool = True) -> dict[str, float | None]:
    """Each run-level metric's headline (``METRIC.KEY``, or its ``heading``) of one run's ``values`` (``{metric:
    value}``): hallucination, streaming, a plug-in's; none where its value has no number (``displayed`` False:
    leave out those with a report section of their own)."""
    cells = {}
    for metric in run_level_metrics():
        if not displayed and metric.display is not None:
            continue
        value = values.get(metric.name)
        label = metric.headline_label(value if isinstance(value, Mapping) else None)
        if label is not None:
            cells[label] = metric.headline_of(value)
    return cells


def _significance_columns(sig: PairedSignificance) -> dict[str, Any]:
    """The compare table's paired tests' p-values (the WER difference's interval is in its pairing's cell)."""
    return {
        "sign test p": sig.sign_test.p_value,
        "MAPSSWE p": sig.mapsswe.p_value if sig.mapsswe else None,
        "Wilcoxon p": sig.wilcoxon.p_value if sig.wilcoxon else None,
    }
