"""The registry of run-level metrics: one module per measure, read by the summary (and from it the tables,
the gate and the exports).

A metric is a pure function of a run's scored predictions (the raw output plus the normalized texts and
alignment counts of :func:`~whisperbench.scoring.summary.score_prediction`) that returns a JSON-ready
``dict`` stored under its name in ``summary.json``, or ``None`` when it does not apply to the run (no
timing, no labels): then its key is left out, never filled with zeros.

A new measure is one module in ``scoring/`` with its per-example functions and one ``Metric``, listed in
:data:`METRIC_MODULES`; nothing else changes for it to reach ``summary.json``.

>>> sorted(m.name for m in registered()) == sorted(m.name for m in registered())  # imported once, stable
True
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Optional, Sequence

from ..types import Prediction

#: the modules (under ``whisperbench.scoring``) that each define ``METRIC: Metric``
METRIC_MODULES: tuple[str, ...] = ("hallucination", "timing")

SummarizeFn = Callable[[Sequence[Prediction], "MetricContext"], Optional[dict[str, Any]]]


@dataclass(frozen=True)
class MetricContext:
    """What a metric may know about the run besides its predictions."""

    normalizer: str
    form: str = "short"
    options: dict[str, Any] = field(default_factory=dict)  # thresholds, as documented by each metric


@dataclass(frozen=True)
class Metric:
    """One run-level measure: ``summarize(scored predictions, context)`` -> ``summary.json[name]`` or None."""

    name: str
    description: str
    summarize: SummarizeFn


@lru_cache(maxsize=None)
def registered() -> tuple[Metric, ...]:
    """Every metric of :data:`METRIC_MODULES`, in that order."""
    metrics = []
    for module in METRIC_MODULES:
        metrics.append(importlib.import_module(f"{__package__}.{module}").METRIC)
    names = [m.name for m in metrics]
    if len(set(names)) != len(names):
        raise ValueError(f"two metrics share a name: {names}")
    return tuple(metrics)


def run_metrics(scored: Sequence[Prediction], context: MetricContext) -> dict[str, Any]:
    """``{metric name: its value}`` for every registered metric that applies to the run."""
    values = {}
    for metric in registered():
        value = metric.summarize(scored, context)
        if value is not None:
            values[metric.name] = value
    return values
