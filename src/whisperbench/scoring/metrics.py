"""The registry of metrics: one module per measure, read by the summary, the score table and from them every
report (the leaderboard, ``compare``, the per-example export, the trackers and the gate).

A metric is one of two kinds:

- **per example** (``per_example``): a pure function of one :class:`ScoredExample` (the raw output, the human
  transcript, their normalized texts and word counts) returning named numbers. Each name is a column of the
  run's score table (``METRIC.COLUMN``), and the run's value is each column's ``aggregate`` (sum, mean,
  median, max or min) over the examples, stored under the metric's name in ``summary.json``. Its ``headline``
  column is what a table shows, ``better`` which way is better, and the gate's ``--max-increase
  METRIC.COLUMN=N`` bounds any column. ``run_keys`` adds to summary.json's value what summed columns cannot
  give (a count of distinct terms), from the run's scored predictions. A kernel that raises on one example
  leaves that example's values empty, counted in the value's ``errors`` with the metric's name; the run goes on.
- **run level** (``summarize``): a function of all the run's scored predictions that returns a JSON-ready
  ``dict`` (hallucination, timing), or ``None`` when it does not apply (no timing, no labels): then its key
  is left out, never filled with zeros.

Metrics come from every module of this package that defines ``METRIC`` and from any installed package through the
entry-point group ``whisperbench.metrics`` (:data:`METRICS`, docs/metrics.md): a new metric is one module, nothing
else changes for it to show everywhere.

>>> toy = Metric("toy", "letters z", per_example=lambda e: {"z": float(e.hypothesis.count("z"))}, aggregate="sum")
>>> example = ScoredExample("a", "ok", "jazz", "jazz", "jazz", "jazz", WordCounts(1, 0, 0, 0))
>>> toy.value_of(toy.columns_of([example, example]))
{'z': 4.0}
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.registry import Registry, package_items
from ..errors import OptionError, WhisperbenchError
from ..types import Prediction, WordCounts

logger = logging.getLogger(__name__)

#: the entry-point group through which an installed package adds metrics (``name = "module:METRIC"``)
ENTRY_POINT_GROUP = "whisperbench.metrics"
#: how a per-example column becomes the run's value (empty values left out)
AGGREGATES: dict[str, Callable[[np.ndarray], float]] = {
    "sum": np.sum,
    "mean": np.mean,
    "median": np.median,
    "max": np.max,
    "min": np.min,
}
BETTER = ("lower", "higher")
#: the column (and key of the run's value) counting the examples on which a per-example kernel raised
ERRORS = "errors"
#: the key of a run-level metric's value whose ``summarize`` failed: what it raised, in one line
FAILED = "failed"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")

SummarizeFn = Callable[[Sequence[Prediction], "MetricContext"], dict[str, Any] | None]
#: how a :class:`Pairing` compares two runs (``reports/pairings.py`` computes each kind once): ``examples`` per
#: example, ``difference`` of the run values, ``ratio`` of them, ``parity`` of the outputs; ``qoi``, ``speed``,
#: ``drift``, ``new``, ``resource`` and ``lost`` are the built-in comparisons (QoI, the paired time ratio, formatting
#: drift, the candidate's new hallucinations, its peak memory and load time against the reference's, the keywords it
#: newly misses) named as kinds
PAIRING_KINDS = ("examples", "difference", "ratio", "parity", "qoi", "speed", "drift", "new", "resource", "lost")


@dataclass(frozen=True)
class ScoredExample:
    """What a per-example metric sees of one example: its id and status, the human ``transcript`` and the
    implementation's ``hypothesis`` (raw, as written; empty for a failed example), both normalized with the run's
    normalizer, the word (and character) alignment counts, the language label and the durations.

    >>> e = ScoredExample("a", "ok", "Hi there.", "hi there", "hi there", "hi there", WordCounts(2, 0, 0, 0))
    >>> e.wer, e.transcript_words
    (0.0, 2)
    """

    id: str
    status: str
    transcript: str
    hypothesis: str
    transcript_norm: str
    hypothesis_norm: str
    words: WordCounts
    chars: WordCounts | None = None
    #: the example's language as the dataset labels it (``Prediction.language_label``)
    language_label: str | None = None
    audio_s: float = 0.0
    infer_s: float = 0.0
    #: what the dataset says of the example beyond its text (e.g. a manifest's ``formatted`` column)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def wer(self) -> float | None:
        """The example's WER in percent; None when its normalized transcript is empty."""
        return self.words.error_rate()

    @property
    def transcript_words(self) -> int:
        """Words of the normalized transcript (WER's denominator)."""
        return self.words.transcript_words

    @classmethod
    def from_prediction(cls, pred: Prediction) -> ScoredExample:
        """The example of a scored prediction (``scoring.engine.score_prediction``): its fields set at once, not one
        ``object.__setattr__`` each as a frozen dataclass's ``__init__`` does (a third of the time, once per example
        of every run).

        >>> from whisperbench.scoring.engine import score_prediction
        >>> made = ScoredExample.from_prediction(score_prediction(Prediction("a", "Hi there.", "hi there"), "basic"))
        >>> made == ScoredExample("a", "ok", "Hi there.", "hi there", "hi there", "hi there", WordCounts(2, 0, 0, 0),
        ...                       WordCounts(8, 0, 0, 0))
        True
        """
        score = pred.scored()
        example = object.__new__(cls)
        example.__dict__.update(
            id=pred.id,
            status=pred.status,
            transcript=pred.transcript,
            hypothesis=pred.hypothesis if pred.status == "ok" else "",
            transcript_norm=score.transcript_norm,
            hypothesis_norm=score.hypothesis_norm,
            words=score.words,
            chars=score.chars,
            language_label=pred.language_label,
            audio_s=pred.audio_s,
            infer_s=pred.infer_s,
            extra=pred.extra,
        )
        return example


