"""Distributed evaluation on Ray: actors that each hold a loaded model; the driver writes the run store.

``run_on_ray`` has the shape of the runner's other backends. It starts ``request.workers`` Ray actors
(one CPU each), every one of which loads the adapter once (load and warm-up timed in the actor, as
in-process) and runs batches of examples with the same :class:`~.examples.ExampleRunner`, so timing
and scoring are the in-process ones. The driver keeps ``IN_FLIGHT_PER_ACTOR`` batches queued on each
actor, takes results as they finish (``ray.wait``) and appends them to the run store itself: the
store has one writer, and resume works as for every backend.

A dying actor (a native crash, a killed process, a lost node) does not lose examples: its queued
batches are resubmitted one example at a time, each to an actor with nothing else queued, so that a
later death is charged to the example that caused it; the actor is replaced while the restart budget
lasts. An example whose worker died ``max_attempts`` times is stored as failed, naming the cause.

Ray is imported lazily (``pip install 'whisperbench[ray]'``). Without ``--address`` a local Ray
instance is started for the run (or the current one is used when Ray is already initialized);
with it, the run joins that cluster. Audio paths are sent as absolute paths: on a cluster of
several machines they must be readable on every node (a shared file system), or the examples fail
with the path named.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import socket
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import WhisperbenchError
from ..scoring import score_prediction
from ..types import Dataset, Example, Prediction
from ..machine import peak_rss_mb
from .examples import ExampleRunner, batches
from .spec import AdapterSpec

IN_FLIGHT_PER_ACTOR = 2  # batches queued on an actor, so it never waits for the driver
MAX_ATTEMPTS = 3  # times an example may be in a worker that dies before it is stored as failed
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class ExampleWorker:
    """The Ray actor's class: one loaded adapter behind an :class:`ExampleRunner`."""

    def __init__(self, spec: Any, long_form: bool, normalizer: str, long_form_config: Any, warmup: bool):
        adapter = spec.build()  # the run's AdapterSpec: --refresh, --isolate and --timeout-s as everywhere
        self.runner = ExampleRunner(adapter, long_form, normalizer, long_form_config)
        self.runner.load(warmup)
        self.ran = 0

    def ready(self) -> dict[str, Any]:
        """Facts about this worker once its model is loaded (sent back before any example)."""
        from .environment import machine_info

        return dict(self._facts(), load_s=self.runner.load_s, warmup_s=self.runner.warmup_s,
                    peak_rss_mb=peak_rss_mb(), batch_size=self.runner.batch_size, machine=machine_info(),
                    adapter_info=self.runner.adapter.describe())

    def run(self, examples: list[Example]) -> tuple[list[Prediction], dict[str, Any]]:
        preds = self.runner.run_batch(examples)
        facts = self._facts()
        for pred in preds:
            pred.extra["worker"] = {"host": facts["host"], "pid": facts["pid"]}
        self.ran += len(examples)
        return preds, dict(facts, peak_rss_mb=peak_rss_mb())

    def close(self) -> None:
        self.runner.adapter.close()

    @staticmethod
    def _facts() -> dict[str, Any]:
        return {"host": socket.gethostname(), "pid": os.getpid()}


@dataclass
class _Work:
    """A batch of examples on its way to an actor; a retry holds one example that was in a dead worker."""

    examples: list[Example]
    retry: bool = False


@dataclass
class _Actor:
    handle: Any
    number: int
    ready_ref: Any = None  # pending until the model is loaded
    facts: dict[str, Any] = field(default_factory=dict)
    in_flight: set = field(default_factory=set)
    examples: int = 0
    status: str = "starting"  # starting, live, died, closed, not needed
    error: Optional[str] = None
    retry_in_flight: bool = False  # a retried example runs alone: nothing is queued behind it


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise WhisperbenchError("backend ray: Ray is not installed: pip install 'whisperbench[ray]'") from exc
    return ray


def connect(address: Optional[str]) -> bool:
    """Initialize Ray (join ``address``, or start a local instance); True when this call did it."""
    ray = _import_ray()
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    if address:
        options["address"] = address
    elif not os.environ.get("RAY_ADDRESS"):
        options["include_dashboard"] = False
    try:
        ray.init(**options)
    except Exception as exc:  # ConnectionError, a bad address, a version mismatch ...
        raise WhisperbenchError(f"backend ray: cannot {'join ' + address if address else 'start Ray'}: {exc}") from exc
    return True


