"""A run's figures — summary.json's scores — computed once, from its score table (:mod:`whisperbench.scoring.table`):
the table every report reads, so summary.json, ``report``, ``compare`` and ``gate`` cannot disagree. One row per
example id (a line stored twice for one id counts once: the last one, as the run store reads it).

>>> from whisperbench.types import Prediction
>>> s = summarize([Prediction("a", "Hello world", "hello word", audio_s=2.0, infer_s=0.5)], "english", "short")
>>> s.wer, s.substitutions, s.rtfx
(50.0, 1, 4.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.languages import headline_metric
from ..types import Prediction
from .arrays import OK, numbers, text
from .engine import raw
from .metrics import MetricContext, nested_metrics, per_example_metrics, run_metrics, with_run_keys
from .record import SUMMARY_FIGURES, Summary
from .table import CHAR_COUNTS, counts, metric_value, scored_table, unique_by_id
from .wer import corpus_wer


def summarize(
    predictions: Iterable[Prediction],
    normalizer: str,
    form: str,
    language_detected: bool = False,
    metric_options: dict[str, Any] | None = None,
) -> Summary:
    """summary.json's scores of ``predictions``: :func:`summarize_with_table` without the table."""
    return summarize_with_table(predictions, normalizer, form, language_detected, metric_options)[0]


def summarize_with_table(
    predictions: Iterable[Prediction],
    normalizer: str,
    form: str,
    language_detected: bool = False,
    metric_options: dict[str, Any] | None = None,
    table_ready: Callable[[pa.Table], Any] | None = None,
    scored: tuple[Sequence[Prediction], pa.Table] | None = None,
    workers: int | None = None,
) -> tuple[Summary, pa.Table]:
    """summary.json's scores of ``predictions`` (one per id) scored with ``normalizer``: :func:`table_figures` of
    their score table, the language identification when the model chose the language (``language_detected``),
    and every metric — per-example ones from the table's columns (null when they give the run no value),
    run-level ones from the scored predictions (``metric_options``: their thresholds). ``table_ready`` is called
    with the table as soon as it is built, before the figures (the runner starts writing it then). ``scored``: the
    predictions already scored with ``normalizer`` and their table, where the caller has them (a run scored while
    it was written: :class:`~whisperbench.scoring.table.ScoredWhileWritten`); else they are scored on ``workers``
    processes (:func:`~whisperbench.scoring.table.scored_table`'s default: the idle cores this process may use)."""
    each, table = scored or scored_table(unique_by_id(predictions), normalizer, workers)
    if table_ready is not None:
        table_ready(table)
    metrics = run_metrics(each, MetricContext(normalizer, form, dict(metric_options or {}), table))
    if table.num_rows:  # a metric that gives the run no value is stored as null
        metrics |= {
            metric.name: with_run_keys(metric, metric_value(table, metric), each) for metric in nested_metrics()
        }
    summary = Summary(
        **table_figures(table),
        form=form,
        normalizer=normalizer,
        language_id=language_identification(raw(each))
        if language_detected and any(p.language_label for p in raw(each))
        else None,
        metrics=metrics,
    )
    return summary, table


