"""The harness's named choices, in a module that imports nothing: the command line lists them in ``--help``
without loading the harness (which imports the adapters, numpy and the backends)."""

from __future__ import annotations

#: long-form strategies (``--long-form``): the implementation's own, or the harness's windows
STRATEGIES = ("native", "sequential", "chunked")
#: where examples run (``--backend``); ``harness.backends.BACKENDS`` maps each to its class
BACKEND_NAMES = ("in-process", "process-pool", "ray")
#: tries per example when the process transcribing it dies (``--attempts``)
DEFAULT_ATTEMPTS = 2
