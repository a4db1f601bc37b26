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

from ..errors import OptionError
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
    #: checks this metric's options (``{name: value}``) and returns them typed; raises ValueError naming a bad one
    options: Optional[Callable[[dict[str, Any]], dict[str, Any]]] = None


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


def parse_metric_options(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["hallucination.burst_words=4", …]`` (the command line's ``--threshold``) as ``{metric: {name: value}}``,
    each checked and typed by its metric; a malformed pair, an unknown metric or option: ValueError naming it.

    >>> parse_metric_options(["hallucination.burst_words=4"])["hallucination"]["burst_words"]
    4
    """
    options: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        metric, dot, name = key.partition(".")
        if not (eq and dot and name):
            raise OptionError(f"--threshold {pair}: expected METRIC.NAME=VALUE, e.g. hallucination.burst_words=4")
        options.setdefault(metric, {})[name] = value
    return checked_options(options)


def checked_options(options: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``options`` (``{metric: {name: value}}``) checked and typed by each metric (an OptionError names a metric
    that takes none, an unknown option or a value of the wrong type); each metric's full set, defaults filled in."""
    by_name = {metric.name: metric for metric in registered()}
    out = {}
    for metric, values in options.items():
        parse = by_name[metric].options if metric in by_name else None
        if parse is None:
            known = sorted(m.name for m in by_name.values() if m.options is not None)
            raise OptionError(f"metric {metric!r} takes no options (metrics with options: {', '.join(known)})")
        try:
            out[metric] = parse(dict(values))
        except ValueError as exc:
            raise OptionError(str(exc)) from None
    return out


def stored_options(metrics: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The options a run's stored metrics were computed with (each metric's value keeps them as ``thresholds``),
    so a recomputation (another normalizer, a rescore) uses the same ones."""
    return {name: dict(value["thresholds"]) for name, value in metrics.items()
            if isinstance(value, dict) and isinstance(value.get("thresholds"), dict)}


def run_metrics(scored: Sequence[Prediction], context: MetricContext) -> dict[str, Any]:
    """``{metric name: its value}`` for every registered metric that applies to the run."""
    values = {}
    for metric in registered():
        value = metric.summarize(scored, context)
        if value is not None:
            values[metric.name] = value
    return values
