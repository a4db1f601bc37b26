"""Scoring: pure functions over stored predictions (normalize -> align -> WER -> QoI)."""

from .bootstrap import Interval, PairedTest, paired_wer_test, qoi_interval, wer_interval
from .normalize import NORMALIZERS, choose_normalizer, get_normalizer, normalize
from .qoi import ExampleComparison, QoiResult, qoi
from .record import Summary
from .significance import (PairedSignificance, SignificanceSettings, mapsswe, non_inferiority, paired_significance,
                           sign_test)
from .summary import counts_of, rescored, score_prediction, score_predictions, summarize
from .wer import WordErrorRate, align, corpus_wer, example_wer

__all__ = [
    "Interval", "PairedTest", "paired_wer_test", "qoi_interval", "wer_interval",
    "NORMALIZERS", "choose_normalizer", "get_normalizer", "normalize", "ExampleComparison", "QoiResult",
    "qoi", "Summary", "counts_of", "rescored", "score_prediction", "score_predictions", "summarize", "WordErrorRate", "align", "corpus_wer",
    "example_wer", "PairedSignificance", "SignificanceSettings", "mapsswe", "non_inferiority", "paired_significance",
    "sign_test",
]
