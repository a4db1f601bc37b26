"""Scoring: pure functions over stored predictions (normalize -> align -> WER -> QoI); exports imported on first
use (``whisperbench.lazy``), so that ``scoring.normalize`` alone loads no scipy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

# eager: these two name both a submodule and a function; once the submodule is imported the package attribute is the
# module, so the function must be bound here (both modules are light: no scipy, no pandas)
from .normalize import NORMALIZERS, choose_normalizer, get_normalizer, normalize
from .qoi import ExampleComparison, QoiResult, qoi

if TYPE_CHECKING:  # re-exported for type checkers; at run time __getattr__ imports them
    from .bootstrap import (
        Interval as Interval,
        PairedTest as PairedTest,
        paired_wer_test as paired_wer_test,
        qoi_interval as qoi_interval,
        wer_interval as wer_interval,
    )
    from .record import Summary as Summary
    from .significance import (
        PairedSignificance as PairedSignificance,
        SignificanceSettings as SignificanceSettings,
        mapsswe as mapsswe,
        non_inferiority as non_inferiority,
        paired_significance as paired_significance,
        sign_test as sign_test,
    )
    from .figures import summarize as summarize
    from .engine import (
        counts_of as counts_of,
        rescored as rescored,
        score_prediction as score_prediction,
        score_predictions as score_predictions,
    )
    from .wer import (
        align as align,
        corpus_wer as corpus_wer,
        example_wer as example_wer,
    )

_MODULES = {
    ".bootstrap": ("Interval", "PairedTest", "paired_wer_test", "qoi_interval", "wer_interval"),
    ".record": ("Summary",),
    ".significance": (
        "PairedSignificance",
        "SignificanceSettings",
        "mapsswe",
        "non_inferiority",
        "paired_significance",
        "sign_test",
    ),
    ".figures": ("summarize",),
    ".engine": ("counts_of", "rescored", "score_prediction", "score_predictions"),
    ".wer": ("align", "corpus_wer", "example_wer"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}
__all__ = [
    "NORMALIZERS",
    "choose_normalizer",
    "get_normalizer",
    "normalize",
    "ExampleComparison",
    "QoiResult",
    "qoi",
    *_WHERE,
]
__getattr__ = lazy_exports(__name__, _WHERE)
