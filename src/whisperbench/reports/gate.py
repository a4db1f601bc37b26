"""The release gate: a comparison turned into a verdict and an exit code.

0 pass · 1 regression (QoI below the minimum or WER up by more than allowed) · 2 cannot judge
(different datasets, too few common examples, too many failed candidate examples, missing runs).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Optional

from ..store import StoredRun
from ..scoring import paired_wer_test, qoi_interval
from ..scoring.qoi import QoiResult
from .compare import Comparison, compare_runs
from .escape import one_line

PASS, REGRESSION, CANNOT_JUDGE = 0, 1, 2
VERDICTS = {PASS: "PASS", REGRESSION: "FAIL (regression)", CANNOT_JUDGE: "CANNOT JUDGE"}


@dataclass
class GateCheck:
    name: str
    passed: bool
    detail: str
    blocking: int  # exit code when it fails


@dataclass
class GateResult:
    comparison: Comparison
    checks: list[GateCheck] = field(default_factory=list)

    @property
    def code(self) -> int:
        failed = [c.blocking for c in self.checks if not c.passed]
        return max(failed) if failed else PASS

    @property
    def verdict(self) -> str:
        return VERDICTS[self.code]


def evaluate_gate(
    reference: StoredRun,
    candidate: StoredRun,
    *,
    min_qoi: float,
    max_wer_increase: Optional[float] = None,
    min_coverage: float = 100.0,
    max_failed_pct: float = 0.0,
    confidence: Optional[float] = None,
    min_qoi_per_language: Optional[float] = None,
) -> GateResult:
    """Run the gate's checks; the comparability checks come first and outrank the quality ones.

    With ``confidence`` (e.g. 0.95) a quality check fails only when the regression is significant:
    QoI's bootstrap CI lies wholly below ``min_qoi``, or the paired-bootstrap CI of the WER increase
    lies wholly above ``max_wer_increase``.
    """
    comparison = compare_runs(reference, candidate)
    r = comparison.result
    result = GateResult(comparison)
    expected = _dataset_size(reference)
    coverage = 100.0 * r.joined / expected if expected else 0.0
    failed_pct = 100.0 * r.candidate_failed / r.joined if r.joined else 0.0
    result.checks.append(GateCheck("finished runs", *_finished(reference, candidate), CANNOT_JUDGE))
    result.checks.append(GateCheck(
        "same dataset", comparison.same_dataset,
        f"dataset content hashes {_short(reference.dataset_hash)} vs {_short(candidate.dataset_hash)}", CANNOT_JUDGE))
    result.checks.append(GateCheck(
        "common examples", r.joined > 0 and coverage >= min_coverage,
        f"{r.joined} of the dataset's {expected} examples judged in both runs ({coverage:.1f}%, need ≥ "
        f"{min_coverage:g}%; {len(r.reference_failed)} failed in the reference, {len(r.only_in_reference)} missing "
        f"from the candidate)", CANNOT_JUDGE))
    result.checks.append(GateCheck(
        "candidate failures", failed_pct <= max_failed_pct,
        f"{r.candidate_failed} failed candidate examples ({failed_pct:.1f}%, allowed ≤ {max_failed_pct:g}%)",
        CANNOT_JUDGE))
    qoi_text = "n/a" if r.qoi is None else f"{r.qoi:.2f}%"
    qoi_ok = r.qoi is not None and r.qoi >= min_qoi
    if confidence and r.qoi is not None:
        ci = qoi_interval(r, confidence)
        qoi_ok = ci is not None and ci.high >= min_qoi
        qoi_text += f" ({confidence:.0%} CI {ci})"
    result.checks.append(GateCheck(
        "QoI", qoi_ok,
        f"QoI {qoi_text} (need ≥ {min_qoi:g}%): {r.improved} improved, {r.unchanged} unchanged, {r.regressed} regressed",
        REGRESSION))
    if min_qoi_per_language is not None:
        result.checks.append(_per_language(r, min_qoi_per_language))
    if max_wer_increase is not None:
        ref_wer, cand_wer = comparison.reference_wer, comparison.candidate_wer
        ok = ref_wer is not None and cand_wer is not None and cand_wer - ref_wer <= max_wer_increase
        delta = "n/a" if ref_wer is None or cand_wer is None else f"{cand_wer - ref_wer:+.2f}"
        paired = paired_wer_test(r, confidence) if confidence else None
        if paired is not None:
            ok = paired.interval.low <= max_wer_increase
            delta += f"; paired {confidence:.0%} CI {paired.interval}, p = {paired.p_value:.3f}"
        result.checks.append(GateCheck(
            "WER increase", ok, f"WER {_pct(ref_wer)} → {_pct(cand_wer)} ({delta} points, allowed ≤ {max_wer_increase:g})",
            REGRESSION))
    return result


def _per_language(result: QoiResult, floor: float) -> GateCheck:
    """QoI within each labelled language against ``floor``; without labels the gate cannot judge it."""
    table = result.by_language()
    if not table:
        return GateCheck("QoI per language", False, "no example carries a language label (a manifest's language "
                                                    "column): QoI per language cannot be judged", CANNOT_JUDGE)
    low = {lang: row for lang, row in table.items() if row["qoi"] < floor}
    shown = ", ".join(f"{lang} {row['qoi']:.1f}% of {row['joined']}" for lang, row in table.items())
    return GateCheck("QoI per language", not low, f"{shown} (need ≥ {floor:g}% in each"
                     + (f"; below: {', '.join(low)})" if low else ")"), REGRESSION)


def _dataset_size(run: StoredRun) -> int:
    """How many examples the run's dataset holds (as recorded when it ran), else how many it stored."""
    recorded = run.meta.dataset.num_examples
    return int(recorded) if recorded is not None else len(run.predictions)


