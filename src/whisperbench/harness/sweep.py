"""Sweep the compressed and reduced-precision variants of a model over a dataset: one run per variant.

The variants are the adapters' own (``Adapter.variants``: name -> adapter options). Each variant is an
ordinary run (resumed when it exists, named ``{implementation}-{variant}_{model}_{dataset}``), executed
in a fresh process, so its peak memory is its own, a native crash or a refused conversion fails that
variant alone, and the sweep goes on. The reference (openai-whisper on the same weights unless another
run is named) is run first, the same way.

With ``parallel`` N > 1, up to N variants run at once, each still in its own fresh process (a thread here
waits on each), with the threads per variant lowered so that variants × threads never exceed the cores: the
runs, their transcripts and scores are those of a sequential sweep, and the entries keep the plan's order.

>>> [v.label for v in plan_sweep(["jax"])]
['jax-float32', 'jax-bfloat16']
>>> share_cores(parallel=2, threads=4, variants=5, cores=2)  # two variants at once, one thread each
(2, 1)
>>> share_cores(parallel=8, threads=2, variants=3, cores=16)  # no more at once than there are variants
(3, 2)
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..adapters import get_adapter
from ..errors import OptionError
from ..models.resolve import resolve_source
from ..process.child import die_with_parent, started_from_main_thread
from ..process.host import usable_cpus
from ..process.start_method import worker_context
from ..scoring.record import Summary
from ..store.runs import RunStore
from .runner import RunRequest, default_run_name, run_evaluation
from .spec import AdapterSpec

#: implementations a sweep covers unless told otherwise (each with variants; openai-whisper is the reference)
DEFAULT_IMPLEMENTATIONS = ("faster-whisper", "whisper-cpp", "mlx", "jax", "ane-pytorch", "transformers")
REFERENCE_ADAPTER = "openai-whisper"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Variant:
    """One variant of an implementation: the adapter and the options that make it."""

    adapter: str
    name: str  # "" for the adapter as it is (the reference)
    options: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """The variant's name in tables: the implementation and its variant (``whisper.cpp-q5_0``)."""
        return f"{self.adapter}-{self.name}" if self.name else self.adapter


@dataclass
class SweepEntry:
    """What became of one variant: its run's name, or why it did not run or failed."""

    variant: Variant
    run: str | None = None  # the run's name under the runs folder
    status: str = "pending"  # finished, failed, refused (the machine cannot run it), unavailable (not installed)
    error: str | None = None
    wall_s: float | None = None
    summary: Summary | None = None

    def to_dict(self) -> dict:
        """The entry as the sweep's record file keeps it (its summary is in the run's own folder)."""
        return {
            "implementation": self.variant.adapter,
            "variant": self.variant.name,
            "label": self.variant.label,
            "run": self.run,
            "status": self.status,
            "error": self.error,
            "wall_s": self.wall_s,
        }


@dataclass
class SweepResult:
    """A whole sweep: its entries in the plan's order, the dataset's name, the reference run and the wall time."""

    entries: list[SweepEntry]
    dataset: str  # the dataset's name (in every variant's run name and the trade-off files' names)
    reference: str | None  # the reference run's name; None when the reference variant did not finish
    wall_s: float


def plan_sweep(
    implementations: Sequence[str] = DEFAULT_IMPLEMENTATIONS, variants: Sequence[str] | None = None
) -> list[Variant]:
    """Every variant of ``implementations`` (only those named in ``variants`` when given, by name or label)."""
    plan = []
    for adapter in implementations:
        declared = get_adapter(adapter).variants
        if not declared:
            raise OptionError(f"sweep: adapter {adapter} declares no variants")
        for name, options in declared.items():
            variant = Variant(adapter, name, tuple(sorted(options.items())))
            if variants is None or name in variants or variant.label in variants:
                plan.append(variant)
    if variants is not None:
        known = {v for plan_item in plan for v in (plan_item.name, plan_item.label)}
        unknown = [v for v in variants if v not in known]
        if unknown:
            raise OptionError(f"sweep: no variant named {', '.join(unknown)} in {', '.join(implementations)}")
    return plan


def _why_not(variant: Variant) -> tuple[str, str | None]:
    """('unavailable' | 'refused', why) when this machine cannot run ``variant``, else ('', None)."""
    cls = get_adapter(variant.adapter)
    missing = cls.missing()
    if missing:
        return "unavailable", f"not installed ({', '.join(missing)} missing): {cls.install_hint()}"
    if variant.name:
        why = cls.variant_refused(variant.name)
        if why:
            return "refused", why
    return "", None


def request_for(variant: Variant, base: RunRequest, dataset_name: str) -> RunRequest:
    """The run request of ``variant``: ``base`` (model, dataset, runs folder, decoding) with its options."""
    decoding = replace(base.decoding, extra={**base.decoding.extra, **dict(variant.options)})
    return replace(
        base,
        adapter=variant.adapter,
        decoding=decoding,
        label=variant.label,
        variant=variant.name or None,
        name=default_run_name(variant.label, base.model, dataset_name),
    )


