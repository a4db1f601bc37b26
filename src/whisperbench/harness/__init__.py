"""Running evaluations: runner, run store, environment facts (exports imported on first use:
``whisperbench.core.lazy_exports``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # re-exported for type checkers; at run time __getattr__ imports them
    from ..store.runs import RunStore as RunStore
    from ..store.runs import StoredRun as StoredRun
    from ..store.runs import list_runs as list_runs
    from ..store.runs import open_run as open_run
    from .runner import (
        RunRequest as RunRequest,
    )
    from .runner import (
        RunResult as RunResult,
    )
    from .runner import (
        rescore as rescore,
    )
    from .runner import (
        run_evaluation as run_evaluation,
    )

_WHERE = {
    "RunRequest": ".runner",
    "RunResult": ".runner",
    "rescore": ".runner",
    "run_evaluation": ".runner",
    "RunStore": "..store.runs",
    "StoredRun": "..store.runs",
    "list_runs": "..store.runs",
    "open_run": "..store.runs",
}
__all__ = list(_WHERE)
__getattr__ = lazy_exports(__name__, _WHERE)
