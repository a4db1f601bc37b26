"""The release gate: a comparison turned into a verdict and an exit code.

0 pass · 1 regression (QoI below the minimum or WER up by more than allowed) · 2 cannot judge
(one run on both sides, different datasets, too few common examples, too many failed candidate examples,
a language with nothing judged, missing runs).
"""

from __future__ import annotations

import dataclasses
import numbers
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..scoring import Interval
from ..scoring.metrics import Metric, Pairing, metric_named
from ..scoring.power import Plan, plan
from ..scoring.qoi import QoiResult
from ..scoring.significance import (
    INCONCLUSIVE,
    NON_INFERIOR,
    REGRESSION_SHOWN,
    PairedSignificance,
    SignificanceSettings,
    non_inferiority,
)
from ..scoring.speed import speed_verdict
from ..scoring.timing import parity
from ..store.runs import StoredRun, same_run_reason
from .compare import Comparison, compare_runs, paired_counts, significance_of
from .escape import one_line
from .gate_thresholds import GateThresholds
from .hallucination import describe_ids
from .keywords import describe_lost
from .pairings import Paired, declared, paired_rate, pairing_named
from .speed import SpeedComparison, compare_speed
from .streaming import latency_of, run_streaming
from .timing import run_timing

PASS, REGRESSION, CANNOT_JUDGE = 0, 1, 2
VERDICTS = {PASS: "PASS", REGRESSION: "FAIL (regression)", CANNOT_JUDGE: "CANNOT JUDGE"}
#: what an inconclusive non-inferiority check does to the exit code (``gate --inconclusive``)
NI_ORDER = (NON_INFERIOR, INCONCLUSIVE, REGRESSION_SHOWN)  # best to worst


@dataclass
class GateCheck:
    """One check of the gate: its name, whether it passed, what it found, and the exit code it gives when it fails."""

    name: str
    passed: bool
    detail: str
    blocking: int  # exit code when it fails
    #: when it fails, no other check's result is shown (one run on both sides, two datasets): the gate cannot judge
    voids: bool = False

    @property
    def state(self) -> str:
        """``ok``, ``FAIL`` (a regression shown) or ``CANNOT JUDGE``, as the gate prints it."""
        return "ok" if self.passed else ("FAIL" if self.blocking == REGRESSION else VERDICTS[self.blocking])


@dataclass
class GateResult:
    """The gate's verdict: the comparison, every check, the non-inferiority verdict, what the set can detect, and the
    verdict of each repeated run."""

    comparison: Comparison
    checks: list[GateCheck] = field(default_factory=list)
    #: with a non-inferiority margin: "non-inferior", "inconclusive (set too small)" or "regression shown"
    non_inferiority: str | None = None
    #: what this set can detect at 80 % power (the observed paired spread); None without joined examples
    plan: Plan | None = None
    #: with repeated candidate runs (``gate --repeat``): (run name, verdict) of every repeat, this one included
    repeats: list[tuple[str, str]] = field(default_factory=list)

    @property
    def code(self) -> int:
        """The exit code, the worst shown result: 2 cannot judge when a check that voids the others failed, else 1
        when any check shows a regression (whatever another cannot judge), else 2 when one cannot judge, else 0."""
        failed = [c for c in self.checks if not c.passed]
        if any(c.voids for c in failed):
            return CANNOT_JUDGE
        if any(c.blocking == REGRESSION for c in failed):
            return REGRESSION
        return max((c.blocking for c in failed), default=PASS)

    @property
    def verdict(self) -> str:
        """PASS / FAIL (regression) / CANNOT JUDGE, with the non-inferiority verdict after a dash when asked for; a
        failure decided by another criterion than the margin names that criterion."""
        code = self.code
        if not self.non_inferiority or code == CANNOT_JUDGE:
            return VERDICTS[code]
        decided_by = [c.name for c in self.checks if not c.passed and c.blocking == code]
        if code == REGRESSION and not any(name.startswith("non-inferiority") for name in decided_by):
            # the margin held, another criterion failed: name it, so the line does not read "FAIL — non-inferior"
            return f"FAIL (regression: {', '.join(decided_by)}) — the margin alone: {self.non_inferiority}"
        return f"{VERDICTS[code]} — {self.non_inferiority}"


def evaluate_gate(
    reference: StoredRun,
    candidate: StoredRun,
    thresholds: GateThresholds | None = None,
    *,
    significance: SignificanceSettings | None = None,
    groups: Mapping[str, Any] | None = None,
    **limits: Any,
) -> GateResult:
    """Run the gate's checks with ``thresholds`` (:class:`GateThresholds`; ``limits`` as keywords set or
    override its fields); the comparability checks come first and outrank the quality ones.

    With ``confidence`` (e.g. 0.95) a quality check fails only when the regression is significant:
    QoI's bootstrap CI lies wholly below ``min_qoi``, or the paired-bootstrap CI of the WER increase
    lies wholly above ``max_wer_increase``. One run on both sides (see :func:`same_run_reason`) cannot be
    judged unless ``allow_self_comparison`` (a deliberate self-check). ``max_new_loops`` / ``max_new_bursts``: how
    many examples may loop or burst in the candidate but not in the reference; ``max_nonspeech_output_rate``: the %
    of non-speech examples (empty transcript) the candidate may write on (see
    :mod:`whisperbench.scoring.hallucination`).

    The paired significance (sign test, MAPSSWE, bootstrap intervals; ``significance`` settings, blocks from
    ``groups`` with ``significance.block_by``) is always reported, and every interval comes from it.
    ``non_inferiority_margin`` (WER points) / ``non_inferiority_qoi_margin`` (QoI points, i.e. % of examples
    regressed): the non-inferiority checks (:func:`~whisperbench.scoring.significance.non_inferiority`); an
    inconclusive one fails unless ``inconclusive="pass"``. ``max_increase`` / ``max_decrease``:
    ``{"METRIC.COLUMN": N}`` for any per-example metric (docs/metrics.md): the candidate's run value of that column
    may exceed (fall below) the reference's by at most N.
    """
    t = GateThresholds.of(dataclasses.asdict(thresholds or GateThresholds()) | limits)
    settings = _settings(t, significance)
    comparison = compare_runs(
        reference,
        candidate,
        settings,
        groups,
        speed_basis=t.speed_basis,
        allow_different_machines=t.allow_different_machines,
    )
    result = GateResult(comparison)
    result.checks += _comparability_checks(comparison, t)
    result.checks += _quality_checks(comparison, t, settings, groups, result)
    result.plan = _plan(comparison.result, settings.confidence)
    return result


