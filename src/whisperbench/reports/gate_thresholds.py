"""Every limit the release gate checks, defined once: ``GateThresholds``. The command's flags (``cli/gate.py``
builds them from the fields), the Python API's keywords (``api.gate(..., **thresholds)``) and the table in
docs/usage.md (:func:`markdown_table`; a test compares them) all come from it. Imports nothing heavy: the
command line builds its parser from it.

>>> GateThresholds(min_qoi=90).quality_criteria()
['min_qoi']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.ranges import GATE_LIMITS, check_limits
from ..errors import OptionError, WhisperbenchError

#: the thresholds that judge quality: the gate needs at least one
QUALITY = (
    "min_qoi",
    "max_wer_increase",
    "non_inferiority_margin",
    "non_inferiority_qoi_margin",
    "max_increase",
    "max_decrease",
    "min",
    "max",
    "max_formatting_drift",
    "must_keep_keywords",
    "max_slowdown",
    "max_memory_increase",
    "max_load_increase",
    "max_latency_p90",
)
INCONCLUSIVE_POLICIES = ("fail", "pass")
#: what a per-example time measures: the wall clock of the call, or the process's CPU time during it
SPEED_BASES = ("wall", "cpu")


def _limit(
    default: Any, help: str, metavar: str | None = None, kind: str = "number", choices: tuple[str, ...] = ()
) -> Any:
    """A field with what its command-line flag needs: ``kind`` is number (a finite float), count (0 or more),
    percent (the flag in %, the field a fraction), choice (one of ``choices``), flag (on/off) or metric
    (``METRIC.COLUMN=N``, repeatable)."""
    return field(default=default, metadata={"help": help, "metavar": metavar, "kind": kind, "choices": choices})


@dataclass(frozen=True)
class GateThresholds:
    """The gate's limits; None: that check is not made. The help of each field is its flag's help."""

    min_qoi: float | None = _limit(None, "minimum QoI in percent (the same as --min wer.qoi=PCT)", "PCT")
    max_wer_increase: float | None = _limit(
        None, "maximum WER increase in points (the same as --max wer.increase=POINTS)", "POINTS"
    )
    min_qoi_per_language: float | None = _limit(
        None,
        "also require this QoI within every labelled language (a release that holds English but regresses "
        "German fails)",
        "PCT",
    )
    min_coverage: float = _limit(100.0, "% of the dataset's examples judged in both runs, or cannot judge", "PCT")
    max_failed_pct: float = _limit(
        0.0, "% of candidate examples allowed to fail before the gate refuses to judge", "PCT"
    )
    confidence: float | None = _limit(
        None,
        "fail only on significant regressions at this confidence (e.g. 95): bootstrap CIs (the API takes the "
        "fraction, 0.95)",
        "PCT",
        "percent",
    )
    max_new_loops: int | None = _limit(
        None,
        "fail when more than N examples loop (a phrase repeated ≥ 3 times over ≥ 5 words, beyond the "
        "transcript) in the candidate but not in the reference (the same as --max hallucination.new_loops=N)",
        "N",
        "count",
    )
    max_new_bursts: int | None = _limit(
        None,
        "fail when more than N examples have a burst (≥ 5 consecutive inserted words) the reference does not (the "
        "same as --max hallucination.new_bursts=N)",
        "N",
        "count",
    )
    max_nonspeech_output_rate: float | None = _limit(
        None,
        "fail when the candidate writes text on more than PCT % of the non-speech examples (empty transcript; "
        "see `whisperbench perturb --nonspeech`)",
        "PCT",
    )
    max_timing_error_ms: float | None = _limit(
        None,
        "fail when the candidate's median utterance-start error (dataset times), else its median word-start "
        "difference from the reference run, exceeds MS",
        "MS",
    )
    non_inferiority_margin: float | None = _limit(
        None,
        "non-inferiority: pass only if the upper bound of the WER increase's CI (--confidence, default 95) is "
        "below POINTS; verdict non-inferior, inconclusive (set too small) or regression shown",
        "POINTS",
    )
    non_inferiority_qoi_margin: float | None = _limit(
        None, "non-inferiority on QoI: the upper bound of the QoI drop (% of examples regressed) below POINTS", "POINTS"
    )
    inconclusive: str = _limit(
        "fail",
        "exit code of an inconclusive non-inferiority or speed verdict: fail (1) or pass (0)",
        kind="choice",
        choices=INCONCLUSIVE_POLICIES,
    )
    max_increase: Mapping[str, float] | None = _limit(
        None,
        "any metric, per example or run level (docs/metrics.md; repeatable): fail when the candidate's run value "
        "of COLUMN exceeds the reference's by more than N, e.g. cer.cer=1, formatting.per=2 or hallucination.loops=0",
        "METRIC.COLUMN=N",
        "metric",
    )
    max_decrease: Mapping[str, float] | None = _limit(
        None,
        "the same for a metric where higher is better (repeatable): fail when the candidate's value falls more "
        "than N below the reference's",
        "METRIC.COLUMN=N",
        "metric",
    )
    min: Mapping[str, float] | None = _limit(
        None,
        "any metric, per example or run level (repeatable): fail when the candidate's run value of COLUMN is below "
        "N, e.g. hallucination.nonspeech_examples=1; or when a pairing the metric declares (higher is better) is "
        "below N, e.g. wer.qoi=90 (docs/metrics.md)",
        "METRIC.COLUMN=N",
        "metric",
    )
    max: Mapping[str, float] | None = _limit(
        None,
        "the same as a ceiling (repeatable): fail when the candidate's run value of COLUMN is above N, e.g. "
        "cer.cer=5 or hallucination.loops=0, or a declared pairing (lower is better), e.g. speed.slowdown=10",
        "METRIC.COLUMN=N",
        "metric",
    )
    must_keep_keywords: bool = _limit(
        False,
        "fail when the candidate misses a keyword in an example where the reference wrote it right (the terms and "
        "examples named; docs/keywords.md; the same as --max keywords.lost=0)",
        kind="flag",
    )
    max_formatting_drift: float | None = _limit(
        None,
        "fail when the candidate's formatting (punctuation, casing, numbers) differs from the reference run's "
        "on more than PCT % of the examples whose normalized words agree (docs/measuring.md; the same as --max "
        "formatting.drift=PCT)",
        "PCT",
    )
    max_slowdown: float | None = _limit(
        None,
        "speed: the geometric mean of the per-example time ratio candidate/reference may be at most PCT % slower; "
        "non-inferior when its interval's upper bound is below PCT, regression shown when its lower bound is "
        "above, else inconclusive (--inconclusive); a run timed on a busy machine cannot be judged on wall time "
        "(the same as --max speed.slowdown=PCT)",
        "PCT",
    )
    max_memory_increase: float | None = _limit(
        None,
        "fail when the candidate's peak memory exceeds the reference's by more than PCT % (the same as --max "
        "speed.memory=PCT)",
        "PCT",
    )
    max_load_increase: float | None = _limit(
        None,
        "fail when the candidate's model load time exceeds the reference's by more than PCT % (the same as --max "
        "speed.load=PCT)",
        "PCT",
    )
    max_latency_p90: float | None = _limit(
        None,
        "streaming: fail when the candidate's 90th-percentile latency exceeds S seconds — commit delay where "
        "the dataset has word times, else end-of-utterance latency (utterance segments); with --confidence, only "
        "when its interval's lower bound does (docs/streaming.md)",
        "S",
    )
    speed_basis: str = _limit(
        "wall",
        "what a per-example time is: wall time of the implementation's call, or the process's CPU time during it "
        "(what a busy CI runner disturbs least; in-process implementations only)",
        kind="choice",
        choices=SPEED_BASES,
    )
    allow_different_machines: bool = _limit(
        False,
        "judge speed even when the two runs were made on different machines (CPU model, cores; a hypotheses "
        "file's device, or an unknown one): their times then "
        "compare the machines as much as the implementations",
        kind="flag",
    )
    allow_self_comparison: bool = _limit(
        False,
        "judge even when both sides are one run (same folder, run id or predictions); without it that is "
        "refused (exit 2): a run compared with itself always passes",
        kind="flag",
    )

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> GateThresholds:
        """Thresholds from keywords (the API's), each checked: a number in its documented range
        (:mod:`whisperbench.core.ranges`), a per-metric limit of a registered metric, a known policy; an unknown
        keyword or a bad value is an OptionError naming it as its flag."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise OptionError(f"unknown gate threshold(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        from ..scoring.metrics import metric_limits

        checked = check_limits(values, GATE_LIMITS)
        for key in ("max_increase", "max_decrease", "min", "max"):
            if key in checked:
                checked[key] = metric_limits(checked[key], flag(key))
        for f in dataclasses.fields(cls):
            choices, value = f.metadata["choices"], checked.get(f.name, f.default)
            if choices and value not in choices:
                raise OptionError(f"{flag(f.name)} must be one of {', '.join(choices)}, not {value!r}")
        return cls(**checked)

    def quality_criteria(self) -> list[str]:
        """The quality thresholds set (the gate needs one)."""
        return [name for name in QUALITY if getattr(self, name) not in (None, {}) and getattr(self, name) is not False]

    def require_quality(self) -> None:
        """A WhisperbenchError naming the quality flags when none is set."""
        if not self.quality_criteria():
            raise WhisperbenchError("the gate needs a quality criterion: " + ", ".join(flag(n) for n in QUALITY))


def flag(name: str) -> str:
    """A field's command-line flag: ``min_qoi`` -> ``--min-qoi``."""
    return "--" + name.replace("_", "-")


def markdown_table() -> str:
    """The thresholds as docs/usage.md shows them: flag, default, what it does (generated, compared by a test)."""
    lines = ["| flag | default | what it checks |", "|---|---|---|"]
    for f in dataclasses.fields(GateThresholds):
        meta = f.metadata
        shown = flag(f.name) + (f" {meta['metavar']}" if meta["metavar"] else "")
        default = (
            f"{f.default:g} %"
            if isinstance(f.default, float)
            else "off"
            if f.default is None or f.default is False
            else str(f.default)
        )
        lines.append(f"| `{shown}` | {default} | {meta['help'].replace('|', '/')} |")
    return "\n".join(lines)
