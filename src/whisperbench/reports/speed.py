"""Speed, memory and load time of a candidate against its reference run: what ``compare`` shows as ``speed`` and
the gate judges with ``--max-slowdown``, ``--max-memory-increase`` and ``--max-load-increase``.

The per-example times come from the runs' score tables (``infer_s``: wall time of the implementation's call;
``cpu_s``: the process's CPU time during it; both as recorded by a device when a hypotheses file carries them), the
run figures (peak memory, load time) from summary.json and run.json. Two runs made on different machines (CPU model,
usable cores) are compared only when asked: their speed says more about the machines than the implementations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..scoring.arrays import OK, numbers
from ..scoring.significance import SignificanceSettings
from ..scoring.speed import SpeedStats, increase_pct, pooled_speed
from ..store.runs import StoredRun

#: the score-table column of each basis
BASIS_COLUMN = {"wall": "infer_s", "cpu": "cpu_s"}
#: what makes two machines different for a speed comparison (keys of run.json's ``machine``)
MACHINE_KEYS = ("cpu", "usable_cpus", "machine")
#: the share of the examples both runs transcribed that must be timed in both for a speed limit to judge: a run
#: timed on a few (fast) examples only would otherwise stand for all of them
MIN_TIMED_SHARE = 0.9
#: how to get times where a run has none, by basis
_REMEDY = {
    "wall": "rerun it (a run times every example it transcribes), or give every line of a hypotheses file its infer_s",
    "cpu": "rerun it with this version (every local implementation records CPU seconds, whisper.cpp's and --isolate's "
    "worker processes included), or give every line of a hypotheses file its cpu_s; --speed-basis wall judges wall "
    "time on a quiet machine",
}


@dataclass(frozen=True)
class SpeedComparison:
    """The candidate's speed against the reference's: paired per-example ``stats`` (None when the runs cannot be
    compared), peak memory and load time as increases in percent, which runs were made on a busy machine, and why
    the runs cannot be compared (``refused``) or which settings differ."""

    stats: SpeedStats | None
    memory_increase_pct: float | None
    load_increase_pct: float | None
    busy: dict[str, str] = field(default_factory=dict)  # run role -> why its machine was busy
    machines_differ: str | None = None
    refused: str | None = None
    timings_from: dict[str, str] = field(default_factory=dict)  # run role -> "this machine" or the device's note
    #: each run's inference milliseconds per decoded token (summary.json ``ms_per_token``), where it reports tokens
    ms_per_token: dict[str, float | None] = field(default_factory=dict)
    #: each run's wait for its first transcript in a fresh process (summary.json ``first_result_s``)
    first_result_s: dict[str, float | None] = field(default_factory=dict)
    #: each run's second load in the same process, caches warm (summary.json ``load_warm_s``, ``run --warm-load``)
    load_warm_s: dict[str, float | None] = field(default_factory=dict)
    #: why the paired times cannot stand for the examples both runs transcribed (too few timed, a recorded side
    #: with an untimed example): the figures are shown, a speed limit cannot judge them
    coverage: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``compare --json``'s ``speed``."""
        return {
            **(self.stats.to_json() if self.stats else {"basis": None}),
            "memory_increase_pct": self.memory_increase_pct,
            "load_increase_pct": self.load_increase_pct,
            "busy": self.busy,
            "machines_differ": self.machines_differ,
            "refused": self.refused,
            "coverage": self.coverage,
            "timings_from": self.timings_from,
            "ms_per_token": self.ms_per_token,
            "first_result_s": self.first_result_s,
            "load_warm_s": self.load_warm_s,
        }

    def line(self) -> str:
        """One line for the terminal."""
        if self.refused:
            return f"speed: not compared ({self.refused})"
        s = self.stats
        if s is None or s.ratio is None or s.slowdown_interval is None:
            return "speed: no example timed in both runs"
        low, high = s.slowdown_interval
        parts = [
            f"speed ({s.basis} time, {s.examples} paired examples): candidate x{s.ratio:.3f} the reference's time "
            f"(geometric mean; {100 * s.confidence:g}% interval x{s.low:.3f}–x{s.high:.3f}, i.e. {low:+.1f}% to "
            f"{high:+.1f}%), slower on {s.slower}, faster on {s.faster}"
            + (f" (sign test p={s.sign_p:.3g})" if s.sign_p is not None else "")
        ]
        if self.memory_increase_pct is not None:
            parts.append(f"peak memory {self.memory_increase_pct:+.1f}%")
        if self.load_increase_pct is not None:
            parts.append(f"load time {self.load_increase_pct:+.1f}%")
        for name, sides, spec in (
            ("ms per token", self.ms_per_token, ".1f"),
            ("first result", self.first_result_s, ".2f"),
            ("warm load", self.load_warm_s, ".2f"),
        ):
            both = _arrow(sides, spec)
            if both:
                parts.append(f"{name} {both}{'' if name == 'ms per token' else ' s'}")
        if self.busy:
            parts.append("busy machine: " + "; ".join(f"{role}: {why}" for role, why in self.busy.items()))
        if self.machines_differ:
            parts.append(f"different machines ({self.machines_differ})")
        if self.coverage:
            parts.append(f"not judgeable: {self.coverage}")
        return "; ".join(parts)


