"""Where a run's examples are transcribed: one small interface, three backends.

A backend gets a :class:`Job` (the run's adapter spec and how examples are scored) and runs the examples
still to do: ``run(todo, writer, progress)`` appends each finished, scored :class:`~whisperbench.types.Prediction`
to the run's writer (failures only through ``Prediction.failed``) and returns a :class:`BackendReport`
(load, warm-up, peak memory of the model-holding processes, the loop's wall time, backend facts). Every
backend builds its adapter from ``job.spec``, so ``--refresh``, ``--isolate`` and ``--timeout-s`` hold
wherever examples run.

Each is registered by name in :data:`~whisperbench.harness.choices.BACKENDS`.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import multiprocessing.util
import os
import tempfile
import time
from collections import Counter
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..process.child import die_with_parent, started_from_main_thread
from ..process.host import peak_rss_mb
from ..process.start_method import defined_in_main, worker_context
from ..types import Example, Prediction
from .examples import ExampleRunner, batches, error_text
from .job import BackendReport, Job, Progress


class Backend(Protocol):
    """Where a run's examples are transcribed (registered in ``BACKENDS``, built from a ``Job``)."""

    def run(self, todo: list[Example], writer: Any, progress: Progress) -> BackendReport:
        """Run ``todo``, appending each prediction to ``writer`` as it finishes; the load, memory and timing report."""


class InProcess:
    """The adapter loaded in this process; I/O-bound adapters (HTTP APIs) keep several calls in flight."""

    def __init__(self, job: Job):
        self.job = job

    def run(self, todo: list[Example], writer: Any, progress: Progress) -> BackendReport:
        """Load the adapter here and transcribe ``todo`` in order (batched where the adapter batches)."""
        adapter = self.job.adapter
        assert adapter is not None
        runner = self.job.runner(adapter)
        runner.load(self.job.warmup)
        report = BackendReport(load_s=runner.load_s, warmup_s=runner.warmup_s)
        start = time.perf_counter()
        try:
            if adapter.max_in_flight <= 1:
                self._sequential(runner, todo, writer, progress)
            else:
                self._concurrent(runner, todo, writer, progress, adapter.max_in_flight)
        finally:
            report.loop_wall_s = time.perf_counter() - start
            report.peak_rss_mb = peak_rss_mb()
            report.adapter_info = adapter.describe()
            adapter.close()
        if self.job.warm_load:
            report.load_warm_s = runner.reload()
        return report

    @staticmethod
    def _sequential(runner: ExampleRunner, todo: list[Example], writer: Any, progress: Progress) -> None:
        for batch in batches(todo, runner.write_every):
            writer.append_all(runner.run_batch(batch))
            if progress:
                progress(len(batch))

    @staticmethod
    def _concurrent(
        runner: ExampleRunner, todo: list[Example], writer: Any, progress: Progress, in_flight: int
    ) -> None:
        """Several calls in flight, each prediction written as it finishes."""
        with cf.ThreadPoolExecutor(in_flight) as pool:
            futures = [pool.submit(runner.run, example) for example in todo]
            try:
                for future in cf.as_completed(futures):
                    writer.append(future.result())
                    if progress:
                        progress(1)
            except BaseException:
                for future in futures:
                    future.cancel()
                raise


# --- process-pool workers: each process loads its own model -------------------------------------
_worker: ExampleRunner | None = None
_marks: Path | None = None  # where a worker notes the examples it is transcribing (to name a crash's culprit)


def _worker_init(job: Job, marks: str, parent_pid: int, by_signal: bool) -> None:
    global _worker, _marks
    die_with_parent(parent_pid, by_signal)  # a run killed with SIGKILL leaves no worker behind
    _marks = Path(marks)
    adapter = job.spec.build()
    _worker = job.runner(adapter)
    # when the pool shuts this worker down: stop an isolated child and remove its log folder
    multiprocessing.util.Finalize(None, adapter.close, exitpriority=10)
    _worker.load(job.warmup)


def _worker_run(examples: list[Example]) -> tuple[list[Prediction], dict]:
    assert _worker is not None and _marks is not None
    mark = _marks / f"{os.getpid()}.json"
    mark.write_text(json.dumps([example.id for example in examples]), encoding="utf-8")
    preds = _worker.run_batch(examples)
    mark.unlink(missing_ok=True)
    return preds, {
        "pid": os.getpid(),
        "peak_rss_mb": peak_rss_mb(),
        "load_s": _worker.load_s,
        "warmup_s": _worker.warmup_s,
    }