def _driver_omp_threads() -> str:
    """``OMP_NUM_THREADS`` as this process has it (unset: OpenMP's and OpenBLAS's default, every usable core).

    Ray sets it to an actor's CPU count (1) otherwise; that resizes numpy's OpenBLAS pool, whose
    float sums then differ: faster-whisper's mel features changed enough to flip a transcript. Giving
    actors the driver's value keeps their results those of an in-process run.
    """
    if os.environ.get("OMP_NUM_THREADS"):
        return os.environ["OMP_NUM_THREADS"]
    try:
        return str(len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS
        return str(os.cpu_count() or 1)


def _absolute(example: Example) -> Example:
    if isinstance(example.audio, str) and "://" not in example.audio:
        return dataclasses.replace(example, audio=str(Path(example.audio).resolve()))
    return example


def _failed(example: Example, error: str, normalizer: str) -> Prediction:
    return score_prediction(Prediction.failed(example, error), normalizer)


def run_on_ray(dataset: Dataset, todo: list[Example], request: Any, normalizer: str, writer: Any, stats: dict,
               progress: Optional[Callable[[int], object]], *, max_attempts: int = MAX_ATTEMPTS,
               max_restarts: Optional[int] = None) -> None:
    """Run ``todo`` on ``request.workers`` Ray actors, appending predictions to ``writer`` as they finish.

    ``max_restarts`` bounds how many replacement actors are started (default: ``workers * max_attempts``).
    Fills ``stats`` like the other backends (load/warm-up time and peak memory measured in the
    actors, the largest over actors) plus ``backend_info`` (cluster, actors, deaths, retries).
    """
    ray = _import_ray()

    started_here = connect(request.address)
    workers = max(1, request.workers)
    restarts_left = workers * max_attempts if max_restarts is None else max_restarts
    cluster_cpus = ray.cluster_resources().get("CPU", 0)
    if cluster_cpus < workers:
        if started_here:
            ray.shutdown()
        raise WhisperbenchError(f"backend ray: {workers} workers need {workers} CPUs (one per actor); "
                                f"the cluster has {cluster_cpus:g}")
    worker_env = {"OMP_NUM_THREADS": _driver_omp_threads()}
    remote_cls = ray.remote(num_cpus=1, max_restarts=0)(ExampleWorker).options(runtime_env={"env_vars": worker_env})
    init_args = (AdapterSpec.of(request), dataset.form == "long", normalizer, request.long_form, request.warmup)
    actors: list[_Actor] = []
    owner: dict[Any, tuple[_Actor, _Work]] = {}  # in-flight object ref -> (actor, work)
    attempts: dict[str, int] = {}
    deaths: list[str] = []
    lost_in: dict[str, list[dict]] = {}  # example id -> the workers that died while it was queued on them

    def start_actor() -> None:
        handle = remote_cls.remote(*init_args)
        actor = _Actor(handle, len(actors))
        actor.ready_ref = handle.ready.remote()
        actors.append(actor)

    def emit(preds: list[Prediction], count: int) -> None:
        for pred in preds:
            writer.append(pred)
        if progress and count:
            progress(count)

    pending: deque[_Work] = deque()

    def bury(actor: _Actor, cause: str, lost: list[_Work]) -> None:
        """Mark ``actor`` dead; give its queued examples (``lost`` and the rest of its queue) another
        attempt, or store them as failed once they have been in ``max_attempts`` dead workers."""
        nonlocal restarts_left
        actor.status, actor.error = "died", cause
        deaths.append(f"actor {actor.number} ({actor.facts.get('host', '?')} pid {actor.facts.get('pid', '?')}): "
                      f"{cause}")
        for ref in actor.in_flight:
            lost.append(owner.pop(ref)[1])
        actor.in_flight.clear()
        try:
            ray.kill(actor.handle, no_restart=True)
        except Exception:
            pass
        retries = []
        for work in lost:
            for example in work.examples:
                attempts[example.id] = attempts.get(example.id, 0) + 1
                lost_in.setdefault(example.id, []).append(
                    {"host": actor.facts.get("host"), "pid": actor.facts.get("pid")})
                if attempts[example.id] >= max_attempts:
                    emit([_failed(example, f"the Ray worker running it died {attempts[example.id]} times "
                                           f"(last: {cause})", normalizer)], 1)
                else:
                    retries.append(_Work([example], retry=True))
        pending.extendleft(reversed(retries))
        if restarts_left > 0 and (pending or owner):
            restarts_left -= 1
            start_actor()

    for _ in range(workers):
        start_actor()
    first_ready_error: Optional[str] = None
    start = None
    size = 1
    try:
        # wait until at least one actor is up: only then is the batch size known and work sent
        while not any(a.status == "live" for a in actors):
            starting = [a for a in actors if a.status == "starting"]
            if not starting:
                raise WhisperbenchError(f"backend ray: no worker could load adapter {request.adapter}: "
                                        f"{first_ready_error}")
            done, _ = ray.wait([a.ready_ref for a in starting], num_returns=1)
            actor = next(a for a in starting if a.ready_ref == done[0])
            try:
                actor.facts, actor.status = ray.get(done[0]), "live"
            except Exception as exc:
                first_ready_error = first_ready_error or _cause(exc)
                actor.status, actor.error = "died", _cause(exc)
                deaths.append(f"actor {actor.number} failed to start: {_cause(exc)}")
        size = next(a for a in actors if a.status == "live").facts["batch_size"]
        pending.extend(_Work(batch) for batch in batches([_absolute(ex) for ex in todo], size))
        start = time.perf_counter()
        while pending or owner:
            _dispatch(pending, actors, owner)
            waiting = list(owner) + [a.ready_ref for a in actors if a.status == "starting"]
            if not waiting:  # every actor is gone and no restarts are left
                cause = deaths[-1] if deaths else "no Ray workers"
                while pending:
                    work = pending.popleft()
                    emit([_failed(ex, f"no live Ray workers left ({cause})", normalizer) for ex in work.examples],
                         len(work.examples))
                break
            done, _ = ray.wait(waiting, num_returns=1)
            ref = done[0]
            if ref not in owner:  # an actor finished loading
                actor = next(a for a in actors if a.status == "starting" and a.ready_ref == ref)
                try:
                    actor.facts, actor.status = ray.get(ref), "live"
                except Exception as exc:
                    bury(actor, f"failed to start: {_cause(exc)}", [])
                continue
            actor, work = owner.pop(ref)
            actor.in_flight.discard(ref)
            actor.retry_in_flight = False
            try:
                preds, facts = ray.get(ref)
            except ray.exceptions.RayActorError as exc:  # the worker process or its node is gone
                bury(actor, _cause(exc), [work])
                continue
            except Exception as exc:  # the call itself failed (e.g. an example that cannot be sent)
                preds = [_failed(ex, f"Ray task failed: {_cause(exc)}", normalizer) for ex in work.examples]
                facts = {}
            actor.facts.update(facts)
            actor.examples += len(work.examples)
            for pred in preds:
                if attempts.get(pred.id):
                    pred.extra["attempts"] = attempts[pred.id] + 1
            emit(preds, len(work.examples))
    finally:
        if start is not None:
            stats["loop_wall_s"] = time.perf_counter() - start
        for actor in actors:
            if actor.status == "live":
                try:  # lets adapters stop their own helper processes (whisper.cpp)
                    ray.get(actor.handle.close.remote(), timeout=10)
                except Exception:
                    pass
                actor.status = "closed"
            elif actor.status == "starting":
                actor.status = "not needed"  # the work was done before its model was loaded
            try:
                ray.kill(actor.handle, no_restart=True)
            except Exception:
                pass
        _record(stats, actors, deaths, lost_in, attempts, request, cluster_cpus, size, max_attempts, ray)
        stats["backend_info"]["worker_env"] = worker_env
        if started_here:
            ray.shutdown()


def _dispatch(pending: deque, actors: list[_Actor], owner: dict) -> None:
    """Queue work on live actors, least loaded first; a retry goes alone to an idle actor."""
    live = sorted((a for a in actors if a.status == "live"), key=lambda a: len(a.in_flight))
    for actor in live:
        while pending and len(actor.in_flight) < IN_FLIGHT_PER_ACTOR and not actor.retry_in_flight:
            if pending[0].retry and actor.in_flight:
                break
            work = pending.popleft()
            ref = actor.handle.run.remote(work.examples)
            actor.in_flight.add(ref)
            owner[ref] = (actor, work)
            actor.retry_in_flight = work.retry


def _cause(exc: BaseException) -> str:
    """A Ray error in one line: the actor's own exception when loading failed, else what happened
    to the worker (Ray's full text repeats tracebacks and troubleshooting advice)."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    if getattr(exc, "actor_init_failed", False) and lines:
        return f"{type(exc).__name__}: the worker failed to load: {lines[-1]}"[:500]
    text = " ".join(lines)
    detail = re.search(r"Worker exit type: \S+ Worker exit detail: [^.]*\.", text)
    first = lines[0] if lines else ""
    return f"{type(exc).__name__}: {first}{' (' + detail.group(0) + ')' if detail else ''}"[:500]


def _record(stats: dict, actors: list[_Actor], deaths: list[str], lost_in: dict, attempts: dict, request: Any,
            cluster_cpus: float, batch_size: int, max_attempts: int, ray: Any) -> None:
    loaded = [a.facts for a in actors if "load_s" in a.facts]
    if loaded:
        stats.update(load_s=max(f["load_s"] for f in loaded), warmup_s=max(f["warmup_s"] for f in loaded),
                     peak_rss_mb=max(f.get("peak_rss_mb", 0.0) for f in loaded) or None,
                     adapter_info=loaded[0]["adapter_info"])
    stats["backend_info"] = {
        "ray_version": ray.__version__,
        "address": request.address,
        "cluster_cpus": cluster_cpus,
        "actors_requested": max(1, request.workers),
        "batch_size": batch_size,
        "max_attempts": max_attempts,
        "actors": [{
            "number": a.number, "status": a.status, "host": a.facts.get("host"), "pid": a.facts.get("pid"),
            "cpu": (a.facts.get("machine") or {}).get("cpu"),
            "thread_env": (a.facts.get("machine") or {}).get("thread_env"), "load_s": a.facts.get("load_s"),
            "warmup_s": a.facts.get("warmup_s"), "peak_rss_mb": a.facts.get("peak_rss_mb"),
            "examples": a.examples, "error": a.error,
        } for a in actors],
        "deaths": deaths,
        "retried_examples": dict(sorted(lost_in.items())),  # id -> workers that died with it queued
        "failed_after_retries": sorted(i for i, n in attempts.items() if n >= max_attempts),
    }
