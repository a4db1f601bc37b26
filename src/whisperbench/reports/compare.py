"""Compare stored runs: WER of each and QoI of candidates against a reference, as pandas tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

import pandas as pd

from ..store import StoredRun
from ..scoring import QoiResult
from ..scoring.qoi_table import qoi_tables
from ..scoring.table import table_wer
from .timing import timing_columns
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
    timing: dict = field(default_factory=dict)  # see reports.timing.timing_columns ({} without stored times)

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
            **({"timing": self.timing} if self.timing else {}),
            "normalizer": self.reference.normalizer,
            **self.result.to_json(with_examples),
        }


def compare_runs(reference: StoredRun, candidate: StoredRun) -> Comparison:
    """QoI and WER of ``candidate`` against ``reference``, scored with the reference's normalizer.

    Computed from the runs' score tables (columns, stored beside the predictions and rebuilt when stale):
    the same figures as ``summarize`` and ``qoi`` on their predictions.
    """
    normalizer = reference.normalizer
    ref_table, cand_table = reference.score_table(normalizer), candidate.score_table(normalizer)
    return Comparison(
        reference=reference,
        candidate=candidate,
        result=qoi_tables(ref_table, cand_table, normalizer),
        reference_wer=table_wer(ref_table),
        candidate_wer=table_wer(cand_table),
        same_dataset=bool(reference.dataset_hash) and reference.dataset_hash == candidate.dataset_hash,
        weights=weights_relation(reference.meta, candidate.meta),
        timing=timing_columns(reference, candidate),
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
            "cand status": str(c.candidate.coverage),
            **c.timing,
        })
    return pd.DataFrame(rows)