def _settings(t: GateThresholds, significance: SignificanceSettings | None) -> SignificanceSettings:
    """The significance settings of a gate: those given, at the thresholds' confidence when it names one."""
    settings = significance or SignificanceSettings(confidence=t.confidence or 0.95)
    if t.confidence and settings.confidence != t.confidence:
        settings = dataclasses.replace(settings, confidence=t.confidence)
    return settings


def _comparability_checks(comparison: Comparison, t: GateThresholds) -> list[GateCheck]:
    """Whether the two runs can be judged at all (each fails with exit 2): different, finished runs of one dataset,
    enough examples judged in both, few enough candidate failures."""
    reference, candidate, r = comparison.reference, comparison.candidate, comparison.result
    expected = _dataset_size(reference)
    coverage = 100.0 * r.joined / expected if expected else 0.0
    failed_pct = 100.0 * r.candidate_failed / r.joined if r.joined else 0.0
    return [
        _different_runs(reference, candidate, t.allow_self_comparison),
        GateCheck("finished runs", *_finished(reference, candidate), CANNOT_JUDGE),
        GateCheck(
            "same dataset",
            comparison.same_dataset,
            f"dataset content hashes {_short(reference.dataset_hash)} vs {_short(candidate.dataset_hash)}",
            CANNOT_JUDGE,
            voids=True,
        ),
        GateCheck(
            "common examples",
            r.joined > 0 and coverage >= t.min_coverage,
            f"{r.joined} of the dataset's {expected} examples judged in both runs ({coverage:.1f}%, need ≥ "
            f"{t.min_coverage:g}%; {len(r.reference_failed)} failed in the reference, "
            f"{len(r.only_in_reference)} missing from the candidate)",
            CANNOT_JUDGE,
        ),
        GateCheck(
            "candidate failures",
            failed_pct <= t.max_failed_pct,
            f"{r.candidate_failed} failed candidate examples ({failed_pct:.1f}%, allowed ≤ {t.max_failed_pct:g}%)",
            CANNOT_JUDGE,
        ),
    ]


def _quality_checks(
    comparison: Comparison,
    t: GateThresholds,
    settings: SignificanceSettings,
    groups: Mapping[str, Any] | None,
    result: GateResult,
) -> list[GateCheck]:
    """One check per quality threshold set (QoI, per language, WER, non-inferiority, hallucinations, timing, each
    per-example metric's limit)."""
    reference, candidate, r, sig = (
        comparison.reference,
        comparison.candidate,
        comparison.result,
        comparison.significance,
    )
    checks = _aliased(comparison, t, "min_qoi")
    if t.min_qoi_per_language is not None:
        checks += _per_language(
            r, t.min_qoi_per_language, t.confidence, _languages(reference, candidate), settings, groups
        )
    checks += _aliased(comparison, t, "max_wer_increase")
    if t.non_inferiority_margin is not None or t.non_inferiority_qoi_margin is not None:
        checks += _non_inferiority_checks(
            sig, t.non_inferiority_margin, t.non_inferiority_qoi_margin, t.inconclusive, result
        )
    checks += _aliased(comparison, t, "max_new_loops") + _aliased(comparison, t, "max_new_bursts")
    if t.max_nonspeech_output_rate is not None:
        checks.append(_nonspeech_check(comparison, t.max_nonspeech_output_rate))
    if t.max_timing_error_ms is not None:
        checks.append(_timing_check(comparison, t.max_timing_error_ms))
    checks += _aliased(comparison, t, "max_formatting_drift")
    checks += _aliased(comparison, t, "must_keep_keywords")
    for flag in ("max_slowdown", "max_memory_increase", "max_load_increase"):
        checks += _aliased(comparison, t, flag)
    if t.max_latency_p90 is not None:
        checks.append(_latency_check(comparison, t.max_latency_p90, t.confidence))
    paired = settings if t.confidence else None
    for sign, limits in ((1, t.max_increase), (-1, t.max_decrease)):
        checks += [_metric_check(comparison, key, limit, sign, paired) for key, limit in (limits or {}).items()]
    for sign, bounds in ((-1, t.min), (1, t.max)):
        checks += [_bound_check(comparison, key, bound, sign, t) for key, bound in (bounds or {}).items()]
    return checks