@dataclass(frozen=True)
class MetricContext:
    """What a run-level metric may know about the run besides its predictions."""

    normalizer: str
    form: str = "short"
    options: dict[str, Any] = field(default_factory=dict)  # thresholds, as documented by each metric
    #: the run's score table (pyarrow, one row per scored prediction, in their order) when it is built: a metric
    #: may read its columns instead of measuring each prediction again
    table: Any = None


@dataclass(frozen=True)
class Display:
    """How the reports show a metric's run value beyond its headline: a section titled ``title`` (markdown and
    HTML), one row per run, one column per entry of ``columns`` (heading -> the key of the value it shows, dotted
    into a nested one), the ``note`` under it; the trackers get each column as ``METRIC.KEY``.

    >>> shown = Display("Timing", {"Starts": "starts.count", "p90 ms": "starts.p90"})
    >>> shown.cells({"starts": {"count": 4, "p90": 250.0}}), shown.cells(None)
    ({'Starts': 4, 'p90 ms': 250.0}, {'Starts': None, 'p90 ms': None})
    """

    title: str
    columns: Mapping[str, str]
    note: str = ""
    #: a short name of what the section counts or measures (the report's overview and charts; default: ``title``)
    label: str = ""
    #: the unit of its figures where a heading names none (e.g. "examples"; a heading's own "%" or "ms" wins)
    unit: str = ""

    @property
    def short(self) -> str:
        """The section's short name: ``label``, else its title."""
        return self.label or self.title

    def heading(self, column: str) -> str:
        """A column's heading with its unit: as written where it names one (``%``, ``ms``, ``s``), else followed by
        ``unit`` in parentheses.

        >>> shown = Display("Hallucinations", {"Loops": "loops", "Rate %": "rate"}, unit="examples")
        >>> shown.heading("Loops"), shown.heading("Rate %")
        ('Loops (examples)', 'Rate %')
        """
        named = column.rstrip().endswith(("%", " ms", " s", ")")) or not self.unit
        return column if named else f"{column} ({self.unit})"

    def cells(self, value: Mapping[str, Any] | None) -> dict[str, float | None]:
        """``{heading: number}`` of one run's value (None where the value, or that key, is missing)."""
        return {heading: _number_at(value, key) for heading, key in self.columns.items()}


def _number_at(value: Any, key: str) -> float | None:
    """The number at dotted ``key`` of a nested mapping, None when a step is missing or it is no number."""
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value if _is_number(value) else None