def machines_differ(reference: StoredRun, candidate: StoredRun) -> str | None:
    """What differs between the machines the two runs' times come from (None: the same). Times measured here:
    run.json's ``machine``; times a hypotheses file recorded: the device its header row names, else an unknown
    one — a device is never this machine, and an unknown one is never shown to be any machine."""
    ref, cand = _device(reference), _device(candidate)
    if ref is None and cand is None:
        r, c = reference.meta.machine or {}, candidate.meta.machine or {}
        differ = [
            f"{key} {r.get(key)!r} vs {c.get(key)!r}"
            for key in MACHINE_KEYS
            if r.get(key) is not None and c.get(key) is not None and r.get(key) != c.get(key)
        ]
        return "; ".join(differ) or None
    if ref is not None and ref == cand and ref != _UNKNOWN_DEVICE:
        return None
    return f"{ref or 'this machine'} vs {cand or 'this machine'}"


_UNKNOWN_DEVICE = "an unknown device (no header row in the hypotheses file)"


def _device(run: StoredRun) -> str | None:
    """The device a recorded run's times come from (None: timed on the machine that made the run)."""
    if timings_from(run) == "this machine":
        return None
    name = run.meta.adapter_info.get("device_name")
    return f"device {name!r}" if name else _UNKNOWN_DEVICE


def timings_from(run: StoredRun) -> str:
    """Where the run's times were measured: this machine, or the device that recorded a hypotheses file."""
    return str(run.meta.adapter_info.get("timings_from") or "this machine")


def compare_speed(
    reference: StoredRun,
    candidate: StoredRun,
    *,
    basis: str = "wall",
    settings: SignificanceSettings = SignificanceSettings(),
    groups: dict[str, Any] | None = None,
    allow_different_machines: bool = False,
    repeats: Sequence[StoredRun] = (),
) -> SpeedComparison:
    """The candidate's speed against the reference's on the examples both transcribed (``groups``: a block label
    per example id, for ``--block-by``); with ``repeats`` (further runs of the candidate's configuration), one
    figure pooled over every candidate run with a two-stage interval (:func:`pooled_speed`)."""
    roles = _roles(reference, candidate, repeats)
    differ = "; ".join(filter(None, (machines_differ(reference, run) for _, run in roles[1:]))) or None
    origin = {role: timings_from(run) for role, run in roles}
    busy = {role: run.meta.machine_load.get("why") or "busy" for role, run in roles if _busy(run)}
    memory, load = _run_increases(reference, candidate)
    per_token = {role: run.summary.ms_per_token if run.summary else None for role, run in roles[:2]}
    # a side without times of its own (a recorded run without infer_s) has no wait for its first result either
    first = {role: run.summary.first_result_s if run.summary and _timed(run) else None for role, run in roles[:2]}
    warm = {role: run.summary.load_warm_s if run.summary else None for role, run in roles[:2]}
    if differ and not allow_different_machines:
        refused = f"timed on different machines: {differ}; --allow-different-machines compares them anyway"
        return SpeedComparison(None, memory, load, busy, differ, refused, origin, per_token, first, warm)
    ref_s, audio_s, ids = _reference_times(reference, BASIS_COLUMN[basis])
    found = [_times_on(ids, run, BASIS_COLUMN[basis]) for _, run in roles[1:]]
    cand_s = [times for times, _ in found]
    coverage = _coverage_problem(ref_s, found, roles, basis)
    labels = [groups.get(i) for i in ids.to_pylist()] if groups is not None else None
    stats = pooled_speed(
        ref_s,
        cand_s,
        audio_s,
        basis=basis,
        groups=labels,
        block_by=settings.block_by,
        confidence=settings.confidence,
        resamples=settings.resamples,
        seed=settings.seed,
    )
    return SpeedComparison(stats, memory, load, busy, differ, None, origin, per_token, first, warm, coverage)