def _aliased(comparison: Comparison, t: GateThresholds, flag: str) -> list[GateCheck]:
    """The check of a named flag that is an alias of a declared pairing's limit (``--min-qoi N`` is ``--min
    wer.qoi=N``: the pairing's ``flag``), judged as that limit is; none when the flag is not set."""
    bound = getattr(t, flag)
    if bound is None or bound is False:
        return []
    bound = 0.0 if bound is True else bound  # a switch (--must-keep-keywords) is the bound 0 (--max keywords.lost=0)
    metric, pairing = next((m, p) for m, p in declared() if p.flag == flag)
    return [_pairing_check(comparison, metric, pairing, bound, 1 if pairing.limit == "max" else -1, t)]


def _pairing_check(
    comparison: Comparison, metric: Metric, pairing: Pairing, bound: float, sign: int, t: GateThresholds
) -> GateCheck:
    """``--min`` (``sign`` -1) or ``--max`` (1) ``METRIC.NAME=N`` on a declared pairing's figure: a built-in
    pairing's own check in its natural direction (:data:`PAIRING_CHECKS`, the wording its named flag always had),
    else :func:`_paired_check`."""
    key = f"{metric.name}.{pairing.name}"
    judge = PAIRING_CHECKS.get(key) if sign == (1 if pairing.limit == "max" else -1) else None
    if judge is not None:
        return judge(comparison, bound, t)
    return _paired_check(comparison.paired.get(key), key, bound, sign, t.confidence)


def _paired_check(figure: Paired | None, key: str, bound: float, sign: int, confidence: float | None) -> GateCheck:
    """A paired figure against its bound; with ``confidence`` and an interval, fail only when the whole interval
    lies past the bound. A comparison without the figure cannot be judged."""
    word = "max" if sign > 0 else "min"
    if figure is None or figure.value is None:
        detail = f"{key}: no paired figure for these runs (is the metric installed, and do both runs give it?)"
        return GateCheck(f"{key} {word}", False, detail, CANNOT_JUDGE)
    judged, text = figure.value, f"{key} {figure.value:g}"
    if confidence and figure.interval is not None:
        low, high = figure.interval
        judged = low if sign > 0 else high
        text += f" ({figure.confidence:.0%} CI [{low:.2f}, {high:.2f}])"
    ok = sign * (judged - bound) <= 0
    return GateCheck(f"{key} {word}", ok, f"{text} ({'≤' if sign > 0 else '≥'} {bound:g} needed)", REGRESSION)


def _resource_check(comparison: Comparison, name: str, key: str, limit: float) -> GateCheck:
    """``--max-memory-increase`` / ``--max-load-increase`` (``--max speed.memory`` / ``speed.load``): the
    resource pairing's figure (``name``: peak memory, load time) against ``limit`` %; "cannot judge" where the runs
    give no figure to judge."""
    speed, figure = comparison.speed, comparison.paired.get(key)
    if speed.refused:  # two machines' memory and load time say more about the machines
        return GateCheck(name, False, f"cannot judge: {speed.refused}", CANNOT_JUDGE)
    if figure is None or figure.value is None:
        why = (
            f"no {name} recorded in both runs: cannot judge (a run made here records it; a hypotheses file's "
            "header row gives its device's load_s and peak_rss_mb, compared only with another device's)"
        )
        return GateCheck(name, False, why, CANNOT_JUDGE)
    detail = f"candidate {figure.value:+.1f}% against the reference (allowed ≤ {limit:+g}%)"
    return GateCheck(name, figure.value <= limit, detail, REGRESSION)


def _slowdown_check(speed: SpeedComparison, limit: float, inconclusive: str) -> GateCheck:
    stats = speed.stats
    interval = stats.slowdown_interval if stats else None
    if speed.refused or speed.coverage:
        return GateCheck("speed", False, f"cannot judge: {speed.refused or speed.coverage}", CANNOT_JUDGE)
    if stats is None or stats.slowdown_pct is None or interval is None:
        return GateCheck("speed", False, "cannot judge: no example timed in both runs", CANNOT_JUDGE)
    if stats.basis == "wall" and speed.busy:
        busy = "; ".join(f"{role}: {why}" for role, why in speed.busy.items())
        why = (
            f"timed on a busy machine ({busy}): wall times cannot be judged; --speed-basis cpu can (best on runs "
            "with -o threads=1: a thread pool's threads spin while one of them is preempted)"
        )
        return GateCheck("speed", False, f"cannot judge: {why}", CANNOT_JUDGE)
    verdict = speed_verdict(interval, limit)
    detail = (
        f"{verdict}: slowdown {stats.slowdown_pct:+.1f}% ({stats.basis} time, geometric mean over {stats.examples} "
        f"examples), {100 * stats.confidence:g}% interval [{interval[0]:+.1f}%, {interval[1]:+.1f}%] against "
        f"the limit {limit:+g}% ({stats.resampled} resampled; slower on {stats.slower}, faster on {stats.faster})"
    )
    if verdict == INCONCLUSIVE:
        detail += f"; inconclusive {'fails' if inconclusive == 'fail' else 'passes'} (--inconclusive {inconclusive})"
    passed = verdict == NON_INFERIOR or (verdict == INCONCLUSIVE and inconclusive == "pass")
    return GateCheck("speed", passed, detail, REGRESSION)


def _plan(r: QoiResult, confidence: float) -> Plan | None:
    """What the joined examples can detect at 80 % power, from their observed paired spread."""
    _, ref, cand, words = paired_counts(r)
    if len(words) < 2 or words.sum() == 0:
        return None
    return plan(ref, words, candidate_errors=cand, alpha=1.0 - confidence)


