"""whisperbench: WER and QoI across Whisper implementations, on the same weights.

The public Python API (see docs/python.md): :func:`evaluate`, :func:`score`, :func:`compare`, :func:`gate`,
:func:`load_run`, :func:`load_dataset`, :func:`to_frame`, :func:`report`, :func:`export`, :func:`publish`,
:func:`runs`, :func:`remove_runs`, :func:`rescore`, :func:`demo`, :func:`sweep`, :func:`perturb`, :func:`subtitles`,
:func:`list_datasets`, :func:`check_dataset`, :func:`list_adapters`, :func:`list_models`, :func:`model_info`,
:func:`convert_model` and :func:`model_formats` (one per command of the CLI, which calls them), and for the statistics
:func:`compare_all`, :func:`plan` and :func:`noise`, from :mod:`whisperbench.api`; :class:`Metric`,
:class:`Pairing` and :class:`ScoredExample`, the metric protocol (docs/metrics.md), from
:mod:`whisperbench.scoring.metrics`. They are imported on first use, so ``import whisperbench.types`` (or a worker
process) does not load pandas and the harness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import api
    from .api import (
        check_dataset,
        compare,
        compare_all,
        convert_model,
        demo,
        evaluate,
        export,
        gate,
        list_adapters,
        list_datasets,
        list_models,
        load_dataset,
        load_run,
        model_formats,
        model_info,
        noise,
        perturb,
        plan,
        publish,
        remove_runs,
        report,
        rescore,
        runs,
        score,
        subtitles,
        sweep,
        to_frame,
    )
    from .scoring.metrics import Metric, Pairing, ScoredExample

__all__ = [
    "__version__",
    "api",
    "evaluate",
    "score",
    "compare",
    "compare_all",
    "gate",
    "plan",
    "noise",
    "load_run",
    "load_dataset",
    "to_frame",
    "runs",
    "remove_runs",
    "report",
    "export",
    "publish",
    "sweep",
    "rescore",
    "demo",
    "perturb",
    "subtitles",
    "list_datasets",
    "check_dataset",
    "list_adapters",
    "list_models",
    "model_info",
    "convert_model",
    "model_formats",
    "Metric",
    "Pairing",
    "ScoredExample",
]
#: records of the metric protocol (docs/metrics.md), importable without loading the API
_RECORDS = {"Metric": "scoring.metrics", "Pairing": "scoring.metrics", "ScoredExample": "scoring.metrics"}


def __getattr__(name: str) -> Any:
    """The API's functions and ``__version__``, imported (read) on first use (PEP 562): ``import whisperbench``
    reads no package metadata (``importlib.metadata``: about 25 ms)."""
    if name == "__version__":
        return _version()
    if name not in __all__:
        raise AttributeError(f"module 'whisperbench' has no attribute {name!r}")
    import importlib

    if name in _RECORDS:
        return getattr(importlib.import_module(f"{__name__}.{_RECORDS[name]}"), name)
    api = importlib.import_module(f"{__name__}.api")  # not `from . import api`: that would call __getattr__ again
    return api if name == "api" else getattr(api, name)


def _version() -> str:
    """The installed distribution's version ("0.0.0+local" when running from a source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("whisperbench")
    except PackageNotFoundError:
        return "0.0.0+local"