def _coverage_problem(
    ref_s: np.ndarray, found: list[tuple[np.ndarray, np.ndarray]], roles: list[tuple[str, StoredRun]], basis: str
) -> str | None:
    """Why the examples timed in both runs cannot stand for those both transcribed (None: they can): a side
    recorded elsewhere leaves one untimed (or at 0), or fewer than ``MIN_TIMED_SHARE`` of them are timed in both."""
    column = BASIS_COLUMN[basis]
    ref_timed = np.isfinite(ref_s) & (ref_s > 0)
    for (role, run), (times, transcribed) in zip(roles[1:], found):
        timed = np.isfinite(times) & (times > 0)
        both = int(transcribed.sum())
        for side, side_run, untimed in (
            ("reference", roles[0][1], transcribed & ~ref_timed),
            (role, run, transcribed & ~timed),
        ):
            missing = int(untimed.sum())
            if missing and timings_from(side_run) != "this machine":
                return (
                    f"the {side} run's times were recorded elsewhere ({timings_from(side_run)}) and {missing} of the "
                    f"{both} examples both runs transcribed have no {column} or 0: a recorded side must time every "
                    f"example; {_REMEDY[basis]}"
                )
        share = (ref_timed & timed).sum() / both if both else 0.0
        if share < MIN_TIMED_SHARE:
            untimed_sides = [
                side for side, mask in (("reference", ref_timed), (role, timed)) if (transcribed & ~mask).any()
            ]
            return (
                f"{int((ref_timed & timed).sum())} of the {both} examples both runs transcribed have a {basis} time "
                f"({column}) in both ({100 * share:.0f}%, need ≥ {100 * MIN_TIMED_SHARE:.0f}%); untimed in the "
                f"{' and the '.join(untimed_sides)} run: {_REMEDY[basis]}"
            )
    return None


def _roles(reference: StoredRun, candidate: StoredRun, repeats: Sequence[StoredRun]) -> list[tuple[str, StoredRun]]:
    extra = [(f"candidate repeat {number}", run) for number, run in enumerate(repeats, start=2)]
    return [("reference", reference), ("candidate", candidate), *extra]


def _busy(run: StoredRun) -> bool:
    """Whether the run's times were taken here on a busy machine (a device's recorded times are not, nor a run
    without times)."""
    return bool(run.meta.machine_load.get("busy")) and timings_from(run) == "this machine" and _timed(run)


def _timed(run: StoredRun) -> bool:
    """Whether the run has times of its own (a recorded run without ``infer_s`` has none)."""
    return run.summary is None or run.summary.rtfx is not None


def busy_why(run: StoredRun) -> str | None:
    """Why the run's RTFx is not comparable (the load other processes put on the machine that timed it), or None:
    a recorded run timed on its device, or with no times at all, is not judged by the scoring machine's load."""
    stored = run.summary
    if (
        stored is None
        or stored.rtfx is None
        or stored.rtfx_reliable is not False
        or timings_from(run) != "this machine"
    ):
        return None
    if run.meta.adapter == "recorded":
        return None  # a hypotheses file's times (if any) were not taken here
    return str(run.meta.machine_load.get("why") or "the machine was busy")


def _run_increases(reference: StoredRun, candidate: StoredRun) -> tuple[float | None, float | None]:
    """Peak memory and load time of the candidate over the reference's, in percent: measured here, or both
    recorded by the devices (a hypotheses file's header row); None when one side has no such figure."""
    here = [timings_from(run) == "this machine" for run in (reference, candidate)]
    if all(here):
        ref, cand = reference.summary, candidate.summary
        memory = increase_pct(ref.peak_rss_mb if ref else None, cand.peak_rss_mb if cand else None)
        return memory, increase_pct(reference.meta.load_s, candidate.meta.load_s)
    if any(here):  # one measured here, one on a device: the harness's memory is not the device's
        return None, None
    ref_info, cand_info = reference.meta.adapter_info, candidate.meta.adapter_info
    memory = increase_pct(ref_info.get("device_peak_rss_mb"), cand_info.get("device_peak_rss_mb"))
    return memory, increase_pct(ref_info.get("device_load_s"), cand_info.get("device_load_s"))