@dataclass(frozen=True)
class Pairing:
    """How two runs are compared on a metric, declared on it (``Metric.pairings``); from that alone the paired
    figure shows in ``compare`` (a column of its table, ``paired`` in ``--json``), the leaderboard (a column, each
    run against its dataset's reference) and the gate (``--min`` / ``--max METRIC.NAME=N``, by ``better``).

    ``name``: the figure's key (``METRIC.NAME``; not one of the value's own keys); ``kind`` (:data:`PAIRING_KINDS`):

    - ``examples``: the % of joined examples whose ``column`` the candidate does no worse on than the reference
      (QoI's rule, for any per-example column: candidate errors ≤ reference errors), with a bootstrap interval;
    - ``difference``: candidate minus reference run value of ``column`` (with a paired bootstrap interval where
      the column is a pooled rate, the metric's ``ratios``);
    - ``ratio``: the candidate's run value of ``column`` against the reference's, as a change in %;
    - ``parity``: the % of joined examples whose ``column`` differs between the runs.

    ``better``: which way the paired figure is better (its gate limit: ``--min`` when higher, ``--max`` when
    lower); ``heading``: its column in the tables (default ``METRIC.NAME``); ``flag``: the gate's named flag that
    is an alias of this limit (``min_qoi``: ``--min-qoi N`` is ``--min wer.qoi=N``).

    >>> Pairing("more_z", "difference", "z_letters").limit
    'max'
    """

    name: str
    kind: str
    column: str = ""
    better: str = "lower"
    heading: str | None = None
    flag: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"pairing name {self.name!r}: letters, digits, _ and - only")
        if self.kind not in PAIRING_KINDS:
            raise ValueError(f"pairing {self.name!r}: kind {self.kind!r} is not one of {', '.join(PAIRING_KINDS)}")
        if self.better not in BETTER:
            raise ValueError(f"pairing {self.name!r}: better must be 'lower' or 'higher', not {self.better!r}")

    @property
    def limit(self) -> str:
        """The gate's bound of the paired figure: ``min`` when higher is better, else ``max``."""
        return "min" if self.better == "higher" else "max"


@dataclass
class Failures:
    """The examples on which a metric's kernel raised, over one or more calls of :meth:`Metric.kernel_columns`: the
    first named, every one counted, logged once (:meth:`log`)."""

    first: str | None = None  # "ID: ExceptionName: message"
    count: int = 0
    examples: int = 0  # the examples the calls took

    def log(self, metric: str) -> None:
        """Log the first failure, with the example's name, and how many examples failed (nothing when none did)."""
        if self.count:
            logger.warning("metric %s failed on example %s", metric, self.first)
            logger.warning(
                "metric %s failed on %d of %d examples (their values left empty)", metric, self.count, self.examples
            )


