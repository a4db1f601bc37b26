"""Quality of Inference: share of examples where a candidate does no worse than the reference.

For each example id present in both runs: ``no_regression = wer(candidate) <= wer(reference)``, both
measured against the same human transcript with the same normalizer. Examples are joined by id,
never by position. Since both WERs share one denominator, errors are compared directly, which also
decides examples whose normalized transcript is empty (WER undefined there). For languages written
without spaces (Chinese, Japanese, Korean, Thai, Lao, Burmese, Cantonese) characters are compared
instead of words (see :mod:`whisperbench.core.languages`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..core.languages import headline_metric
from ..types import Prediction
from .engine import headline_counts, rescored, score_prediction

if TYPE_CHECKING:
    import numpy as np


@dataclass
class ExampleComparison:
    """One example judged in both runs: the error counts and WERs of each, whether the candidate failed, the
    transcript, both outputs, the units counted (words or characters) and the language."""

    id: str
    reference_errors: int
    candidate_errors: int
    reference_wer: float | None
    candidate_wer: float | None
    candidate_failed: bool
    transcript: str
    reference_hypothesis: str
    candidate_hypothesis: str
    transcript_words: int = 0  # words, or characters where ``metric`` is "cer"
    language: str | None = None
    metric: str = "wer"

    @property
    def delta_errors(self) -> int:
        """Candidate errors minus reference errors on this example (negative: improved)."""
        return self.candidate_errors - self.reference_errors

    @property
    def regressed(self) -> bool:
        """Whether the candidate made more errors than the reference here (QoI's only question)."""
        return self.candidate_errors > self.reference_errors


class ExampleRows(Protocol):
    """The joined examples of a comparison: Arrow columns (``scoring.qoi_table.ExampleColumns``, each
    :class:`ExampleComparison` built only where read)."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[ExampleComparison]: ...
    def __getitem__(self, index: int) -> ExampleComparison: ...
    def regressed_examples(self) -> list[ExampleComparison]:
        """The regressed examples only."""

    def regressed_count(self) -> int:
        """How many examples regressed."""

    def worst(self, n: int) -> list[ExampleComparison]:
        """The ``n`` regressed examples with the largest increase in errors (ties: by id)."""

    def where_language(self, language: str) -> ExampleRows:
        """The examples labelled ``language``."""

    def by_language(self) -> dict[str, dict[str, Any]]:
        """QoI per language label: joined, regressed, QoI %."""

    def paired_counts(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Ids, reference errors, candidate errors and transcript words (characters where CER is the headline),
        in order, as arrays (what the paired tests and intervals take)."""

    def output_pairs(self, normalizer: str) -> Iterator[tuple[str, str, str, bool]]:
        """Per example the candidate transcribed: its id, both raw outputs and whether their words agree once
        normalized with ``normalizer`` (what the formatting parity takes)."""

    def formatting_parity(self, normalizer: str) -> dict[str, Any] | None:
        """The formatting parity of :meth:`output_pairs` (``scoring.formatting.formatting_parity``)."""

    def drifted_outputs(self, normalizer: str) -> tuple[int, list[tuple[str, str, str]]]:
        """How many examples the candidate transcribed, and those whose raw outputs differ while their words agree
        once normalized (formatting only): id, reference run's output, candidate's output (what the formatting
        drift takes)."""


def qoi_by(labels: Sequence[str | None], regressed: Sequence[bool]) -> dict[str, dict[str, Any]]:
    """QoI per label of the joined examples (``labels`` and ``regressed``: one each per example; an example without
    a label is left out), labels sorted: joined, regressed, QoI %. The one breakdown of QoI: by language
    (:meth:`QoiResult.by_language`), by condition (the robustness table), by any label.

    >>> qoi_by(["en", "fr", "en", None], [True, False, False, True])
    {'en': {'joined': 2, 'regressed': 1, 'qoi': 50.0}, 'fr': {'joined': 1, 'regressed': 0, 'qoi': 100.0}}
    """
    table: dict[str, dict[str, Any]] = {}
    for label, bad in zip(labels, regressed, strict=True):
        if label:
            row = table.setdefault(label, {"joined": 0, "regressed": 0})
            row["joined"] += 1
            row["regressed"] += int(bad)
    for row in table.values():
        row["qoi"] = 100.0 * (row["joined"] - row["regressed"]) / row["joined"]
    return dict(sorted(table.items()))


@dataclass
class QoiResult:
    """QoI of a candidate against a reference: the share of joined examples with no regression, the counts improved /
    unchanged / regressed / failed, the ids on one side only, failed in the reference or with differing transcripts,
    and the joined examples."""

    qoi: float | None
    joined: int
    no_regression: int
    improved: int
    unchanged: int
    regressed: int
    candidate_failed: int
    #: the joined examples (``scoring.qoi_table.ExampleColumns``: columns, each record built where read)
    examples: ExampleRows
    only_in_reference: list[str] = field(default_factory=list)
    only_in_candidate: list[str] = field(default_factory=list)
    reference_failed: list[str] = field(default_factory=list)
    text_mismatch: list[str] = field(default_factory=list)

    def worst(self, n: int = 5) -> list[ExampleComparison]:
        """The ``n`` regressed examples with the largest increase in errors."""
        return self.examples.worst(n)

    def by_language(self) -> dict[str, dict[str, Any]]:
        """QoI per language label (examples without a label are left out): joined, regressed, QoI %."""
        return self.examples.by_language()

    def for_language(self, language: str) -> QoiResult:
        """This result on the examples labelled ``language`` only: its examples, joined and regressed counts and QoI
        as :meth:`by_language` gives them (the one per-language QoI: ``report``'s table and the gate's
        ``--min-qoi-per-language`` read it)."""
        examples = self.examples.where_language(language)
        row = examples.by_language().get(language, {"joined": 0, "regressed": 0, "qoi": None})
        return dataclasses.replace(
            self,
            examples=examples,
            joined=row["joined"],
            regressed=row["regressed"],
            no_regression=row["joined"] - row["regressed"],
            qoi=row["qoi"],
        )

    def to_json(self, with_examples: bool = False) -> dict[str, Any]:
        """The result as JSON (``compare --json``): counts, QoI, id lists, per language; each example when asked."""
        data = {k: v for k, v in self.__dict__.items() if k != "examples"}
        data["by_language"] = self.by_language()
        if with_examples:
            data["examples"] = [dict(e.__dict__, delta_errors=e.delta_errors) for e in self.examples]
        return data


def _labelled(pred: Prediction, language: str | None, normalizer: str) -> Prediction:
    """``pred`` scored as an example of ``language`` (its characters counted without spaces where that applies)."""
    return (
        pred
        if pred.language_label == language
        else score_prediction(dataclasses.replace(pred, language_label=language), normalizer)
    )


def _compare_one(
    ref_pred: Prediction, cand_pred: Prediction, normalizer: str, result: QoiResult
) -> ExampleComparison | None:
    """One joined example (None, and listed in ``reference_failed``, when the reference failed on it)."""
    ex_id = ref_pred.id
    if ref_pred.status != "ok":
        result.reference_failed.append(ex_id)
        return None
    if cand_pred.transcript != ref_pred.transcript:  # its stored fields were scored against another transcript
        result.text_mismatch.append(ex_id)
        cand_pred = dataclasses.replace(cand_pred, transcript=ref_pred.transcript, score=None)
    ref_scored = rescored(ref_pred, normalizer)
    cand_scored = rescored(cand_pred, normalizer)
    language = ref_pred.language_label or cand_pred.language_label  # the reference run's label decides the units
    ref_scored, cand_scored = _labelled(ref_scored, language, normalizer), _labelled(cand_scored, language, normalizer)
    ref_counts, cand_counts = headline_counts(ref_scored), headline_counts(cand_scored)
    return ExampleComparison(
        id=ex_id,
        reference_errors=ref_counts.errors,
        candidate_errors=cand_counts.errors,
        reference_wer=ref_scored.wer,
        candidate_wer=cand_scored.wer,
        candidate_failed=cand_pred.status != "ok",
        transcript=ref_pred.transcript,
        reference_hypothesis=ref_pred.hypothesis,
        candidate_hypothesis=cand_pred.hypothesis,
        transcript_words=ref_counts.transcript_words,
        language=language,
        metric=headline_metric(language),
    )