def evaluate_repeats(
    reference: StoredRun,
    candidates: list[StoredRun],
    thresholds: GateThresholds | None = None,
    *,
    significance: SignificanceSettings | None = None,
    groups: Mapping[str, Any] | None = None,
    **limits: Any,
) -> GateResult:
    """The gate on each repeated run of the candidate (same settings, arguments as :func:`evaluate_gate`): the
    verdict must hold in every repeat, so the result is the worst repeat's (its ``repeats`` lists them all). The
    speed limit is judged once, on every repeat pooled (:func:`~whisperbench.scoring.speed.pooled_speed`: a
    two-stage interval that a shift of one whole run widens), not repeat by repeat."""
    t = GateThresholds.of(dataclasses.asdict(thresholds or GateThresholds()) | limits)
    limit = _slowdown_limit(t)
    pooled = len(candidates) > 1 and limit is not None
    unpooled = {k: v for k, v in (t.max or {}).items() if k != SLOWDOWN} or None
    each = dataclasses.replace(t, max_slowdown=None, max=unpooled) if pooled else t
    results = [evaluate_gate(reference, c, each, significance=significance, groups=groups) for c in candidates]
    worst = max(results, key=lambda r: (r.code, NI_ORDER.index(r.non_inferiority) if r.non_inferiority else 0))
    worst.repeats = [(r.comparison.candidate.name, r.verdict) for r in results]
    if pooled:
        speed = compare_speed(
            reference,
            candidates[0],
            basis=t.speed_basis,
            settings=_settings(t, significance),
            groups=dict(groups) if groups is not None else None,
            allow_different_machines=t.allow_different_machines,
            repeats=candidates[1:],
        )
        worst.checks.append(_slowdown_check(speed, limit or 0.0, t.inconclusive))
    return worst


#: the speed pairing's key: ``--max speed.slowdown=N``, of which ``--max-slowdown N`` is the alias
SLOWDOWN = "speed.slowdown"


def _slowdown_limit(t: GateThresholds) -> float | None:
    """The slowdown limit however given (``--max-slowdown`` or its pairing's ``--max speed.slowdown``; the named
    flag first): with repeats it is judged once, on every repeat pooled."""
    return t.max_slowdown if t.max_slowdown is not None else (t.max or {}).get(SLOWDOWN)


def _qoi_interval(sig: PairedSignificance | None) -> Interval | None:
    """QoI's interval (100 − the interval of the regressed share)."""
    drop = sig.qoi_drop if sig else None
    return Interval(100.0 - drop.high, 100.0 - drop.low, drop.confidence) if drop else None


def _qoi_check(r: QoiResult, min_qoi: float, confidence: float | None, sig: PairedSignificance | None) -> GateCheck:
    qoi_text = "n/a" if r.qoi is None else f"{r.qoi:.2f}%"
    qoi_ok = r.qoi is not None and r.qoi >= min_qoi
    if confidence and r.qoi is not None:
        ci = _qoi_interval(sig)
        qoi_ok = ci is not None and ci.high >= min_qoi
        qoi_text += f" ({confidence:.0%} CI {ci})"
    return GateCheck(
        "QoI",
        qoi_ok,
        f"QoI {qoi_text} (need ≥ {min_qoi:g}%): {r.improved} improved, {r.unchanged} "
        f"unchanged, {r.regressed} regressed",
        REGRESSION,
    )


def _wer_check(comparison: Comparison, max_wer_increase: float, confidence: float | None) -> GateCheck:
    ref_wer, cand_wer = comparison.reference_wer, comparison.candidate_wer
    if ref_wer is None or cand_wer is None:  # no transcript words (a non-speech set): nothing to judge, not a fail
        return GateCheck(
            "WER increase",
            False,
            f"WER {_pct(ref_wer)} → {_pct(cand_wer)}: no transcript words to count errors against, so the WER "
            "increase cannot be judged (gate non-speech sets with --max-nonspeech-output-rate)",
            CANNOT_JUDGE,
        )
    ok = ref_wer is not None and cand_wer is not None and cand_wer - ref_wer <= max_wer_increase
    delta = "n/a" if ref_wer is None or cand_wer is None else f"{cand_wer - ref_wer:+.2f}"
    paired = comparison.significance.wer_difference if comparison.significance and confidence else None
    if paired is not None:  # judged on the joined examples: its own estimate beside its interval
        ok = paired.low <= max_wer_increase
        delta += (
            f"; over the {comparison.result.joined} joined examples {paired.estimate:+.2f}, paired "
            f"{confidence:.0%} CI [{paired.low:.2f}, {paired.high:.2f}], p = {paired.p_value:.3f}"
            + _unjoined_note(comparison.result)
        )
    return GateCheck(
        "WER increase",
        ok,
        f"WER {_pct(ref_wer)} → {_pct(cand_wer)} ({delta} points, allowed ≤ {max_wer_increase:g})",
        REGRESSION,
    )


def _unjoined_note(r: QoiResult) -> str:
    """Why the headline WERs may differ from the joined examples' (the paired interval's set), when they may."""
    left = [
        f"{len(ids)} {what}"
        for ids, what in (
            (r.reference_failed, "the reference failed on"),
            (r.only_in_reference, "only in the reference"),
            (r.only_in_candidate, "only in the candidate"),
        )
        if ids
    ]
    return f" (the headline WERs also count {', '.join(left)})" if left else ""


