"""Paired figures: how a candidate run compares with a reference run on each metric, as the metric declares it
(:class:`~whisperbench.scoring.metrics.Pairing`), computed here once per comparison and kind. ``compare`` (its
table's columns, ``paired`` in ``--json``), the leaderboard (one column per pairing, each run against its
dataset's reference) and the gate (``--min`` / ``--max METRIC.NAME=N`` and the named flags that are its aliases)
read them from :func:`paired_figures`; nothing else pairs two runs on a metric.

Each kind is one function of the comparison: ``examples`` (share of joined examples no worse on a per-example
column), ``difference`` and ``ratio`` (of the two run values, per-example or run-level metrics alike), ``parity``
(share of joined examples whose column differs) and the built-in comparisons already on the
:class:`~whisperbench.reports.compare.Comparison` (``qoi``, ``speed``, ``drift``, ``new``: new hallucinations,
``resource``: peak memory and load time, ``lost``: keywords newly missed).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..scoring.bootstrap import paired_rate_test, qoi_interval, share_interval
from ..scoring.metrics import Metric, Pairing, registered
from ..scoring.significance import BootstrapInterval, Resampling
from ..scoring.table import paired_columns

#: a :class:`~whisperbench.reports.compare.Comparison` (compare imports this module, not the other way round)
Comparison = Any


@dataclass(frozen=True)
class Paired:
    """One paired figure of a comparison: ``value`` (None where the runs give none: the gate cannot judge it),
    its ``interval`` (low, high) at ``confidence`` where the kind has one, the examples it is over, both
    sides' run values where it pairs them, and a bootstrapped difference's ``test``: its estimate over the
    examples both runs have (what the interval is around; ``value`` also counts examples only one side has), its
    p-value and how it resampled."""

    metric: str
    pairing: Pairing
    value: float | None
    interval: tuple[float, float] | None = None
    confidence: float | None = None
    examples: int | None = None
    reference: float | None = None
    candidate: float | None = None
    test: BootstrapInterval | None = None

    @property
    def key(self) -> str:
        """``METRIC.NAME``: its key in ``compare --json`` and the gate's ``--min`` / ``--max``."""
        return f"{self.metric}.{self.pairing.name}"

    @property
    def heading(self) -> str:
        """Its column in the tables: the pairing's ``heading``, else its key."""
        return self.pairing.heading or self.key

    def to_json(self) -> dict[str, Any]:
        """``compare --json``'s ``paired[METRIC.NAME]``."""
        return {
            "kind": self.pairing.kind,
            "value": self.value,
            "interval": list(self.interval) if self.interval else None,
            "confidence": self.confidence,
            "examples": self.examples,
            "reference": self.reference,
            "candidate": self.candidate,
            "better": self.pairing.better,
            **(_test_json(self.test) if self.test else {}),
        }

    def interval_text(self) -> str:
        """The value with its interval where it has one, as compare's table shows a difference: ``+1.20 [+0.40,
        +2.10]``."""
        if self.value is None:
            return "–"
        if self.interval is None:
            return f"{self.value:+.2f}"
        low, high = self.interval
        return f"{self.value:+.2f} [{low:+.2f}, {high:+.2f}]"


def _test_json(test: BootstrapInterval) -> dict[str, Any]:
    """A bootstrapped difference's own keys in ``compare --json``: ``estimate`` (over the examples both runs have:
    what ``interval`` is around), ``p_value`` (two-sided, bootstrap) and ``resampling`` (examples or blocks,
    resamples, seed, in words)."""
    return {"estimate": test.estimate, "p_value": test.p_value, "resampling": test.resampling.to_dict()}


#: a pairing kind's figure: (comparison, metric, pairing, confidence) -> the paired figure, None without one
Kind = Callable[[Comparison, Metric, Pairing, float], Paired | None]


def declared() -> list[tuple[Metric, Pairing]]:
    """Every registered metric's pairings: the core WER's (QoI) first, then in registry order (built-in ones, then
    plug-ins')."""
    metrics = sorted(registered(), key=lambda metric: not metric.core)
    return [(metric, pairing) for metric in metrics for pairing in metric.pairings]


def paired_figures(
    comparison: Comparison, confidence: float = 0.95, keep: Callable[[Pairing], bool] | None = None
) -> dict[str, Paired]:
    """Every declared pairing's figure of ``comparison`` by ``METRIC.NAME`` (those whose runs give one; ``keep``:
    only the pairings it keeps)."""
    out = {}
    for metric, pairing in declared():
        if keep is not None and not keep(pairing):
            continue
        figure = paired_figure(comparison, metric, pairing, confidence)
        if figure is not None:
            out[figure.key] = figure
    return out