def _load_in_child(request: RunRequest) -> dict:
    adapter = AdapterSpec.of(request).build(isolated=False)
    adapter.ensure_available()
    adapter.load()  # converts the weights into the cache when they are not there yet
    adapter.close()
    return {}


def _run_in_child(request: RunRequest) -> dict:
    result = run_evaluation(request)
    return {"run": result.store.name, "summary": result.summary}


def _in_fresh_process(function: Callable[[RunRequest], dict], request: RunRequest) -> dict:
    """``function(request)`` in a new process that ends with this one (a sweep killed with SIGKILL leaves no
    variant running on, holding its run's lock)."""
    context = worker_context()  # spawned, never re-running the caller's script
    with cf.ProcessPoolExecutor(
        1, mp_context=context, initializer=die_with_parent, initargs=(os.getpid(), started_from_main_thread())
    ) as pool:
        try:
            return pool.submit(function, request).result()
        except cf.process.BrokenProcessPool as exc:
            raise RuntimeError("the process running this variant died (a native crash?)") from exc


def _finished(request: RunRequest) -> bool:
    store = RunStore(Path(request.runs_dir) / str(request.name))
    return store.exists() and store.read_run_info().status == "finished"


def run_variant(request: RunRequest) -> tuple[str, Summary]:
    """Run one variant: (run name, summary); a crash or an error raises with its text.

    The model is loaded once in a throwaway process first, so a conversion (cached by content hash)
    never runs inside the measured run: its peak memory and load time are the implementation's own.
    """
    if not _finished(request):  # a finished run resumes without loading its model
        _in_fresh_process(_load_in_child, request)
    out = _in_fresh_process(_run_in_child, request)
    return out["run"], out["summary"]


def share_cores(parallel: int, threads: int, variants: int, cores: int) -> tuple[int, int]:
    """(variants at once, threads per variant): at most ``parallel``, ``variants`` and ``cores`` at once, and the
    ``threads`` asked for lowered so that variants at once × threads per variant <= ``cores``."""
    at_once = max(1, min(parallel, variants, cores))
    return at_once, max(1, min(threads, cores // at_once))


def _shared(base: RunRequest, parallel: int, variants: int) -> tuple[int, RunRequest]:
    """The variants at once and the base request with its threads per variant (unchanged when one at a time)."""
    if parallel <= 1:
        return 1, base
    cores, asked = usable_cpus(), base.decoding.threads
    at_once, threads = share_cores(parallel, asked, variants, cores)
    lowered = f" (threads={asked} asked: lowered so that {at_once} × threads <= {cores})" if threads < asked else ""
    log.info(
        "sweep: %d variant(s) at once, each in its own process with %d thread(s), on %d core(s)%s",
        at_once,
        threads,
        cores,
        lowered,
    )
    return at_once, replace(base, decoding=replace(base.decoding, threads=threads))


def _run_entry(entry: SweepEntry, base: RunRequest, dataset_name: str) -> SweepEntry:
    """Run ``entry``'s variant into ``entry`` (a failure is recorded in it, never raised)."""
    request = request_for(entry.variant, base, dataset_name)
    start = time.perf_counter()
    try:
        entry.run, entry.summary = run_variant(request)
        entry.status = "finished"
    except Exception as exc:  # a refused conversion, a crash: this variant fails, the sweep goes on
        entry.status, entry.error = "failed", _one_line(exc)
        entry.run = request.name if (Path(base.runs_dir) / str(request.name)).exists() else None
    entry.wall_s = time.perf_counter() - start
    return entry


def run_sweep(
    plan: list[Variant],
    base: RunRequest,
    dataset_name: str,
    report: Callable[[SweepEntry, int, int], object] | None = None,
    parallel: int = 1,
) -> list[SweepEntry]:
    """Run every variant of ``plan`` (resuming the runs that exist); ``report`` hears of each as it ends.

    ``parallel``: how many variants may run at once (see :func:`share_cores`); the entries keep ``plan``'s
    order whatever the order they end in. A model that cannot be found stops the sweep before any variant
    starts (`ModelError`): every variant would fail the same way, each after starting its own process."""
    resolve_source(base.model)
    entries = [SweepEntry(variant) for variant in plan]
    for entry in entries:
        entry.status, entry.error = _why_not(entry.variant)
    todo = [entry for entry in entries if not entry.status]
    at_once, base = _shared(base, parallel, len(todo))
    ended = 0

    def tell(entry: SweepEntry) -> None:
        nonlocal ended
        ended += 1
        if report:
            report(entry, ended, len(plan))

    if at_once == 1:
        for entry in entries:
            tell(_run_entry(entry, base, dataset_name) if not entry.status else entry)
        return entries
    for entry in entries:
        if entry.status:  # refused or unavailable: said at once
            tell(entry)
    with cf.ThreadPoolExecutor(at_once, thread_name_prefix="sweep") as pool:
        for future in cf.as_completed([pool.submit(_run_entry, entry, base, dataset_name) for entry in todo]):
            tell(future.result())
    return entries


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:500]


def reference_variant() -> Variant:
    """The reference of a sweep: openai-whisper with no variant (the plainest run of the same weights)."""
    return Variant(REFERENCE_ADAPTER, "")