def _ok(run: StoredRun) -> pa.Table:
    """The run's transcribed examples: their ids, audio and times only (no text column is copied)."""
    table = run.score_table().select(["id", "status", "audio_s", *BASIS_COLUMN.values()])
    return pc.filter(table, pc.equal(table["status"], OK))


def _column(table: pa.Table, column: str) -> np.ndarray:
    return numbers(table[column], np.float64)  # nulls as NaN


def _reference_times(reference: StoredRun, column: str) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """The reference's transcribed examples: each one's time in ``column``, its audio seconds, the ids."""
    ref = _ok(reference)
    return _column(ref, column), _column(ref, "audio_s"), ref["id"].combine_chunks()


def _times_on(ids: pa.Array, run: StoredRun, column: str) -> tuple[np.ndarray, np.ndarray]:
    """``run``'s time in ``column`` for each of ``ids`` (NaN where it did not transcribe that example or has no
    time), and whether it transcribed each."""
    table = _ok(run)
    at = pc.index_in(pc.cast(ids, table["id"].type), table["id"].combine_chunks())
    times = _column(table, column)
    rows = numbers(at, np.float64)  # null (absent) as NaN
    found = np.isfinite(rows)
    out = np.full(len(ids), np.nan)
    out[found] = times[rows[found].astype(np.int64)]
    return out, found


def speed_rows(runs: list[StoredRun], references: dict[str, StoredRun]) -> list[dict[str, Any]]:
    """One row per run that has a reference run on its dataset: its time against the reference's (wall time, the
    geometric mean of the per-example ratios with its 95 % interval and the sign test), RTFx, core-seconds per
    audio second, ms per token, peak memory and load time against the reference's, and why a figure is missing."""
    return _rows(speed_pairs(runs, references))


def speed_pairs(
    runs: list[StoredRun], references: dict[str, StoredRun]
) -> list[tuple[StoredRun, StoredRun, SpeedComparison]]:
    """(run, its reference, their speed comparison) of each run that has a reference run on its dataset."""
    pairs = []
    for run in runs:
        reference = references.get(run.dataset_hash)
        if reference is not None and reference is not run:
            pairs.append((run, reference, compare_speed(reference, run)))
    return pairs


def _rows(pairs: list[tuple[StoredRun, StoredRun, SpeedComparison]]) -> list[dict[str, Any]]:
    rows = []
    for run, reference, speed in pairs:
        s = speed.stats
        ratio, rtfx = _ratio_cells(s)
        rows.append(
            {
                "run": run.name,
                "reference": reference.name,
                "examples": s.examples if s else None,
                "time × reference [95% CI]": ratio,
                "sign test p": s.sign_p if s else None,
                "RTFx": rtfx,
                "core-s / audio-s": run.summary.core_s_per_audio_s if run.summary else None,
                "ms / token": _arrow(speed.ms_per_token, ".1f"),
                "first result s": _arrow(speed.first_result_s, ".2f"),
                "warm load s": _arrow(speed.load_warm_s, ".2f"),
                "peak memory Δ %": speed.memory_increase_pct,
                "load time Δ %": speed.load_increase_pct,
                "note": _note(speed),
            }
        )
    if not any(row["warm load s"] for row in rows):  # measured only by `run --warm-load`
        rows = [{k: v for k, v in row.items() if k != "warm load s"} for row in rows]
    return rows


def _ratio_cells(s: SpeedStats | None) -> tuple[str | None, str | None]:
    """The time ratio with its interval, and both RTFx, as cells (None when no example was timed in both runs)."""
    if s is None or None in (s.ratio, s.low, s.high, s.reference_rtfx, s.candidate_rtfx):
        return None, None
    return f"×{s.ratio:.3f} [×{s.low:.3f}, ×{s.high:.3f}]", f"{s.reference_rtfx:.1f} → {s.candidate_rtfx:.1f}"


def _arrow(sides: dict[str, float | None], spec: str) -> str | None:
    ref, cand = sides.get("reference"), sides.get("candidate")
    return None if ref is None or cand is None else f"{ref:{spec}} → {cand:{spec}}"