def paired_figure(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """One pairing's figure (:data:`KINDS` computes it), None where the runs give none."""
    return KINDS[pairing.kind](comparison, metric, pairing, confidence)


def pairing_cells(
    paired: dict[str, Paired], kinds: tuple[str, ...] | None = None, intervals: float | None = None
) -> dict[str, float | str | None]:
    """``{heading: value}`` of every declared pairing (of ``kinds``, default every kind; None where the comparison
    has no figure): one column each in compare's table and the leaderboard, the same columns whatever the runs
    give. With ``intervals`` (compare's confidence) a difference is one cell with its interval (``ΔWER points
    [95% CI]``: ``+1.20 [+0.40, +2.10]``); the leaderboard shows intervals in columns of their own."""
    cells: dict[str, float | str | None] = {}
    for m, pairing in declared():
        if kinds is not None and pairing.kind not in kinds:
            continue
        heading, figure = pairing.heading or f"{m.name}.{pairing.name}", paired.get(f"{m.name}.{pairing.name}")
        if intervals is not None and pairing.kind in SHOWN_WITH_INTERVAL:
            cells[f"{heading} [{intervals:.0%} CI]"] = figure.interval_text() if figure is not None else None
        else:
            cells[heading] = figure.value if figure is not None else None
    return cells


def pairing_named(key: str) -> tuple[Metric, Pairing] | None:
    """The declared pairing ``METRIC.NAME``, None when ``key`` names none (a metric's own value key)."""
    name, _, rest = key.partition(".")
    return next(((m, p) for m, p in declared() if m.name == name and p.name == rest), None)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None


def _sides(comparison: Comparison, metric: Metric, column: str) -> tuple[float | None, float | None]:
    """Both runs' values of ``METRIC.COLUMN`` (``Comparison.metrics``: per-example and run-level metrics alike)."""
    sides = comparison.metrics.get(metric.name, {})
    ref, cand = ((sides.get(side) or {}) for side in ("reference", "candidate"))
    return _number(ref.get(column)), _number(cand.get(column))


def _difference(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """Candidate minus reference run value; a pooled rate (the metric's ``ratios``) with its paired bootstrap
    (:func:`_rate_test`)."""
    ref, cand = _sides(comparison, metric, pairing.column)
    if ref is None or cand is None:
        return None
    test = _rate_test(comparison, metric, pairing.column, confidence)
    interval = (test.low, test.high) if test is not None else None
    examples = test.resampling.units if test is not None and test.resampling.method == "examples" else None
    return Paired(
        metric.name, pairing, cand - ref, interval, confidence if interval else None, examples, ref, cand, test
    )


def _rate_test(comparison: Comparison, metric: Metric, column: str, confidence: float) -> BootstrapInterval | None:
    """The paired bootstrap of a pooled rate's difference: the core WER's is the comparison's paired significance
    (``compare``, ``gate``: its blocks with ``--block-by``, the interval the gate judges), computed once; any other
    rate's (or the WER's without significance: the leaderboard) is :func:`paired_rate` over the examples both
    score tables have."""
    significance = comparison.significance
    if metric.core and column in metric.ratios and significance is not None:
        return significance.wer_difference
    settings = comparison.speed_settings
    columns = _rate_columns(comparison.tables, metric, column)
    if columns is None:
        return None
    test = paired_rate_test(*columns, confidence, settings.resamples, settings.seed)
    if test is None:
        return None
    resampling = Resampling("examples", len(columns[0]), settings.resamples, settings.seed)
    low, high = test.interval.low, test.interval.high
    return BootstrapInterval(test.delta, low, high, confidence, test.p_value, resampling)


def _ratio(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """The candidate's run value against the reference's, as a change in %."""
    ref, cand = _sides(comparison, metric, pairing.column)
    if ref is None or cand is None or ref == 0:
        return None
    return Paired(metric.name, pairing, 100.0 * (cand / ref - 1.0), reference=ref, candidate=cand)


def _joined(comparison: Comparison, metric: Metric, column: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Both runs' per-example values of ``METRIC.COLUMN`` on the examples both have one for (joined by id)."""
    name = f"{metric.name}.{column}"
    reference, candidate = comparison.tables
    if any(name not in table.column_names for table in (reference, candidate)):
        return None
    ref, cand, _ = paired_columns(reference, candidate, name, name)
    return ref, cand


def _share(metric: Metric, pairing: Pairing, hits: np.ndarray, confidence: float) -> Paired:
    interval = share_interval(hits, confidence)
    bounds = (interval.low, interval.high) if interval else None
    value = 100.0 * float(np.mean(hits)) if len(hits) else None
    return Paired(metric.name, pairing, value, bounds, confidence if bounds else None, len(hits))


def _examples(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """The % of joined examples whose column the candidate does no worse on (the metric's ``better``)."""
    joined = _joined(comparison, metric, pairing.column)
    if joined is None:
        return None
    ref, cand = joined
    return _share(metric, pairing, cand <= ref if metric.better == "lower" else cand >= ref, confidence)


def _parity(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """The % of joined examples whose column differs between the runs."""
    joined = _joined(comparison, metric, pairing.column)
    return None if joined is None else _share(metric, pairing, joined[0] != joined[1], confidence)


def _qoi(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """QoI (:class:`~whisperbench.scoring.qoi.QoiResult`): the % of joined examples whose error count (CER's for
    languages written without spaces) did not rise, with its bootstrap interval."""
    result = comparison.result
    interval = qoi_interval(result, confidence)
    bounds = (interval.low, interval.high) if interval else None
    return Paired(metric.name, pairing, result.qoi, bounds, confidence if bounds else None, result.joined)


def _drift(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """Formatting drift: the % of joined examples whose output differs in formatting only."""
    drift = comparison.formatting_drift
    if not drift:
        return None
    return Paired(metric.name, pairing, drift.get("drift_pct"), examples=drift.get("examples"))


def _speed(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """The slowdown: the geometric mean of the per-example time ratio, in %, with its interval (none where the
    runs cannot be compared: different machines)."""
    stats = comparison.speed.stats
    if stats is None or stats.slowdown_pct is None:
        return None
    interval = stats.slowdown_interval
    return Paired(
        metric.name,
        pairing,
        stats.slowdown_pct,
        interval,
        stats.confidence if interval else None,
        stats.examples,
        stats.reference_rtfx,
        stats.candidate_rtfx,
    )


def _new(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """How many examples have a hallucination of kind ``column`` (loops, bursts) in the candidate that the reference
    does not have on the same example (:attr:`Comparison.hallucination`)."""
    ids = comparison.hallucination.new.get(pairing.column)
    return None if ids is None else Paired(metric.name, pairing, float(len(ids)))


def _resource(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """The candidate's peak memory or load time (``column``: memory, load) against the reference's, as a change in
    %; none where the runs cannot be compared (different machines) or one side did not record it."""
    speed = comparison.speed
    value = None if speed.refused else getattr(speed, f"{pairing.column}_increase_pct")
    return None if value is None else Paired(metric.name, pairing, value)


def _lost(comparison: Comparison, metric: Metric, pairing: Pairing, confidence: float) -> Paired | None:
    """How many (term, example) pairs the reference wrote right and the candidate misses
    (:attr:`Comparison.keywords_lost`); none when the reference run has no keywords."""
    lost = comparison.keywords_lost
    return None if lost is None else Paired(metric.name, pairing, float(sum(len(ids) for ids in lost.values())))


def paired_rate(
    tables: tuple[Any, Any], metric: Metric, column: str, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> Any:
    """The paired bootstrap (:func:`~whisperbench.scoring.bootstrap.paired_rate_test`) of a pooled-rate run value
    (the metric's ``ratios``) over the examples both score ``tables`` (reference, candidate) have, or None for any
    other value: the gate's ``--max-increase`` under ``--confidence``, a ``difference`` pairing's interval, the
    streaming table's WER difference."""
    columns = _rate_columns(tables, metric, column)
    return None if columns is None else paired_rate_test(*columns, confidence, resamples, seed)


def _rate_columns(
    tables: tuple[Any, Any], metric: Metric, column: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A pooled rate's errors on each side and its units, over the examples both score ``tables`` have (in id
    order); None where ``column`` is not a pooled rate or a table lacks its columns."""
    pair = metric.ratios.get(column)
    if pair is None:
        return None
    errors, units = (f"{metric.name}.{name}" for name in pair)
    reference, candidate = tables
    if any(name not in table.column_names for table in (reference, candidate) for name in (errors, units)):
        return None
    ref, cand, totals = paired_columns(reference, candidate, errors, units)
    return ref, cand, totals


#: the kinds compare's table shows as one cell with their interval (a difference: ``+1.20 [+0.40, +2.10]``)
SHOWN_WITH_INTERVAL = ("difference",)
#: the kinds whose figure has an interval (a pooled difference has one where the column is a pooled rate)
INTERVALS = ("examples", "difference", "parity", "qoi", "speed")
#: each pairing kind's figure (:data:`~whisperbench.scoring.metrics.PAIRING_KINDS`)
KINDS: dict[str, Kind] = {
    "examples": _examples,
    "difference": _difference,
    "ratio": _ratio,
    "parity": _parity,
    "qoi": _qoi,
    "drift": _drift,
    "speed": _speed,
    "new": _new,
    "resource": _resource,
    "lost": _lost,
}
