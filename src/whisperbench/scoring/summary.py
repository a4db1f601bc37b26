"""Score stored predictions: per-example fields and the run summary. Pure functions, no I/O."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Optional

import numpy as np

from ..types import Prediction, WordCounts
from .normalize import normalize
from .wer import align, corpus_wer, example_wer


def score_prediction(pred: Prediction, normalizer: str) -> Prediction:
    """Return a copy of ``pred`` with normalized texts, S/D/I/hits and per-example WER filled in.

    A failed example is scored as an empty hypothesis (every reference word deleted), so a failure
    can never lower a run's WER.
    """
    ref_norm = normalize(pred.reference, normalizer)
    hyp_norm = normalize(pred.hypothesis, normalizer) if pred.status == "ok" else ""
    counts = align(ref_norm, hyp_norm)
    return dataclasses.replace(
        pred,
        reference_norm=ref_norm,
        hypothesis_norm=hyp_norm,
        wer=example_wer(counts),
        hits=counts.hits,
        substitutions=counts.substitutions,
        deletions=counts.deletions,
        insertions=counts.insertions,
    )


def counts_of(pred: Prediction) -> WordCounts:
    """Counts of an already-scored prediction."""
    return WordCounts(pred.hits or 0, pred.substitutions or 0, pred.deletions or 0, pred.insertions or 0)


def rescored(pred: Prediction, normalizer: str, scored_with: Optional[str] = None) -> Prediction:
    """``pred`` scored with ``normalizer``, reusing its stored scoring fields when they fit.

    ``scored_with`` names the normalizer the stored fields were computed with (a run's
    ``run.json`` ``normalizer``). When it equals ``normalizer`` and every field is present, ``pred``
    is returned as it is (no normalizing, no alignment); otherwise it is scored afresh.
    """
    if (scored_with == normalizer and pred.reference_norm is not None and pred.hypothesis_norm is not None
            and pred.hits is not None and pred.substitutions is not None and pred.deletions is not None
            and pred.insertions is not None):
        return pred
    return score_prediction(pred, normalizer)


def _percentile(values: list[float], q: float) -> Optional[float]:
    return float(np.percentile(values, q)) if values else None


def summarize(predictions: Iterable[Prediction], normalizer: str, form: str,
              scored_with: Optional[str] = None) -> dict[str, Any]:
    """Dataset-level figures from predictions scored with ``normalizer``.

    Predictions are scored here from raw text unless ``scored_with`` says their stored fields were
    computed with the same normalizer (see :func:`rescored`); the figures are the same either way.
    ``wer`` counts failed examples as empty hypotheses; ``wer_ok`` is over successful examples only.
    ``rtfx`` = Σ audio_s / Σ infer_s over successful examples.
    """
    hits = subs = dels = ins = 0
    hits_ok = subs_ok = dels_ok = ins_ok = 0
    num = num_ok = empty = 0
    audio_s = infer_s = 0.0
    latencies: list[float] = []
    for raw in predictions:
        p = rescored(raw, normalizer, scored_with)
        h, s, d, i = p.hits or 0, p.substitutions or 0, p.deletions or 0, p.insertions or 0
        hits, subs, dels, ins = hits + h, subs + s, dels + d, ins + i
        num += 1
        if not p.reference_norm:
            empty += 1
        if p.status == "ok":
            hits_ok, subs_ok, dels_ok, ins_ok = hits_ok + h, subs_ok + s, dels_ok + d, ins_ok + i
            num_ok += 1
            audio_s += p.audio_s
            infer_s += p.infer_s
            latencies.append(p.infer_s)
    total = WordCounts(hits, subs, dels, ins)
    return {
        "wer": corpus_wer(total),
        "wer_ok": corpus_wer(WordCounts(hits_ok, subs_ok, dels_ok, ins_ok)),
        "num_examples": num,
        "num_ok": num_ok,
        "num_failed": num - num_ok,
        "substitutions": total.substitutions,
        "deletions": total.deletions,
        "insertions": total.insertions,
        "hits": total.hits,
        "reference_words": total.ref_words,
        "empty_references": empty,
        "audio_s": audio_s,
        "infer_s": infer_s,
        "rtfx": audio_s / infer_s if infer_s > 0 else None,
        "latency_p50_s": _percentile(latencies, 50),
        "latency_p90_s": _percentile(latencies, 90),
        "latency_p99_s": _percentile(latencies, 99),
        "form": form,
        "normalizer": normalizer,
    }