def _non_inferiority_checks(
    sig: PairedSignificance | None,
    wer_margin: float | None,
    qoi_margin: float | None,
    inconclusive: str,
    result: GateResult,
) -> list[GateCheck]:
    """One check per margin: the interval of the worsening against it. Regression shown fails; inconclusive
    fails or passes by ``inconclusive``; the worst of the verdicts is the gate's non-inferiority verdict."""
    checks, verdicts = [], []
    wer, drop = (sig.wer_difference, sig.qoi_drop) if sig else (None, None)
    for name, margin, interval, unit in (
        ("non-inferiority (WER)", wer_margin, wer, "WER points"),
        ("non-inferiority (QoI)", qoi_margin, drop, "QoI points"),
    ):
        if margin is None:
            continue
        if not interval:
            checks.append(
                GateCheck(
                    name,
                    False,
                    "no joined example with transcript words: non-inferiority cannot be judged",
                    CANNOT_JUDGE,
                )
            )
            continue
        verdict = non_inferiority(interval, margin)
        verdicts.append(verdict)
        what = "WER increase" if unit == "WER points" else "QoI drop (% of examples regressed)"
        detail = (
            f"{verdict}: {what} {interval.estimate:+.2f}, {interval.confidence:.0%} CI "
            f"[{interval.low:+.2f}, {interval.high:+.2f}] against the margin {margin:g} {unit} "
            f"({interval.resampling.describe()})"
        )
        if verdict == INCONCLUSIVE:
            outcome = "fails" if inconclusive == "fail" else "passes"
            detail += f"; inconclusive {outcome} (--inconclusive {inconclusive})"
        passed = verdict == NON_INFERIOR or (verdict == INCONCLUSIVE and inconclusive == "pass")
        checks.append(GateCheck(name, passed, detail, REGRESSION))
    if verdicts:
        result.non_inferiority = max(verdicts, key=NI_ORDER.index)
    return checks


def _new_check(comparison: Comparison, kind: str, limit: float) -> GateCheck:
    """``--max-new-loops`` / ``--max-new-bursts`` (``--max hallucination.new_loops`` / ``new_bursts``): how many
    examples have ``kind`` (loops, bursts) in the candidate but not in the reference, naming them."""
    ids = comparison.hallucination.new[kind]
    detail = f"{len(ids)} example(s) with {kind} the reference does not have (allowed ≤ {limit:g}): {describe_ids(ids)}"
    return GateCheck(f"new {kind}", len(ids) <= limit, detail, REGRESSION)


def _nonspeech_check(comparison: Comparison, max_rate: float) -> GateCheck:
    """``--max-nonspeech-output-rate``: the % of non-speech examples (empty transcript) the candidate writes on,
    naming them; without non-speech examples it cannot be judged."""
    diff = comparison.hallucination
    rate, ids = diff.nonspeech_output_rate, diff.nonspeech_with_output
    if rate is None:
        why = "no example has an empty transcript (non-speech audio): the output rate on non-speech cannot be judged"
        return GateCheck("output on non-speech", False, why, CANNOT_JUDGE)
    return GateCheck(
        "output on non-speech",
        rate <= max_rate,
        f"output on {len(ids)} of {diff.nonspeech} non-speech examples ({rate:.1f}%, "
        f"allowed ≤ {max_rate:g}%): {describe_ids(ids)}",
        REGRESSION,
    )


def _keywords_kept_check(comparison: Comparison, limit: float) -> GateCheck:
    """``--must-keep-keywords`` (``--max keywords.lost=0``; another N allows that many): no term the reference
    wrote right in an example may the candidate miss there (:attr:`Comparison.keywords_lost`); a reference without
    keywords cannot be judged."""
    lost, figure = comparison.keywords_lost, comparison.paired.get("keywords.lost")
    if lost is None or figure is None or figure.value is None:
        return GateCheck("keywords kept", False, "the reference run has no keywords: cannot judge", CANNOT_JUDGE)
    detail = f"newly missed: {describe_lost(lost)}" if lost else "every term the reference wrote right is kept"
    allowed = f" (allowed ≤ {limit:g})" if limit else ""
    return GateCheck("keywords kept", figure.value <= limit, detail + allowed, REGRESSION)


def _formatting_drift_check(comparison: Comparison, limit: float) -> GateCheck:
    """The share of joined examples whose output differs from the reference run's in formatting only (normalized
    words equal) must not exceed ``limit`` %; without joined examples it cannot be judged."""
    parity = comparison.formatting_parity
    if parity is None:
        return GateCheck(
            "formatting drift",
            False,
            "no example transcribed by both runs: formatting parity cannot be judged",
            CANNOT_JUDGE,
        )
    per = "n/a" if parity["per"] is None else f"{parity['per']:.1f}%"
    return GateCheck(
        "formatting drift",
        parity["drift_pct"] <= limit,
        f"formatting differs from the reference run on {parity['drift_examples']} of {parity['examples']} "
        f"examples whose normalized words agree ({parity['drift_pct']:.1f}%, allowed ≤ {limit:g}%; "
        f"{parity['number_drift_examples']} in numbers only; PER against the reference run {per})",
        REGRESSION,
    )


