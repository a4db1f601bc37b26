"""What ``compare`` says under its table, per candidate: :func:`comparison_notes`, kept on ``Comparison.notes`` by
the API (``api.compare``, ``api.compare_all``) so that a Python caller reads what the command prints.

The notes: the weights relation, a dataset that differs, examples on one side only or failed in the reference,
transcripts that differ, new hallucinations, the paired tests (and their Holm adjustment over several candidates),
an English-only model on other languages' examples, and the settings that differ from the reference.
"""

from __future__ import annotations

from .compare import Comparison
from .escape import one_line
from .gate import format_significance
from .hallucination import describe_ids
from .keywords import keyword_notes
from .streaming import compare_lines
from .weights import english_only_languages


def comparison_notes(c: Comparison) -> list[str]:
    """Every note on one comparison, each one line (run text passed through :func:`one_line`)."""
    r = c.result
    notes = [f"weights: {c.weights}"]
    if not c.same_dataset:
        notes.append("datasets differ (content hashes)")
    for label, ids in (
        ("only in reference", r.only_in_reference),
        ("only in candidate", r.only_in_candidate),
        ("reference failed", r.reference_failed),
        ("transcript differs", r.text_mismatch),
    ):
        if ids:
            notes.append(f"{label}: {', '.join(one_line(i) for i in ids[:10])}{' …' if len(ids) > 10 else ''}")
    notes += _hallucination_notes(c)
    notes += keyword_notes(c)
    notes += format_significance(c.significance) if c.significance else []
    if c.holm:
        notes.append(
            f"paired: Holm-adjusted over {c.holm['family']} candidates: sign test p = "
            f"{_p(c.holm['sign_test'])}, MAPSSWE p = {_p(c.holm['mapsswe'])}, bootstrap WER p = "
            f"{_p(c.holm['wer_difference'])}"
        )
    return notes + _english_only_notes(c) + _setting_notes(c) + compare_lines(c.reference, c.candidate)


def _p(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _setting_notes(c: Comparison) -> list[str]:
    from ..store.run_info import identity_differences

    said = identity_differences(
        c.reference.meta, c.candidate.meta, "the reference", ("decoding", "normalizer", "long_form")
    )
    return [f"settings that differ from the reference: {'; '.join(said)}"] if said else []


def _english_only_notes(c: Comparison) -> list[str]:
    return [
        f"{side} {run.meta.model} is English-only, yet examples are labelled {', '.join(languages)}: its WER "
        "there measures a model that cannot transcribe them"
        for side, run in (("the reference's model", c.reference), ("the candidate's model", c.candidate))
        if (languages := english_only_languages(run))
    ]


def _hallucination_notes(c: Comparison) -> list[str]:
    diff = c.hallucination  # computed once per comparison: its pairings and the gate read it too
    notes = [f"new {kind} vs the reference: {len(ids)} ({describe_ids(ids)})" for kind, ids in diff.new.items()]
    if diff.nonspeech:
        notes.append(f"output on {len(diff.nonspeech_with_output)} of {diff.nonspeech} non-speech examples")
    return notes
