"""The Python API: evaluate, score, compare and gate runs from a notebook or a script.

Everything the command line does goes through these functions (the CLI only parses arguments and
prints). A run lives in a run store (a folder: ``run.json``, ``predictions.jsonl``, ``summary.json``);
:func:`load_run` reads one back, :func:`to_frame` turns it into a pandas DataFrame.

Score recorded hypotheses (real outputs of openai-whisper ``base`` and ``tiny.en`` on the 6 bundled clips)
into run stores, then compare them; ``.qoi`` is the QoI ``whisperbench compare`` prints:

>>> import tempfile, whisperbench as wb
>>> runs = tempfile.mkdtemp()
>>> recorded = wb.api.RECORDED  # datasets/tiny/recorded
>>> ref = wb.score(recorded / "openai-whisper-base.jsonl", "tiny-shortform", runs_dir=runs, name="base")
>>> cand = wb.score(recorded / "openai-whisper-tiny.en.jsonl", "tiny-shortform", runs_dir=runs, name="tiny")
>>> round(ref.summary.wer, 2), round(cand.summary.wer, 2)
(7.97, 14.49)
>>> comparison = wb.compare(wb.load_run("base", runs_dir=runs), wb.load_run("tiny", runs_dir=runs))
>>> round(comparison.qoi, 2), comparison.result.regressed, comparison.result.unchanged
(83.33, 1, 5)
>>> wb.gate(ref, cand, min_qoi=80).verdict, wb.gate(ref, cand, min_qoi=90).code
('PASS', 1)
>>> frame = wb.to_frame(cand, reference=ref)
>>> frame.loc[frame.regressed, ["id", "wer"]].round(1).to_dict("records")
[{'id': '1998-15444-0000', 'wer': 34.9}]
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .adapters import DecodingOptions, get_adapter
from .core.ranges import GATE_LIMITS, check_limits
from .datasets import Checked, column_values, from_hf_dataset
from .datasets import load_dataset as _load_checked
from .errors import WhisperbenchError
from .harness import RunRequest, run_evaluation
from .harness import rescore as rescore_run
from .harness.progress import progress as progress_bar
from .harness.request import score_request
from .harness.runner import RunResult
from .process.host import cpu_counters
from .scoring.metrics import checked_options, parse_metric_options
from .scoring.power import Plan
from .scoring.power import plan as power_plan
from .scoring.record import Summary
from .scoring.significance import DEFAULT_RESAMPLES, SignificanceSettings
from .store.runs import StoredRun, open_run, readable_runs, repeat_problem, same_run_reason
from .types import ColumnMap, Dataset, Form

if TYPE_CHECKING:  # the reports (and pandas) are imported by the functions that use them: `score` and `run` never do
    import pandas as pd

    from .harness.sweep import SweepEntry, SweepResult
    from .reports import Comparison, GateResult
    from .reports.gate_thresholds import GateThresholds
    from .reports.noise import NoiseReport
    from .reports.runs import RunRow
    from .reports.trackers import TRACKERS

__all__ = [
    "evaluate",
    "score",
    "compare",
    "gate",
    "load_run",
    "load_dataset",
    "to_frame",
    "execute",
    "unknown_ids",
    "block_labels",
    "plan",
    "compare_all",
    "noise",
    "runs",
    "remove_runs",
    "report",
    "Report",
    "export",
    "publish",
    "TRACKERS",
    "sweep",
    "RECORDED",
    "subtitles",
    "Subtitles",
    "perturb",
    "list_datasets",
    "check_dataset",
    "list_adapters",
    "list_models",
    "model_info",
    "convert_model",
    "model_formats",
]

log = logging.getLogger(__name__)


def __getattr__(name: str) -> Any:
    """``TRACKERS`` (the experiment trackers' registry), imported when first asked for."""
    if name == "TRACKERS":
        from .reports.trackers import TRACKERS

        return TRACKERS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PathLike = str | Path
RunLike = str | Path | StoredRun  # a stored run, or its folder, or its name under runs_dir
Columns = ColumnMap | dict[str, str] | None  # {"audio": "wav", "text": "sentence"}: see ColumnMap

#: real hypotheses of three implementations on the bundled ``tiny-shortform`` clips (see its README.md)
RECORDED = next(
    (
        p
        for p in (
            Path(__file__).resolve().parent / "_bundled" / "tiny" / "recorded",
            Path(__file__).resolve().parents[2] / "datasets" / "tiny" / "recorded",
        )
        if p.is_dir()
    ),
    Path("datasets/tiny/recorded"),
)


def load_dataset(
    spec: PathLike | Any,
    *,
    name: str | None = None,
    form: str | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
    columns: Columns = None,
) -> Dataset:
    """A validated dataset: a manifest (``.jsonl``/``.csv``/``.tsv``), a folder, ``hf:NAME[:CONFIG]:SPLIT`` (Hugging
    Face ``datasets``), a bundled name, or a ``datasets.Dataset`` already in memory. Raises DatasetError naming each
    bad example unless ``skip_invalid``. ``columns`` maps columns of other names (``{"audio": "wav", "text":
    "sentence", "id": …, "language": …}``); columns that do not fit are one error listing those found.
    (:func:`evaluate` takes a spec: ``save_to_disk`` a Dataset, then pass ``hf:FOLDER:SPLIT``.)

    >>> ds = load_dataset("tiny-shortform", limit=2)
    >>> len(ds), ds.form, ds.examples[0].id
    (2, 'short', 'jfk')
    """
    if not isinstance(spec, (str, Path)):  # a datasets.Dataset
        checked = from_hf_dataset(
            spec,
            name=name or "datasets",
            form=cast(Form | None, form),
            limit=limit,
            skip_invalid=skip_invalid,
            columns=ColumnMap.of(columns),
        )
        return checked.dataset
    return _checked(str(spec), name, form, limit, skip_invalid, ColumnMap.of(columns)).dataset


def _checked(
    spec: str,
    name: str | None,
    form: str | None,
    limit: int | None,
    skip_invalid: bool,
    columns: ColumnMap = ColumnMap(),
) -> Checked:
    checked = _load_checked(
        spec, name=name, form=cast(Form | None, form), limit=limit, skip_invalid=skip_invalid, columns=columns
    )
    for bad in checked.invalid:
        log.warning("dataset %s: skipped invalid example: %s", spec, bad)
    return checked


def load_run(run: RunLike, runs_dir: PathLike = "runs") -> StoredRun:
    """A run store read back (a folder path, or a run name under ``runs_dir``): its ``summary`` (a dict),
    ``predictions`` and ``meta``; :func:`to_frame` gives its per-example table."""
    if isinstance(run, StoredRun):
        return run
    return open_run(str(run), runs_dir)


def runs(runs_dir: PathLike = "runs", names: list[str] | None = None) -> list[RunRow]:
    """The runs in ``runs_dir`` (``whisperbench runs``): name, status, ``coverage`` ("12 of 49"), failed, model,
    adapter, dataset, date and ``size_bytes``, one :class:`~whisperbench.reports.runs.RunRow` each; with ``names``,
    those runs only."""
    from .reports.runs import run_rows

    return run_rows(runs_dir, names)


def remove_runs(names: list[str], runs_dir: PathLike = "runs") -> list[Path]:
    """Delete runs (names under ``runs_dir`` or folders) and return their folders; nothing is removed when one
    is missing or being written by another process (RunStoreError naming it)."""
    from .reports.runs import remove_runs as _remove_runs

    removed = _remove_runs(names, runs_dir)
    for path in removed:
        log.info("removed run %s", path)
    return removed


def to_frame(run: RunLike, reference: RunLike | None = None, runs_dir: PathLike = "runs") -> pd.DataFrame:
    """One row per example (hypothesis, normalized texts, WER and its counts, timings); with ``reference``,
    joined to it by id with the reference run's hypothesis and a ``regressed`` column (QoI's test)."""
    from .reports.export import example_frame

    ref = load_run(reference, runs_dir) if reference is not None else None
    return example_frame(load_run(run, runs_dir), ref)


def execute(request: RunRequest, show_progress: bool = False) -> RunResult:
    """Run a :class:`~whisperbench.harness.RunRequest` (the CLI's ``run``/``score``): load and check its dataset,
    evaluate (resuming what the store holds), write the summary. Returns the harness's result."""
    since = cpu_counters()  # the scoring pool is sized from other processes' load while the dataset is read
    checked = _checked(
        request.dataset, request.dataset_name, request.form, request.limit, request.skip_invalid, request.columns
    )
    starting = get_adapter(request.adapter).starting
    bar = (
        progress_bar(len(checked.dataset), f"{request.adapter} {Path(request.model).name}", starting=starting)
        if show_progress
        else nullcontext(None)
    )
    with bar as shown:
        update: Callable[[int], object] | None = shown.update if shown is not None else None
        begin = getattr(shown, "begin", None)
        return run_evaluation(request, progress=update, checked=checked, begin=begin, since=since)


#: a command-line flag in a message -> how the Python API spells it (every other flag is left as it is)
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?: ('[^']*'|\"[^\"]*\"|\d[^\s;,):]*))?")
#: flags whose API keyword takes other values than the flag's: the column flags are ``columns={...}``
_API_SPELLING = {  # "{}": the value the message gives after the flag, else "..."
    "option": "options={{{}}}",
    "word-timestamps": "word_timestamps=True",
    **{f"{role}-column": f"columns={{{{'{role}': {{}}}}}}" for role in ("audio", "text", "id", "language")},
}


def api_wording(message: str) -> str:
    """``message`` with each command-line flag that a field of :class:`~whisperbench.harness.RunRequest` answers
    spelt as the keyword the Python API takes (an error raised through :func:`evaluate` or :func:`score` names what
    a script can pass).

    >>> api_wording("run runs/x exists: pass --name for a new run or --overwrite to replace it; --foo stays")
    'run runs/x exists: pass name=... for a new run or overwrite=True to replace it; --foo stays'
    >>> api_wording("--limit 3 selects 2: leave --limit out")
    'limit=3 selects 2: leave limit=... out'
    >>> api_wording("--text-column 'sentence': no such column; --option")
    "columns={'text': 'sentence'}: no such column; options={...}"
    """
    fields = {f.name: f for f in dataclasses.fields(RunRequest)}

    def keyword(match: re.Match) -> str:
        flag = match.group(1)
        if flag in _API_SPELLING:
            return _API_SPELLING[flag].format(match.group(2) or "...")
        field = fields.get(flag.replace("-", "_"))
        if field is None:
            return match.group(0)
        if field.default is False:
            return f"{field.name}=True"
        return f"{field.name}={match.group(2) or '...'}"  # the value the message gives (--limit 3: limit=3)

    return _FLAG.sub(keyword, message)


def _in_api_words(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` whose WhisperbenchError messages name the API's keywords, not the command line's flags."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except WhisperbenchError as exc:
            exc.args = (api_wording(str(exc)), *exc.args[1:])
            raise

    return wrapper


@_in_api_words
def evaluate(
    adapter: str,
    model: str,
    dataset: PathLike,
    *,
    runs_dir: PathLike = "runs",
    options: dict[str, Any] | None = None,
    show_progress: bool = False,
    columns: Columns = None,
    word_timestamps: bool = False,
    **settings: Any,
) -> StoredRun:
    """Run ``adapter`` (e.g. ``"openai-whisper"``) with ``model`` (``"tiny.en"``, a path…) on ``dataset`` into a
    run store under ``runs_dir``; return the stored run. ``options`` are decoding options (``{"beam_size": 5}``
    or an adapter's own, as ``--option KEY=VALUE``); ``columns`` maps the dataset's columns (as in
    :func:`load_dataset`; recorded in run.json); ``settings`` are the other fields of
    :class:`~whisperbench.harness.RunRequest` (``name``, ``limit``, ``workers``, ``normalizer``, ``overwrite``…).
    ``word_timestamps`` stores word times as ``--word-timestamps`` does (the text stays the text without them; an
    implementation that has none raises OptionError). A stored run of the same configuration is resumed, not redone."""
    pairs = [f"{key}={value}" for key, value in (options or {}).items()]
    decoding = DecodingOptions.from_pairs(pairs, word_timestamps=word_timestamps)
    request = RunRequest(
        adapter=adapter,
        model=str(model),
        dataset=str(dataset),
        runs_dir=str(runs_dir),
        decoding=decoding,
        columns=ColumnMap.of(columns),
        **settings,
    )
    return _stored(execute(request, show_progress))


def align_words(dataset: PathLike, out: PathLike, *, model: str = "base", limit: int | None = None) -> int:
    """Write ``out``, a manifest of ``dataset``'s rows with word times from forced alignment of each transcript
    (openai-whisper's DTW aligner, checkpoint ``model``): word-level ground truth where a short-form set has none,
    with the caveats of :mod:`whisperbench.datasets.align`. Returns the rows written."""
    from .datasets.align import align_manifest

    return align_manifest(str(dataset), out, model=model, limit=limit)


def sweep(
    model: str,
    dataset: PathLike,
    *,
    implementations: list[str] | None = None,
    variants: list[str] | None = None,
    reference: str | None = None,
    runs_dir: PathLike = "runs",
    options: dict[str, Any] | list[str] | None = None,
    parallel: int = 1,
    columns: Columns = None,
    report: Callable[[SweepEntry, int, int], object] | None = None,
    **settings: Any,
) -> SweepResult:
    """Every compressed variant of ``model`` on ``dataset`` (``whisperbench sweep``), each an ordinary run under
    ``runs_dir`` made in a fresh process; first the reference (openai-whisper on the same model) unless
    ``reference`` names an existing run. ``implementations``: the adapters whose variants run (default: every
    one that has variants); ``variants``: only these (``"int8"``, ``"whisper-cpp-q5_0"``); ``options``: decoding
    options for every variant (``{"threads": 2}``, or ``["threads=2"]`` as ``-o`` takes them); ``parallel``: variants
    at once (each still in its own
    process; threads per variant lowered so that ``parallel`` × threads <= cores); ``report(entry, n, total)``
    hears of each variant as it ends; ``settings``: the other :class:`~whisperbench.harness.RunRequest` fields
    (``limit``, ``timeout_s``). ``.entries`` keep the plan's order, a failed variant among them with its reason.

    >>> result = wb.sweep("tiny.en", "tiny-shortform", implementations=["faster-whisper"],
    ...                   variants=["float32", "int8"], parallel=2, limit=2)  # doctest: +SKIP
    >>> [(e.variant.label, e.status) for e in result.entries]  # doctest: +SKIP
    [('openai-whisper', 'finished'), ('faster-whisper-float32', 'finished'), ('faster-whisper-int8', 'finished')]
    """
    from .harness.sweep import (
        DEFAULT_IMPLEMENTATIONS,
        SweepResult,
        plan_sweep,
        reference_variant,
        run_sweep,
    )

    if parallel < 1:
        raise WhisperbenchError(f"sweep: parallel must be at least 1, not {parallel}")
    if reference:  # never silently a reference: a stopped run's WER covers only what it stored
        given = load_run(reference, runs_dir)
        if not given.coverage.finished:
            raise WhisperbenchError(
                f"sweep --reference {given.name}: the run is unfinished ({given.coverage}); a reference must be a "
                "finished run: resume it (run the same command again) or leave --reference out"
            )
    start = time.perf_counter()
    plan = plan_sweep(implementations or list(DEFAULT_IMPLEMENTATIONS), variants)
    limit = settings.get("limit")
    name = _load_checked(str(dataset), limit=limit, columns=ColumnMap.of(columns)).dataset.name
    pairs = options if isinstance(options, list) else [f"{key}={value}" for key, value in (options or {}).items()]
    base = RunRequest(
        adapter="",
        model=str(model),
        dataset=str(dataset),
        runs_dir=str(runs_dir),
        decoding=DecodingOptions.from_pairs(pairs),
        columns=ColumnMap.of(columns),
        **settings,
    )
    if not reference:
        plan = [reference_variant()] + plan
    entries = run_sweep(plan, base, name, report=report, parallel=parallel)
    if not reference and entries[0].status == "finished":
        reference = entries[0].run
    return SweepResult(entries, name, reference or None, time.perf_counter() - start)


def unknown_ids(hypotheses: dict[str, str], dataset: Dataset) -> list[str]:
    """Ids of a hypotheses file that the dataset lacks (sorted): they are ignored by :func:`score`.

    >>> unknown_ids({"jfk": "hi", "nope": "x"}, load_dataset("tiny-shortform"))
    ['nope']
    """
    return sorted(set(hypotheses) - {example.id for example in dataset.examples})


@_in_api_words
def score(hypotheses: PathLike, dataset: PathLike, *, runs_dir: PathLike = "runs", **settings: Any) -> StoredRun:
    """Turn hypotheses made elsewhere (a JSONL file of ``{"id", "hypothesis"}``) into a stored run on
    ``dataset``; ``settings`` as in :func:`evaluate` (``name``, ``normalizer``, ``overwrite``…)."""
    return _stored(execute(score_request(hypotheses, dataset, runs_dir=runs_dir, **settings)))


def _stored(result: RunResult) -> StoredRun:
    return open_run(str(result.store.path))


@dataclass
class DemoResult:
    """What the demo made: the runs, the reference runs, the leaderboard (its markdown and file), the failed
    examples over all runs, and the rows skipped here with why."""

    runs: list[str]
    references: list[str]
    markdown: str
    leaderboard: Path
    failed: int = 0
    skipped: list[str] = field(default_factory=list)


def demo(model: str = "tiny.en", runs_dir: PathLike = "runs/demo", **settings: Any) -> DemoResult:
    """The offline default evaluation (``whisperbench demo``): every installed implementation on the bundled tiny
    sets with ``model``, then the leaderboard (``leaderboard.md`` in ``runs_dir``); ``settings`` as
    :class:`~whisperbench.harness.demo.DemoSettings` (``limit``, ``short_only``, ``implementations="openai-whisper,…"``,
    ``threads``, ``out``…). Returns what it made: ``.runs``, ``.references``, ``.markdown``, ``.failed``,
    ``.skipped``."""
    from .harness.demo import DemoSettings, run_demo
    from .reports import leaderboard_frame, pick_references, render_markdown
    from .reports.leaderboard import record_references
    from .store.runs import list_runs

    try:
        args = DemoSettings(model=model, runs_dir=str(runs_dir), **settings)
    except TypeError as exc:  # an unknown setting
        raise WhisperbenchError(f"demo: {exc}") from None
    made = run_demo(args)
    runs = [r for r in list_runs(args.runs_dir) if r.name in made.runs]
    chosen = pick_references(runs, names=made.references)
    record_references(args.runs_dir, [r.name for r in chosen.values()])  # what `report --runs-dir` will use
    title = f"Whisper {args.model} across implementations (bundled tiny set)"
    text = render_markdown(leaderboard_frame(runs, chosen), chosen, title=title)
    out = Path(args.out or Path(args.runs_dir) / "leaderboard.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    log.info("wrote %s; runs in %s/", out, args.runs_dir)
    return DemoResult(made.runs, [r.name for r in chosen.values()], text, out, made.failed, made.skipped)


def rescore(
    run: RunLike, *, normalizer: str | None = None, thresholds: Any = None, runs_dir: PathLike = "runs"
) -> Summary:
    """A run's summary.json recomputed from its stored raw outputs (``whisperbench rescore``) and written back:
    with another ``normalizer``, or other metric ``thresholds`` (``["hallucination.burst_words=4", …]`` or
    ``{"hallucination": {"burst_words": 4}}``; the run's own are kept otherwise). Every figure not about scoring
    (timings, memory, the machine) is kept as it was.

    >>> import tempfile
    >>> base = score(RECORDED / "openai-whisper-base.jsonl", "tiny-shortform", runs_dir=tempfile.mkdtemp())
    >>> rescore(base, normalizer="basic").normalizer, load_run(base.store.path).summary.normalizer
    ('basic', 'basic')
    """
    options = None
    if thresholds:
        options = (
            checked_options(dict(thresholds))
            if isinstance(thresholds, dict)
            else parse_metric_options(list(thresholds))
        )
    return rescore_run(load_run(run, runs_dir).store, normalizer, options)


def block_labels(
    run: RunLike, column: str, *, dataset: PathLike | None = None, runs_dir: PathLike = "runs"
) -> dict[str, Any]:
    """Example id -> its value of ``column`` (e.g. ``"speaker"``): the blocks of a blocked bootstrap
    (``block_by``). Read from ``dataset`` (a spec) when given, else from the run's predictions where each
    stores it (``extra``), else from the manifest or ``hf:`` spec the run was made from (run.json).

    >>> import tempfile
    >>> labels = block_labels(score(RECORDED / "openai-whisper-base.jsonl", "tiny-shortform",
    ...                             runs_dir=tempfile.mkdtemp()), "speaker")
    >>> labels["1998-15444-0000"], labels["LJ001-0003"]
    ('1998', 'LJ')
    """
    if dataset is not None:
        return column_values(str(dataset), column)
    stored = load_run(run, runs_dir)
    stored_values = {p.id: p.extra.get(column) for p in stored.predictions}
    if stored_values and all(value not in (None, "") for value in stored_values.values()):
        return stored_values
    source = stored.meta.dataset.source
    if not source or not (source.startswith("hf:") or Path(source).exists()):
        raise WhisperbenchError(
            f"--block-by {column}: run {stored.name}'s predictions do not store {column!r} and "
            f"its dataset ({source or 'unknown'}) cannot be read again; name the dataset "
            f"(--block-dataset)"
        )
    return column_values(source, column)


def significance_settings(
    block_by: str | None = None, confidence: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> SignificanceSettings:
    """The settings of the paired tests (:mod:`whisperbench.scoring.significance`) from the API's keywords."""
    try:
        return SignificanceSettings(confidence=confidence, resamples=resamples, seed=seed, block_by=block_by)
    except ValueError as exc:
        raise WhisperbenchError(str(exc)) from None


def compare(
    reference: RunLike,
    candidate: RunLike,
    runs_dir: PathLike = "runs",
    *,
    significance: bool = True,
    block_by: str | None = None,
    block_dataset: PathLike | None = None,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    speed_basis: str = "wall",
    allow_different_machines: bool = False,
) -> Comparison:
    """QoI and WER of ``candidate`` against ``reference`` (runs or their names/paths), with the reference's
    normalizer: ``.qoi``, ``.reference_wer``, ``.candidate_wer``, ``.result`` (per-example outcome),
    ``.significance``: the exact sign test, MAPSSWE and paired-bootstrap intervals (``confidence``, ``resamples``,
    ``seed``; whole blocks of ``block_by``'s values resampled when given, see :func:`block_labels`), and ``.speed``:
    the paired speed on ``speed_basis`` ("wall" or "cpu" time), memory and load time (runs of different machines
    only with ``allow_different_machines``).

    >>> import tempfile
    >>> runs = tempfile.mkdtemp()
    >>> base = score(RECORDED / "openai-whisper-base.jsonl", "tiny-shortform", runs_dir=runs, name="base")
    >>> tiny = score(RECORDED / "openai-whisper-tiny.en.jsonl", "tiny-shortform", runs_dir=runs, name="tiny")
    >>> s = compare(base, tiny, resamples=500).significance.sign_test
    >>> s.improved, s.regressed, s.ties, s.p_value
    (0, 1, 5, 1.0)
    >>> compare(base, tiny, block_by="speaker").significance.resampling.describe()
    'blocked bootstrap by speaker (6 blocks, 2000 resamples, seed 0)'
    """
    from .reports import compare_runs
    from .reports.escape import one_line

    limits = check_limits({"confidence": confidence, "resamples": resamples, "seed": seed}, GATE_LIMITS)
    confidence, resamples, seed = limits["confidence"], limits["resamples"], limits["seed"]
    ref, cand = load_run(reference, runs_dir), load_run(candidate, runs_dir)
    reason = same_run_reason(ref, cand)
    if reason:
        log.warning("%s is the reference run itself (%s): QoI 100 %% proves nothing", cand.name, one_line(reason))
    settings = significance_settings(block_by, confidence, resamples, seed) if significance else None
    groups = block_labels(ref, block_by, dataset=block_dataset) if block_by and significance else None
    comparison = compare_runs(
        ref, cand, settings, groups, speed_basis=speed_basis, allow_different_machines=allow_different_machines
    )
    return _noted([comparison])[0]


def _noted(comparisons: list[Comparison]) -> list[Comparison]:
    """``comparisons`` with their ``.notes`` (what ``compare`` prints under its table) set."""
    from .reports.notes import comparison_notes

    for comparison in comparisons:
        comparison.notes = comparison_notes(comparison)
    return comparisons


def compare_all(
    reference: RunLike, candidates: list[RunLike], runs_dir: PathLike = "runs", **options: Any
) -> list[Comparison]:
    """:func:`compare` of each candidate against one reference (``options`` as there); with several, each
    comparison's ``.holm`` holds its p-values Holm-adjusted over the candidates (one family of tests)."""
    from .reports.compare import adjust_holm

    ref = load_run(reference, runs_dir)
    comparisons = [compare(ref, candidate, runs_dir, **options) for candidate in candidates]
    adjust_holm(comparisons)
    return _noted(comparisons) if len(comparisons) > 1 else comparisons  # the Holm note, once adjusted


def gate(
    reference: RunLike,
    candidate: RunLike,
    *,
    thresholds: GateThresholds | None = None,
    runs_dir: PathLike = "runs",
    block_by: str | None = None,
    block_dataset: PathLike | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    repeats: list[RunLike] | None = None,
    **limits: Any,
) -> GateResult:
    """The release gate (``whisperbench gate``): ``.code`` 0 pass, 1 regression, 2 cannot judge; ``.verdict``,
    ``.checks``. ``thresholds``: a :class:`~whisperbench.reports.gate_thresholds.GateThresholds` (every limit, the
    command's flags one to one: ``min_qoi``, ``max_wer_increase``, ``confidence`` as a fraction, e.g. 0.95,
    ``max_increase={"METRIC.COLUMN": N}``…); ``limits``: the same as keywords (they override ``thresholds``). Each
    is checked (a number in its documented range, a registered metric), and at least one quality criterion is needed.
    ``block_by``: resample whole blocks (see :func:`compare`). ``.non_inferiority`` is "non-inferior",
    "inconclusive (set too small)" or "regression shown" with a margin. ``repeats``: further runs of the
    candidate's configuration: the verdict must hold in each (the worst is returned, ``.repeats`` lists every one).
    """
    from .reports import evaluate_gate
    from .reports.gate import evaluate_repeats
    from .reports.gate_thresholds import GateThresholds

    checked = GateThresholds.of(dataclasses.asdict(thresholds or GateThresholds()) | limits)
    checked.require_quality()
    sampling = check_limits({"resamples": resamples, "seed": seed}, GATE_LIMITS)
    ref, cand = load_run(reference, runs_dir).verified(), load_run(candidate, runs_dir).verified()
    settings = significance_settings(block_by, checked.confidence or 0.95, sampling["resamples"], sampling["seed"])
    groups = block_labels(ref, block_by, dataset=block_dataset) if block_by else None
    if repeats:
        candidates = _repeats([cand] + [load_run(run, runs_dir).verified() for run in repeats])
        return evaluate_repeats(ref, candidates, checked, significance=settings, groups=groups)
    return evaluate_gate(ref, cand, checked, significance=settings, groups=groups)


def noise(runs: list[RunLike], runs_dir: PathLike = "runs") -> NoiseReport:
    """Run-to-run noise of repeated runs of one configuration (``whisperbench noise``): identical outputs and error
    counts per example, the WER's spread, the share of examples regressing between repeats, ``.deterministic``."""
    from .reports.noise import run_noise

    loaded = [load_run(run, runs_dir) for run in runs]
    try:
        return run_noise(_repeats(loaded) if len(loaded) > 1 else loaded)
    except ValueError as exc:
        raise WhisperbenchError(str(exc)) from None


def _repeats(runs: list[StoredRun]) -> list[StoredRun]:
    """``runs`` when each is another run of the first one's configuration on its dataset (a repeat), never one run
    twice; else a WhisperbenchError saying which is not (``store.repeat_problem``)."""
    for i, run in enumerate(runs[1:], start=1):
        for earlier in runs[:i]:
            problem = repeat_problem(earlier, run)
            if problem:
                raise WhisperbenchError(f"repeats: {problem}")
    return runs


def plan(
    reference: RunLike,
    *,
    candidate: RunLike | None = None,
    runs_dir: PathLike = "runs",
    examples: int | None = None,
    wer_increase: float | None = None,
    qoi_drop: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    baseline_regressed: float = 0.0,
) -> Plan:
    """Power and size (``whisperbench plan``, :mod:`whisperbench.scoring.power`): the smallest WER increase and QoI
    drop (points) a gate on ``examples`` examples (default: the reference's) detects with probability ``power`` at
    level ``alpha``, and the examples needed for ``wer_increase`` / ``qoi_drop``. The per-example error spread is
    the reference's (Poisson), or the observed paired differences against ``candidate``; ``baseline_regressed``:
    % of examples that regress between two runs of one configuration (0: deterministic).

    >>> import tempfile
    >>> base = score(RECORDED / "openai-whisper-base.jsonl", "tiny-shortform", runs_dir=tempfile.mkdtemp())
    >>> p = plan(base, examples=1000, qoi_drop=1.0)
    >>> round(p.detectable_wer_increase, 2), round(p.detectable_qoi_drop, 2), p.examples_for_qoi_drop
    (0.74, 0.16, 161)
    """
    from .reports import compare_runs
    from .reports.compare import paired_counts

    ref = load_run(reference, runs_dir)
    cand = load_run(candidate, runs_dir) if candidate is not None else None
    _, ref_errors, cand_errors, words = paired_counts(compare_runs(ref, cand or ref).result)
    try:
        return power_plan(
            ref_errors,
            words,
            candidate_errors=cand_errors if cand is not None else None,
            examples=examples,
            wer_increase=wer_increase,
            qoi_drop=qoi_drop,
            alpha=alpha,
            power=power,
            baseline_regressed=baseline_regressed,
        )
    except ValueError as exc:
        raise WhisperbenchError(f"plan: {exc}") from None


@dataclass
class Report:
    """A leaderboard written by :func:`report`: where, in which format, its text (None for HTML and CSV), the
    reference run of each dataset (by dataset hash) and how each was chosen."""

    path: Path
    format: str
    text: str | None
    references: dict[str, StoredRun] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def report(
    runs_dir: PathLike = "runs",
    *,
    out: PathLike | None = None,
    format: str | None = None,
    references: list[str] | None = None,
    reference_adapter: str = "openai-whisper",
    title: str = "Whisper leaderboard",
) -> Report:
    """The leaderboard of every run in ``runs_dir`` (``whisperbench report``), written to ``out`` (default
    ``leaderboard.md`` there, ``model-card.md`` for ``format="hf"``). ``format``: md, html, csv or hf (default:
    ``out``'s extension). ``references``: run names, one per dataset; default: the references the demo recorded,
    else ``reference_adapter``'s plainest run. A named reference that is not there is an error, never a dataset
    left without QoI.

    >>> import tempfile
    >>> runs = tempfile.mkdtemp()
    >>> _ = score(RECORDED / "openai-whisper-base.jsonl", "tiny-shortform", runs_dir=runs, name="base")
    >>> _ = score(RECORDED / "openai-whisper-tiny.en.jsonl", "tiny-shortform", runs_dir=runs, name="tiny")
    >>> board = report(runs, references=["base"])
    >>> board.path.name, board.format, "| tiny" in board.text
    ('leaderboard.md', 'md', True)
    """
    from .reports import leaderboard_frame, pick_references
    from .reports.document import DOCUMENTS, document_format
    from .reports.escape import md_cell
    from .reports.leaderboard import default_references, describe_references

    stored, unreadable = readable_runs(runs_dir)
    for line in unreadable:
        log.warning("left out of the report, unreadable: %s", line)
    if not stored:
        raise WhisperbenchError(
            f"no readable runs in {runs_dir} ({'; '.join(unreadable)})"
            if unreadable
            else f"no runs found in {runs_dir}"
        )
    unknown = sorted(set(references or ()) - {run.name for run in stored})
    if unknown:
        raise WhisperbenchError(
            f"--reference {', '.join(unknown)}: no such run in {runs_dir} (runs there: "
            f"{', '.join(sorted(run.name for run in stored)[:10])})"
        )
    chosen = (
        pick_references(stored, references, reference_adapter)
        if references
        else default_references(stored, runs_dir, reference_adapter)
    )
    default = "model-card.md" if format == "hf" else f"leaderboard.{format or 'md'}"
    path = Path(out or Path(runs_dir) / default)
    fmt = document_format(path, format)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = DOCUMENTS.get(fmt).write(leaderboard_frame(stored, chosen), stored, chosen, path, title)
    if text is not None and unreadable and fmt == "md":  # the reader sees what is missing, and why
        text += "\n## Left out (unreadable)\n\n" + "".join(f"- {md_cell(line)}\n" for line in unreadable)
    if text is not None:
        path.write_text(text, encoding="utf-8")
    log.debug("wrote %s", path)
    return Report(path, fmt, text, chosen, describe_references(chosen))


def export(
    run: RunLike, out: PathLike, *, reference: RunLike | None = None, runs_dir: PathLike = "runs"
) -> pd.DataFrame:
    """Write a run's per-example table (:func:`to_frame`, joined to ``reference`` when given) to ``out``: a
    ``.csv``, ``.jsonl`` or ``.json`` file (``whisperbench export --out``); return the frame written.

    >>> import tempfile
    >>> runs = tempfile.mkdtemp()
    >>> tiny = score(RECORDED / "openai-whisper-tiny.en.jsonl", "tiny-shortform", runs_dir=runs, name="tiny")
    >>> len(export(tiny, f"{runs}/tiny.csv")), sorted(p.name for p in Path(runs).glob("*.csv"))
    (6, ['tiny.csv'])
    """
    from .reports.escape import spreadsheet_safe

    path = Path(out)
    writers = {
        ".csv": lambda f: spreadsheet_safe(f).to_csv(path, index=False),  # no cell runs as a formula
        ".jsonl": lambda f: f.to_json(path, orient="records", lines=True, force_ascii=False),
        ".json": lambda f: f.to_json(path, orient="records", force_ascii=False),
    }
    if path.suffix.lower() not in writers:
        raise WhisperbenchError(f"{path}: export to .csv, .jsonl or .json")
    frame = to_frame(run, reference, runs_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    writers[path.suffix.lower()](frame)
    log.debug("wrote %d examples to %s", len(frame), path)
    return frame


def publish(
    run: RunLike, to: str, *, reference: RunLike | None = None, runs_dir: PathLike = "runs", **options: Any
) -> str:
    """Publish a run to an experiment tracker (``to``: one of :data:`TRACKERS`; ``whisperbench export --to``):
    params, metrics, the per-example table and the reports; ``options`` are the tracker's (``tracking_uri``,
    ``experiment`` for MLflow; ``project``, ``entity`` for W&B). Returns where it went, redacted."""
    from .core.redact import redact_text
    from .reports.trackers import TRACKERS
    from .reports.tracking import tracked_run

    tracker = TRACKERS.get(to)
    ref = load_run(reference, runs_dir) if reference is not None else None
    return redact_text(tracker.send(tracked_run(load_run(run, runs_dir), ref), **options))


@dataclass
class Subtitles:
    """What :func:`subtitles` wrote: the folder, one file per timed example, and the ids without times."""

    folder: Path
    written: list[Path]
    untimed: list[str]


def subtitles(
    run: RunLike, out: PathLike | None = None, *, format: str = "srt", runs_dir: PathLike = "runs"
) -> Subtitles:
    """SRT or WebVTT files (``format``: ``srt``, ``vtt`` or another of ``reports.subtitles.SUBTITLE_FORMATS``) of a
    run's stored segments, else its words, one ``<id>.<format>`` per example in ``out`` (default ``subtitles/RUN``;
    ``whisperbench subtitles``). A run that stored no times at all: WhisperbenchError saying how to get them.

    >>> import tempfile
    >>> runs = tempfile.mkdtemp()
    >>> tiny = score(RECORDED / "openai-whisper-tiny.en.jsonl", "tiny-shortform", runs_dir=runs, name="tiny")
    >>> subtitles(tiny, f"{runs}/subtitles")
    Traceback (most recent call last):
    whisperbench.errors.WhisperbenchError: run tiny stored no segment or word times: run it with --word-timestamps ...
    """
    from .reports.subtitles import SUBTITLE_FORMATS
    from .reports.timing import write_subtitles

    SUBTITLE_FORMATS.get(format)  # an unknown one: WhisperbenchError naming the known ones
    stored = load_run(run, runs_dir)
    folder = Path(out) if out is not None else Path("subtitles") / stored.name
    written, untimed = write_subtitles(stored, folder, format)
    if not written:
        raise WhisperbenchError(
            f"run {stored.name} stored no segment or word times: run it with --word-timestamps "
            "(short-form is decoded without timestamp tokens, so it stores no segments; "
            "long-form always does)"
        )
    return Subtitles(folder, written, untimed)


def perturb(
    dataset: PathLike,
    out: PathLike = "perturbed",
    *,
    noise: str | None = None,
    snr: str | None = None,
    gain: str | None = None,
    reverb: str | None = None,
    silence: str | None = None,
    nonspeech: str | None = None,
    nonspeech_s: float = 5.0,
    clean: bool = True,
    seed: int = 0,
    limit: int | None = None,
    columns: Columns = None,
) -> Path:
    """Write (or find, cached) a robustness set derived from ``dataset`` (``whisperbench perturb``; the recipe's
    comma lists as the command line takes them: ``noise="white,babble"``, ``snr="20,10"``, ``gain="-20"``,
    ``reverb="0.3"``, ``silence="lead:5"``, ``nonspeech="all"``) in ``out``/perturb-KEY; returns its manifest.

    >>> import tempfile
    >>> manifest = perturb("tiny-shortform", tempfile.mkdtemp(), gain="-6", limit=1)
    >>> [ex.id for ex in load_dataset(str(manifest)).examples]
    ['jfk~clean', 'jfk~gain-6dB']
    """
    from .datasets.perturb import perturb as derive
    from .datasets.perturb import recipe_from_text

    recipe = recipe_from_text(noise, snr, gain, silence, nonspeech, nonspeech_s, clean=clean, seed=seed, reverb=reverb)
    source = _checked(str(dataset), None, None, limit, False, ColumnMap.of(columns)).dataset
    return derive(source.examples, source.content_hash, recipe, out)


def list_datasets() -> dict[str, Path]:
    """The bundled datasets by name (``whisperbench datasets``); :func:`check_dataset` validates any one.

    >>> sorted(list_datasets())[:2]
    ['tiny-longform', 'tiny-shortform']
    """
    from .datasets import bundled_datasets

    return dict(bundled_datasets())


def check_dataset(spec: PathLike, *, columns: Columns = None) -> Checked:
    """``spec`` validated (``whisperbench datasets SPEC``): the valid examples as a dataset and each invalid one
    with its reason, nothing raised for invalid rows.

    >>> checked = check_dataset("tiny-shortform")
    >>> len(checked.dataset), checked.invalid
    (6, [])
    """
    return _load_checked(str(spec), skip_invalid=True, columns=ColumnMap.of(columns))


def list_adapters(name: str | None = None) -> list[dict[str, Any]]:
    """The implementations (``whisperbench adapters``): per adapter its name, whether it is available here (else
    why not) and its description; with ``name``, that adapter's options instead (option, type, default, allowed
    values, help: ``whisperbench adapters NAME``).

    >>> rows = list_adapters()
    >>> "openai-whisper" in [row["adapter"] for row in rows]
    True
    >>> [row["option"] for row in list_adapters("recorded")]
    ['label']
    """
    from .adapters import registry
    from .adapters.options import describe_options
    from .errors import AdapterUnavailable

    if name is not None:
        return describe_options(get_adapter(name).options)
    rows = []
    for adapter, cls in sorted(registry().items()):
        try:  # not installed, or not on this platform (Core ML, WhisperKit: macOS)
            cls.ensure_available()
            status = "available"
        except AdapterUnavailable as exc:
            status = str(exc).removeprefix(f"adapter {adapter}: ")
        rows.append({"adapter": adapter, "status": status, "description": cls.description})
    return rows


def list_models() -> list[dict[str, Any]]:
    """The known models (``whisperbench models``): name, installed, packages, description.

    >>> "tiny.en" in [row["name"] for row in list_models()]
    True
    """
    from .models import list_models as known

    return known()


def model_info(model: str) -> dict[str, Any]:
    """What ``model`` is (``whisperbench models info MODEL``; a known name, a path in any Whisper format,
    ``hf:ORG/NAME`` or ``openai:NAME``): format, dimensions, precision, quantization, size, sha256, origin.

    >>> import tempfile
    >>> model_info(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    whisperbench.errors.ModelError: ...
    """
    from .models import describe_source

    return describe_source(model)


def convert_model(model: str, to: str, out: PathLike, *, variant: str | None = None, overwrite: bool = False) -> Path:
    """``model`` written in format ``to`` (a variant of it: ``variant``, e.g. ggml's ``q5_0``) at ``out``
    (``whisperbench models convert``; ``overwrite`` replaces ``out``, the new copy complete before the old one
    goes) → the path written. A format without a converter, or an unknown one: OptionError listing those known.

    >>> convert_model("tiny.en", "no-such-format", "out")
    Traceback (most recent call last):
    ...
    whisperbench.errors.OptionError: models convert: unknown format 'no-such-format' (formats: ...)
    """
    from .errors import OptionError
    from .models.formats import find_format, help_texts
    from .models.resolve import export_model

    target = find_format(to)
    if target is None or target.converter is None:
        raise OptionError(
            f"models convert: {'no converter to' if target else 'unknown'} format {to!r} "
            f"(formats: {help_texts()['to']})"
        )
    return export_model(model, to, Path(out), variant, overwrite=overwrite)


def model_formats() -> list[dict[str, Any]]:
    """The model formats known (``whisperbench models formats``): name, aliases, what can be done with each.

    >>> "ggml" in [row["format"] for row in model_formats()]
    True
    """
    from .models.formats import format_table

    return format_table()