def _finished(*runs: StoredRun) -> tuple[bool, str]:
    """Whether every run finished with a prediction for each example of its dataset, and what is missing."""
    problems = []
    for run in runs:
        status, stored, expected = run.meta.status, len(run.predictions), _dataset_size(run)
        if status != "finished" or stored < expected:
            problems.append(f"run {run.name} is unfinished (status {status}): {stored} of {expected} examples stored, "
                            f"{max(expected - stored, 0)} missing; run it again to finish it")
    if problems:
        return False, "; ".join(problems)
    return True, ", ".join(f"{run.name}: {len(run.predictions)} of {_dataset_size(run)}" for run in runs)


def _short(digest: str) -> str:
    return digest[:19] if digest else "?"


def _pct(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.2f}%"


def format_gate(result: GateResult, worst: int = 5) -> str:
    c = result.comparison
    lines = [f"gate: {result.verdict}",
             f"  reference {one_line(c.reference.name)}  candidate {one_line(c.candidate.name)}",
             f"  weights: {c.weights}"]
    for check in result.checks:
        lines.append(f"  [{'ok' if check.passed else 'FAIL'}] {check.name}: {one_line(check.detail)}")
    regressed = c.result.worst(worst)
    if regressed:
        lines.append(f"  worst regressed examples (of {c.result.regressed}):")
        for e in regressed:
            lines.append(f"    {one_line(e.id)}: errors {e.reference_errors} → {e.candidate_errors}"
                         + (" (candidate failed)" if e.candidate_failed else ""))
            lines.append(f"      reference:  {e.reference_hypothesis!r}")
            lines.append(f"      candidate:  {e.candidate_hypothesis!r}")
    return "\n".join(lines)


def junit_xml(result: GateResult) -> str:
    """JUnit XML: the suite ``whisperbench-gate`` has one test case per check (which one failed), the suite
    ``whisperbench-examples`` one per joined example, a regressed example as a failure (its error counts and
    both transcripts) and an example the candidate failed on as an error — so a CI's test view lists them."""
    checks = _suite("whisperbench-gate")
    for check in result.checks:
        case = ET.SubElement(checks, "testcase", classname="whisperbench.gate", name=check.name)
        if not check.passed:
            _fail(case, "failure", check.detail, VERDICTS[check.blocking])
    examples = _suite("whisperbench-examples")
    for example in result.comparison.result.examples:
        case = ET.SubElement(examples, "testcase", classname="whisperbench.examples", name=example.id)
        if example.candidate_failed:
            _fail(case, "error", f"{example.id}: the candidate failed on this example", "candidate failed")
        elif example.regressed:
            unit = "characters" if example.metric == "cer" else "words"
            _fail(case, "failure", f"{example.id}: {example.reference_errors} → {example.candidate_errors} "
                                   f"{unit} wrong", "regression",
                  (f"expected:  {example.reference_text}", f"reference: {example.reference_hypothesis}",
                   f"candidate: {example.candidate_hypothesis}"))
    return _document(checks, examples)


def _suite(name: str) -> ET.Element:
    return ET.Element("testsuite", name=name)


def _fail(case: ET.Element, kind: str, message: str, verdict: str, lines: tuple[str, ...] = ()) -> None:
    """A failure or error element; its text one line per item, control characters escaped (valid XML)."""
    element = ET.SubElement(case, kind, message=one_line(message), type=verdict)
    element.text = "\n".join(one_line(line) for line in lines or (message,))


def _document(*suites: ET.Element) -> str:
    root = ET.Element("testsuites", name="whisperbench")
    for suite in suites:
        cases = list(suite)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
        suite.set("errors", str(sum(c.find("error") is not None for c in cases)))
        root.append(suite)
    for total in ("tests", "failures", "errors"):
        root.set(total, str(sum(int(s.get(total, 0)) for s in suites)))
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def cannot_judge_xml(reason: str) -> str:
    """JUnit XML for a gate that could not even compare (a run missing or unreadable): one failed case."""
    checks = _suite("whisperbench-gate")
    _fail(ET.SubElement(checks, "testcase", classname="whisperbench.gate", name="runs readable"), "failure", reason,
          VERDICTS[CANNOT_JUDGE])
    return _document(checks)
