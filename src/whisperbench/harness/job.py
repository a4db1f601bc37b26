"""What a backend is given (:class:`Job`) and what it gives back (:class:`BackendReport`).

>>> BackendReport(loop_wall_s=2.0, load_s=0.5).to_dict()["load_s"]
0.5
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..adapters.base import FROM_DATASET, Adapter
from ..types import Example, Prediction
from .examples import ExampleRunner
from .longform import LongFormConfig
from .retry import RetryPolicy
from .spec import AdapterSpec

Progress = Callable[[int], object] | None


@dataclass
class Job:
    """What every backend needs to run a run's examples."""

    spec: AdapterSpec  # builds the adapter (in this process, a pool worker or a Ray actor)
    adapter: Adapter | None  # built from the spec in this process, wrapped for isolation, not loaded
    long_form: bool  # the dataset's audio is long-form (one example at a time, windowed by the config)
    long_form_config: LongFormConfig = field(default_factory=LongFormConfig)
    warmup: bool = True
    workers: int = 1
    address: str | None = None  # ray: the cluster to join
    retry: RetryPolicy = field(default_factory=RetryPolicy)  # the same on every backend (harness/retry.py)
    runtime_env: dict | None = None  # ray: the workers' runtime_env (--runtime-env); kept on the driver
    ray_env: tuple[str, ...] = ()  # ray: names of the driver's variables forwarded to the workers
    warm_load: bool = False  # in-process: load the model once more after the examples, timed (load_warm_s)

    def portable(self) -> Job:
        """This job without its built adapter, to send to another process (which builds its own); the
        runtime_env (which may hold secrets) stays here: the workers already run inside it."""
        return dataclasses.replace(self, adapter=None, runtime_env=None)

    def runner(self, adapter: Adapter) -> ExampleRunner:
        """An ExampleRunner for this job's adapter (the one way every backend transcribes examples)."""
        return ExampleRunner(
            adapter,
            self.long_form,
            self.long_form_config,
            one_language_per_batch=self.spec.decoding.language == FROM_DATASET,
            retry=self.retry,
        )

    def failed(self, example: Example, error: str) -> Prediction:
        """The failed prediction of ``example`` with ``error`` (Prediction.failed, the one constructor of failures)."""
        return Prediction.failed(example, error)


@dataclass
class BackendReport:
    """What a backend measured; the load/warm-up/memory figures are the largest over its workers."""

    loop_wall_s: float = 0.0  # the inference loop (a process pool's includes its workers' start)
    load_s: float | None = None
    warmup_s: float | None = None
    load_warm_s: float | None = None  # a second load in the same process, caches warm (in-process only)
    peak_rss_mb: float | None = None
    adapter_info: dict | None = None  # the adapter's describe(), from where it ran
    backend_info: dict | None = None  # Ray: cluster, actors, deaths and retries

    def to_dict(self) -> dict:
        """The report as run.json records it."""
        return asdict(self)

    @classmethod
    def from_workers(cls, workers: list[dict], **fields: Any) -> BackendReport:
        """A report whose load, warm-up and memory are the largest of ``workers``' (dicts with those keys)."""
        if not workers:
            return cls(**fields)
        return cls(
            load_s=max(w["load_s"] for w in workers),
            warmup_s=max(w["warmup_s"] for w in workers),
            peak_rss_mb=max(w.get("peak_rss_mb") or 0.0 for w in workers) or None,
            **fields,
        )
