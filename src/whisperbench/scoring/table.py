"""A run's scores as columns (a pyarrow table, one row per prediction): what ``compare``, ``gate`` and
``report`` read instead of a million ``Prediction`` objects.

The table holds each prediction's id, raw texts, status, language, durations and its word and character
counts scored with one normalizer (the stored counts where the run was scored with it, else scored afresh:
the counts every figure is computed from: :mod:`whisperbench.scoring.figures`), the normalized output, the
hallucination measures the flags are read from (longest insertion burst, loop words, compression ratio), then one
float column
``METRIC.COLUMN`` per column of each per-example metric (:mod:`whisperbench.scoring.metrics`). The run store
keeps it beside ``predictions.jsonl`` (the durable record) and rebuilds it when it is missing or stale (another
set of metrics installed included: :func:`metrics_key`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Sequence as SequenceABC
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.hashing import sha256_of
from ..core.json_files import json_lines_parser
from ..types import ExampleScore, Prediction, WordCounts
from . import arrays
from .arrays import numbers
from .engine import Rows, in_parallel, map_ranges, rescored, rescored_all, worker_pool
from .hallucination import stored_measures
from .metrics import ERRORS, ColumnsFn, Metric, ScoredExample, example_columns_kernel, per_example_metrics
from .normalize import normalize
from .wer import corpus_wer

#: bumped when the columns change: a table of another version is rebuilt
TABLE_VERSION = "7"
WORD_COUNTS = ("hits", "substitutions", "deletions", "insertions")
CHAR_COUNTS = ("char_hits", "char_substitutions", "char_deletions", "char_insertions")
_RAW = [
    ("id", pa.string()),
    ("transcript", pa.string()),
    ("hypothesis", pa.string()),
    ("status", pa.string()),
    ("language_label", pa.string()),
    ("audio_s", pa.float64()),
    ("infer_s", pa.float64()),
    ("cpu_s", pa.float64()),
    ("tokens", pa.int64()),
]
#: the columns of the raw output (the rest are the score's counts and ``timed``)
RAW_COLUMNS = tuple(name for name, _ in _RAW)
#: per example, the hallucination measures the flags are read from (``hallucination.stored_measures``)
HALLUCINATION = [("burst_words", pa.int64()), ("loop_words", pa.int64()), ("compression_ratio", pa.float64())]
SCHEMA = pa.schema(
    _RAW
    + [(name, pa.int64()) for name in WORD_COUNTS + CHAR_COUNTS]
    + [("timed", pa.bool_())]  # the prediction stored segment or word times (the timing reports read them)
    + [("hypothesis_norm", pa.string())]  # the output normalized (empty for a failed example)
    + HALLUCINATION
)


def score_table(predictions: Iterable[Prediction], normalizer: str, workers: int | None = None) -> pa.Table:
    """The predictions scored with ``normalizer`` (stored counts reused where they were scored with it), as columns."""
    return scored_table(list(predictions), normalizer, workers)[1]


def scored_table(
    predictions: Sequence[Prediction], normalizer: str, workers: int | None = None
) -> tuple[Sequence[Prediction], pa.Table]:
    """The predictions scored with ``normalizer`` and their score table. Large sets are split among ``workers``
    processes (default: the idle cores this process may use: ``engine.pool_size``), each scoring its part and building
    its part of the table (the per-example metrics included), which is all it sends back; the parts are joined in
    order, and the scored predictions are then made from the table as they are read (:class:`ScoredOnRead`)."""
    if not in_parallel(len(predictions), workers):
        each = rescored_all(predictions, normalizer)
        return each, _table(each)
    rows = Rows([pred.packed() for pred in predictions], normalizer)
    table = _joined(map_ranges(_scored_part, rows, len(predictions), workers, backwards=True))
    return ScoredOnRead(predictions, table, normalizer), table


class ScoredOnRead(SequenceABC[Prediction]):
    """Predictions and their score table (row ``i`` is prediction ``i``), as the sequence of scored predictions,
    each made when it is read (most never are: the run-level metrics read the table, or pick a few predictions by
    their raw fields first: :func:`~whisperbench.scoring.engine.raw`). A score is the row's counts and normalized
    output, the transcript normalized again (the table does not keep it): what scoring the prediction gives. Reading
    an item twice makes two equal objects. A pool's workers so send back only their part of the table.

    >>> preds = [Prediction("a", "Hi there.", "hi bear")]
    >>> scored = ScoredOnRead(preds, score_table(preds, "basic"), "basic")
    >>> len(scored), scored[0].scored().words, scored[0].scored().transcript_norm, preds[0].score is None
    (1, WordCounts(hits=1, substitutions=1, deletions=0, insertions=0), 'hi there', True)
    """

    def __init__(self, predictions: Sequence[Prediction], table: pa.Table, normalizer: str) -> None:
        if len(predictions) != table.num_rows:
            raise ValueError(f"{len(predictions)} predictions and {table.num_rows} rows")
        self.raw, self.table, self.normalizer = predictions, table, normalizer
        self._rows: list[tuple[Any, ...]] | None = None

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if self._rows is None:
            self._rows = list(_score_rows(self.table))
        return self.raw[index].with_score(_score_of(self.raw[index].transcript, self._rows[index], self.normalizer))

    def __iter__(self) -> Iterator[Prediction]:
        for pred, row in zip(self.raw, _score_rows(self.table)):
            yield pred.with_score(_score_of(pred.transcript, row, self.normalizer))


#: predictions a pool worker scores at once while a run is being written (:class:`ScoredWhileWritten`)
WRITTEN_PART = 2048


class ScoredWhileWritten:
    """A run's score table computed on a pool of ``workers`` processes while its predictions are being written, so
    that scoring and writing share the machine's cores: :meth:`add` takes the lines of predictions.jsonl as they are
    written (every :data:`WRITTEN_PART` of them go to a worker, which reads them as the run store reads its file
    and builds their part of the table, all it sends back), :meth:`written` says the writing ended (the last part
    goes), :meth:`result` takes the file once the run ends, and :meth:`close` ends the pool. What is scored is what
    the file holds: :meth:`result` gives nothing unless the file's bytes are exactly the lines added (their sha256)
    and the table's ids are those of the predictions added, in order, each once. Nothing is scored but what was
    written, with the run's normalizer. The pool starts with the run (one is made only for a run large enough for
    it): its workers import the scoring modules while the first part is written."""

    def __init__(self, normalizer: str, workers: int) -> None:
        self.normalizer, self.workers = normalizer, workers
        self._digest, self._size = hashlib.sha256(), 0
        self._waiting: list[bytes] = []
        self._waiting_lines = 0
        self._added: list[Prediction] = []
        self._ending: threading.Thread | None = None
        self._parts: list[Future[Any]] = []
        self._pool: ProcessPoolExecutor = worker_pool(workers)
        for _ in range(workers):  # a submission with no worker idle starts one: all of them start now
            self._pool.submit(_started)

    def add(self, lines: bytes, predictions: Sequence[Prediction]) -> None:
        """The whole lines just written to predictions.jsonl, as written, and the ``predictions`` written as them
        (one a line, in order: those the result pairs with the table's rows)."""
        self._digest.update(lines)
        self._size += len(lines)
        self._waiting.append(lines)
        self._added += predictions
        self._waiting_lines += len(predictions)
        if self._waiting_lines < WRITTEN_PART:
            return
        waiting, start = b"".join(self._waiting), 0
        for _ in range(self._waiting_lines // WRITTEN_PART):  # parts of WRITTEN_PART lines, whatever the groups
            end = start
            for _ in range(WRITTEN_PART):
                end = waiting.index(b"\n", end) + 1
            self._send(waiting[start:end])
            start = end
        self._waiting, self._waiting_lines = [waiting[start:]], self._waiting_lines % WRITTEN_PART

    def written(self) -> None:
        """The writing ended: the lines not sent yet go to a worker."""
        if self._waiting_lines:
            self._send(b"".join(self._waiting))
            self._waiting, self._waiting_lines = [], 0

    def _send(self, lines: bytes) -> None:
        """``lines`` (whole lines) to a worker."""
        self._parts.append(self._pool.submit(_scored_lines, lines, self.normalizer))

    def result(self, path: Path) -> tuple[ScoredOnRead, pa.Table] | None:
        """The predictions added, scored, and the table of ``path`` (the run's predictions.jsonl once the run ends),
        as :func:`scored_table` gives them for the predictions the run store reads from it; None where the file holds
        other bytes than the lines added (a resumed or edited run), a line a worker could not read, or ids other than
        those of the predictions added, in their order, each once (read the file as the run store does, and score it
        afresh)."""
        self.written()
        if not self._parts or not _holds_exactly(path, self._size, self._digest.hexdigest()):
            return None
        tables = [future.result() for future in self._parts]
        self._ending = threading.Thread(target=self._pool.shutdown, name="whisperbench-pool-end", daemon=True)
        self._ending.start()  # every part is back: the workers end while the run's figures are computed
        if any(part is None for part in tables):
            return None
        table = _joined(tables)
        ids = [pred.id for pred in self._added]
        if len(set(ids)) != len(ids) or table["id"].to_pylist() != ids:
            return None
        return ScoredOnRead(self._added, table, self.normalizer), table

    def close(self) -> None:
        """End the pool (the parts not started are dropped) and wait until its workers are gone."""
        if self._ending is not None:  # ending since every part came back (:meth:`result`)
            self._ending.join()
        self._pool.shutdown(wait=True, cancel_futures=True)


def _holds_exactly(path: Path, size: int, digest: str) -> bool:
    """Whether the file at ``path`` is ``size`` bytes whose sha256 is ``digest`` (hex)."""
    try:
        return path.stat().st_size == size and sha256_of(path) == digest
    except OSError:
        return False


def _scored_lines(lines: bytes, normalizer: str) -> pa.Table | None:
    """A pool worker's part of :class:`ScoredWhileWritten`: the table of the predictions of ``lines`` (whole lines
    of predictions.jsonl, read as the run store reads them) scored; None where a line cannot be read (the run
    store's reading then names it)."""
    parse = json_lines_parser(lines)
    raws = [raw for raw in lines.splitlines() if raw.strip()]
    with example_columns_kernel() as metric_columns:
        columns = _Columns(metric_columns)
        for group in _groups(raws):
            try:
                stored = [Prediction.from_json(parse(raw)) for raw in group]
            except (ValueError, TypeError, AttributeError, KeyError):
                return None
            columns.add([rescored(pred, normalizer) for pred in stored])
    return columns.table()


def _started() -> None:
    """Nothing: what a pool worker runs first, so that it starts (:class:`ScoredWhileWritten`)."""


def _joined(parts: Sequence[pa.Table]) -> pa.Table:
    """The parts' tables one after the other, columns in the order one process gives them: the fixed ones, then each
    metric's in registry order (a part whose examples gave a metric no column gets it empty)."""
    table = pa.concat_tables(parts, promote_options="default")
    return _in_order(table, list(dict.fromkeys(name for part in parts for name in part.column_names)))


def _in_order(table: pa.Table, seen: Sequence[str]) -> pa.Table:
    """``table``'s columns (named in ``seen``, in order of first appearance) as one process gives them: the fixed
    ones, then each metric's (:func:`_metric_order`)."""
    fixed = [name for name in seen if name in _FIXED]
    return table.select(fixed + _metric_order([name for name in seen if name not in _FIXED]))


def _metric_order(names: Sequence[str]) -> list[str]:
    """Metric columns (``METRIC.COLUMN``, in order of first appearance) as one pass over the examples gives them:
    each metric's in registry order, a metric's own in the order they were first seen, its ``errors`` flag last."""
    rank = {metric.name: i for i, metric in enumerate(per_example_metrics())}

    def key(name: str) -> tuple[int, bool]:
        metric, _, column = name.partition(".")
        return rank.get(metric, len(rank)), column == ERRORS  # a metric no longer installed: last

    return sorted(names, key=key)  # stable: first appearance within one metric


def _scored_part(rows: Rows, start: int, stop: int) -> pa.Table:
    """One worker's part of :func:`scored_table`: the table of predictions ``start:stop`` (sent packed:
    :meth:`~whisperbench.types.Prediction.packed`) scored."""
    groups = _groups(rows.items[start:stop])
    return _table_of([rescored(Prediction.unpacked(values), rows.settings) for values in group] for group in groups)


def _table(scored: Sequence[Prediction]) -> pa.Table:
    """The score table of predictions already scored (with the normalizer their scores name)."""
    return _table_of(_groups(scored))


def _table_of(groups: Iterable[Sequence[Prediction]]) -> pa.Table:
    """The score table of groups of predictions already scored, each group made when the one before is done
    (:data:`ROWS_AT_ONCE`), the per-example metrics run in one block (:func:`example_columns_kernel`)."""
    with example_columns_kernel() as metric_columns:
        columns = _Columns(metric_columns)
        for group in groups:
            columns.add(group)
    return columns.table()


def _groups(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """``items`` in consecutive slices of :data:`ROWS_AT_ONCE`."""
    return (items[start : start + ROWS_AT_ONCE] for start in range(0, len(items), ROWS_AT_ONCE))


#: predictions made into table rows at once (:class:`_Columns`): the objects of one group (parsed lines, scored
#: copies, examples, metric values) are gone before the next is made, so the collector's youngest generation frees
#: them and a part of thousands of predictions is not traversed again and again by its older ones
ROWS_AT_ONCE = 64
_FIXED = frozenset(SCHEMA.names)


class _Columns:
    """A score table's columns, built a group of predictions at a time (:meth:`add`), as one pass gives them: a
    metric column a group lacks is empty there (its ``errors`` flag 0). ``metric_columns``: the per-example metrics'
    columns of a group's examples (the function an :func:`example_columns_kernel` block gives)."""

    def __init__(self, metric_columns: ColumnsFn) -> None:
        self.values: dict[str, list[Any]] = {}
        self.rows = 0
        self.metric_columns = metric_columns

    def add(self, scored: Sequence[Prediction]) -> None:
        """The columns of ``scored`` (predictions already scored) after those added before."""
        for name, values in _columns(scored, self.metric_columns).items():
            column = self.values.get(name)
            if column is None:
                column = self.values[name] = [_absent(name)] * self.rows
            column += values
        self.rows += len(scored)
        for name, column in self.values.items():
            if len(column) < self.rows:
                column += [_absent(name)] * (self.rows - len(column))

    def table(self) -> pa.Table:
        """The columns added, as a table (fixed columns first, then each metric's: :func:`_metric_order`)."""
        metric_names = _metric_order([name for name in self.values if name not in _FIXED])
        schema = pa.schema(list(SCHEMA) + [pa.field(name, pa.float64()) for name in metric_names])
        return arrays.table({field.name: self.values.get(field.name, []) for field in schema}, schema)


def _absent(name: str) -> float | None:
    """A metric column's value for an example it gave none: empty, its ``errors`` flag 0 (it did not fail)."""
    return 0.0 if name.endswith(f".{ERRORS}") else None


def _columns(scored: Sequence[Prediction], metric_columns: ColumnsFn) -> dict[str, list[Any]]:
    """The score table's columns of predictions already scored, as lists (``metric_columns``: the per-example
    metrics' of their examples)."""
    columns: dict[str, list[Any]] = {name: [getattr(p, name) for p in scored] for name in RAW_COLUMNS}
    scores = [p.scored() for p in scored]
    for name, char_name in zip(WORD_COUNTS, CHAR_COUNTS):
        columns[name] = [getattr(s.words, name) for s in scores]
        columns[char_name] = [getattr(s.chars, name) if s.chars is not None else None for s in scores]
    columns["timed"] = [p.segments is not None or p.words is not None for p in scored]
    columns["hypothesis_norm"] = [s.hypothesis_norm for s in scores]
    measures = [stored_measures(p) for p in scored]
    columns |= {name: [m[i] for m in measures] for i, (name, _) in enumerate(HALLUCINATION)}
    examples = [ScoredExample.from_prediction(p) for p in scored]
    return columns | (metric_columns(examples) if scored else {})


def metrics_key() -> str:
    """The per-example metrics a table is built with, each with the version of its code (its metadata
    ``metrics``: ``{"name": "version", …}`` as JSON, :attr:`~whisperbench.scoring.metrics.Metric.code_version`): a
    table built with another set, or by a metric whose code changed since, is stale."""
    return json.dumps({metric.name: metric.code_version for metric in per_example_metrics()}, sort_keys=True)


def recorded_metrics(table: pa.Table) -> dict[str, str]:
    """The per-example metrics whose columns ``table`` holds, each with the version of the code that computed them
    (its metadata ``metrics``, as :func:`metrics_key` wrote it; ``{}`` where it has none or it is unreadable)."""
    try:
        recorded = json.loads((table.schema.metadata or {}).get(b"metrics", b"{}"))
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}


def kept_metrics(table: pa.Table, recorded: dict[str, str]) -> pa.Table:
    """``table`` (whose metric columns were computed by the code versions ``recorded``) without the columns of
    every metric whose code changed since, or that is no longer installed; its metadata ``metrics`` then names
    only the metrics kept (:func:`lacking_metrics` tells which to compute again). No column is copied."""
    current = {metric.name: metric.code_version for metric in per_example_metrics()}
    kept = {name: version for name, version in recorded.items() if current.get(name) == version}
    dropped = [name for name in table.column_names if "." in name and name.split(".", 1)[0] not in kept]
    metadata = dict(table.schema.metadata or {}) | {b"metrics": json.dumps(kept, sort_keys=True).encode()}
    return table.drop_columns(dropped).replace_schema_metadata(metadata)


def lacking_metrics(table: pa.Table) -> tuple[Metric, ...]:
    """The registered per-example metrics whose columns ``table`` does not hold as their current code computes
    them (installed since it was built, or their code changed: :func:`kept_metrics`)."""
    recorded = recorded_metrics(table)
    return tuple(metric for metric in per_example_metrics() if metric.name not in recorded)


def with_metrics(
    table: pa.Table, predictions: Sequence[Prediction], normalizer: str, metrics: Sequence[Metric]
) -> pa.Table | None:
    """``table`` with the columns of ``metrics`` computed and added (the others kept as they are), in the order a
    table built whole has them, its metadata ``metrics`` made current; ``predictions``: the stored ones the table
    was built from (their extra fields, which the table does not hold). The examples are made from the table's
    counts and normalized output and the transcripts normalized again; nothing is aligned again. None when the
    predictions are not the table's rows (then rebuild it whole)."""
    preds = unique_by_id(predictions)
    if [p.id for p in preds] != table["id"].to_pylist():
        return None
    examples = [
        ScoredExample.from_prediction(pred.with_score(score)) for pred, score in zip(preds, _scores(table, normalizer))
    ]
    added = {f"{m.name}.{name}": values for m in metrics for name, values in m.columns_of(examples).items()}
    for name, values in added.items():
        table = table.append_column(pa.field(name, pa.float64()), arrays.array(values, pa.float64()))
    metadata = dict(table.schema.metadata or {}) | {b"metrics": metrics_key().encode()}
    return _in_order(table, table.column_names).replace_schema_metadata(metadata)


def unique_by_id(predictions: Iterable[Prediction]) -> list[Prediction]:
    """One prediction per id: the last one given, where the id first appeared (the run store's rule, and the
    table's rows: :func:`_last_per_id`)."""
    by_id: dict[str, Prediction] = {}
    for pred in predictions:
        by_id[pred.id] = pred
    return list(by_id.values())


def _scores(table: pa.Table, normalizer: str) -> Iterator[ExampleScore]:
    """Each row's score with ``normalizer`` as the table holds it (the transcript normalized again: the table keeps
    its counts and the normalized output only)."""
    for transcript, row in zip(table["transcript"].to_pylist(), _score_rows(table)):
        yield _score_of(transcript, row, normalizer)


def _score_rows(table: pa.Table) -> Iterator[tuple[Any, ...]]:
    """Per row of ``table``: its normalized output, word counts and character counts (None where it has none)."""
    words = zip(*(table[name].to_pylist() for name in WORD_COUNTS))
    chars = zip(*(table[name].to_pylist() for name in CHAR_COUNTS))
    return zip(table["hypothesis_norm"].to_pylist(), words, chars)


def _score_of(transcript: str, row: tuple[Any, ...], normalizer: str) -> ExampleScore:
    """The score of a row of :func:`_score_rows` whose raw transcript is ``transcript``."""
    hypothesis_norm, counted, char_counted = row
    char_counts = WordCounts(*char_counted) if char_counted[0] is not None else None
    return ExampleScore(
        normalizer, normalize(transcript, normalizer), hypothesis_norm, WordCounts(*counted), char_counts
    )


def metric_value(table: pa.Table, metric: Metric) -> dict[str, Any] | None:
    """``metric``'s run value from its columns in ``table`` (as ``summary.json`` holds it); None when the table has
    none of its columns (no example, or built before it was installed)."""
    prefix = f"{metric.name}."
    names = [name for name in table.column_names if name.startswith(prefix)]
    if not names or table.num_rows == 0:
        return None
    return metric.value_of({name[len(prefix) :]: _floats(table[name]) for name in names})


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    """A metric column as float64, NaN where it is null."""
    return numbers(column, np.float64)


def metric_values(table: pa.Table, metrics: Sequence[Metric] | None = None) -> dict[str, dict[str, Any]]:
    """Each per-example metric's (``metrics``, default every one) run value from ``table``: ``{metric name:
    {column: value}}``, left out where the table gives it none."""
    chosen = per_example_metrics() if metrics is None else metrics
    values = {metric.name: metric_value(table, metric) for metric in chosen}
    return {name: value for name, value in values.items() if value is not None}


def score_table_of_chunks(chunks: Iterable[list[Prediction]], normalizer: str) -> pa.Table:
    """:func:`score_table` over predictions given a chunk at a time (bounded memory), one row per id: where an
    id comes again, its last prediction (the run store's rule), in the order of first appearance."""
    tables = [score_table(chunk, normalizer) for chunk in chunks]
    table = pa.concat_tables(tables, promote_options="default") if tables else SCHEMA.empty_table()
    return _last_per_id(table)


def _last_per_id(table: pa.Table) -> pa.Table:
    """One row per id, the last one, placed where the id first appeared (``dict`` semantics)."""
    ids = table["id"].combine_chunks() if table.num_rows else arrays.array([], pa.string())
    codes = pc.dictionary_encode(ids)
    index = numbers(codes.indices)
    if len(codes.dictionary) == len(index):
        return table
    last = np.full(len(codes.dictionary), -1, dtype=np.int64)
    np.maximum.at(last, index, np.arange(len(index)))  # the last row of each id
    first = np.full(len(codes.dictionary), len(index), dtype=np.int64)
    np.minimum.at(first, index, np.arange(len(index)))
    return pc.take(table, arrays.from_numpy(last[np.argsort(first, kind="stable")])).combine_chunks()


def counts(table: pa.Table, names: tuple[str, ...] = WORD_COUNTS, mask: pa.Array | None = None) -> WordCounts:
    """Summed counts of ``table`` (of the rows in ``mask``): word counts, or ``CHAR_COUNTS``."""
    sums = [pc.sum(table[name] if mask is None else pc.filter(table[name], mask)).as_py() or 0 for name in names]
    return WordCounts(*sums)


def table_wer(table: pa.Table) -> float | None:
    """Corpus WER in percent (failed examples as empty hypotheses): ``summarize(...)["wer"]``, to the digit."""
    return corpus_wer(counts(table))


def column(table: pa.Table, name: str) -> np.ndarray:
    """A numeric column as a numpy array."""
    return numbers(table[name])


def word_errors(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Per example: word errors (S+D+I) and transcript words (H+S+D), as the bootstrap takes them."""
    hits, subs, dels, ins = (column(table, name) for name in WORD_COUNTS)
    return subs + dels + ins, hits + subs + dels


def matched_rows(reference: pa.Table, candidate: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The row numbers of the examples both tables hold, each table's in the order of the ids: row ``i`` of the one
    is the same example as row ``i`` of the other (QoI's pairs and every paired figure's)."""
    return (
        sorted_rows(reference, pc.is_in(reference["id"], candidate["id"])),
        sorted_rows(candidate, pc.is_in(candidate["id"], reference["id"])),
    )


def sorted_rows(table: pa.Table, keep: pa.ChunkedArray) -> np.ndarray:
    """The row numbers of ``table`` where ``keep``, ordered by id."""
    rows = np.flatnonzero(numbers(keep))
    order = numbers(pc.sort_indices(pc.take(table["id"], arrays.from_numpy(rows))))
    return np.asarray(rows[order])


def paired_columns(reference: pa.Table, candidate: pa.Table, errors: str, units: str) -> tuple[np.ndarray, ...]:
    """Per example in both tables with values on both sides (joined by id): the reference's ``errors``, the
    candidate's ``errors`` and the reference's ``units`` (counted on the transcript): what a paired bootstrap of a
    pooled rate takes."""
    ref_rows, cand_rows = matched_rows(reference, candidate)
    ref_errors, ref_units = (numbers(reference[name], np.float64)[ref_rows] for name in (errors, units))
    cand_errors = numbers(candidate[errors], np.float64)[cand_rows]
    kept = ~(np.isnan(ref_errors) | np.isnan(ref_units) | np.isnan(cand_errors))  # values on both sides
    return ref_errors[kept], cand_errors[kept], ref_units[kept]


def rows_differ(table: pa.Table, sample: Sequence[Prediction], normalizer: str) -> str | None:
    """Why ``table`` is not what scoring ``sample`` (raw predictions read back from predictions.jsonl) with
    ``normalizer`` gives for their rows — an example missing from it, or a column of its row that differs (the
    first found, in one line) — else None. The gate's check that a score table is the predictions' (a table whose
    check was forged with it is found out on any row it changed that the sample holds)."""
    if not sample:
        return None
    fresh = _table(rescored_all(list({p.id: p for p in sample}.values()), normalizer))
    wanted = set(fresh["id"].to_pylist())  # a set lookup in Python: pyarrow's is_in imports pandas (0.2 s)
    row_of = {example: row for row, example in enumerate(table["id"].to_pylist()) if example in wanted}
    rows = [row_of.get(example) for example in fresh["id"].to_pylist()]
    names = list(dict.fromkeys([*fresh.column_names, *(n for n in table.column_names if "." in n)]))
    for i, (row, example) in enumerate(zip(rows, fresh["id"].to_pylist())):
        if row is None:
            return f"example {example!r} is not in it"
        stored = table.slice(row, 1)  # a slice, not take(): pyarrow's take imports pandas (0.2 s)
        for name in names:
            want = fresh[name][i].as_py() if name in fresh.column_names else None
            have = stored[name][0].as_py() if name in stored.column_names else None
            if not _same_value(want, have, name.endswith(f".{ERRORS}")):
                return f"example {example!r}: {name} is {have!r} in the table, {want!r} scored again"
    return None


def _same_value(want: Any, have: Any, flag: bool) -> bool:
    """Whether a stored cell is the value scoring again gives (NaN equal to NaN; a metric's ``errors`` flag: an
    absent one is 0)."""
    if flag:
        want, have = want or 0.0, have or 0.0
    if isinstance(want, float) and isinstance(have, float):
        return want == have or (want != want and have != have)
    return bool(want == have)
