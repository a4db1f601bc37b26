"""Scoring: pure functions over stored predictions (normalize -> align -> WER -> QoI); exports imported on first
use (``whisperbench.core.lazy_exports``), so that ``scoring.normalize`` alone loads no scipy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy_exports import lazy_exports

# eager: these two name both a submodule and a function; once the submodule is imported the package attribute is the
# module, so the function must be bound here, after it (both modules are light: no scipy, no pandas)
from .normalize import NORMALIZERS, choose_normalizer, get_normalizer, normalize
from .qoi import ExampleComparison, QoiResult

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..types import Prediction


def qoi(reference: Iterable[Prediction], candidate: Iterable[Prediction], normalizer: str = "english") -> QoiResult:
    """QoI of a candidate run's predictions against the reference run's, example by example
    (:mod:`whisperbench.scoring.qoi` says how): their score tables compared by the one implementation,
    :func:`whisperbench.scoring.qoi_table.qoi_predictions` (pyarrow imported on first use). A failed candidate
    example is a regression, a failed reference example is listed in ``reference_failed``, ids whose transcripts
    differ in ``text_mismatch``; an id twice in one run: ValueError."""
    from .qoi_table import qoi_predictions

    return qoi_predictions(reference, candidate, normalizer)


if TYPE_CHECKING:  # re-exported for type checkers; at run time __getattr__ imports them
    from .bootstrap import (
        Interval as Interval,
    )
    from .bootstrap import (
        PairedTest as PairedTest,
    )
    from .bootstrap import (
        paired_wer_test as paired_wer_test,
    )
    from .bootstrap import (
        qoi_interval as qoi_interval,
    )
    from .bootstrap import (
        wer_interval as wer_interval,
    )
    from .engine import (
        counts_of as counts_of,
    )
    from .engine import (
        rescored as rescored,
    )
    from .engine import (
        score_prediction as score_prediction,
    )
    from .engine import (
        score_predictions as score_predictions,
    )
    from .figures import summarize as summarize
    from .record import Summary as Summary
    from .significance import (
        PairedSignificance as PairedSignificance,
    )
    from .significance import (
        SignificanceSettings as SignificanceSettings,
    )
    from .significance import (
        mapsswe as mapsswe,
    )
    from .significance import (
        non_inferiority as non_inferiority,
    )
    from .significance import (
        paired_significance as paired_significance,
    )
    from .significance import (
        sign_test as sign_test,
    )
    from .wer import (
        align as align,
    )
    from .wer import (
        corpus_wer as corpus_wer,
    )
    from .wer import (
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