def _metric_check(
    comparison: Comparison, key: str, limit: float, sign: int, settings: SignificanceSettings | None = None
) -> GateCheck:
    """A per-example metric's column (``METRIC.COLUMN``): the candidate's run value may move past the reference's
    by at most ``limit`` (``sign`` 1: up, -1: down); a side without the value cannot be judged. With ``settings``
    (``--confidence``) a pooled rate (the metric's ``ratios``) fails only when the paired-bootstrap interval of the
    move lies wholly past the limit."""
    metric, _, column = key.partition(".")
    word = "increase" if sign > 0 else "decrease"
    sides = comparison.metrics.get(metric, {})
    ref, cand = (_number((sides.get(side) or {}).get(column)) for side in ("reference", "candidate"))
    if ref is None or cand is None:
        missing = " and ".join(
            side for side, value in (("the reference", ref), ("the candidate", cand)) if value is None
        )
        return GateCheck(
            f"{key} {word}",
            False,
            f"{key}: no value for {missing} (is the metric {metric!r} installed, "
            f"and does it give {column!r} on these examples?)",
            CANNOT_JUDGE,
        )
    moved = sign * (cand - ref)
    ok, detail = moved <= limit, f"{key} {ref:g} → {cand:g} ({word} {moved:+g}, allowed ≤ {limit:g})"
    paired = (
        paired_rate(
            comparison.tables, metric_named(metric), column, settings.confidence, settings.resamples, settings.seed
        )
        if settings
        else None
    )
    if paired is not None:  # judged on the examples both runs have, with its interval
        low, high = sorted((sign * paired.interval.low, sign * paired.interval.high))
        ok = low <= limit
        detail += (
            f"; over the examples both have {sign * paired.delta:+.2f}, paired {paired.interval.confidence:.0%} CI "
            f"[{low:.2f}, {high:.2f}], p = {paired.p_value:.3f}"
        )
    return GateCheck(f"{key} {word}", ok, detail, REGRESSION)


def _bound_check(comparison: Comparison, key: str, bound: float, sign: int, t: GateThresholds) -> GateCheck:
    """``--min`` (``sign`` -1) or ``--max`` (1) on the candidate's run value of a metric's ``METRIC.COLUMN`` (per
    example or run level: ``Comparison.metrics``), or on a declared pairing's figure when ``COLUMN`` names one
    (:func:`_pairing_check`); a candidate without a number there cannot be judged."""
    paired = pairing_named(key)
    if paired is not None:
        return _pairing_check(comparison, *paired, bound, sign, t)
    metric, _, column = key.partition(".")
    word = "max" if sign > 0 else "min"
    value = _number((comparison.metrics.get(metric, {}).get("candidate") or {}).get(column))
    if value is None:
        detail = f"{key}: no value for the candidate (is the metric {metric!r} installed, and is {column!r} a number?)"
        return GateCheck(f"{key} {word}", False, detail, CANNOT_JUDGE)
    ok = sign * (value - bound) <= 0
    return GateCheck(f"{key} {word}", ok, f"{key} {value:g} ({'≤' if sign > 0 else '≥'} {bound:g} needed)", REGRESSION)


def _number(value: Any) -> float | None:
    """A metric's stored value as a number to judge; None for a missing or non-numeric one (a list, a mapping)."""
    return float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None


def _different_runs(reference: StoredRun, candidate: StoredRun, allowed: bool) -> GateCheck:
    """One run on both sides proves nothing (a typo, an unset variable in CI): cannot judge, unless allowed."""
    reason = same_run_reason(reference, candidate)
    if reason is None:
        return GateCheck("different runs", True, "the reference and the candidate are different runs", CANNOT_JUDGE)
    if allowed:
        return GateCheck(
            "different runs", True, f"self-check allowed (--allow-self-comparison): {reason}", CANNOT_JUDGE
        )
    return GateCheck(
        "different runs",
        False,
        f"the reference and the candidate are the same run: {reason}; a run "
        "compared with itself always passes (pass --allow-self-comparison for a deliberate self-check)",
        CANNOT_JUDGE,
        voids=True,
    )


def _latency_check(comparison: Comparison, limit_s: float, confidence: float | None) -> GateCheck:
    """The candidate stream's 90th-percentile latency (committed, else end of utterance) must not exceed
    ``limit_s``; with ``confidence``, fail only when its interval's lower bound does. A batch candidate, or a
    dataset without word or utterance times, cannot be judged."""
    value = run_streaming(comparison.candidate)
    if value is None:
        why = "the candidate is not a streaming run (no emissions stored)"
        return GateCheck("latency", False, f"cannot judge: {why}", CANNOT_JUDGE)
    latency = latency_of(value)
    if latency is None:
        why = "the dataset has neither word times nor utterance segments to measure latency from"
        return GateCheck("latency", False, f"cannot judge: {why} (docs/streaming.md)", CANNOT_JUDGE)
    name, figure = latency
    p90, interval = figure["p90"], figure.get("p90_ci")
    judged = interval[0] if confidence and interval else p90
    detail = f"{name} p90 {p90:.2f} s over {figure['n']} points ({value.get('clock')} clock)"
    if interval:
        detail += f", 95% interval [{interval[0]:.2f}, {interval[1]:.2f}] s"
    reference = latency_of(run_streaming(comparison.reference))
    if reference is not None:
        detail += f"; the reference's {reference[0]} p90 {reference[1]['p90']:.2f} s"
    basis = " (judged on the interval's lower bound)" if confidence and interval else ""
    return GateCheck("latency", judged <= limit_s, f"{detail} (allowed ≤ {limit_s:g} s){basis}", REGRESSION)