@dataclass(frozen=True)
class Metric:
    """One measure: ``name`` (its key in summary.json, the prefix of its score-table columns), a one-line
    ``description``, and either ``per_example`` (one example -> ``{column: number}``) with ``aggregate``,
    ``headline`` (the column tables show; default the first), ``better`` ("lower" or "higher") and ``finish`` (the
    run's value from the aggregated columns, e.g. rates from summed counts), or
    ``summarize`` (the run's scored predictions -> its value, run level). ``options``: checks the metric's
    ``--threshold`` options and returns them typed (run-level metrics). ``display``: its report section."""

    name: str
    description: str
    summarize: SummarizeFn | None = None
    options: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    per_example: Callable[[ScoredExample], Mapping[str, float]] | None = None
    aggregate: str = "mean"
    headline: str | None = None
    better: str = "lower"
    #: the run's value from the aggregated columns (e.g. rates from summed counts); None: the run has no value
    finish: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    #: run values that are pooled rates, ``{value: (errors column, units column)}`` with units counted on the
    #: transcript (the same on both sides): the gate judges them with a paired bootstrap under ``--confidence``
    ratios: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    #: its report section (:class:`Display`); None: its value only in summary.json and, per example, its headline column
    display: Display | None = None
    #: the heading of its headline column in the tables (e.g. "CER %"); None: the metric's name
    heading: str | None = None
    #: its value's keys are summary.json's own top-level figures (WER, CER: where every version wrote them), not an
    #: object under the metric's name; each must be a field of :class:`~whisperbench.scoring.record.Summary`
    top_level: bool = False
    #: one of the tables' fixed columns (WER, placed by each report beside QoI), not among the metrics' columns
    core: bool = False
    #: how two runs are compared on it (:class:`Pairing`): compare, the leaderboard and the gate show each
    pairings: tuple[Pairing, ...] = ()
    #: figures its summed columns cannot give (keywords' distinct terms): scored predictions -> keys (with_run_keys)
    run_keys: Callable[[Sequence[Prediction]], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"metric name {self.name!r}: letters, digits, _ and - only (it names columns)")
        if self.summarize is not None and self.per_example is not None:
            raise ValueError(f"metric {self.name!r}: give per_example or summarize (one of them)")
        if self.summarize is None and self.per_example is None and not self.pairings:
            raise ValueError(f"metric {self.name!r}: give per_example or summarize (one of them), or pairings only")
        if self.aggregate not in AGGREGATES:
            raise ValueError(
                f"metric {self.name!r}: aggregate {self.aggregate!r} is not one of {', '.join(AGGREGATES)}"
            )
        if self.better not in BETTER:
            raise ValueError(f"metric {self.name!r}: better must be 'lower' or 'higher', not {self.better!r}")

    def pairing(self, name: str) -> Pairing | None:
        """Its pairing ``name``, None when it declares none of that name."""
        return next((p for p in self.pairings if p.name == name), None)

    @property
    def columnar(self) -> bool:
        """Whether it is computed per example (its columns live in the score table)."""
        return self.per_example is not None

    def columns_of(self, examples: Iterable[ScoredExample]) -> dict[str, list[float | None]]:
        """``{column: one value per example}`` (None where the example gave no value or the kernel raised; the
        failures are kept under the column ``"errors"`` and logged with the metric's and the example's names)."""
        failures = Failures()
        with contained():
            columns = self.kernel_columns(examples, failures)
        failures.log(self.name)
        return columns

    def kernel_columns(self, examples: Iterable[ScoredExample], failures: Failures) -> dict[str, list[float | None]]:
        """:meth:`columns_of`, the failures counted in ``failures``, for a caller that runs it within
        :func:`contained` (once for many calls: :func:`example_columns_kernel`)."""
        assert self.per_example is not None, f"metric {self.name!r} is run level"
        kernel, examples = self.per_example, list(examples)
        failures.examples += len(examples)
        given: list[Any] = []
        for example in examples:
            try:
                given.append(kernel(example))
            except BaseException as exc:  # a plug-in's bug (or its sys.exit) fails this example's value only
                given.append(interrupted_or(exc))
        columns = _plain_columns(given)  # the common case: dicts of finite floats, taken as they are
        return columns if columns is not None else _row_columns(examples, given, failures)

    def value_of(self, columns: Mapping[str, Sequence[float | None] | np.ndarray]) -> dict[str, Any] | None:
        """The run's value: each column aggregated over the examples that have it (None when none has), then
        ``finish`` when the metric has one (it may say the run has no value: None)."""
        reduce = AGGREGATES[self.aggregate]
        value: dict[str, Any] = {}
        for name, values in columns.items():
            numbers = _floats(values)
            if name == ERRORS:
                value[ERRORS] = int(np.nansum(numbers))
                continue
            present = numbers[~np.isnan(numbers)]
            value[name] = float(reduce(present)) if present.size else None
        errors = value.pop(ERRORS, 0)
        finished = self._finished(value) if self.finish is not None else value
        if finished is not None and errors:
            finished[ERRORS] = errors
        return finished

    def _finished(self, value: dict[str, Any]) -> dict[str, Any] | None:
        """``finish`` of the aggregated columns; a failing ``finish`` (a plug-in's bug, its ``sys.exit``) leaves
        the run without this metric's value, logged with its name, never the command."""
        assert self.finish is not None
        try:
            with contained():
                finished = self.finish(value)
        except BaseException as exc:
            logger.warning(
                "metric %s failed to finish its value: %s (left out)", self.name, failure(interrupted_or(exc))
            )
            return None
        return finished if finished is None or isinstance(finished, dict) else _junk(self.name, finished)

    @property
    def code_version(self) -> str:
        """The version of the code that computes this metric: the SHA-256 (16 digits) of the module defining its
        kernel (or ``summarize``), after the distribution and version of the package it comes from where it is a
        plug-in; a kernel defined nowhere on disk (a notebook, a test): the digest of its compiled code. A score
        table records it per metric, and its columns are recomputed when it changes, the other columns kept
        (:func:`whisperbench.scoring.table.kept_metrics`)."""
        code = self.per_example or self.summarize
        source = self.source_file
        try:
            with open(source, "rb") as fh:  # type: ignore[arg-type]
                data = fh.read()
        except (OSError, TypeError):
            compiled = getattr(code, "__code__", None)
            data = repr((compiled.co_code, compiled.co_consts) if compiled else code).encode()
        digest = hashlib.sha256(data).hexdigest()[:16]
        origin = METRICS.origin(self.name)
        return f"{origin} {digest}" if origin else digest

    @property
    def source_file(self) -> str | None:
        """The file of the module defining its kernel (or ``summarize``); None where it has none (a notebook)."""
        code = self.per_example or self.summarize
        module = sys.modules.get(getattr(code, "__module__", None) or type(code).__module__)
        return getattr(module, "__file__", None)

    @property
    def label(self) -> str:
        """The heading of its headline column: ``heading``, else its name."""
        return self.heading or self.name

    def headline_label(self, value: Mapping[str, Any] | None) -> str | None:
        """The heading of its headline in a table: :attr:`label` for a per-example metric; for a run-level one its
        ``heading``, else ``METRIC.KEY`` of the headline key (None where its value has no number to show).

        >>> Metric("longest", "x", summarize=lambda s, c: None).headline_label({"words": 9, "questions": 0})
        'longest.words'
        """
        if self.columnar or self.heading:
            return self.label
        column = self.headline_column(value)
        return f"{self.name}.{column}" if column else None

    def headline_column(self, value: Mapping[str, Any] | None) -> str | None:
        """The column a table shows of a stored value: ``headline``, else the value's first numeric one."""
        if self.headline or not isinstance(value, Mapping):
            return self.headline
        return next((k for k, v in value.items() if k != ERRORS and _is_number(v)), None)

    def headline_of(self, value: Mapping[str, Any] | None) -> float | None:
        """The headline number of a stored value (None without one)."""
        name = self.headline_column(value)
        number = value.get(name) if isinstance(value, Mapping) and name else None
        return float(number) if number is not None and _is_number(number) else None


