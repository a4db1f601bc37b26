"""Distributed evaluation on Ray: actors that each hold a loaded model; the driver writes the run store.

``RayBackend`` is one of :mod:`.backends`. It starts ``job.workers`` Ray actors
(each reserving its ``threads`` CPUs, fewer when the cluster holds fewer), every one of which loads the adapter once
(load and warm-up timed in the actor, as
in-process) and runs batches of examples with the same :class:`~.examples.ExampleRunner`, so timing
and scoring are the in-process ones. The driver keeps ``IN_FLIGHT_PER_ACTOR`` batches queued on each
actor, takes results as they finish (``ray.wait``) and appends them to the run store itself: the
store has one writer, and resume works as for every backend.

A dying actor (a native crash, a killed process, a lost node) does not lose examples: its queued
batches are resubmitted one example at a time, each to an actor with nothing else queued, so that a
later death is charged to the example that caused it; the actor is replaced while the restart budget
lasts. An example whose worker died on each of its tries (the run's retry policy, `harness/retry.py`: the
same on every backend) is stored as failed, naming the cause.

Ray is imported lazily (``pip install 'whisperbench[ray]'``). Without ``--address`` a local Ray
instance is started for the run (or the current one is used when Ray is already initialized);
with it, the run joins that cluster. A relative ``--model`` path is made absolute before it reaches the
workers, and an actor whose weights fingerprint differs from the driver's (or, where the driver cannot
read the model, from the first live actor's) is refused: killed, logged and recorded, its work done
elsewhere. Audio paths are sent as absolute paths: on a cluster of
several machines they must be readable on every node (a shared file system), or the examples fail
with the path named. ``--ray-env`` values reach each actor as a constructor argument, ``--runtime-env`` is its
Ray runtime_env (:mod:`.ray_env`); ``backend_info`` records the address joined and the nodes, never a value.

The console (the module's logger) says where each actor went live, when one dies (its node, the examples
it held: retried elsewhere or stored as failed) and, after ``SAY_WAITING_S`` with nothing finished, what the
run waits for (CPUs the cluster does not have free, models loading, examples running). docs/cluster.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import socket
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.redact import redact_text
from ..errors import WhisperbenchError
from ..models.detect import parse_model_format
from ..process.host import peak_rss_mb
from ..types import Example, Prediction
from . import ray_env
from .examples import batches
from .job import BackendReport, Job, Progress

logger = logging.getLogger(__name__)
IN_FLIGHT_PER_ACTOR = 2  # batches queued on an actor, so it never waits for the driver
SAY_WAITING_S = 15.0  # with nothing finished for this long, say what the run waits for (again every as long)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class ExampleWorker:
    """The Ray actor's class: one loaded adapter behind an :class:`ExampleRunner`."""

    def __init__(self, job: Job, env: dict[str, str] | None = None):
        # the --ray-env values: set here, in memory, not through Ray's runtime_env (whose agent logs its contents)
        os.environ.update(env or {})
        adapter = job.spec.build()  # the run's AdapterSpec: --refresh, --isolate and --timeout-s as everywhere
        self.runner = job.runner(adapter)
        self.runner.load(job.warmup)
        self.ran = 0

    def ready(self) -> dict[str, Any]:
        """Facts about this worker once its model is loaded (sent back before any example)."""
        from .environment import machine_info

        return dict(
            self._facts(),
            load_s=self.runner.load_s,
            warmup_s=self.runner.warmup_s,
            peak_rss_mb=peak_rss_mb(),
            batch_size=self.runner.batch_size,
            machine=machine_info(),
            adapter_info=self.runner.adapter.describe(),
        )

    def run(self, examples: list[Example]) -> tuple[list[Prediction], dict[str, Any]]:
        """Transcribe a batch of examples on this actor; their predictions and the actor's current facts."""
        preds = self.runner.run_batch(examples)
        facts = self._facts()
        for pred in preds:
            pred.extra["worker"] = {"host": facts["host"], "pid": facts["pid"], "node": facts.get("node_id")}
        self.ran += len(examples)
        return preds, dict(facts, peak_rss_mb=peak_rss_mb())

    def close(self) -> None:
        """Close the actor's adapter (its helper processes stop)."""
        self.runner.adapter.close()

    @staticmethod
    def _facts() -> dict[str, Any]:
        facts: dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid()}
        try:  # two raylets on one machine share a host name: the node id tells them apart
            import ray

            facts.update(node_id=ray.get_runtime_context().get_node_id(), node_ip=ray.util.get_node_ip_address())
        except Exception:  # not in a Ray worker
            pass
        return facts


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
    error: str | None = None
    retry_in_flight: bool = False  # a retried example runs alone: nothing is queued behind it


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise WhisperbenchError("backend ray: Ray is not installed: pip install 'whisperbench[ray]'") from exc
    return ray