def _timing_check(comparison: Comparison, limit_ms: float) -> GateCheck:
    """The candidate's median utterance-start error against ground truth (else its median word-start difference
    from the reference run) must not exceed ``limit_ms``; without either the gate cannot judge timing."""
    start = ((run_timing(comparison.candidate) or {}).get("utterance_start_error_ms") or {}).get("median")
    if start is not None:
        return GateCheck(
            "timing",
            start <= limit_ms,
            f"median utterance-start error {start:.0f} ms against the dataset's times (allowed ≤ {limit_ms:g} ms)",
            REGRESSION,
        )
    reference, candidate = comparison.reference, comparison.candidate
    shared = parity(reference.predictions, candidate.predictions, reference.normalizer)
    if shared is None:
        return GateCheck(
            "timing",
            False,
            "no ground-truth segments and no word times in both runs: timing cannot be "
            "judged (run with -o word_timestamps=true, or a dataset with segments)",
            CANNOT_JUDGE,
        )
    return GateCheck(
        "timing",
        shared["median_ms"] <= limit_ms,
        f"median word-start difference from the reference run {shared['median_ms']:.0f} ms over "
        f"{shared['words']} words both got right (allowed ≤ {limit_ms:g} ms)",
        REGRESSION,
    )


def _languages(*runs: StoredRun) -> set[str]:
    """Every language label in the runs' datasets (failed and unjoined examples included)."""
    return {p.language_label for run in runs for p in run.predictions if p.language_label}


def _per_language(
    result: QoiResult,
    floor: float,
    confidence: float | None,
    present: set[str],
    settings: SignificanceSettings,
    groups: Mapping[str, Any] | None,
) -> list[GateCheck]:
    """QoI within each labelled language against ``floor`` (with ``confidence``: each language's own bootstrap
    CI, blocked as the whole comparison is); a language of the dataset with nothing judged, or no labels at all,
    cannot be judged."""
    table = result.by_language()
    if not table and not present:
        return [
            GateCheck(
                "QoI per language",
                False,
                "no example carries a language label (a manifest's language column): QoI per language cannot be judged",
                CANNOT_JUDGE,
            )
        ]
    checks = []
    unjudged = sorted(present - set(table))
    if unjudged:
        checks.append(
            GateCheck(
                "languages judged",
                False,
                f"no example judged in {', '.join(unjudged)} (every one "
                "failed in the reference or is missing from a run): QoI per language cannot be "
                "judged there",
                CANNOT_JUDGE,
            )
        )
    low, shown = [], []
    for lang, row in table.items():
        text, ok = f"{lang} {row['qoi']:.1f}% of {row['joined']}", row["qoi"] >= floor
        if confidence:
            ci = _qoi_interval(significance_of(result.for_language(lang), settings, groups))
            ok = ci is not None and ci.high >= floor
            text += f" ({confidence:.0%} CI {ci})"
        shown.append(text)
        if not ok:
            low.append(lang)
    checks.append(
        GateCheck(
            "QoI per language",
            not low,
            f"{', '.join(shown)} (need ≥ {floor:g}% in each" + (f"; below: {', '.join(low)})" if low else ")"),
            REGRESSION,
        )
    )
    return checks


def _dataset_size(run: StoredRun) -> int:
    """How many examples the run's dataset holds (as recorded when it ran), else how many it stored."""
    return run.coverage.expected


def _finished(*runs: StoredRun) -> tuple[bool, str]:
    """Whether every run finished with a prediction for each example of its dataset, and what is missing."""
    problems = []
    for run in runs:
        cov = run.coverage
        if not cov.finished:
            problems.append(
                f"run {run.name} is unfinished (status {cov.status}): {cov.stored} of {cov.expected} "
                f"examples stored, {max(cov.expected - cov.stored, 0)} missing; run it again to finish it"
            )
    if problems:
        return False, "; ".join(problems)
    return True, ", ".join(f"{run.name}: {run.coverage}" for run in runs)


def _short(digest: str) -> str:
    return digest[:19] if digest else "?"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}%"


def format_gate(result: GateResult, worst: int = 5) -> str:
    """The gate's verdict, each check, and the ``worst`` regressed examples, as printed by ``whisperbench gate``."""
    c = result.comparison
    lines = [
        f"gate: {result.verdict}",
        f"  reference {one_line(c.reference.name)}  candidate {one_line(c.candidate.name)}",
        f"  weights: {c.weights}",
    ]
    for check in result.checks:
        lines.append(f"  [{check.state}] {check.name}: {one_line(check.detail)}")
    states = Counter(check.state for check in result.checks)
    lines.append("  checks: " + ", ".join(f"{states[s]} {s}" for s in ("ok", "FAIL", "CANNOT JUDGE") if states[s]))
    if c.significance:
        lines += [f"  {line}" for line in format_significance(c.significance)]
    if result.plan:
        lines.append(f"  {format_plan(result.plan)}")
    if result.repeats:
        lines.append(
            f"  repeats: the verdict must hold in each of {len(result.repeats)} candidate runs; shown is the "
            f"worst ({one_line(c.candidate.name)}): "
            + "; ".join(f"{one_line(name)}: {verdict}" for name, verdict in result.repeats)
        )
    regressed = c.result.worst(worst)
    if regressed:
        lines.append(f"  worst regressed examples (of {c.result.regressed}):")
        for e in regressed:
            lines.append(
                f"    {one_line(e.id)}: errors {e.reference_errors} → {e.candidate_errors}"
                + (" (candidate failed)" if e.candidate_failed else "")
            )
            lines.append(f"      reference:  {e.reference_hypothesis!r}")
            lines.append(f"      candidate:  {e.candidate_hypothesis!r}")
    return "\n".join(lines)