def with_run_keys(metric: Metric, value: dict[str, Any] | None, scored: Sequence[Prediction]) -> dict[str, Any] | None:
    """``value`` (``metric``'s, from the columns) with its ``run_keys`` of the scored predictions first; as it is where
    the run has no value or the metric no ``run_keys``; a failing ``run_keys`` is logged with the metric's name and
    left out.

    >>> toy = Metric("toy", "t", per_example=lambda e: {"z": 1.0}, run_keys=lambda scored: {"ids": len(scored)})
    >>> with_run_keys(toy, {"z": 2.0}, [Prediction("a", "", ""), Prediction("b", "", "")])
    {'ids': 2, 'z': 2.0}
    """
    if value is None or metric.run_keys is None:
        return value
    try:
        with contained():
            keys = metric.run_keys(scored)
    except BaseException as exc:
        logger.warning("metric %s failed on its run keys: %s (left out)", metric.name, failure(interrupted_or(exc)))
        return value
    return {**keys, **value} if isinstance(keys, dict) else value


class _Interrupt:
    """Whether the user pressed Ctrl-C while a metric ran: only then is a ``KeyboardInterrupt`` let through (one a
    plug-in raises itself is its failure like any other exception)."""

    pressed = False
    #: whether the last :func:`contained` block could tell (it installed its handler); where it could not, every
    #: ``KeyboardInterrupt`` counts as the user's
    watched = False


@contextmanager
def contained() -> Iterator[None]:
    """Where a metric's own code runs (a kernel, ``finish``, ``summarize``, a plug-in's import): what it prints goes
    to stderr, never to stdout (``compare --json``, ``runs --json`` stay JSON), and a real Ctrl-C is told from a
    ``KeyboardInterrupt`` it raises itself (:func:`interrupted_or`)."""
    previous = _watch_sigint()
    try:
        with redirect_stdout(sys.stderr):
            yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _watch_sigint() -> Any:
    """Make a Ctrl-C tell :class:`_Interrupt` it was pressed, in the main thread: a Python handler in place (the
    default one or the caller's) is wrapped and still called; with Ctrl-C ignored or left to the system, no
    ``KeyboardInterrupt`` can be the user's. Returns the handler to put back (None: nothing was changed)."""
    _Interrupt.pressed = False
    _Interrupt.watched = False
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGINT)
    if previous in (signal.SIG_IGN, signal.SIG_DFL):
        _Interrupt.watched = True
        return None
    if not callable(previous):  # installed outside Python: cannot tell
        return None

    def on_sigint(signum: int, frame: Any) -> None:
        _Interrupt.pressed = True
        previous(signum, frame)

    signal.signal(signal.SIGINT, on_sigint)
    _Interrupt.watched = True
    return previous


