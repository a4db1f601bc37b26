"""Running evaluations: runner, run store, environment facts."""

from .runner import RunRequest, RunResult, rescore, run_evaluation
from ..store import RunStore, StoredRun, list_runs, open_run

__all__ = ["RunRequest", "RunResult", "rescore", "run_evaluation", "RunStore", "StoredRun", "list_runs", "open_run"]
