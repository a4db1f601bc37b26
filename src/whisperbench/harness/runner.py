"""Run an adapter over a dataset into a run store; resumable, failure-tolerant, timed per example.

Timing: ``infer_s`` covers only ``adapter.transcribe`` (audio decoding, scoring and writing are
outside it). Model load and a warm-up call are timed apart and reported in run.json, never inside
RTFx. Peak memory is measured in the process that ran the model.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import shutil
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..adapters import DecodingOptions
from ..adapters.base import FROM_DATASET, Adapter, refuse_prompt
from ..core.languages import english_only_warning
from ..core.redact import redact
from ..datasets import Checked, load_dataset
from ..datasets.keywords import with_keywords
from ..errors import OptionError, RunStoreError
from ..process.host import cpu_counters, package_versions, usable_cpus
from ..scoring import choose_normalizer
from ..scoring.engine import pool_size
from ..scoring.figures import summarize_with_table
from ..scoring.metrics import stored_options
from ..scoring.record import MEASURED_BY_COMPUTING, Summary
from ..scoring.table import ScoredWhileWritten
from ..store.run_info import DatasetInfo, RunInfo, identity_differences
from ..store.runs import RunStore, safe_run_name
from ..types import Dataset, Example, Prediction
from . import ray_env
from .choices import BACKENDS
from .environment import CORE_PACKAGES, load_snapshot, machine_info, machine_load
from .job import BackendReport, Job
from .request import RunRequest
from .retry import RetryPolicy
from .spec import AdapterSpec

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    """What one run invocation did: the run's store, run.json and summary, how many examples it computed, resumed or
    found stale, and its notes and warnings."""

    store: RunStore
    info: dict  # the run.json written (RunInfo.to_dict())
    summary: Summary
    computed: int  # examples transcribed by this invocation
    resumed: int  # examples already in the store
    stale: dict[str, str] = field(default_factory=dict)  # stored results redone: id -> why they no longer held
    notes: list[str] = field(default_factory=list)  # execution settings that differ from the stored run's
    warnings: list[str] = field(default_factory=list)  # said before the run (an English-only model on German…)
    invalid: int = 0  # invalid examples (--skip-invalid) recorded as failed by this invocation


def default_label(adapter: str, decoding: DecodingOptions) -> str:
    """How reports name an implementation: the adapter plus its adapter-specific options."""
    return " ".join([adapter] + [f"{k}={v}" for k, v in sorted(decoding.extra.items())])


def default_run_name(adapter: str, model: str, dataset: str, decoding: DecodingOptions | None = None) -> str:
    """The name a run gets without ``--name``: ADAPTER_MODEL_DATASET, then each option that sets it apart from a
    run with the defaults (:func:`distinguishing_options`), made safe for a folder name.

    >>> int8 = DecodingOptions(beam_size=5, extra={"compute_type": "int8"})
    >>> default_run_name("faster-whisper", "tiny.en", "qa", int8)
    'faster-whisper_tiny.en_qa_beam_size-5_compute_type-int8'
    """
    options = distinguishing_options(decoding) if decoding is not None else []
    return safe_run_name("_".join([adapter, Path(model).name or model, dataset, *options]))


#: options whose values are locations, secrets or free text: never part of a folder name
_NOT_IN_NAMES = re.compile(r"url|key|token|secret|pass|auth|prompt|header", re.I)


def distinguishing_options(decoding: DecodingOptions) -> list[str]:
    """``KEY-VALUE`` of each decoding option set away from its default and of each adapter option given (the
    thread count aside: another count resumes a run; locations, secrets and long values aside)."""
    default = DecodingOptions()
    common = [
        (f.name, getattr(decoding, f.name))
        for f in dataclasses.fields(decoding)
        if f.name not in ("threads", "extra") and getattr(decoding, f.name) != getattr(default, f.name)
    ]
    return [
        f"{key}-{value}"
        for key, value in common + sorted(decoding.extra.items())
        if not _NOT_IN_NAMES.search(key) and len(str(value)) <= 40
    ]


def backend_of(request: RunRequest) -> str:
    """The backend that runs ``request`` (``in-process`` with ``workers > 1`` is a process pool)."""
    BACKENDS.get(request.backend)  # an unknown one: OptionError naming the known ones
    if request.address and request.backend != "ray":
        raise OptionError(f"an address ({request.address}) is for --backend ray, not {request.backend}")
    if (request.runtime_env or request.ray_env) and request.backend != "ray":
        raise OptionError(f"--runtime-env and --ray-env are for --backend ray, not {request.backend}")
    if request.warm_load and (
        request.backend != "in-process" or request.workers > 1 or request.isolate or request.timeout_s is not None
    ):
        raise OptionError(
            "--warm-load reloads the model in the process that ran it: in-process runs only "
            "(no --workers, --backend, --isolate or --timeout-s: an isolated child's reload would be a cold start)"
        )
    if request.backend == "in-process" and request.workers > 1:
        return "process-pool"
    return request.backend


def _store_of(request: RunRequest, info: RunInfo) -> RunStore:
    name = request.name or default_run_name(request.adapter, request.model, info.dataset.name, request.decoding)
    return RunStore(Path(request.runs_dir) / safe_run_name(name))


def _open_store(store: RunStore, old: RunInfo | None, request: RunRequest, info: RunInfo) -> None:
    """Check that ``store`` (whose stored run.json is ``old``) may be resumed by ``request`` (same run spec), or
    clear it for ``--overwrite``."""
    if old is not None and not request.overwrite:
        if old.identity() != info.identity():
            diff = [k for k, v in info.identity().items() if old.identity().get(k) != v]
            settings = "; ".join(identity_differences(old, info))
            raise RunStoreError(
                f"run {store.path} exists with a different {', '.join(diff)} ({settings}); "
                "pass --name for a new run or --overwrite to replace it"
            )
        new, stored = info.dataset.num_examples or 0, old.dataset.num_examples or 0
        narrower = request.limit is not None and new < stored
        if narrower:  # the run would say "6 of 2" and its summary cover 2 while its table holds 6
            raise RunStoreError(
                f"run {store.path} holds a selection of {stored} examples; --limit {request.limit} "
                f"selects {new}: leave --limit out (or raise it) to resume, pass --name for a "
                "new run, or --overwrite to replace it"
            )
    elif old is not None and request.overwrite:
        for leftover in (store.predictions_path, store.path / "summary.json"):
            leftover.unlink(missing_ok=True)


def _stale(
    previous: dict[str, Prediction], dataset: Dataset, old: RunInfo, source_digest: str | None
) -> dict[str, str]:
    """Stored results that no longer match what this run would compute, each with the reason: they are redone.

    Each stored example is re-checked against the current dataset (transcript, audio digest) and the
    adapter's source (a hypotheses file); results stored before audio digests were recorded are taken
    as stale only when the dataset's content hash changed.
    """
    source_changed = old.source_digest != source_digest
    dataset_changed = old.dataset.content_hash != dataset.content_hash
    why: dict[str, str] = {}
    for example in dataset.examples:
        pred = previous.get(example.id)
        if pred is None:
            continue
        stored_audio = pred.extra.get("audio_sha256")
        if source_changed:
            why[example.id] = "the adapter's source (hypotheses file) changed"
        elif pred.transcript != example.text:
            why[example.id] = "its transcript changed"
        elif (stored_audio or dataset_changed) and stored_audio != example.extra.get("audio_sha256"):
            why[example.id] = "its audio changed"
    return why


def run_evaluation(
    request: RunRequest,
    progress: Callable[[int], object] | None = None,
    checked: Checked | None = None,
    begin: Callable[[], object] | None = None,
    since: dict[str, float] | None = None,
) -> RunResult:
    """Evaluate ``request.adapter`` on ``request.dataset``; resume what the store already holds.

    ``progress`` is called with the number of examples finished since the last call; ``begin`` once, just before
    the model loads, when there is anything to compute. ``checked`` lets a caller pass an already-loaded dataset,
    and ``since`` the :func:`~whisperbench.process.host.cpu_counters` it read before loading it (the window over
    which the other processes' load is measured to size the scoring pool; default: from this call on).
    Resolve the run, open its store, run the backend, finalize the summary.
    """
    run = _resolve(request, checked, since)
    store = _store_of(request, run.info)
    created, held = not store.path.exists(), list[bool]()
    try:
        return _run_in(store, run, request, (progress, begin), held)
    except BaseException:  # a model refused at load, a crash before any result: no empty run folder is left
        empty = not (store.predictions_path.exists() and store.predictions_path.stat().st_size)
        if created and held and empty:  # made by this invocation, which held its lock (never another writer's)
            shutil.rmtree(store.path, ignore_errors=True)
        raise


def _run_in(
    store: RunStore,
    run: _Resolved,
    request: RunRequest,
    callbacks: tuple[Callable[[int], object] | None, Callable[[], object] | None],
    held: list[bool],
) -> RunResult:
    """Open ``store`` (locked; ``held`` gets an item once the lock is ours), run what it lacks, finalize;
    ``callbacks``: (progress, begin) as :func:`run_evaluation` takes them."""
    progress, begin = callbacks
    with store.lock():  # one writer per run: a second one is refused, naming the first
        held.append(True)
        old = store.read_run_info() if store.exists() else None  # read once: checked, re-checked against, kept
        _open_store(store, old, request, run.info)
        previous = {p.id: p for p in store.read_predictions()}
        stale = _stale(previous, run.dataset, old or RunInfo(), run.source_digest) if previous else {}
        done = {i for i, p in previous.items() if i not in stale and (p.status == "ok" or not request.retry_failed)}
        todo = [ex for ex in run.dataset.examples if ex.id not in done]
        _start_info(run, request, old, stale)
        store.write_info(run.info)  # status "running" until _finalize
        report = _stored_report(old)  # nothing to do: the stored run's measurements stay (never lost on resume)
        kept = store.read_summary() if old is not None and not todo else None
        load_before = load_snapshot()
        invalid_now = [bad for bad in run.checked.invalid if bad.id not in done]
        scoring = _scored_while_written(run) if not previous else None
        try:
            with store.open_for_append() as opened:
                writer = _Scoring(opened, scoring) if scoring else opened
                for bad in invalid_now:
                    invalid = Example(id=bad.id, audio=b"", text=bad.text)  # its words count: a failure never helps
                    writer.append(Prediction.failed(invalid, f"invalid: {bad.reason}"))
                if todo:
                    if begin is not None:
                        begin()  # the model loads now: a resume with nothing to compute never says so
                    backend = BACKENDS.get(run.info.backend or request.backend).build(_job(run, request))
                    report = backend.run(todo, writer, progress)
            if scoring:
                scoring.written()
            summary = _finalize(run, store, todo, request, report, load_before, kept, old, scoring)
        finally:
            if scoring:
                scoring.close()
        notes = _execution_changes(old, run.info) if old else []
        return RunResult(
            store,
            run.info.to_dict(),
            summary,
            computed=len(todo),
            resumed=summary.num_examples - len(todo) - len(invalid_now),
            stale=stale,
            notes=notes,
            warnings=run.warnings,
            invalid=len(invalid_now),
        )


def _scored_while_written(run: _Resolved) -> ScoredWhileWritten | None:
    """A pool scoring a new run's predictions as they are written, where the adapter computes nothing here
    (recorded outputs: no speed is measured while the run goes) and the run is sized for a pool
    (``run.scoring_workers``)."""
    if run.adapter_cls.computes or run.scoring_workers < 2:
        return None
    return ScoredWhileWritten(run.normalizer, run.scoring_workers)


@dataclass
class _Scoring:
    """A run's writer that also hands each group of predictions it writes to :class:`ScoredWhileWritten`."""

    writer: Any
    scoring: ScoredWhileWritten

    def append(self, pred: Prediction) -> None:
        self.append_all([pred])

    def append_all(self, preds: Iterable[Prediction]) -> None:
        group = list(preds)
        self.scoring.add(self.writer.append_all(group), group)


@dataclass
class _Resolved:
    """A request made concrete: its dataset, normalizer, adapter (built, not loaded) and run.json's identity."""

    checked: Checked
    normalizer: str
    adapter_cls: type[Adapter]
    spec: AdapterSpec
    adapter: Any  # built from the spec, as it runs (wrapped for isolation), not loaded
    long_form: Any
    source_digest: str | None
    info: RunInfo
    warnings: list[str] = field(default_factory=list)
    #: how many processes score the run (``scoring.engine.pool_size``, the load of other processes measured while
    #: the run was resolved and its dataset read, so nothing sleeps to sample it), decided once: the same while it
    #: is written and at its end
    scoring_workers: int = 1

    @property
    def dataset(self) -> Dataset:
        return self.checked.dataset


def _resolve(request: RunRequest, checked: Checked | None, since: dict[str, float] | None = None) -> _Resolved:
    started = since or cpu_counters()
    spec = AdapterSpec.of(request)  # resolves the adapter's class
    adapter_class = spec.adapter_class
    assert adapter_class is not None  # AdapterSpec.of resolved it
    adapter_class.ensure_available()
    if checked is None:
        checked = load_dataset(
            request.dataset,
            name=request.dataset_name,
            form=request.form,  # type: ignore[arg-type]
            limit=request.limit,
            skip_invalid=request.skip_invalid,
            columns=request.columns,
        )
    dataset: Dataset = checked.dataset
    terms = request.keyword_terms()
    if terms:  # every example gets the file's terms (datasets/keywords.py)
        with_keywords(dataset, terms)
    forced = request.decoding.language if request.decoding.language != FROM_DATASET else None
    languages = [ex.language for ex in dataset.examples] + [forced]
    normalizer = request.normalizer or choose_normalizer(languages, request.model)
    warning = english_only_warning(
        redact(request.model), [ex.language for ex in dataset.examples], _multilingual(request.model)
    )
    if warning:  # before the run: a 121 % "WER" said nothing of why
        log.warning("%s", warning)
    adapter = spec.build(isolated=False)  # validates adapter options early
    adapter.refuse_word_timing()  # before the store is opened: an implementation without word times exits 2
    refuse_prompt(adapter)  # … and one that cannot take the vocabulary prompt asked for
    for note in adapter.dataset_warnings({example.id for example in dataset.examples}):
        log.warning("%s", note)
    source_digest = adapter.source_digest()
    long_form = request.long_form.resolved_for(adapter) if dataset.form == "long" else None
    info = RunInfo(  # the run spec (what a resume must share); nothing secret (a URL's credentials)
        adapter=request.adapter,
        label=request.label or default_label(request.adapter, request.decoding),
        variant=request.variant,
        model=redact(request.model),
        decoding=redact(request.decoding.to_json()),
        normalizer=normalizer,
        long_form=long_form.to_json() if long_form else None,
        dataset=DatasetInfo(
            name=dataset.name,
            source=redact(dataset.source),
            form=dataset.form,
            content_hash=dataset.content_hash,
            num_examples=len(dataset) + len(checked.invalid),
            num_invalid=len(checked.invalid),
            limit=request.limit,
            columns=request.columns.to_json(),
            extra={"keywords_file": {"path": request.keywords, "terms": len(terms)}} if terms else {},
        ),
    )
    return _Resolved(
        checked,
        normalizer,
        adapter_class,
        spec,
        spec.wrap(adapter),
        long_form,
        source_digest,
        info,
        [warning] if warning else [],
        pool_size(len(dataset.examples) + len(checked.invalid), request.scoring_workers, since=started),
    )


def _multilingual(model: str) -> bool | None:
    """What a local model's weights say (multilingual or not, from its vocabulary; headers only), or None when it
    is no local model folder or file (a known name, the hub, a hypotheses file)."""
    if not Path(model).exists():
        return None
    from ..models import resolve_source

    try:
        return resolve_source(model).multilingual
    except Exception:  # noqa: BLE001 - only a warning hangs on it: it never stops a run
        return None


def _warn_oversubscribed(request: RunRequest) -> None:
    """Warn when a process pool asks this machine for more threads than it has CPUs: the workers then compete for
    them, and the run goes slower than with fewer (``--workers 4 -o threads=2`` on 2 CPUs: 5x one process)."""
    wanted, cpus = request.workers * request.decoding.threads, usable_cpus()
    if backend_of(request) == "process-pool" and request.workers > 1 and wanted > cpus:
        log.warning(
            "%d workers x %d threads = %d threads on %d usable CPU(s): they compete for the CPUs and the run goes "
            "slower than with fewer; --workers %d -o threads=1, or --workers 1 -o threads=%d",
            request.workers,
            request.decoding.threads,
            wanted,
            cpus,
            min(request.workers, cpus),
            cpus,
        )


def _start_info(run: _Resolved, request: RunRequest, old: RunInfo | None, stale: dict) -> None:
    """How this invocation executes the run (recorded, never part of the resume identity)."""
    _warn_oversubscribed(request)
    run.info = dataclasses.replace(
        run.info,
        status="running",
        backend=backend_of(request),
        workers=request.workers,
        threads_per_worker=request.decoding.threads,
        execution={
            "backend": backend_of(request),
            "workers": request.workers,
            "threads": request.decoding.threads,
            "isolate": request.isolate,
            "timeout_s": request.timeout_s,
            "warmup": request.warmup,
            "warm_load": request.warm_load,
            "refresh": request.refresh,
            "retry": RetryPolicy(request.attempts).to_json(),
            **_ray_environment(request),
        },
        machine=machine_info(),
        versions=package_versions(CORE_PACKAGES + tuple(run.adapter_cls.requires)),
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        source_digest=run.source_digest,
        stale_redone=len(stale),
        run_id=(old.run_id if old is not None else None) or uuid.uuid4().hex,
    )
    if old is not None:
        run.info.first_started_at = old.first_started_at or old.started_at


def _ray_environment(request: RunRequest) -> dict[str, Any]:
    """run.json's record of a Ray run's worker environment: names only, never a value (harness/ray_env.py);
    a bad --runtime-env, or a --ray-env name this process lacks, is refused here, before the run starts."""
    if request.backend != "ray":
        return {}
    ray_env.forwarded(request.ray_env)  # every name is set here: refused before anything runs
    return ray_env.describe(ray_env.load_runtime_env(request.runtime_env), request.ray_env)


def _execution_changes(old: RunInfo, info: RunInfo) -> list[str]:
    """What this invocation ran differently from the stored run's last one (said, never refused)."""
    before = old.execution or {"backend": old.backend, "workers": old.workers, "threads": old.threads_per_worker}
    now = info.execution
    return [
        f"{key} {now[key]!r} (the stored run had {before[key]!r})"
        for key in now
        if key in before and before[key] is not None and before[key] != now[key]
    ]


def _stored_report(old: RunInfo | None) -> BackendReport:
    if old is None:
        return BackendReport()
    return BackendReport(
        load_s=old.load_s,
        warmup_s=old.warmup_s,
        load_warm_s=old.load_warm_s,
        peak_rss_mb=old.peak_rss_mb,
        adapter_info=old.adapter_info or None,
        backend_info=old.backend_info,
    )


def _job(run: _Resolved, request: RunRequest) -> Job:
    return Job(
        run.spec,
        run.adapter,
        run.dataset.form == "long",
        request.long_form,
        request.warmup,
        request.workers,
        request.address,
        RetryPolicy(request.attempts),
        ray_env.load_runtime_env(request.runtime_env),
        ray_env.check_names(request.ray_env),
        warm_load=request.warm_load,
    )


def _finalize(
    run: _Resolved,
    store: RunStore,
    todo: list[Example],
    request: RunRequest,
    report: BackendReport,
    load_before: dict,
    kept: Summary | None = None,
    old: RunInfo | None = None,
    scoring: ScoredWhileWritten | None = None,
) -> Summary:
    """Check every example is stored, then write the finished run.json and summary.json. ``kept``: the stored
    summary of a run this invocation computed nothing for, whose speed and machine load stay as measured."""
    info, checked = run.info, run.checked
    ids = [ex.id for ex in run.dataset.examples] + [bad.id for bad in checked.invalid]
    scored = scoring.result(store.predictions_path) if scoring else None  # the file's lines, scored while written
    stored = {p.id: p for p in (scored[0].raw if scored else store.read_predictions())}
    missing = [i for i in ids if i not in stored]
    if missing:  # cannot happen unless the store was tampered with mid-run; never report a partial run as whole
        raise RunStoreError(f"run {store.path}: {len(missing)} example(s) have no stored prediction: {missing[:5]}")
    busy = machine_load(load_before, load_snapshot(), request.decoding.threads * max(1, request.workers))
    if kept and old is not None:  # measured by the invocation that computed the examples
        busy = old.machine_load
    elif info.backend == "ray":  # its actors are not this process's children: their CPU would count as others'
        busy.update(busy=False, why="", other_cpus_busy=None, note="not measured on Ray")
    adapter_info = report.adapter_info or run.adapter.describe()
    if run.long_form:
        adapter_info["long_form_algorithm"] = run.long_form.algorithm(run.adapter)
        adapter_info["long_form_seams"] = run.long_form.seams_source(run.adapter)
    whole = len(stored) == len(set(ids))  # the store holds exactly the dataset's examples (the usual case)
    predictions = list(stored.values()) if whole else [stored[i] for i in ids]  # file order: the table's order
    summary = _summary_written(run, store, request, predictions, whole, scored if whole else None)
    measured: dict[str, Any] = {
        "load_s": report.load_s,
        "warmup_s": report.warmup_s,
        "load_warm_s": report.load_warm_s,
        "peak_rss_mb": report.peak_rss_mb,
    }
    first = stored[todo[0].id] if todo else None
    first_result_s = None  # load + warm-up + the first computed example: a fresh process's wait for a transcript
    if first is not None and first.status == "ok" and report.load_s is not None:
        first_result_s = report.load_s + (report.warmup_s or 0.0) + first.infer_s
    loop_wall = report.loop_wall_s
    computed_infer = sum(stored[ex.id].infer_s for ex in todo)
    summary = dataclasses.replace(
        summary,
        **measured,
        first_result_s=first_result_s,
        # speed measured by this invocation: reliable only on a machine nothing else kept busy
        rtfx_reliable=not busy["busy"] if todo else None,
        rtfx_unreliable_why=(busy["why"] or None) if todo else None,
        model_size_mb=(adapter_info.get("weights") or {}).get("loaded_size_mb"),  # as the adapter loaded it
        wall_s=loop_wall if todo else None,  # this invocation's inference loop, load excluded (pool: included)
        harness_overhead_pct=(
            100.0 * (loop_wall - computed_infer) / loop_wall
            if todo and loop_wall > 0 and info.backend == "in-process"
            else None
        ),
        extra=run.adapter_cls.summary_fields(adapter_info, predictions),
    )  # e.g. compile time, cost
    summary = summary.with_measurements(kept, MEASURED_BY_COMPUTING)
    started, finished = info.started_at, datetime.now(timezone.utc).isoformat(timespec="seconds")
    if not todo and old is not None and old.status == "finished" and old.finished_at:
        started, finished = old.started_at, old.finished_at  # computed nothing: `runs` shows when it was made
    run.info = dataclasses.replace(
        info,
        status="finished",
        started_at=started,
        finished_at=finished,
        adapter_info=adapter_info,
        machine_load=busy,
        backend_info=report.backend_info or info.backend_info,
        **measured,
    )  # backend_info: Ray's cluster, actors, deaths and retries
    store.write_info(run.info)
    store.write_summary(summary)
    return summary


def _summary_written(
    run: _Resolved,
    store: RunStore,
    request: RunRequest,
    predictions: list[Prediction],
    whole: bool,
    scored: tuple[Sequence[Prediction], Any] | None = None,
) -> Summary:
    """The run's summary from ``predictions``; where they are the ``whole`` store, its score table is written too
    (scored once: when the run ends, or while it was written: ``scored``, these predictions scored and their
    table; every report reads it), by a thread while the figures are computed (the writing and hashing free the
    GIL)."""
    stamp = store.predictions_stamp()
    with ThreadPoolExecutor(1, thread_name_prefix="whisperbench-table") as writer:
        written: list[Future] = []

        def write(table: Any) -> None:
            if whole:
                written.append(writer.submit(store.write_score_table, table, run.normalizer, stamp))

        summary, _ = summarize_with_table(
            predictions,
            run.normalizer,
            run.dataset.form,
            metric_options=request.metric_options,
            language_detected=request.decoding.language is None,
            table_ready=write,
            scored=scored,
            workers=run.scoring_workers,
        )
        for future in written:
            future.result()
    return summary


def rescore(
    store: RunStore, normalizer: str | None = None, metric_options: dict[str, dict[str, Any]] | None = None
) -> Summary:
    """Recompute summary.json from stored raw predictions (e.g. with another normalizer, or other thresholds:
    ``metric_options``; without them, the thresholds the run was scored with are kept)."""
    with store.lock():
        info, old = store.read_run_info(), store.read_summary()
        normalizer = normalizer or info.normalizer
        options = stored_options(old.metrics if old else {}) | (metric_options or {})
        stamp = store.predictions_stamp()
        scored, table = summarize_with_table(
            store.read_predictions(),
            normalizer,
            info.dataset.form,
            language_detected=info.decoding.get("language") is None,
            metric_options=options,
        )
        store.write_score_table(table, normalizer, stamp)  # rebuilt from the raw output, never trusted
        summary = scored.with_measurements(old)  # every figure not about scoring kept as it was
        store.write_summary(summary)
    return summary