def interrupted_or(exc: BaseException) -> BaseException:
    """``exc`` re-raised when it is the user's Ctrl-C (the command stops as on any Ctrl-C) or whisperbench's own
    refusal of the data (a :class:`~whisperbench.errors.WhisperbenchError` of this package, e.g. an inconsistent
    stream: the command's one-line error, exit 2); else returned: a metric's failure, whatever it raised
    (``SystemExit`` included), is that metric's alone."""
    if isinstance(exc, KeyboardInterrupt) and (_Interrupt.pressed or not _Interrupt.watched):
        raise exc
    if isinstance(exc, WhisperbenchError) and type(exc).__module__.startswith("whisperbench."):
        raise exc
    return exc


def failure(exc: BaseException) -> str:
    """One line naming what a metric raised: ``SystemExit: 0``."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__


def _junk(name: str, value: Any) -> None:
    logger.warning("metric %s gave a %s, not a dict: its value left out", name, type(value).__name__)
    return None


def _floats(values: Sequence[float | None] | np.ndarray) -> np.ndarray:
    """A column's values as float64, NaN where a value is missing (an array passes as it is)."""
    if isinstance(values, np.ndarray):
        return values.astype(np.float64, copy=False)
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _plain_columns(given: list[Any]) -> dict[str, list[float | None]] | None:
    """The kernels' values as columns where every one is a ``dict`` of string keys and finite floats (a key a
    row lacks: None there), without looking at each value twice; None where any is not (a failure, a NaN, an
    integer, another mapping): :func:`_row` then takes them one by one.

    >>> _plain_columns([{"a": 1.0}, {}, {"a": 2.5, "b": 0.0}]), _plain_columns([{"a": 1}])
    ({'a': [1.0, None, 2.5], 'b': [None, None, 0.0]}, None)
    """
    if not all(type(values) is dict for values in given):
        return None
    columns: dict[str, list[float | None]] = {}  # in the order the names first come
    for row, values in enumerate(given):  # one pass over the values given (a sparse metric's {} costs nothing)
        for name, value in values.items():
            if name == ERRORS:
                continue
            if type(name) is not str or not (value is None or (type(value) is float and value - value == 0.0)):
                return None
            column = columns.get(name)
            if column is None:
                column = columns[name] = [None] * len(given)
            column[row] = value
    return columns


def _row_columns(examples: list[ScoredExample], given: list[Any], failures: Failures) -> dict[str, list[float | None]]:
    """The kernels' values (``given``, one per example, an exception where it raised) taken one by one (:func:`_row`)
    as columns; the examples whose value raised or cannot be read are counted in ``failures`` and flagged 1 in the
    column ``"errors"`` (0 elsewhere; no such column when none failed)."""
    rows: list[dict[str, float | None]] = []
    failed: list[int] = []
    for example, values in zip(examples, given):
        try:
            if isinstance(values, BaseException):
                raise values
            rows.append(_row(values))
        except BaseException as exc:
            if failures.first is None:
                failures.first = f"{example.id}: {type(exc).__name__}: {exc}"
            failed.append(len(rows))
            rows.append({})
    names = list(dict.fromkeys(name for row in rows for name in row if name != ERRORS))
    columns = {name: [row.get(name) for row in rows] for name in names}
    if failed:
        failures.count += len(failed)
        flagged = set(failed)
        columns[ERRORS] = [1.0 if i in flagged else 0.0 for i in range(len(rows))]
    return columns


def _row(values: Mapping[str, Any]) -> dict[str, float | None]:
    """A kernel's ``{column: number}`` as floats (None for a missing number; see :func:`_finite`)."""
    items = values.items() if type(values) is dict else dict(values).items()
    return {key if type(key) is str else str(key): _finite(value) for key, value in items}


