"""Score stored predictions: per-example fields and the run summary. Pure functions, no I/O."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from ..languages import cer_text, headline_metric
from ..types import ExampleScore, Prediction, UnscoredError, WordCounts
from .metrics import MetricContext, run_metrics
from .normalize import normalize
from .record import Summary
from .wer import align, align_characters, corpus_wer

#: fewest predictions scored afresh on several cores (below it a pool costs more than it saves)
PARALLEL_MIN = 20_000
#: how scoring workers start: a fork shares the loaded modules (no second import), where the system has it
_START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


def score_prediction(pred: Prediction, normalizer: str, characters: bool = True) -> Prediction:
    """Return a copy of ``pred`` with its :class:`~whisperbench.types.ExampleScore` with ``normalizer``: the
    normalized texts, S/D/I/hits and WER over words, the same over characters (CER; spaces left out for languages
    written without them). The raw output is not changed.

    A failed example is scored as an empty hypothesis (every reference word deleted), so a failure
    can never lower a run's WER or CER. With ``characters=False`` the character alignment is skipped
    (the score's ``chars`` stay None: the caller asks for WER only).
    """
    return dataclasses.replace(pred, score=score_example(pred, normalizer, characters))


def score_example(pred: Prediction, normalizer: str, characters: bool = True) -> ExampleScore:
    """The score of ``pred``'s raw output with ``normalizer`` (a pure function of its texts and language).

    >>> score = score_example(Prediction("a", "Hello, world!", "hello word"), "basic")
    >>> score.words, round(score.wer, 1), score.normalizer
    (WordCounts(hits=1, substitutions=1, deletions=0, insertions=0), 50.0, 'basic')
    """
    return _scores(pred.reference, pred.hypothesis if pred.status == "ok" else None, pred.language, normalizer,
                   characters)


def _scores(reference: str, hypothesis: Optional[str], language: Optional[str], normalizer: str,
            characters: bool) -> ExampleScore:
    """The score of one text pair; ``hypothesis`` None: the example failed (an empty hypothesis)."""
    ref_norm = normalize(reference, normalizer)
    hyp_norm = normalize(hypothesis, normalizer) if hypothesis is not None else ""
    chars = align_characters(cer_text(ref_norm, language), cer_text(hyp_norm, language)) if characters else None
    return ExampleScore(normalizer, ref_norm, hyp_norm, align(ref_norm, hyp_norm), chars)


def _score_chunk(args: tuple[list[tuple[Any, ...]], str, bool]) -> list[ExampleScore]:
    chunk, normalizer, characters = args
    return [_scores(ref, hyp, language, normalizer, characters) for ref, hyp, language in chunk]


def score_predictions(predictions: Sequence[Prediction], normalizer: str, characters: bool = True,
                      workers: Optional[int] = None) -> list[Prediction]:
    """:func:`score_prediction` over many predictions, in order; on all cores (``workers``, default the
    machine's) when there are at least ``PARALLEL_MIN`` of them, else in this process (workers get
    texts and give back scores)."""
    workers = workers or os.cpu_count() or 1
    if workers < 2 or len(predictions) < PARALLEL_MIN:
        return [score_prediction(pred, normalizer, characters) for pred in predictions]
    texts = [(p.reference, p.hypothesis if p.status == "ok" else None, p.language) for p in predictions]
    size = -(-len(texts) // (workers * 4))
    chunks = [(texts[i:i + size], normalizer, characters) for i in range(0, len(texts), size)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(_START_METHOD)) as pool:
        scores = [score for part in pool.map(_score_chunk, chunks) for score in part]
    return [dataclasses.replace(pred, score=score) for pred, score in zip(predictions, scores)]


def counts_of(pred: Prediction) -> WordCounts:
    """Word counts of an already-scored prediction (:func:`score_prediction`); unscored: UnscoredError."""
    return pred.scored().words


def char_counts_of(pred: Prediction) -> WordCounts:
    """Character counts of an already-scored prediction (scored with ``characters=True``); else UnscoredError."""
    if pred.score is None or pred.score.chars is None:
        raise UnscoredError(f"example {pred.id!r} has no character counts: score it with characters=True")
    return pred.score.chars


def headline_counts(pred: Prediction) -> WordCounts:
    """The counts QoI compares: characters for languages written without spaces, else words."""
    return char_counts_of(pred) if headline_metric(pred.language) == "cer" else counts_of(pred)


def rescored(pred: Prediction, normalizer: str) -> Prediction:
    """``pred`` scored with ``normalizer``, reusing its stored score when it fits.

    A score names the normalizer it was computed with. When it is ``normalizer`` and holds character counts too,
    ``pred`` is returned as it is (no normalizing, no alignment); otherwise it is scored afresh: a score is never
    read for another normalizer.

    >>> pred = score_prediction(Prediction("a", "Hello, world.", "hello world"), "basic")
    >>> rescored(pred, "basic") is pred, rescored(pred, "english").score.normalizer
    (True, 'english')
    """
    return pred if _fits(pred, normalizer) else score_prediction(pred, normalizer)


def _fits(pred: Prediction, normalizer: str) -> bool:
    """Whether ``pred``'s stored score was computed with ``normalizer`` and is whole (runs before CER: not)."""
    return pred.score is not None and pred.score.normalizer == normalizer and pred.score.chars is not None


def rescored_all(predictions: Iterable[Prediction], normalizer: str) -> list[Prediction]:
    """:func:`rescored` over many predictions, in order; those scored afresh go through
    :func:`score_predictions` (all cores for large sets)."""
    preds = list(predictions)
    stale = [i for i, pred in enumerate(preds) if not _fits(pred, normalizer)]
    if stale:
        for i, pred in zip(stale, score_predictions([preds[i] for i in stale], normalizer)):
            preds[i] = pred
    return preds


def _percentile(values: list[float], q: float) -> Optional[float]:
    return float(np.percentile(values, q)) if values else None


def summarize(predictions: Iterable[Prediction], normalizer: str, form: str, language_detected: bool = False,
              metric_options: Optional[dict[str, Any]] = None) -> Summary:
    """Dataset-level figures from predictions scored with ``normalizer``.

    Predictions are scored here from raw text unless their stored fields were computed with the same
    normalizer (their ``scored_with``; see :func:`rescored`); the figures are the same either way.
    ``wer`` (and ``cer``) count failed examples as empty hypotheses; ``wer_ok`` is over successful examples
    only. ``rtfx`` = Σ audio_s / Σ infer_s over successful examples. With language labels, ``languages``
    breaks WER, CER and the headline metric down per language (``macro_error_rate``: their mean); with
    ``language_detected`` (the model chose the language), ``language_id`` scores its choice against the labels.
    Every registered metric (:mod:`whisperbench.scoring.metrics`) adds its own key; ``metric_options`` are
    their thresholds.
    """
    scored = rescored_all(predictions, normalizer)
    ok = [p for p in scored if p.status == "ok"]
    total, chars = _sum(counts_of, scored), _sum(char_counts_of, scored)
    audio_s, infer_s = sum(p.audio_s for p in ok), sum(p.infer_s for p in ok)
    latencies = [p.infer_s for p in ok]
    return Summary(
        wer=corpus_wer(total), wer_ok=corpus_wer(_sum(counts_of, ok)), cer=corpus_wer(chars),
        num_examples=len(scored), num_ok=len(ok), num_failed=len(scored) - len(ok),
        substitutions=total.substitutions, deletions=total.deletions, insertions=total.insertions, hits=total.hits,
        reference_words=total.ref_words, reference_characters=chars.ref_words, char_errors=chars.errors,
        empty_references=sum(not p.scored().reference_norm for p in scored),
        audio_s=audio_s, infer_s=infer_s, rtfx=audio_s / infer_s if infer_s > 0 else None,
        latency_p50_s=_percentile(latencies, 50), latency_p90_s=_percentile(latencies, 90),
        latency_p99_s=_percentile(latencies, 99), form=form, normalizer=normalizer,
        **by_language(scored),
        language_id=language_identification(scored) if language_detected and any(p.language for p in scored) else None,
        metrics=run_metrics(scored, MetricContext(normalizer, form, dict(metric_options or {}))))


def _sum(counts: Callable[[Prediction], WordCounts], predictions: Iterable[Prediction]) -> WordCounts:
    return sum((counts(p) for p in predictions), WordCounts())


def by_language(scored: list[Prediction]) -> dict[str, Any]:
    """``languages`` (per labelled language: examples, failures, WER, CER, the headline metric and its value)
    and ``macro_error_rate`` (the mean headline error rate over languages); empty without labels."""
    groups: dict[str, list[Prediction]] = {}
    for pred in scored:
        if pred.language:
            groups.setdefault(pred.language, []).append(pred)
    if not groups:
        return {}
    table: dict[str, dict[str, Any]] = {}
    for language, preds in sorted(groups.items()):
        wer, cer = corpus_wer(_sum(counts_of, preds)), corpus_wer(_sum(char_counts_of, preds))
        metric = headline_metric(language)
        table[language] = {"num_examples": len(preds), "num_failed": sum(p.status != "ok" for p in preds),
                           "wer": wer, "cer": cer, "metric": metric, "error_rate": cer if metric == "cer" else wer}
    rates = [row["error_rate"] for row in table.values() if row["error_rate"] is not None]
    return {"languages": table, "macro_error_rate": sum(rates) / len(rates) if rates else None,
            "unlabelled_examples": sum(not p.language for p in scored)}


def _identified_by_language(labelled: list[Prediction]) -> dict[str, dict[str, Any]]:
    """Per label: examples, those whose language the implementation identified right, and that accuracy in %."""
    counts: dict[str, list[int]] = {}
    for pred in labelled:
        right = pred.status == "ok" and pred.extra.get("language") == pred.language
        counts.setdefault(str(pred.language), [0, 0])[right] += 1
    return {language: {"labelled": wrong + right, "correct": right, "accuracy": 100.0 * right / (wrong + right)}
            for language, (wrong, right) in sorted(counts.items())}


def language_identification(scored: list[Prediction]) -> dict[str, Any]:
    """How often the language the model chose (``extra["language"]``) is the example's label; a failed
    example, or one without a reported language, counts as not identified. An implementation that reports
    no language at all (the transformers pipeline) gets no accuracy (``reported`` 0). Where the implementation
    gives its confidence (``extra["language_probability"]``: faster-whisper), the mean confidence of its right
    and of its wrong choices (a well-calibrated model is sure when right, unsure when wrong)."""
    labelled = [p for p in scored if p.language]
    reported = sum(bool(p.extra.get("language")) for p in labelled)
    correct = sum(p.status == "ok" and p.extra.get("language") == p.language for p in labelled)
    confusions: dict[str, int] = {}
    for pred in labelled:
        detected = pred.extra.get("language") if pred.status == "ok" else None
        if detected != pred.language:
            key = f"{pred.language}->{detected or 'none'}"
            confusions[key] = confusions.get(key, 0) + 1
    result = {"labelled": len(labelled), "reported": reported, "correct": correct,
              "accuracy": 100.0 * correct / len(labelled) if labelled and reported else None,
              "confusions": confusions if reported else {},
              "by_language": _identified_by_language(labelled) if reported else {}}
    for name, right in (("mean_probability_correct", True), ("mean_probability_wrong", False)):
        sure = [p.extra["language_probability"] for p in labelled if p.status == "ok"
                and p.extra.get("language_probability") is not None and (p.extra.get("language") == p.language) == right]
        if sure:
            result[name] = sum(sure) / len(sure)
    return result
