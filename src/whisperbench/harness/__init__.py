"""Running evaluations: runner, run store, environment facts (exports imported on first use: ``whisperbench.lazy``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # re-exported for type checkers; at run time __getattr__ imports them
    from ..store import RunStore as RunStore, StoredRun as StoredRun, list_runs as list_runs, open_run as open_run
    from .runner import (
        RunRequest as RunRequest,
        RunResult as RunResult,
        rescore as rescore,
        run_evaluation as run_evaluation,
    )

_WHERE = {
    "RunRequest": ".runner",
    "RunResult": ".runner",
    "rescore": ".runner",
    "run_evaluation": ".runner",
    "RunStore": "..store",
    "StoredRun": "..store",
    "list_runs": "..store",
    "open_run": "..store",
}
__all__ = list(_WHERE)
__getattr__ = lazy_exports(__name__, _WHERE)
