"""The experiment trackers ``whisperbench export --to`` publishes to (:data:`TRACKERS`): MLflow and W&B built in,
others from installed packages (entry-point group ``whisperbench.trackers``, pointing at a :class:`Tracker`).

A tracker is a name and a ``publish(tracked_run, **options) -> str`` function named as ``"module:function"``
(imported when used: listing the trackers imports neither MLflow nor W&B), and the options it takes
(the command line passes each from the flag of that name: ``--tracking-uri`` → ``tracking_uri``).

>>> TRACKERS.names()
['mlflow', 'wandb']
>>> TRACKERS.get("mlflow").options
('tracking_uri', 'experiment')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.registry import Registry, imported
from ..errors import WhisperbenchError


@dataclass(frozen=True)
class Tracker:
    """An experiment tracker: its ``name`` (``--to NAME``), a one-line ``description``, ``publish`` as
    ``"module:function"`` (called with a :class:`~whisperbench.reports.tracking.TrackedRun` and the options; returns
    a line saying where the run went) and the keyword ``options`` that function takes."""

    name: str
    description: str
    publish: str
    options: tuple[str, ...] = ()

    def function(self) -> Callable[..., str]:
        """The publish function, imported now."""
        return imported(self.publish)

    def send(self, tracked: Any, **options: Any) -> str:
        """Publish ``tracked`` with those of ``options`` this tracker takes (the others, e.g. another tracker's
        flags left at None, are not passed)."""
        taken = {k: v for k, v in options.items() if k in self.options}
        return self.function()(tracked, **taken)


TRACKERS: Registry[Tracker] = Registry(
    "tracker",
    builtin=lambda: [
        Tracker("mlflow", "MLflow", "whisperbench.reports.mlflow_export:publish", ("tracking_uri", "experiment")),
        Tracker("wandb", "Weights & Biases", "whisperbench.reports.wandb_export:publish", ("project", "entity")),
    ],
    kind=Tracker,
    group="whisperbench.trackers",
    error=WhisperbenchError,
)