def format_significance(sig: PairedSignificance) -> list[str]:
    """The paired tests and intervals as lines of text (gate and compare)."""
    sign = sig.sign_test
    lines = [
        f"paired: sign test {sign.improved} improved, {sign.regressed} regressed, {sign.ties} unchanged "
        f"(exact two-sided p = {sign.p_value:.3g})"
    ]
    if sig.mapsswe:
        m = sig.mapsswe
        lines.append(
            f"paired: MAPSSWE (utterances as segments) mean error difference {m.mean_difference:+.3f} per "
            f"utterance, z = {m.z:.2f}, p = {m.p_value:.3g}"
        )
    if sig.wilcoxon:
        lines.append(
            f"paired: Wilcoxon signed-rank over the {sig.wilcoxon.changed} changed examples, "
            f"p = {sig.wilcoxon.p_value:.3g}"
        )
    if sig.wer_difference and sig.qoi_drop:
        w, d = sig.wer_difference, sig.qoi_drop
        lines.append(
            f"paired: WER difference {w.estimate:+.2f} points, {w.confidence:.0%} CI [{w.low:+.2f}, "
            f"{w.high:+.2f}] (bootstrap p = {w.p_value:.3g}); examples regressed {d.estimate:.1f}%, CI "
            f"[{d.low:.1f}, {d.high:.1f}]"
        )
    lines.append(f"paired: resampling: {sig.resampling.describe()}")
    return lines


def format_plan(p: Plan, pointer: bool = True) -> str:
    """What a gate on the set detects at its power, as plain sentences with their assumptions (``pointer``: end
    with where to ask for other sizes; ``plan`` itself prints it without)."""
    baseline = (
        "assuming no example would regress without a real change"
        if p.baseline_regressed == 0
        else f"beyond the {p.baseline_regressed:g}% of examples that regress with no real change"
    )
    regress = f"a rise of {p.detectable_qoi_drop:.2f} points or more in the share of examples that regress ({baseline})"
    if p.sd_difference > 0:
        found = (
            f"a WER increase of {p.detectable_wer_increase:.2f} points or more (the spread of per-example error "
            f"differences from {p.basis}), and {regress}"
        )
    else:  # no spread: a detectable increase of 0.00 points would read as a perfect gate
        found = (
            f"{regress}; no WER increase can be sized: the two runs make the same errors on every example, so there "
            "is no spread of per-example differences to size it from (`whisperbench plan --reference RUN` sizes it "
            "from the reference's errors alone)"
        )
    return (
        f"power: with {p.examples} examples, a gate at significance level {p.alpha:g} catches with {p.power:.0%} "
        f"probability {found}" + (" — `whisperbench plan` answers for other sizes and baselines" if pointer else "")
    )


def junit_xml(result: GateResult) -> str:
    """JUnit XML: the suite ``whisperbench-gate`` has one test case per check (which one failed), the suite
    ``whisperbench-examples`` one per joined example, a regressed example as a failure (its error counts and
    both transcripts) and an example the candidate failed on as an error — so a CI's test view lists them."""
    checks = _suite("whisperbench-gate")
    for check in result.checks:
        case = ET.SubElement(checks, "testcase", classname="whisperbench.gate", name=one_line(check.name))
        if not check.passed:
            _fail(case, "failure", check.detail, VERDICTS[check.blocking])
    examples = _suite("whisperbench-examples")
    for example in result.comparison.result.examples:
        case = ET.SubElement(examples, "testcase", classname="whisperbench.examples", name=one_line(example.id))
        if example.candidate_failed:
            _fail(case, "error", f"{example.id}: the candidate failed on this example", "candidate failed")
        elif example.regressed:
            unit = "characters" if example.metric == "cer" else "words"
            _fail(
                case,
                "failure",
                f"{example.id}: {example.reference_errors} → {example.candidate_errors} {unit} wrong",
                "regression",
                (
                    f"expected:  {example.transcript}",
                    f"reference: {example.reference_hypothesis}",
                    f"candidate: {example.candidate_hypothesis}",
                ),
            )
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
    _fail(
        ET.SubElement(checks, "testcase", classname="whisperbench.gate", name="runs readable"),
        "failure",
        reason,
        VERDICTS[CANNOT_JUDGE],
    )
    return _document(checks)


#: the built-in pairings' own checks (``METRIC.NAME`` -> check of the comparison, the bound and the thresholds), in
#: the wording their named flags (``--min-qoi``, ``--max-wer-increase``, ``--max-formatting-drift``,
#: ``--max-slowdown``, ``--max-memory-increase``, ``--max-load-increase``, ``--max-new-loops``, ``--max-new-bursts``,
#: ``--must-keep-keywords``) always had; every other pairing is judged by :func:`_paired_check`
PAIRING_CHECKS: dict[str, Callable[[Comparison, float, GateThresholds], GateCheck]] = {
    "wer.qoi": lambda c, bound, t: _qoi_check(c.result, bound, t.confidence, c.significance),
    "wer.increase": lambda c, bound, t: _wer_check(c, bound, t.confidence),
    "formatting.drift": lambda c, bound, t: _formatting_drift_check(c, bound),
    "speed.slowdown": lambda c, bound, t: _slowdown_check(c.speed, bound, t.inconclusive),
    "speed.memory": lambda c, bound, t: _resource_check(c, "peak memory", "speed.memory", bound),
    "speed.load": lambda c, bound, t: _resource_check(c, "load time", "speed.load", bound),
    "hallucination.new_loops": lambda c, bound, t: _new_check(c, "loops", bound),
    "hallucination.new_bursts": lambda c, bound, t: _new_check(c, "bursts", bound),
    "keywords.lost": lambda c, bound, t: _keywords_kept_check(c, bound),
}