def table_figures(table: pa.Table) -> dict[str, Any]:
    """Every figure of a run computed from its counts and durations: WER (failed examples as empty hypotheses),
    ``wer_ok`` (successful examples only), CER, S/D/I/hits, examples and failures, empty transcripts, audio and
    inference seconds, RTFx (Σ audio_s / Σ infer_s over successful examples), latency percentiles, and per language
    (:func:`by_language`)."""
    ok = pc.equal(table["status"], OK)
    total, ok_counts = counts(table), counts(table, mask=ok)
    audio_s = sum(pc.filter(table["audio_s"], ok).to_pylist())  # summed in order, as Python sums
    latencies = pc.filter(table["infer_s"], ok).to_pylist()
    infer_s = sum(latencies)
    num_ok = pc.sum(ok).as_py() or 0
    return dict(
        wer_ok=corpus_wer(ok_counts),
        num_examples=table.num_rows,
        num_ok=num_ok,
        num_failed=table.num_rows - num_ok,
        substitutions=total.substitutions,
        deletions=total.deletions,
        insertions=total.insertions,
        hits=total.hits,
        empty_transcripts=int(np.sum(_transcript_words(table) == 0)) if table.num_rows else 0,
        audio_s=audio_s,
        infer_s=infer_s,
        rtfx=audio_s / infer_s if infer_s > 0 else None,
        **dict(zip(("latency_p50_s", "latency_p90_s", "latency_p99_s"), percentiles(latencies, (50, 90, 99)))),
        **_cpu(table, ok),
        **_tokens(table, ok),
        **by_language(table),
        **top_level_figures(table),
    )


def top_level_figures(table: pa.Table) -> dict[str, Any]:
    """The values of the metrics whose figures are summary.json's own top-level ones (``wer``,
    ``transcript_words``; ``cer``, ``char_errors``, ``transcript_characters``), from their columns: one path for
    each figure. A key that is no figure of :class:`Summary`: ValueError naming the metric."""
    figures: dict[str, Any] = {}
    for metric in per_example_metrics():
        if metric.top_level:
            value = metric_value(table, metric) or metric.value_of({})  # an empty run: its rates None, counts 0
            unknown = sorted(set(value or {}) - SUMMARY_FIGURES)
            if unknown:
                raise ValueError(f"metric {metric.name!r} is top level but {unknown} are no summary.json figures")
            figures |= value or {}
    return figures


def _cpu(table: pa.Table, ok: Any) -> dict[str, float | None]:
    """Σ ``cpu_s`` over the successful examples that have it, and per audio second of those examples."""
    if "cpu_s" not in table.column_names:
        return {}
    timed = pc.and_(ok, pc.is_valid(table["cpu_s"]))
    cpu = pc.filter(table["cpu_s"], timed).to_pylist()
    if not cpu:
        return {}
    audio = sum(pc.filter(table["audio_s"], timed).to_pylist())
    return {"cpu_s": sum(cpu), "core_s_per_audio_s": sum(cpu) / audio if audio > 0 else None}


def _tokens(table: pa.Table, ok: Any) -> dict[str, Any]:
    """Σ ``tokens`` over the successful examples whose implementation reported them, and their Σ ``infer_s`` per
    token in milliseconds (the decoder's cost per token, the encoder's share included)."""
    if "tokens" not in table.column_names:
        return {}
    counted = pc.and_(ok, pc.is_valid(table["tokens"]))
    tokens = sum(pc.filter(table["tokens"], counted).to_pylist())
    if not tokens:
        return {}
    infer = sum(pc.filter(table["infer_s"], counted).to_pylist())
    return {"tokens": int(tokens), "ms_per_token": 1000.0 * infer / tokens}


def _transcript_words(table: pa.Table) -> np.ndarray:
    hits, subs, dels = (numbers(table[name]) for name in ("hits", "substitutions", "deletions"))
    return np.asarray(hits + subs + dels)


def percentiles(values: Sequence[float], qs: Sequence[float]) -> list[float | None]:
    """``numpy.percentile(values, q)`` for each ``q`` (its default method, linear); None for each without values.

    >>> percentiles([4.0, 1.0, 3.0, 2.0], (0, 50, 90, 100)), percentiles([], (50,))
    ([1.0, 2.5, 3.7, 4.0], [None])
    """
    if not values:
        return [None for _ in qs]
    return [float(v) for v in np.percentile(np.asarray(values, dtype=np.float64), list(qs))]