def connect(address: str | None) -> bool:
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


def absolute_model(spec: Any) -> Any:
    """``spec`` with a relative model path made absolute (workers resolve paths against their own folder);
    a model name (``tiny.en``) or an absolute path is left as it is."""
    fmt, model = parse_model_format(spec.model or "")  # ``transformers:DIR`` keeps its format
    if model and not Path(model).is_absolute() and "://" not in model and Path(model).exists():
        return dataclasses.replace(spec, model=(f"{fmt}:" if fmt else "") + str(Path(model).resolve()))
    return spec


def driver_fingerprint(job: Job) -> str | None:
    """The weights fingerprint of the run's model as the driver reads it; None when the adapter uses no
    weights of ours or the driver cannot read them (then the first live actor's is the one all must have)."""
    if job.adapter is None or not getattr(job.adapter, "uses_weights", False):
        return None
    from ..models.resolve import describe_source

    try:
        return describe_source(job.spec.model).get("fingerprint")
    except (WhisperbenchError, OSError) as exc:
        logger.info(
            "backend ray: the driver cannot fingerprint %s (%s): actors are checked against each other",
            job.spec.model,
            exc,
        )
        return None


def actor_cpus(threads: int, workers: int, cluster_cpus: float) -> int:
    """CPUs reserved per actor: its ``threads``, reduced to what the cluster holds for ``workers`` actors.

    >>> actor_cpus(4, 2, 16), actor_cpus(4, 2, 6), actor_cpus(8, 4, 2)
    (4, 3, 1)
    """
    return max(1, min(int(threads or 1), int(cluster_cpus // max(1, workers))))


def cluster_facts(ray: Any, address: str | None) -> dict[str, Any]:
    """The cluster this driver joined: the address given (``--address``, else RAY_ADDRESS; None: a local Ray),
    the address actually joined (the GCS address; a ``ray://`` client address as given) and the live nodes
    with their CPUs."""
    given = address or os.environ.get("RAY_ADDRESS") or None
    joined = given if given and given.startswith("ray://") else None
    if joined is None:
        try:
            joined = ray.get_runtime_context().gcs_address
        except Exception:  # an older Ray, or a client connection without it
            joined = given
    nodes = [
        {
            "node_id": n.get("NodeID"),
            "address": n.get("NodeManagerAddress"),
            "host": n.get("NodeManagerHostname"),
            "cpus": (n.get("Resources") or {}).get("CPU", 0.0),
        }
        for n in ray.nodes()
        if n.get("Alive")
    ]
    return {
        "address": redact_text(given) if given else None,
        "joined_address": redact_text(joined) if joined else None,
        "node_count": len(nodes),
        "nodes": nodes,
    }


def _absolute(example: Example) -> Example:
    if isinstance(example.audio, str) and "://" not in example.audio:
        return dataclasses.replace(example, audio=str(Path(example.audio).resolve()))
    return example


class _ActorPool:
    """The Ray actors of one run: started, loaded, refused when their weights differ, replaced while restarts
    are left, killed and closed; ``deaths`` says what happened to each that is gone."""

    def __init__(self, ray: Any, job: Job, remote_cls: Any, restarts: int, cpus: int = 1):
        self.ray, self.job, self.remote_cls, self.restarts_left = ray, job, remote_cls, restarts
        self.cpus = cpus  # reserved by each actor
        self.env = ray_env.forwarded(job.ray_env)  # --ray-env values, handed to each actor as it starts
        self.actors: list[_Actor] = []
        self.deaths: list[str] = []
        self.expected_fingerprint = driver_fingerprint(job)

    def wait_one(self, refs: list[Any]) -> Any:
        """The first of ``refs`` to finish; while none does, say every ``SAY_WAITING_S`` what the run waits for."""
        waited = 0.0
        while True:
            done, _ = self.ray.wait(refs, num_returns=1, timeout=SAY_WAITING_S)
            if done:
                return done[0]
            waited += SAY_WAITING_S
            say_waiting(self, waited)

    def start(self) -> None:
        """Start one more actor (it loads its model; ``ready_ref`` resolves when it has)."""
        handle = self.remote_cls.remote(self.job.portable(), self.env)
        actor = _Actor(handle, len(self.actors))
        actor.ready_ref = handle.ready.remote()
        self.actors.append(actor)

    def replace(self, work_left: bool) -> None:
        """Start a replacement actor while restarts are left and there is work for it."""
        if self.restarts_left > 0 and work_left:
            self.restarts_left -= 1
            logger.info("backend ray: starting a replacement worker (%d more allowed)", self.restarts_left)
            self.start()

    def starting_refs(self) -> list[Any]:
        """The readiness refs of the actors still loading their model."""
        return [a.ready_ref for a in self.actors if a.status == "starting"]

    def await_first_live(self) -> None:
        """Wait until one actor has loaded its model: only then is the batch size known and work sent."""
        first_error: str | None = None
        while not any(a.status == "live" for a in self.actors):
            starting = [a for a in self.actors if a.status == "starting"]
            if not starting:
                raise WhisperbenchError(
                    f"backend ray: no worker could load adapter {self.job.spec.adapter}: {first_error}"
                )
            done = self.wait_one([a.ready_ref for a in starting])
            actor = next(a for a in starting if a.ready_ref == done)
            try:
                actor.facts, actor.status = self.ray.get(done), "live"
            except Exception as exc:
                first_error = first_error or _cause(exc)
                actor.status, actor.error = "died", _cause(exc)
                self.deaths.append(f"actor {actor.number} failed to start: {_cause(exc)}")
                logger.warning("backend ray: worker %d failed to start: %s", actor.number, _cause(exc))
                continue
            first_error = first_error or self.refuse_foreign(actor, work_left=False)  # no work queued yet
            self.say_live(actor)

    def loaded(self, ref: Any, work_left: bool) -> None:
        """An actor's model finished loading (``ref`` its readiness): live, or dead with the reason."""
        actor = next(a for a in self.actors if a.status == "starting" and a.ready_ref == ref)
        try:
            actor.facts, actor.status = self.ray.get(ref), "live"
        except Exception as exc:
            actor.status, actor.error = "died", f"failed to start: {_cause(exc)}"
            self.deaths.append(f"actor {actor.number} (? pid ?): failed to start: {_cause(exc)}")
            logger.warning("backend ray: worker %d failed to start: %s", actor.number, _cause(exc))
            self.kill(actor)
            self.replace(work_left)
            return
        self.refuse_foreign(actor, work_left)
        self.say_live(actor)

    @staticmethod
    def say_live(actor: _Actor) -> None:
        """Log where a worker that loaded its model (and was not refused) runs."""
        if actor.status == "live":
            logger.info(
                "backend ray: worker %d live on %s (model loaded in %.1f s)",
                actor.number,
                where(actor),
                actor.facts.get("load_s") or 0.0,
            )

    def refuse_foreign(self, actor: _Actor, work_left: bool) -> str | None:
        """Refuse (kill, say why) a freshly loaded actor whose weights fingerprint is not the driver's (or, when
        the driver cannot read the model, not the first live actor's): it would give other transcripts."""
        found = ((actor.facts.get("adapter_info") or {}).get("weights") or {}).get("fingerprint")
        if self.expected_fingerprint is None:
            self.expected_fingerprint = found
        if found == self.expected_fingerprint:
            return None
        cause = (
            f"refused: its weights differ from the driver's (fingerprint {str(found)[:12]} on "
            f"{actor.facts.get('host')}, expected {str(self.expected_fingerprint)[:12]})"
        )
        logger.warning("backend ray: actor %d %s", actor.number, cause)
        actor.status, actor.error = "refused", cause
        self.deaths.append(f"actor {actor.number} {cause}")
        self.kill(actor)
        self.replace(work_left)
        return cause

    def kill(self, actor: _Actor) -> None:
        """Kill ``actor`` for good (no Ray restart); one already gone is left alone."""
        with contextlib.suppress(Exception):
            self.ray.kill(actor.handle, no_restart=True)

    def close(self) -> None:
        """Close every live actor (its adapter stops its own helper processes) and kill them all."""
        for actor in self.actors:
            if actor.status == "live":
                with contextlib.suppress(Exception):  # lets adapters stop their own helper processes (whisper.cpp)
                    self.ray.get(actor.handle.close.remote(), timeout=10)
                actor.status = "closed"
            elif actor.status == "starting":
                actor.status = "not needed"  # the work was done before its model was loaded
            self.kill(actor)


def say_waiting(pool: _ActorPool, waited: float) -> None:
    """Log what nothing has finished for ``waited`` seconds: workers not started (CPUs short, or a model
    still loading) or examples still running."""
    starting = [a for a in pool.actors if a.status == "starting"]
    live = [a for a in pool.actors if a.status == "live"]
    try:
        free = pool.ray.available_resources().get("CPU", 0.0)
        total = pool.ray.cluster_resources().get("CPU", 0.0)
    except Exception:  # the cluster does not answer: say what is known
        free = total = float("nan")
    if starting and not free >= pool.cpus:
        logger.warning(
            "backend ray: waiting for %d CPUs (%d worker(s) of %d CPUs not started after %.0f s): "
            "the cluster has %g of %g CPUs free; %d worker(s) live",
            len(starting) * pool.cpus,
            len(starting),
            pool.cpus,
            waited,
            free,
            total,
            len(live),
        )
    elif starting:
        logger.info(
            "backend ray: %d worker(s) still loading the model after %.0f s (the cluster has %g of %g "
            "CPUs free); %d live",
            len(starting),
            waited,
            free,
            total,
            len(live),
        )
    else:
        logger.info(
            "backend ray: no result for %.0f s; %d batch(es) running on %d worker(s)",
            waited,
            sum(len(a.in_flight) for a in live),
            len(live),
        )


class RayBackend:
    """Run examples on ``job.workers`` Ray actors, appending predictions to the writer as they finish.

    ``max_restarts`` bounds how many replacement actors are started (default: ``workers * attempts`` of the
    job's retry policy).
    The report's load/warm-up time and peak memory are measured in the actors (the largest over
    actors); its ``backend_info`` holds the cluster, actors, deaths and retries.
    """

    def __init__(self, job: Job, *, max_restarts: int | None = None):
        self.job, max_attempts = job, job.retry.attempts
        self.workers = max(1, job.workers)
        self.restarts = self.workers * max_attempts if max_restarts is None else max_restarts
        self.owner: dict[Any, tuple[_Actor, _Work]] = {}  # in-flight object ref -> (actor, work)
        self.pending: deque[_Work] = deque()
        self.attempts: dict[str, int] = {}
        self.lost_in: dict[str, list[dict]] = {}  # example id -> the workers that died while it was queued on them
        self.batch_size = 1

    def run(self, todo: list[Example], writer: Any, progress: Progress) -> BackendReport:
        """Run ``todo`` on the actors; every example ends stored (transcribed, or failed with its reason)."""
        self.ray = ray = _import_ray()
        self.writer, self.progress = writer, progress
        self.job = dataclasses.replace(self.job, spec=absolute_model(self.job.spec))
        started_here = connect(self.job.address)
        cluster_cpus = ray.cluster_resources().get("CPU", 0)
        local = started_here and not self.job.address and not os.environ.get("RAY_ADDRESS")
        if local and 1 <= cluster_cpus < self.workers:  # a Ray started for this run alone: as many as fit
            logger.warning(
                "backend ray: %d workers asked for; the local Ray has %g CPUs: %d actors, one CPU each",
                self.workers,
                cluster_cpus,
                int(cluster_cpus),
            )
            self.workers = int(cluster_cpus)
        if cluster_cpus < self.workers:  # a cluster joined: it was asked for this many
            if started_here:
                ray.shutdown()
            raise WhisperbenchError(
                f"backend ray: {self.workers} workers need {self.workers} CPUs (one per actor); "
                f"the cluster has {cluster_cpus:g}"
            )
        self.actor_cpus = actor_cpus(self.job.spec.decoding.threads, self.workers, cluster_cpus)
        self.cluster = cluster_facts(ray, self.job.address)
        logger.info(
            "backend ray: joined %s: %d node(s), CPUs %s",
            self.cluster["joined_address"],
            self.cluster["node_count"],
            [n["cpus"] for n in self.cluster["nodes"]],
        )
        worker_env = {"OMP_NUM_THREADS": _driver_omp_threads()}  # recorded: no secret in it
        try:
            runtime_env = ray_env.worker_runtime_env(self.job.runtime_env, worker_env)
            ray_env.forwarded(self.job.ray_env)  # every name set here, before any actor starts
        except WhisperbenchError:
            if started_here:
                ray.shutdown()
            raise
        remote_cls = ray.remote(num_cpus=self.actor_cpus, max_restarts=0)(ExampleWorker).options(
            runtime_env=runtime_env
        )
        self.pool = _ActorPool(ray, self.job, remote_cls, self.restarts, self.actor_cpus)
        loop_wall = 0.0
        try:
            for _ in range(self.workers):
                self.pool.start()
            self.pool.await_first_live()
            self.batch_size = next(a for a in self.pool.actors if a.status == "live").facts["batch_size"]
            self.pending.extend(_Work(batch) for batch in batches([_absolute(ex) for ex in todo], self.batch_size))
            start = time.perf_counter()
            try:
                self._loop()
            finally:
                loop_wall = time.perf_counter() - start
        finally:
            self.pool.close()
            if started_here:
                ray.shutdown()
        return self._report(loop_wall, cluster_cpus, worker_env)

    def _emit(self, preds: list[Prediction]) -> None:
        self.writer.append_all(preds)
        if self.progress and preds:
            self.progress(len(preds))

    def _loop(self) -> None:
        """Keep work queued on the live actors and store results as they finish, until nothing is left."""
        while self.pending or self.owner:
            _dispatch(self.pending, self.pool.actors, self.owner)
            waiting = list(self.owner) + self.pool.starting_refs()
            if not waiting:  # every actor is gone and no restarts are left
                cause = self.pool.deaths[-1] if self.pool.deaths else "no Ray workers"
                logger.warning(
                    "backend ray: no live workers left and no restarts allowed: %d example(s) stored as failed (%s)",
                    sum(len(w.examples) for w in self.pending),
                    cause,
                )
                while self.pending:
                    self._emit(
                        [
                            self.job.failed(ex, f"no live Ray workers left ({cause})")
                            for ex in self.pending.popleft().examples
                        ]
                    )
                return
            done = self.pool.wait_one(waiting)
            if done in self.owner:
                self._finished(done)
            else:
                self.pool.loaded(done, bool(self.pending or self.owner))

    def _finished(self, ref: Any) -> None:
        actor, work = self.owner.pop(ref)
        actor.in_flight.discard(ref)
        actor.retry_in_flight = False
        try:
            preds, facts = self.ray.get(ref)
        except self.ray.exceptions.RayActorError as exc:  # the worker process or its node is gone
            return self._bury(actor, _cause(exc), [work])
        except Exception as exc:  # the call itself failed (e.g. an example that cannot be sent)
            preds, facts = [self.job.failed(ex, f"Ray task failed: {_cause(exc)}") for ex in work.examples], {}
        actor.facts.update(facts)
        actor.examples += len(work.examples)
        for pred in preds:
            if self.attempts.get(pred.id):
                pred.extra["attempts"] = self.attempts[pred.id] + 1
        self._emit(preds)

    def _bury(self, actor: _Actor, cause: str, lost: list[_Work]) -> None:
        """Mark ``actor`` dead; give its queued examples (``lost`` and the rest of its queue) another
        attempt, or store them as failed once the retry policy gives up on them."""
        actor.status, actor.error = "died", cause
        where_ = {"host": actor.facts.get("host"), "pid": actor.facts.get("pid")}
        self.pool.deaths.append(f"actor {actor.number} ({where_['host'] or '?'} pid {where_['pid'] or '?'}): {cause}")
        lost = lost + [self.owner.pop(ref)[1] for ref in actor.in_flight]
        actor.in_flight.clear()
        self.pool.kill(actor)
        retries, failed = [], []
        for example in (example for work in lost for example in work.examples):
            self.attempts[example.id] = self.attempts.get(example.id, 0) + 1
            self.lost_in.setdefault(example.id, []).append(where_)
            if not self.job.retry.again(self.attempts[example.id]):
                failed.append(example.id)
                self._emit(
                    [
                        self.job.failed(
                            example, self.job.retry.gave_up(self.attempts[example.id], f"its Ray worker: {cause}")
                        )
                    ]
                )
            else:
                retries.append(_Work([example], retry=True))
        self.pending.extendleft(reversed(retries))
        _say_death(actor, cause, [w.examples[0].id for w in retries], failed, self.job.retry.attempts)
        self.pool.replace(bool(self.pending or self.owner))

    def _report(self, loop_wall: float, cluster_cpus: float, worker_env: dict) -> BackendReport:
        loaded = [a.facts for a in self.pool.actors if "load_s" in a.facts]
        info = _backend_info(self, cluster_cpus, worker_env)
        return BackendReport.from_workers(
            loaded, loop_wall_s=loop_wall, backend_info=info, adapter_info=loaded[0]["adapter_info"] if loaded else None
        )


def _backend_info(b: RayBackend, cluster_cpus: float, worker_env: dict) -> dict:
    """run.json's ``backend_info`` of a Ray run: the cluster, the actors, deaths and retries, the workers' environment
    (names, never values) and the weights every actor had."""
    return {
        "ray_version": b.ray.__version__,
        **b.cluster,
        "cluster_cpus": cluster_cpus,
        **ray_env.describe(b.job.runtime_env, b.job.ray_env),  # names, never values
        "actors_requested": b.job.workers,
        "actors_started": b.workers,  # fewer on a local Ray with fewer CPUs
        "batch_size": b.batch_size,
        "max_attempts": b.job.retry.attempts,
        "actors": [_actor_record(a) for a in b.pool.actors],
        "deaths": b.pool.deaths,
        "retried_examples": dict(sorted(b.lost_in.items())),  # id -> workers that died with it queued
        "failed_after_retries": sorted(i for i, n in b.attempts.items() if not b.job.retry.again(n)),
        "worker_env": worker_env,
        "actor_cpus": b.actor_cpus,
        "model": b.job.spec.model,
        "weights_fingerprint": b.pool.expected_fingerprint,
    }


def where(actor: _Actor) -> str:
    """Where ``actor`` runs, for the console: node (id prefix and IP), host and pid, as far as known."""
    facts = actor.facts
    node = f"node {str(facts['node_id'])[:8]} ({facts.get('node_ip')})" if facts.get("node_id") else "node ?"
    return f"{node}, host {facts.get('host') or '?'}, pid {facts.get('pid') or '?'}"


def _say_death(actor: _Actor, cause: str, retried: list[str], failed: list[str], attempts: int) -> None:
    """Say on the console that a worker died, where, and what becomes of the examples it held."""
    fate = ([f"retried on other workers: {', '.join(retried)}"] if retried else []) + (
        [f"stored as failed after {attempts} attempts: {', '.join(failed)}"] if failed else []
    )
    logger.warning(
        "backend ray: worker %d on %s died (%s); it held %d example(s): %s; nothing is lost",
        actor.number,
        where(actor),
        cause,
        len(retried) + len(failed),
        "; ".join(fate) or "none",
    )


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


def _actor_record(actor: _Actor) -> dict:
    facts, machine = actor.facts, actor.facts.get("machine") or {}
    return {
        "number": actor.number,
        "status": actor.status,
        "host": facts.get("host"),
        "pid": facts.get("pid"),
        "node_id": facts.get("node_id"),
        "node_ip": facts.get("node_ip"),
        "cpu": machine.get("cpu"),
        "thread_env": machine.get("thread_env"),
        "load_s": facts.get("load_s"),
        "warmup_s": facts.get("warmup_s"),
        "peak_rss_mb": facts.get("peak_rss_mb"),
        "examples": actor.examples,
        "error": actor.error,
    }