def _finite(value: Any) -> float | None:
    """A kernel's number as a float; None for None or NaN; anything else (a string, infinity) is its bug."""
    if type(value) is float and value - value == 0.0:  # finite (NaN and infinity give NaN): the common case
        return value
    if value is None:
        return None
    number = float(value)
    if math.isnan(number):
        return None
    if math.isinf(number):
        raise ValueError(f"value {value!r} is not finite")
    return number


#: every metric: each module of this package that defines ``METRIC``, then installed packages' (the entry-point
#: group ``whisperbench.metrics``), by name; one that cannot be loaded is left out with a warning naming it
METRICS: Registry[Metric] = Registry(
    "metric",
    builtin=lambda: package_items(__package__ or "whisperbench.scoring", "METRIC"),
    kind=Metric,
    group=ENTRY_POINT_GROUP,
    error=OptionError,
    refuse=lambda metric: _not_own_namespace(metric),
)


def reserve_names(names: Iterable[str]) -> None:
    """Names no metric from elsewhere may take: summary.json's own keys (``scoring.record`` reserves its figures
    as it is imported, which the built-in metrics' scan does before any plug-in loads)."""
    _RESERVED.update(names)


_RESERVED: set[str] = set()


def _not_own_namespace(metric: Metric) -> str | None:
    """Why a metric from another package (or added at run time) may not be registered: it claims a built-in
    figure's place (``top_level``: summary.json's own keys; ``core``: the tables' WER column) or is named after one
    of summary.json's keys (``num_failed``, ``wer_ok``); None where it lives in its own namespace."""
    if metric.top_level or metric.core:
        return "declares itself top level or core, which only a built-in metric may be"
    if metric.name in _RESERVED:
        return f"is named after summary.json's own figure {metric.name!r}"
    return None


def registered() -> tuple[Metric, ...]:
    """Every metric (:data:`METRICS`): those of this package's modules by module name, then installed ones."""
    return METRICS.items()


def displayed_metrics() -> tuple[Metric, ...]:
    """The registered metrics with a report section of their own (:class:`Display`), in registry order."""
    return tuple(m for m in registered() if m.display is not None)


def per_example_metrics() -> tuple[Metric, ...]:
    """The registered metrics computed per example (their columns are in every score table)."""
    return tuple(m for m in registered() if m.columnar)


def nested_metrics() -> tuple[Metric, ...]:
    """The per-example metrics whose run value summary.json holds under their name (every one but the top-level
    WER and CER, whose figures are summary.json's own keys)."""
    return tuple(m for m in per_example_metrics() if not m.top_level)


def run_level_metrics() -> tuple[Metric, ...]:
    """The registered metrics computed over the whole run (``summarize``; summary.json holds their values)."""
    return tuple(m for m in registered() if m.summarize is not None)


def column_metrics() -> tuple[Metric, ...]:
    """The per-example metrics the tables show as columns of their own (every one but the core WER, which each
    table places among its fixed columns)."""
    return tuple(m for m in per_example_metrics() if not m.core)


def metric_named(name: str) -> Metric:
    """The registered metric ``name``; an OptionError listing the known ones otherwise."""
    return METRICS.get(name)


def metric_limits(values: Any, option: str = "--max-increase") -> dict[str, float] | None:
    """The gate's per-metric limits as ``{"METRIC.COLUMN": N}``, from ``["METRIC.COLUMN=N", …]`` (the command line)
    or a mapping; the metric must be a registered metric (per example or run level: ``compare`` pairs both, as
    ``Comparison.metrics``) and N a finite number, else an OptionError
    naming ``option``. None or empty: None.

    >>> metric_limits(None) is None
    True
    """
    if not values:
        return None
    pairs = values.items() if isinstance(values, Mapping) else (str(v).partition("=")[::2] for v in values)
    out = {}
    for key, number in pairs:
        metric, dot, column = str(key).partition(".")
        if not (dot and column and str(number).strip()):
            raise OptionError(f"{option} {key}={number}: expected METRIC.COLUMN=N, e.g. cer.cer=1")
        metric_named(metric)  # a registered metric, per example or run level (an unknown one: its error)
        try:
            limit = float(number)
        except (TypeError, ValueError):
            raise OptionError(f"{option} {key}={number}: {number!r} is not a number") from None
        if not math.isfinite(limit):
            raise OptionError(f"{option} {key}={number}: the limit must be a finite number")
        out[f"{metric}.{column}"] = limit
    return out