def grouped(table: pa.Table, labels: Sequence[str | None]) -> dict[str, pa.Table]:
    """The rows of ``table`` per label, in their order (``labels``: one per row; a row without one is left out),
    labels in sorted order: the one breakdown of stored columns (by language, by condition, by any column), each
    part read as a whole run's table is.

    >>> t = pa.table({"id": ["a", "b", "c"]})
    >>> {k: v["id"].to_pylist() for k, v in grouped(t, ["x", None, "x"]).items()}
    {'x': ['a', 'c']}
    """
    keys = pa.array([label or None for label in labels], pa.string())
    return {label: pc.filter(table, pc.equal(keys, text(label))) for label in sorted({x for x in labels if x})}


def by_language(table: pa.Table) -> dict[str, Any]:
    """``languages`` (per labelled language: examples, failures, WER, CER, the headline metric and its value)
    and ``macro_error_rate`` (the mean headline error rate over languages); empty without labels."""
    labels = table["language_label"].to_pylist()
    if not any(labels):
        return {}
    rows: dict[str, dict[str, Any]] = {}
    for language, part in grouped(table, labels).items():
        wer, cer = corpus_wer(counts(part)), corpus_wer(counts(part, CHAR_COUNTS))
        metric = headline_metric(language)
        rows[language] = {
            "num_examples": part.num_rows,
            "num_failed": part.num_rows - (pc.sum(pc.equal(part["status"], OK)).as_py() or 0),
            "wer": wer,
            "cer": cer,
            "metric": metric,
            "error_rate": cer if metric == "cer" else wer,
        }
    rates = [row["error_rate"] for row in rows.values() if row["error_rate"] is not None]
    return {
        "languages": rows,
        "macro_error_rate": sum(rates) / len(rates) if rates else None,
        "unlabelled_examples": sum(not label for label in labels),
    }


def identified_by_language(labelled: Sequence[Prediction]) -> dict[str, dict[str, Any]]:
    """Per label: examples, those whose language the implementation identified right, and that accuracy in %
    (summary.json ``language_id.by_language``; ``report``'s per-language table reads it, or calls this for a run
    stored before summary.json kept it)."""
    tally: dict[str, list[int]] = {}
    for pred in labelled:
        right = pred.status == "ok" and pred.detected_language == pred.language_label
        tally.setdefault(str(pred.language_label), [0, 0])[right] += 1
    return {
        language: {"labelled": wrong + right, "correct": right, "accuracy": 100.0 * right / (wrong + right)}
        for language, (wrong, right) in sorted(tally.items())
    }


def language_identification(scored: Sequence[Prediction]) -> dict[str, Any]:
    """How often the language the model chose (``detected_language``) is the example's label; a failed
    example, or one without a reported language, counts as not identified. An implementation that reports
    no language at all (the transformers pipeline) gets no accuracy (``reported`` 0). Where the implementation
    gives its confidence (``extra["language_probability"]``: faster-whisper), the mean confidence of its right
    and of its wrong choices (a well-calibrated model is sure when right, unsure when wrong)."""
    labelled = [p for p in scored if p.language_label]
    reported = sum(bool(p.detected_language) for p in labelled)
    correct = sum(p.status == "ok" and p.detected_language == p.language_label for p in labelled)
    confusions: dict[str, int] = {}
    for pred in labelled:
        detected = pred.detected_language if pred.status == "ok" else None
        if detected != pred.language_label:
            key = f"{pred.language_label}->{detected or 'none'}"
            confusions[key] = confusions.get(key, 0) + 1
    result = {
        "labelled": len(labelled),
        "reported": reported,
        "correct": correct,
        "accuracy": 100.0 * correct / len(labelled) if labelled and reported else None,
        "confusions": confusions if reported else {},
        "by_language": identified_by_language(labelled) if reported else {},
    }
    for name, right in (("mean_probability_correct", True), ("mean_probability_wrong", False)):
        sure = [
            p.extra["language_probability"]
            for p in labelled
            if p.status == "ok"
            and p.extra.get("language_probability") is not None
            and (p.detected_language == p.language_label) == right
        ]
        if sure:
            result[name] = sum(sure) / len(sure)
    return result