@dataclass
class _PoolState:
    """What a process-pool run has left to do, across the pools that a crashing worker makes it rebuild."""

    job: Job
    queue: list[list[Example]]
    writer: Any
    progress: Progress
    suspects: list[Example] = field(default_factory=list)  # in flight when a pool broke: retried one at a time
    crashes: Counter = field(default_factory=Counter)
    blank_breaks: int = 0  # pools that broke with no example to blame (e.g. while loading the model)
    workers: dict[int, dict] = field(default_factory=dict)

    def store(self, batch: list[Example], future: cf.Future) -> bool:
        """Write a finished batch's predictions; False when its pool broke under it."""
        try:
            preds, worker = future.result()
            self.workers[worker["pid"]] = worker
        except BrokenProcessPool:
            return False
        except Exception as exc:  # the batch could not even be sent or returned: its examples fail
            preds = [self.job.failed(example, f"worker failed: {error_text(exc)}") for example in batch]
        for pred in preds:
            if self.crashes[pred.id]:  # tried again after its worker died
                pred.extra["attempts"] = self.crashes[pred.id] + pred.extra.get("attempts", 1)
        self._emit(preds)
        return True

    def _emit(self, preds: list[Prediction]) -> None:
        self.writer.append_all(preds)
        if self.progress and preds:
            self.progress(len(preds))

    def broke(self, in_flight: set[str]) -> None:
        """A worker died: examples in flight are suspects, tried again one at a time while the job's retry
        policy allows (then failed, saying so); the rest wait."""
        culprits = [e for e in self.suspects if e.id in in_flight]
        culprits += [e for batch in self.queue for e in batch if e.id in in_flight]
        self.blank_breaks += not culprits
        self.suspects = [e for e in self.suspects if e.id not in in_flight]
        self.queue = [kept for kept in ([e for e in b if e.id not in in_flight] for b in self.queue) if kept]
        for example in culprits:
            self.crashes[example.id] += 1
            if self.job.retry.again(self.crashes[example.id]):
                self.suspects.append(example)
            else:
                cause = "its process-pool worker died (a native crash?); the other examples went on in a new pool"
                self._emit([self.job.failed(example, self.job.retry.gave_up(self.crashes[example.id], cause))])
        if self.blank_breaks >= 2:  # the workers cannot even start: fail what is left, once
            self._emit(
                [
                    self.job.failed(
                        example,
                        "worker failed: the process pool broke twice with no example in "
                        "flight (the model cannot load in a worker?)",
                    )
                    for example in self.suspects + [e for batch in self.queue for e in batch]
                ]
            )
            self.suspects, self.queue = [], []


class ProcessPool:
    """Examples on ``job.workers`` processes, each holding a model. A worker that dies (a native crash)
    breaks the pool: a new one goes on; the examples in flight are retried one at a time, and an example
    whose worker died on each of ``job.retry.attempts`` tries is recorded as failed, naming the cause."""

    def __init__(self, job: Job):
        self.job = job

    def run(self, todo: list[Example], writer: Any, progress: Progress) -> BackendReport:
        """Transcribe ``todo`` on the worker processes, storing each result as it arrives."""
        job = self.job
        # spawned (fork is unsafe with threaded native libraries), never re-running the caller's script
        context = worker_context(defined_in_main(job.spec.adapter_class))
        # the main process's adapter is never loaded here: it only tells the batch size
        assert job.adapter is not None
        size = 1 if job.long_form or not job.adapter.needs_audio else max(1, job.adapter.batch_size)
        state = _PoolState(job, batches(todo, size), writer, progress)
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="whisperbench-pool-") as marks:
            while state.queue or state.suspects:
                with cf.ProcessPoolExecutor(
                    job.workers,
                    mp_context=context,
                    initializer=_worker_init,
                    initargs=(job.portable(), marks, os.getpid(), started_from_main_thread()),
                ) as pool:
                    self._round(state, pool, Path(marks))
        return BackendReport.from_workers(list(state.workers.values()), loop_wall_s=time.perf_counter() - start)

    @staticmethod
    def _round(state: _PoolState, pool: cf.ProcessPoolExecutor, marks: Path) -> None:
        """Suspects one at a time (a crash then names its example), then the queue in parallel."""
        while state.suspects:
            example = state.suspects[0]
            if not state.store([example], pool.submit(_worker_run, [example])):
                return state.broke({example.id})
            state.suspects.pop(0)
        futures = {pool.submit(_worker_run, batch): batch for batch in state.queue}
        broken = False
        for future in cf.as_completed(futures):
            batch = futures[future]
            if state.store(batch, future):
                state.queue = [b for b in state.queue if b is not batch]
            else:
                broken = True
        if broken:
            in_flight = {
                i for mark in marks.glob("*.json") for i in json.loads(mark.read_text(encoding="utf-8") or "[]")
            }
            for mark in marks.glob("*.json"):
                mark.unlink()
            state.broke(in_flight)


def ray_backend(job: Job) -> Backend:
    """The Ray backend for ``job`` (Ray is an optional extra, imported here)."""
    from .ray_backend import RayBackend

    return RayBackend(job)