ColumnsFn = Callable[[Sequence[ScoredExample]], dict[str, list[float | None]]]


@contextmanager
def example_columns_kernel() -> Iterator[ColumnsFn]:
    """A function giving every per-example metric's columns over a group of examples, named ``METRIC.COLUMN`` (the
    score table's), for the groups of one block: the metrics looked up once, their code run within one
    :func:`contained` (not one a group), and each metric's failures logged once, when the block ends."""
    metrics = per_example_metrics()
    failures = {metric.name: Failures() for metric in metrics}

    def columns(examples: Sequence[ScoredExample]) -> dict[str, list[float | None]]:
        return {
            f"{metric.name}.{name}": values
            for metric in metrics
            for name, values in metric.kernel_columns(examples, failures[metric.name]).items()
        }

    with contained():
        yield columns
    for name, counted in failures.items():
        counted.log(name)


def parse_metric_options(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["hallucination.burst_words=4", …]`` (the command line's ``--threshold``) as ``{metric: {name: value}}``,
    each checked and typed by its metric; a malformed pair, an unknown metric or option: ValueError naming it.

    >>> parse_metric_options(["hallucination.burst_words=4"])["hallucination"]["burst_words"]
    4
    """
    options: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        metric, dot, name = key.partition(".")
        if not (eq and dot and name):
            raise OptionError(f"--threshold {pair}: expected METRIC.NAME=VALUE, e.g. hallucination.burst_words=4")
        options.setdefault(metric, {})[name] = value
    return checked_options(options)


def checked_options(options: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``options`` (``{metric: {name: value}}``) checked and typed by each metric (an OptionError names a metric
    that takes none, an unknown option or a value of the wrong type); each metric's full set, defaults filled in.
    None given: the registry is not loaded."""
    if not options:
        return {}
    by_name = {metric.name: metric for metric in registered()}
    out = {}
    for metric, values in options.items():
        parse = by_name[metric].options if metric in by_name else None
        if parse is None:
            known = sorted(m.name for m in by_name.values() if m.options is not None)
            raise OptionError(f"metric {metric!r} takes no options (metrics with options: {', '.join(known)})")
        try:
            out[metric] = parse(dict(values))
        except ValueError as exc:
            raise OptionError(str(exc)) from None
    return out


def stored_options(metrics: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The options a run's stored metrics were computed with (each metric's value keeps them as ``thresholds``),
    so a recomputation (another normalizer, a rescore) uses the same ones."""
    return {
        name: dict(value["thresholds"])
        for name, value in metrics.items()
        if isinstance(value, dict) and isinstance(value.get("thresholds"), dict)
    }


def run_metrics(scored: Sequence[Prediction], context: MetricContext) -> dict[str, Any]:
    """``{metric name: its value}`` for every registered run-level metric that applies to the run (per-example
    metrics come from the score table's columns: :func:`whisperbench.scoring.figures.summarize`)."""
    values: dict[str, Any] = {}
    for metric in registered():
        if metric.summarize is not None:
            value = _summarized(metric, scored, context)
            if value is not None:
                values[metric.name] = value
    return values


def _summarized(metric: Metric, scored: Sequence[Prediction], context: MetricContext) -> dict[str, Any] | None:
    """A run-level metric's value; where its ``summarize`` raises anything (``sys.exit`` included, a real Ctrl-C
    excepted) or returns no dict, the value records the failure (``{"failed": "SystemExit: 0"}``), logged with the
    metric's name: the command and every other figure go on."""
    assert metric.summarize is not None
    try:
        with contained():
            value = metric.summarize(scored, context)
    except BaseException as exc:
        why = failure(interrupted_or(exc))
        logger.warning("metric %s failed: %s (its value records the failure)", metric.name, why)
        return {FAILED: why}
    if value is None or isinstance(value, dict):
        return value
    logger.warning("metric %s gave a %s, not a dict (its value records the failure)", metric.name, type(value).__name__)
    return {FAILED: f"returned a {type(value).__name__}, not a dict"}