def _note(speed: SpeedComparison) -> str | None:
    notes = [speed.refused] if speed.refused else []
    notes += [f"not judgeable: {speed.coverage}"] if speed.coverage else []
    if not speed.refused and (speed.stats is None or speed.stats.ratio is None):
        notes.append("no example timed in both runs")
    if speed.machines_differ and not speed.refused:
        notes.append(f"different machines ({speed.machines_differ})")
    notes += [f"{role} timed {where}" for role, where in speed.timings_from.items() if where != "this machine"]
    return "; ".join(notes) or None


_SPEED_LEGEND = (
    "Each run against its dataset's reference run on the examples both transcribed: wall time per example as a "
    "ratio (geometric mean, 95 % bootstrap interval, sign test p), RTFx (Σ audio / Σ time), CPU core-seconds per "
    "audio second, inference milliseconds per decoded token where the implementation counts tokens, the wait for the "
    "first transcript in a fresh process (load, warm-up, first example), the model's second load with caches warm "
    "where measured (run --warm-load), peak memory and load time as increases (docs/measuring.md). Runs timed on a "
    "busy machine say so: judge them on CPU time."
)


def busy_line(runs: list[StoredRun], references: dict[str, StoredRun]) -> str:
    """One line naming the runs of the speed table (and their references) timed on a busy machine, with the load
    (what was once a note in every row), or ''."""
    named = {run.name: run for run in runs if references.get(run.dataset_hash) not in (None, run)}
    named |= {ref.name: ref for run in list(named.values()) if (ref := references.get(run.dataset_hash))}
    busy = [f"{name} ({why})" for name, run in sorted(named.items()) if (why := _busy_load(run))]
    return f"Timed on a busy machine (judge these on CPU time): {'; '.join(busy)}." if busy else ""


def _busy_load(run: StoredRun) -> str | None:
    return str(run.meta.machine_load.get("why") or "busy") if _busy(run) else None


def speed_html(runs: list[StoredRun], references: dict[str, StoredRun]) -> str:
    """The speed table as an HTML section: the speed ratio of each candidate with its interval as a chart, the
    busy-machine line and what every row shares said once above the table ('' when no run has a reference)."""
    import html

    from .charts import Interval, intervals
    from .tables import html_table, said_above, said_once, said_once_text

    pairs = speed_pairs(runs, references)
    rows = _rows(pairs)
    if not rows:
        return ""
    keep, once = said_once(rows, [c for c in rows[0] if c != "run"])
    rows, shared = said_above(rows, "note") if "note" in keep else (rows, [])
    busy = busy_line(runs, references)
    points = [
        Interval(run.name, s.ratio, s.low, s.high)
        for run, _, speed in pairs
        if (s := speed.stats) is not None and s.ratio is not None and s.low is not None and s.high is not None
    ]
    chart = intervals(
        points,
        "wall time × the reference's (geometric mean, 95 % interval; < 1 is faster)",
        "speed-ratio",
        "Wall time × the reference's per candidate, with its 95 % interval (dashed: the reference, ×1)",
        marker=1.0,
    )
    said = f'<p class="once">In every row: {html.escape(said_once_text(once))}.</p>' if said_once_text(once) else ""
    said += "".join(f'<p class="once">{html.escape(line)}</p>' for line in shared)
    return (
        f'<h2>Speed</h2><p class="muted">{_SPEED_LEGEND}</p>'
        + (f'<p class="busy-line">⚠ {html.escape(busy)}</p>' if busy else "")
        + chart
        + said
        + '<div class="wide">'
        + html_table([{k: row[k] for k in keep} for row in rows], "speed")
        + "</div>"
    )


def render_speed_markdown(runs: list[StoredRun], references: dict[str, StoredRun]) -> str:
    """The leaderboard's speed section ('' when no run has a reference)."""
    from .tables import markdown_table, said_above, said_once, said_once_text

    rows = speed_rows(runs, references)
    if not rows:
        return ""
    keep, once = said_once(rows, [c for c in rows[0] if c != "run"])
    rows, shared = said_above(rows, "note") if "note" in keep else (rows, [])
    lines = [busy_line(runs, references), f"In every row: {said_once_text(once)}." if said_once_text(once) else ""]
    lines += shared
    said = "".join(f"{line}\n\n" for line in lines if line)
    return f"\n## Speed\n\n{_SPEED_LEGEND}\n\n{said}" + markdown_table([{k: row[k] for k in keep} for row in rows])
