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


def _percentile(values: list[float], q: float) -> Optional[float]:
    return float(np.percentile(values, q)) if values else None


def summarize(predictions: Iterable[Prediction], normalizer: str, form: str) -> dict[str, Any]:
    """Dataset-level figures from predictions (scored here, from raw text, with ``normalizer``).

    ``wer`` counts failed examples as empty hypotheses; ``wer_ok`` is over successful examples only.
    ``rtfx`` = Σ audio_s / Σ infer_s over successful examples.
    """
    scored = [score_prediction(p, normalizer) for p in predictions]
    ok = [p for p in scored if p.status == "ok"]
    total = sum((counts_of(p) for p in scored), WordCounts())
    total_ok = sum((counts_of(p) for p in ok), WordCounts())
    audio_s = sum(p.audio_s for p in ok)
    infer_s = sum(p.infer_s for p in ok)
    latencies = [p.infer_s for p in ok]
    return {
        "wer": corpus_wer(total),
        "wer_ok": corpus_wer(total_ok),
        "num_examples": len(scored),
        "num_ok": len(ok),
        "num_failed": len(scored) - len(ok),
        "substitutions": total.substitutions,
        "deletions": total.deletions,
        "insertions": total.insertions,
        "hits": total.hits,
        "reference_words": total.ref_words,
        "empty_references": sum(1 for p in scored if not p.reference_norm),
        "audio_s": audio_s,
        "infer_s": infer_s,
        "rtfx": audio_s / infer_s if infer_s > 0 else None,
        "latency_p50_s": _percentile(latencies, 50),
        "latency_p90_s": _percentile(latencies, 90),
        "latency_p99_s": _percentile(latencies, 99),
        "form": form,
        "normalizer": normalizer,
    }
