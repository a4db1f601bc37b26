"""The harness's named choices, in a module that imports no harness: the command line lists them in ``--help``
without loading the harness (which imports the adapters, numpy and the backends).

>>> BACKENDS.names()
['in-process', 'process-pool', 'ray']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.registry import Registry, imported
from ..errors import OptionError

#: long-form strategies (``--long-form``): the implementation's own, or the harness's windows
STRATEGIES = ("native", "sequential", "chunked")
#: tries per example when the process transcribing it dies (``--attempts``)
DEFAULT_ATTEMPTS = 2


@dataclass(frozen=True)
class BackendChoice:
    """Where a run's examples run (``--backend NAME``): its name, a one-line description and the function that
    makes the backend for a :class:`~whisperbench.harness.job.Job`, as ``"module:attribute"`` (imported when a run
    uses it: listing the backends imports none of them)."""

    name: str
    description: str
    make: str

    def build(self, job: Any) -> Any:
        """The backend for ``job``, its module imported now."""
        return imported(self.make)(job)


#: where examples run (``--backend``); installed packages add theirs in the entry-point group whisperbench.backends
BACKENDS: Registry[BackendChoice] = Registry(
    "backend",
    builtin=lambda: [
        BackendChoice("in-process", "one adapter in this process", "whisperbench.harness.backends:InProcess"),
        BackendChoice("process-pool", "one adapter per worker process", "whisperbench.harness.backends:ProcessPool"),
        BackendChoice("ray", "Ray actors on a cluster (the ray extra)", "whisperbench.harness.backends:ray_backend"),
    ],
    kind=BackendChoice,
    group="whisperbench.backends",
    error=OptionError,
)
