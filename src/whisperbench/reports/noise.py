"""Run-to-run noise: repeated runs of one configuration compared with each other.

Decoding is not always deterministic (temperature fallback, an API, threads): the same candidate can pass on Monday
and fail on Tuesday. Given N runs of one configuration on one dataset (the first is the base), this measures, over
the examples every run judged: the share whose output is identical in every run, the share whose error count is,
the WER of each run and its spread, and the share of examples that regress from one repeat to another (QoI's
regressions with no real change: ``whisperbench plan --baseline-regressed``). A configuration whose outputs all
agree is deterministic.
"""

from __future__ import annotations

import html
import json
import statistics
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import pandas as pd

from ..store.runs import StoredRun
from .compare import compare_runs
from .escape import md_cell


@dataclass(frozen=True)
class NoiseReport:
    """Run-to-run noise of repeated runs of one configuration: identical outputs and error counts per example, each
    run's WER, its spread, and the examples that regress between repeats."""

    runs: list[str]
    examples: int  # judged (status ok) in every run
    identical_outputs: float  # % of examples whose raw output is the same in every run
    same_errors: float  # % of examples whose error count is the same in every run
    wer: list[float | None]
    wer_spread: float | None  # max − min WER, points
    wer_sd: float | None
    regressed_between_repeats: float  # mean % of examples regressed, over ordered pairs of runs
    different_ids: list[str]  # some differing examples (at most 10)
    #: the largest slowdown between two repeats in percent (geometric mean of the paired per-example wall-time
    #: ratios, the faster run as reference); None without times
    speed_spread_pct: float | None = None

    @property
    def deterministic(self) -> bool:
        """Whether every repeat wrote the same text for every example."""
        return self.identical_outputs == 100.0

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values (``noise --json``)."""
        return asdict(self) | {"deterministic": self.deterministic}


def _outputs(run: StoredRun) -> dict[str, str]:
    return {p.id: p.hypothesis.strip() for p in run.predictions if p.status == "ok"}


def run_noise(runs: list[StoredRun]) -> NoiseReport:
    """Compare repeated runs (see module doc); at least two."""
    if len(runs) < 2:
        raise ValueError("run-to-run noise needs at least two runs of one configuration")
    outputs = [_outputs(run) for run in runs]
    common = sorted(set.intersection(*(set(o) for o in outputs)))
    differing = [i for i in common if len({o[i] for o in outputs}) > 1]
    comparisons = {(a, b): compare_runs(runs[a], runs[b]) for a, b in combinations(range(len(runs)), 2)}
    errors = [{e.id: e.candidate_errors for e in comparisons[(0, b)].result.examples} for b in range(1, len(runs))]
    base = {e.id: e.reference_errors for e in comparisons[(0, 1)].result.examples}
    same = [i for i in common if i in base and all(errs.get(i) == base[i] for errs in errors)]
    regressed = []
    for result in (c.result for c in comparisons.values()):
        if result.joined:
            regressed += [100.0 * result.regressed / result.joined, 100.0 * result.improved / result.joined]
    wers = [comparisons[(0, 1)].reference_wer] + [comparisons[(0, b)].candidate_wer for b in range(1, len(runs))]
    known = [w for w in wers if w is not None]
    n = len(common)
    return NoiseReport(
        runs=[run.name for run in runs],
        examples=n,
        identical_outputs=100.0 * (n - len(differing)) / n if n else 0.0,
        same_errors=100.0 * len(same) / n if n else 0.0,
        wer=wers,
        wer_spread=max(known) - min(known) if known else None,
        wer_sd=statistics.stdev(known) if len(known) > 1 else None,
        regressed_between_repeats=statistics.fmean(regressed) if regressed else 0.0,
        different_ids=differing[:10],
        speed_spread_pct=_speed_spread(comparisons.values()),
    )


def _speed_spread(comparisons: Any) -> float | None:
    """The largest slowdown between two repeats, in percent: run-level noise no per-example interval sees (a
    machine's clock or cache state shifts every example of a run alike), so ``--max-slowdown`` must exceed it."""
    ratios = [c.speed.stats.ratio for c in comparisons if c.speed.stats and c.speed.stats.ratio]
    return 100.0 * (max(max(r, 1.0 / r) for r in ratios) - 1.0) if ratios else None


def format_noise(report: NoiseReport) -> str:
    """The noise report as printed by ``whisperbench noise``."""
    wers = ", ".join("n/a" if w is None else f"{w:.2f}%" for w in report.wer)
    lines = [
        f"run-to-run noise over {len(report.runs)} runs ({', '.join(report.runs)}), {report.examples} examples "
        f"judged in all: {'deterministic' if report.deterministic else 'NOT deterministic'}",
        f"  identical outputs: {report.identical_outputs:.1f}% of examples; same error count: "
        f"{report.same_errors:.1f}%",
        f"  WER per run: {wers}"
        + (
            ""
            if report.wer_spread is None
            else f" (spread {report.wer_spread:.2f} points"
            + (f", sd {report.wer_sd:.2f})" if report.wer_sd is not None else ")")
        ),
        f"  regressed from one repeat to another: {report.regressed_between_repeats:.1f}% of examples "
        f"(whisperbench plan --baseline-regressed {report.regressed_between_repeats:.1f})",
    ]
    if report.speed_spread_pct is not None:
        lines.append(
            f"  speed between repeats: up to {report.speed_spread_pct:.1f}% slower (geometric mean of per-example "
            f"wall-time ratios): a gate's --max-slowdown below that fails repeats of one configuration"
        )
    if report.different_ids:
        lines.append(f"  outputs differ on e.g.: {', '.join(report.different_ids)}")
    return "\n".join(lines)


def repeat_groups(runs: list[StoredRun]) -> list[list[StoredRun]]:
    """The finished runs that repeat one configuration on one dataset (same identity: adapter, model, decoding,
    normalizer, long-form; same dataset content), two or more each, in the order given."""
    groups: dict[str, list[StoredRun]] = {}
    for run in runs:
        if run.coverage.finished:
            key = json.dumps([run.meta.identity(), run.dataset_hash], sort_keys=True, default=str)
            groups.setdefault(key, []).append(run)
    return [group for group in groups.values() if len(group) > 1]


def noise_frame(runs: list[StoredRun]) -> pd.DataFrame:
    """One row per repeated configuration among ``runs``: how far its repeats agree (empty without repeats)."""
    rows = []
    for group in repeat_groups(runs):
        report = run_noise(group)
        rows.append(
            {
                "Implementation": group[0].meta.label or group[0].meta.adapter,
                "Dataset": group[0].meta.dataset.name,
                "Runs": ", ".join(report.runs),
                "Examples": report.examples,
                "Identical outputs %": report.identical_outputs,
                "WER spread": report.wer_spread,
                "Regressed between repeats %": report.regressed_between_repeats,
                "Deterministic": report.deterministic,
            }
        )
    return pd.DataFrame(rows)


NOISE_NOTE = (
    "Runs of one configuration on one dataset (the same implementation, model, decoding and normalizer): "
    "a non-deterministic one can pass a gate on one run and fail it on the next; `whisperbench plan "
    "--baseline-regressed` and `gate --repeat` take that into account (docs/statistics.md)."
)


def render_noise_markdown(frame: pd.DataFrame) -> str:
    """The run-to-run noise section (markdown), or "" when no configuration was run twice."""
    if frame.empty:
        return ""
    shown = frame.assign(
        **{
            "Implementation": frame["Implementation"].map(md_cell),
            "Dataset": frame["Dataset"].map(md_cell),
            "Runs": frame["Runs"].map(md_cell),
            "Identical outputs %": frame["Identical outputs %"].map(lambda v: f"{v:.1f}"),
            "WER spread": frame["WER spread"].map(lambda v: "–" if v is None or pd.isna(v) else f"{v:.2f}"),
            "Regressed between repeats %": frame["Regressed between repeats %"].map(lambda v: f"{v:.1f}"),
            "Deterministic": frame["Deterministic"].map(lambda v: "yes" if v else "**NO**"),
        }
    )
    return (
        "\n## Run-to-run noise\n\n" + shown.to_markdown(index=False, disable_numparse=True) + "\n\n" + NOISE_NOTE + "\n"
    )


def noise_html(frame: pd.DataFrame) -> str:
    """The run-to-run noise section (HTML), or "" when no configuration was run twice."""
    if frame.empty:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    return (
        f'<h2>Run-to-run noise</h2><table class="sortable noise"><thead><tr>{head}</tr></thead>'
        f'<tbody>{body}</tbody></table><p class="muted">{html.escape(NOISE_NOTE)}</p>'
    )


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return "–" if pd.isna(value) else f"{value:.2f}"
    return "–" if value is None else str(value)
