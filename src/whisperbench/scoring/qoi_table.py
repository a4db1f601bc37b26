"""QoI from two runs' score tables (:mod:`whisperbench.scoring.table`), computed over columns: the one
implementation (``scoring.qoi`` holds its records; predictions held in memory are scored into tables first,
:func:`qoi_predictions`, which ``whisperbench.scoring.qoi`` reads).

Examples are joined by id (both tables' joined rows sorted by id, as the per-object path does). An example
whose transcript differs between the runs, or whose language label differs, is compared by the
per-object path (:func:`whisperbench.scoring.qoi._compare_one`) on predictions rebuilt from its rows; every
other one from the stored counts, vectorized. The per-example records are built only when asked for
(:class:`ExampleColumns`): ``worst`` and ``by_language`` need none of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.languages import headline_metric
from ..types import Prediction
from .arrays import FALSE, OK, from_numpy, numbers, scalar, text
from .engine import map_ranges
from .formatting import parity_counts, parity_of_parts, same_words, sum_parity_parts
from .qoi import ExampleComparison, QoiResult, _compare_one, qoi_by
from .table import CHAR_COUNTS, RAW_COLUMNS, WORD_COUNTS, column, scored_table, sorted_rows
from .wer import example_wers

CHUNK = 65_536  # examples built at a time when iterating


@dataclass(frozen=True)
class Outputs:
    """Both runs' raw and normalized outputs of the examples the candidate transcribed, left in their tables:
    ``ids`` and the rows of each table, read a range at a time."""

    ids: pa.Array
    reference: pa.Table
    candidate: pa.Table
    reference_rows: np.ndarray
    candidate_rows: np.ndarray

    @property
    def count(self) -> int:
        """Examples the candidate transcribed."""
        return len(self.ids)

    def __getitem__(self, part: slice) -> Outputs:
        """The rows of ``part`` alone (what a pool worker is sent: those rows' texts, not the whole tables)."""
        start, stop, _ = part.indices(self.count)
        ref = pc.take(self.reference, from_numpy(self.reference_rows[start:stop]))
        cand = pc.take(self.candidate, from_numpy(self.candidate_rows[start:stop]))
        rows = np.arange(stop - start)
        return Outputs(self.ids.slice(start, stop - start), ref, cand, rows, rows)

    def _columns(self, start: int, stop: int) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
        ref = pc.take(self.reference, from_numpy(self.reference_rows[start:stop]))
        cand = pc.take(self.candidate, from_numpy(self.candidate_rows[start:stop]))
        same = _same_words(ref["hypothesis_norm"], cand["hypothesis_norm"])
        return self.ids.slice(start, stop - start), ref["hypothesis"], cand["hypothesis"], same

    def pairs(self, start: int, stop: int) -> list[tuple[str, str, str, bool]]:
        """(id, reference run's output, candidate's output, normalized words agree) of rows ``start:stop``."""
        return list(zip(*(column.to_pylist() for column in self._columns(start, stop))))

    def drifted(self, start: int, stop: int) -> list[tuple[str, str, str]]:
        """(id, both outputs) of the rows ``start:stop`` whose outputs differ while their normalized words agree."""
        ids, ref, cand, same = self._columns(start, stop)
        at = from_numpy(np.flatnonzero(numbers(pc.and_(same, pc.fill_null(pc.not_equal(ref, cand), FALSE)))))
        return list(zip(pc.take(ids, at).to_pylist(), pc.take(ref, at).to_pylist(), pc.take(cand, at).to_pylist()))


def _same_words(reference: pa.ChunkedArray, candidate: pa.ChunkedArray) -> pa.Array:
    """Per row, whether the normalized outputs hold the same words (``formatting.same_words``): equal ones found on
    the columns, the rest (Chinese, Japanese, Thai: equal once spaces are removed) checked one by one."""
    equal = numbers(pc.fill_null(pc.equal(reference, candidate), FALSE)).astype(bool)
    unequal = np.flatnonzero(~equal)
    if len(unequal):
        at = from_numpy(unequal)
        pairs = zip(pc.take(reference, at).to_pylist(), pc.take(candidate, at).to_pylist())
        equal[unequal] = [same_words(r, c) for r, c in pairs]
    return from_numpy(equal)


def _parity_part(outputs: Outputs, start: int, stop: int) -> dict[str, Any]:
    """One range's formatting parity counts (a worker's part), read from the tables a chunk at a time."""
    parts = [parity_counts(outputs.pairs(i, min(i + CHUNK, stop))) for i in range(start, stop, CHUNK)]
    return sum_parity_parts(parts)


@dataclass
class ExampleColumns:
    """The joined examples of a QoI result as columns; a read-only sequence of ``ExampleComparison``.

    Texts stay in the runs' (memory-mapped) score tables: ``reference_rows``/``candidate_rows`` index them.
    """

    ids: pa.Array
    reference_errors: np.ndarray
    candidate_errors: np.ndarray
    reference_wer: np.ndarray  # NaN where undefined (None in the record)
    candidate_wer: np.ndarray
    candidate_failed: np.ndarray
    transcript_words: np.ndarray
    language: pa.Array
    reference_table: pa.Table
    candidate_table: pa.Table
    reference_rows: np.ndarray
    candidate_rows: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> ExampleComparison:
        return self._build(index, index + 1)[0] if index >= 0 else self[len(self) + index]

    def __iter__(self) -> Iterator[ExampleComparison]:
        for start in range(0, len(self), CHUNK):
            yield from self._build(start, min(start + CHUNK, len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Iterable):
            return NotImplemented
        return list(self) == list(other)

    def output_pairs(self, normalizer: str) -> Iterator[tuple[str, str, str, bool]]:
        """Per example the candidate transcribed: its id, both raw outputs and whether their words agree once
        normalized (the tables' ``hypothesis_norm``, scored with ``normalizer``), read a chunk at a time."""
        outputs = self._outputs()
        for start in range(0, outputs.count, CHUNK):
            yield from outputs.pairs(start, min(start + CHUNK, outputs.count))

    def drifted_outputs(self, normalizer: str) -> tuple[int, list[tuple[str, str, str]]]:
        """The examples the candidate transcribed (a count) and those whose raw outputs differ while their
        normalized words agree, found on the tables' columns a chunk at a time (only those texts are read)."""
        outputs = self._outputs()
        drifted = [d for start in range(0, outputs.count, CHUNK) for d in outputs.drifted(start, start + CHUNK)]
        return outputs.count, drifted

    def formatting_parity(self, normalizer: str) -> dict[str, Any] | None:
        """:func:`~whisperbench.scoring.formatting.formatting_parity` of :meth:`output_pairs`, a large set split
        among the cores by row ranges: each worker reads its outputs from the (memory-mapped) tables itself."""
        outputs = self._outputs()
        return parity_of_parts(map_ranges(_parity_part, outputs, outputs.count) if outputs.count else [])

    def _outputs(self) -> Outputs:
        keep = np.flatnonzero(~self.candidate_failed)
        return Outputs(
            pc.take(self.ids, from_numpy(keep)),
            self.reference_table.select(["hypothesis", "hypothesis_norm"]),
            self.candidate_table.select(["hypothesis", "hypothesis_norm"]),
            self.reference_rows[keep],
            self.candidate_rows[keep],
        )

    def _build(self, start: int, stop: int) -> list[ExampleComparison]:
        ref_rows, cand_rows = from_numpy(self.reference_rows[start:stop]), from_numpy(self.candidate_rows[start:stop])
        texts = [
            self.ids.slice(start, stop - start).to_pylist(),
            pc.take(self.reference_table["transcript"], ref_rows).to_pylist(),
            pc.take(self.reference_table["hypothesis"], ref_rows).to_pylist(),
            pc.take(self.candidate_table["hypothesis"], cand_rows).to_pylist(),
            self.language.slice(start, stop - start).to_pylist(),
        ]
        numbers = [
            a[start:stop].tolist()
            for a in (
                self.reference_errors,
                self.candidate_errors,
                self.reference_wer,
                self.candidate_wer,
                self.candidate_failed,
                self.transcript_words,
            )
        ]
        return [
            ExampleComparison(
                ex_id,
                ref_e,
                cand_e,
                None if ref_w != ref_w else ref_w,
                None if cand_w != cand_w else cand_w,
                failed,
                text,
                ref_h,
                cand_h,
                words,
                lang,
                headline_metric(lang),
            )
            for ex_id, text, ref_h, cand_h, lang, ref_e, cand_e, ref_w, cand_w, failed, words in zip(*texts, *numbers)
        ]

    def regressed_examples(self) -> list[ExampleComparison]:
        """The regressed examples only (built from their rows)."""
        rows = np.flatnonzero(self.candidate_errors > self.reference_errors)
        return [self[int(i)] for i in rows]

    def worst(self, n: int) -> list[ExampleComparison]:
        """The ``n`` regressed examples with the largest increase in errors (ties: by id), ordered by Arrow and
        built alone (building every regressed row first took minutes at a million examples)."""
        delta = self.candidate_errors.astype(np.int64) - self.reference_errors.astype(np.int64)
        rows = np.flatnonzero(delta > 0)
        if n <= 0 or not len(rows):
            return []
        if len(rows) > n:  # only rows at least as worse as the n-th largest increase can be among the n
            cut = np.partition(delta[rows], len(rows) - n)[len(rows) - n]
            rows = rows[delta[rows] >= cut]
        keys = pa.Table.from_arrays(
            [from_numpy(-delta[rows]), pc.take(self.ids, from_numpy(rows))], ["minus_delta", "id"]
        )
        order = pc.sort_indices(keys, [("minus_delta", "ascending"), ("id", "ascending")])
        return [self[int(rows[k])] for k in numbers(order)[:n]]

    def where_language(self, language: str) -> ExampleColumns:
        """The examples labelled ``language``."""
        mask = pc.fill_null(pc.equal(self.language, text(language)), FALSE)
        rows = np.flatnonzero(numbers(mask))
        return ExampleColumns(
            **{
                name: value
                if isinstance(value, pa.Table)
                else pc.take(value, from_numpy(rows))
                if isinstance(value, pa.Array)
                else value[rows]
                for name, value in self.__dict__.items()
            }
        )

    def paired_counts(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Ids, reference errors, candidate errors and transcript words, in order, as arrays (no records built)."""
        return (
            self.ids.to_pylist(),
            self.reference_errors.astype(float),
            self.candidate_errors.astype(float),
            self.transcript_words.astype(float),
        )

    def regressed_count(self) -> int:
        """How many examples regressed."""
        return int((self.candidate_errors > self.reference_errors).sum())

    def by_language(self) -> dict[str, dict[str, Any]]:
        """QoI per language label, as :meth:`QoiResult.by_language` computes it from the records (``qoi_by``)."""
        regressed = self.candidate_errors > self.reference_errors
        return qoi_by(self.language.to_pylist(), regressed.tolist())


#: the columns joined and compared (the texts stay where they are, read by row index when needed)
LIGHT = ("id", "status", "language_label") + WORD_COUNTS + CHAR_COUNTS


def qoi_predictions(
    reference: Iterable[Prediction], candidate: Iterable[Prediction], normalizer: str = "english"
) -> QoiResult:
    """QoI of two runs' predictions held in memory (``whisperbench.scoring.qoi``): each run's score table
    (:func:`~whisperbench.scoring.table.scored_table`) compared by :func:`qoi_tables`, the one implementation. An id
    twice in one run: ValueError naming it."""
    tables = []
    for predictions, role in ((reference, "reference"), (candidate, "candidate")):
        given = list(predictions)
        twice = next((i for i, n in Counter(p.id for p in given).items() if n > 1), None)
        if twice is not None:
            raise ValueError(f"{role} run has example id {twice!r} more than once")
        tables.append(scored_table(given, normalizer)[1])
    return qoi_tables(tables[0], tables[1], normalizer)


def qoi_tables(reference: pa.Table, candidate: pa.Table, normalizer: str) -> QoiResult:
    """QoI of ``candidate`` against ``reference``, both score tables scored with ``normalizer``."""
    in_cand = pc.is_in(reference["id"], candidate["id"])
    in_ref = pc.is_in(candidate["id"], reference["id"])
    ref_rows, cand_rows = sorted_rows(reference, in_cand), sorted_rows(candidate, in_ref)
    ref_ok = numbers(pc.equal(pc.take(reference["status"], from_numpy(ref_rows)), OK))
    reference_failed = pc.take(reference["id"], from_numpy(ref_rows[~ref_ok])).to_pylist()
    ref_rows, cand_rows = ref_rows[ref_ok], cand_rows[ref_ok]
    ref, cand = (
        pc.take(reference.select(LIGHT), from_numpy(ref_rows)),
        pc.take(candidate.select(LIGHT), from_numpy(cand_rows)),
    )
    columns = _columns(ref, cand, reference, candidate, ref_rows, cand_rows)
    result = QoiResult(
        None,
        0,
        0,
        0,
        0,
        0,
        0,
        columns,
        only_in_reference=sorted(pc.filter(reference["id"], pc.invert(in_cand)).to_pylist()),
        only_in_candidate=sorted(pc.filter(candidate["id"], pc.invert(in_ref)).to_pylist()),
        reference_failed=reference_failed,
    )
    _compare_special(ref, cand, columns, normalizer, result)
    result.joined = len(columns)
    result.candidate_failed = int(columns.candidate_failed.sum())
    result.improved = int((columns.candidate_errors < columns.reference_errors).sum())
    result.unchanged = int((columns.candidate_errors == columns.reference_errors).sum())
    result.regressed = result.joined - result.improved - result.unchanged
    result.no_regression = result.improved + result.unchanged
    result.qoi = 100.0 * result.no_regression / result.joined if result.joined else None
    return result


def _language(ref: pa.Table, cand: pa.Table) -> pa.Array:
    """``ref.language or cand.language`` per row (the reference run's label unless it has none)."""
    labelled = pc.fill_null(pc.not_equal(ref["language_label"], text("")), FALSE)
    return pc.if_else(labelled, ref["language_label"], cand["language_label"])


def _headline(table: pa.Table, is_cer: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(headline errors, headline transcript units, word-level WER with NaN where undefined) per row."""
    hits, subs, dels, ins = (column(table, name) for name in WORD_COUNTS)
    c_hits, c_subs, c_dels, c_ins = (column(table, name) for name in CHAR_COUNTS)
    words, errors = hits + subs + dels, subs + dels + ins
    wer = example_wers(errors, words)
    return (np.where(is_cer, c_subs + c_dels + c_ins, errors), np.where(is_cer, c_hits + c_subs + c_dels, words), wer)


def _columns(
    ref: pa.Table, cand: pa.Table, reference: pa.Table, candidate: pa.Table, ref_rows: np.ndarray, cand_rows: np.ndarray
) -> ExampleColumns:
    language = _language(ref, cand)
    language = language.combine_chunks() if isinstance(language, pa.ChunkedArray) else language
    codes = pc.dictionary_encode(language)
    cer_codes = np.array([headline_metric(name) == "cer" for name in codes.dictionary.to_pylist()] + [False])
    index = numbers(pc.fill_null(codes.indices, scalar(len(codes.dictionary), codes.indices.type)))
    is_cer = cer_codes[index]
    ref_errors, transcript_words, ref_wer = _headline(ref, is_cer)
    cand_errors, _, cand_wer = _headline(cand, is_cer)
    return ExampleColumns(
        ids=ref["id"].combine_chunks(),
        reference_errors=ref_errors,
        candidate_errors=cand_errors,
        reference_wer=ref_wer,
        candidate_wer=cand_wer,
        candidate_failed=numbers(pc.not_equal(cand["status"], OK)),
        transcript_words=transcript_words,
        language=language,
        reference_table=reference,
        candidate_table=candidate,
        reference_rows=ref_rows,
        candidate_rows=cand_rows,
    )


def _compare_special(
    ref: pa.Table, cand: pa.Table, columns: ExampleColumns, normalizer: str, result: QoiResult
) -> None:
    """Compare, one by one, the examples whose transcripts or language labels differ between the runs."""
    labels = pc.or_(
        _differs(ref["language_label"], columns.language), _differs(cand["language_label"], columns.language)
    )
    special = numbers(labels) | _texts_differ(columns)
    for i in np.flatnonzero(special):
        one = _compare_one(
            _prediction(columns.reference_table, int(columns.reference_rows[i])),
            _prediction(columns.candidate_table, int(columns.candidate_rows[i])),
            normalizer,
            result,
        )
        assert one is not None  # the joined rows are the reference's successes
        columns.reference_errors[i], columns.candidate_errors[i] = one.reference_errors, one.candidate_errors
        columns.transcript_words[i] = one.transcript_words
        columns.reference_wer[i] = np.nan if one.reference_wer is None else one.reference_wer
        columns.candidate_wer[i] = np.nan if one.candidate_wer is None else one.candidate_wer


def _texts_differ(columns: ExampleColumns) -> np.ndarray:
    """Per joined example: whether the two runs hold different transcripts (compared a block at a time)."""
    out = np.zeros(len(columns), dtype=bool)
    for start in range(0, len(columns), CHUNK * 4):
        ref_rows = from_numpy(columns.reference_rows[start : start + CHUNK * 4])
        cand_rows = from_numpy(columns.candidate_rows[start : start + CHUNK * 4])
        same = pc.equal(
            pc.take(columns.reference_table["transcript"], ref_rows),
            pc.take(columns.candidate_table["transcript"], cand_rows),
        )
        out[start : start + len(ref_rows)] = ~numbers(same)
    return out


def _differs(labels: pa.ChunkedArray, language: pa.Array) -> pa.Array:
    """Null-aware inequality of two label columns (None equals None only)."""
    same = pc.or_(pc.fill_null(pc.equal(labels, language), FALSE), pc.and_(pc.is_null(labels), pc.is_null(language)))
    return pc.invert(same)


def _prediction(table: pa.Table, row: int) -> Prediction:
    return Prediction(**{name: table[name][row].as_py() for name in RAW_COLUMNS})  # raw output: scored afresh
