"""Compare stored runs: WER of each and QoI of candidates against a reference, as pandas tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

import pandas as pd

from ..store import StoredRun
from ..scoring import QoiResult, qoi, summarize
from .weights import weights_relation


@dataclass
class Comparison:
    reference: StoredRun
    candidate: StoredRun
    result: QoiResult
    reference_wer: Optional[float]
    candidate_wer: Optional[float]
    same_dataset: bool
    weights: str = "unknown"  # see reports.weights.weights_relation

    @property
    def qoi(self) -> Optional[float]:
        """QoI %: the share of joined examples whose WER did not rise (None when none joined)."""
        return self.result.qoi

    def to_json(self, with_examples: bool = False) -> dict:
        return {
            "reference": self.reference.name,
            "candidate": self.candidate.name,
            "reference_wer": self.reference_wer,
            "candidate_wer": self.candidate_wer,
            "same_dataset": self.same_dataset,
            "weights": self.weights,
            "normalizer": self.reference.normalizer,
            **self.result.to_json(with_examples),
        }


def compare_runs(reference: StoredRun, candidate: StoredRun) -> Comparison:
    """QoI and WER of ``candidate`` against ``reference``, scored with the reference's normalizer."""
    normalizer = reference.normalizer
    ref_summary = summarize(reference.predictions, normalizer, reference.form, scored_with=reference.normalizer)
    cand_summary = summarize(candidate.predictions, normalizer, candidate.form, scored_with=candidate.normalizer)
    return Comparison(
        reference=reference,
        candidate=candidate,
        result=qoi(reference.predictions, candidate.predictions, normalizer,
                   reference_scored_with=reference.normalizer, candidate_scored_with=candidate.normalizer),
        reference_wer=ref_summary["wer"],
        candidate_wer=cand_summary["wer"],
        same_dataset=bool(reference.dataset_hash) and reference.dataset_hash == candidate.dataset_hash,
        weights=weights_relation(reference.meta, candidate.meta),
    )


def comparison_table(comparisons: Iterable[Comparison]) -> pd.DataFrame:
    rows = []
    for c in comparisons:
        r = c.result
        rows.append({
            "candidate": c.candidate.name,
            "reference": c.reference.name,
            "ref WER %": c.reference_wer,
            "cand WER %": c.candidate_wer,
            "QoI %": r.qoi,
            "joined": r.joined,
            "improved": r.improved,
            "unchanged": r.unchanged,
            "regressed": r.regressed,
            "cand failed": r.candidate_failed,
            "unjoined": len(r.only_in_reference) + len(r.only_in_candidate),
            "same dataset": c.same_dataset,
            "weights": c.weights,
        })
    return pd.DataFrame(rows)
