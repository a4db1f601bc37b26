"""Streaming runs in reports: the latency a gate judges, ``compare``'s side-by-side lines and the leaderboard's
streaming table (implementation, policy, chunk, clock, WER, WER vs batch, latency, revisions).

>>> latency_of({"committed_latency_s": None, "end_of_utterance_latency_s": {"p50": 0.8, "p90": 1.5}})
('end-of-utterance latency', {'p50': 0.8, 'p90': 1.5})
"""

from __future__ import annotations

import html
from typing import Any

from ..store.runs import StoredRun
from .tables import html_table, markdown_table

#: the latency figures in the order the gate prefers them: word-level (whisperbench's commit delay) where the dataset
#: has word times, else end of utterance; ``committed_latency_s`` is the commit delay's name in runs scored before
#: 2026-11-29
LATENCIES = (
    ("commit_delay_s", "commit delay"),
    ("committed_latency_s", "commit delay"),
    ("end_of_utterance_latency_s", "end-of-utterance latency"),
)


def run_streaming(run: StoredRun) -> dict[str, Any] | None:
    """A run's ``summary.json["streaming"]`` (None: not a streaming run)."""
    if run.summary is None:
        return None
    value = run.summary.metrics.get("streaming")
    return value if isinstance(value, dict) else None


def latency_of(value: dict[str, Any] | None) -> tuple[str, dict[str, Any]] | None:
    """(name, percentiles) of the latency a gate judges: the commit delay where the dataset has word times, else end
    of utterance where it has utterance times; None when neither."""
    for key, name in LATENCIES:
        figure = (value or {}).get(key)
        if figure:
            return name, figure
    return None


def _seconds(figure: dict[str, Any] | None, q: str = "p90") -> str:
    return "–" if not figure or figure.get(q) is None else f"{figure[q]:.2f} s"


def describe(value: dict[str, Any]) -> str:
    """One line: the policy, chunk, clock and the figures.

    >>> line = describe({"policy": "simulstreaming", "chunk_s": 1.0, "clock": "simulated",
    ...                  "first_output_s": {"p50": 1.0}, "end_of_utterance_latency_s": {"p50": 0.9, "p90": 1.6}})
    >>> line.split(": ")[1]
    'end-of-utterance latency p50 0.90 s, p90 1.60 s; first output p50 1.00 s'
    """
    chunk = f", {value['chunk_s']:g} s chunks" if isinstance(value.get("chunk_s"), (int, float)) else ""
    parts = [f"{value.get('policy') or 'a stream'}{chunk}, {value.get('clock')} clock:"]
    latency = latency_of(value)
    figures = []
    if latency:
        figures.append(f"{latency[0]} p50 {_seconds(latency[1], 'p50')}, p90 {_seconds(latency[1])}")
    openbench = value.get("openbench_latency_s")
    if openbench and openbench.get("mean") is not None:
        figures.append(f"OpenBench latency {openbench['mean']:.2f} s")
    figures.append(f"first output p50 {_seconds(value.get('first_output_s'), 'p50')}")
    if value.get("revisions_per_word") is not None:
        figures.append(f"revisions {value['revisions_per_word']:.3f} per word")
    dropped = value.get("shown_then_dropped") or {}
    if dropped.get("examples"):
        ids = ", ".join(dropped["ids"])
        figures.append(f"{dropped['examples']} example(s) showed words, then ended empty ({ids})")
    return " ".join(parts) + " " + "; ".join(figures)


def compare_lines(reference: StoredRun, candidate: StoredRun) -> list[str]:
    """What ``compare`` says of streaming runs: each side's streaming figures (a batch side says so)."""
    sides = [(role, run, run_streaming(run)) for role, run in (("reference", reference), ("candidate", candidate))]
    if not any(value for _, _, value in sides):
        return []
    lines = []
    for role, run, value in sides:
        lines.append(f"streaming, {role} {run.name}: " + (describe(value) if value else "batch (not a stream)"))
    return lines


def paired_wer_delta(reference: StoredRun, run: StoredRun) -> Any | None:
    """The paired bootstrap of ``run``'s WER minus ``reference``'s over the examples both scored (points, 95 %
    interval), scored with the reference's normalizer: the WER metric's pooled rate paired as every one is
    (:func:`~whisperbench.reports.pairings.paired_rate`)."""
    from ..scoring.metrics import metric_named
    from .pairings import paired_rate

    normalizer = reference.normalizer
    return paired_rate((reference.score_table(normalizer), run.score_table(normalizer)), metric_named("wer"), "wer")


def leaderboard_rows(runs: list[StoredRun], references: dict[str, StoredRun]) -> list[dict[str, Any]]:
    """One row per streaming run: implementation, policy, chunk, clock, WER, its paired difference from the
    dataset's reference run (a batch run of the same weights, as a streaming comparison should have it) with its
    95 % interval, latency p50/p90 and revisions per word."""
    rows = []
    for run in runs:
        value = run_streaming(run)
        if not value or run.summary is None:
            continue
        latency = latency_of(value)
        reference = references.get(run.dataset_hash)
        delta = paired_wer_delta(reference, run) if reference is not None and reference is not run else None
        rows.append(
            {
                "run": run.name,
                "implementation": run.meta.adapter,
                "policy": value.get("policy"),
                "chunk": f"{value['chunk_s']:g} s" if isinstance(value.get("chunk_s"), (int, float)) else None,
                "clock": value.get("clock"),
                "WER %": run.summary.wer,
                "Δ WER vs reference [95% CI]": (
                    f"{delta.delta:+.2f} [{delta.interval.low:+.2f}, {delta.interval.high:+.2f}] vs {reference.name}"
                    if delta is not None and reference is not None
                    else None
                ),
                "latency": latency[0] if latency else None,
                "p50 s": latency[1].get("p50") if latency else None,
                "p90 s": latency[1].get("p90") if latency else None,
                "OpenBench latency s": (value.get("openbench_latency_s") or {}).get("mean"),
                "revisions / word": value.get("revisions_per_word"),
                "shown, then dropped": (value.get("shown_then_dropped") or {}).get("examples"),
            }
        )
    return rows


def streaming_html(runs: list[StoredRun], references: dict[str, StoredRun]) -> str:
    """The streaming table as an HTML section, sortable ('' when no run is a stream)."""
    rows = leaderboard_rows(runs, references)
    if not rows:
        return ""
    from .tables import said_once, said_once_text

    keep, once = said_once(rows, [c for c in rows[0] if c != "run"])
    said = f'<p class="once">In every run: {html.escape(said_once_text(once))}.</p>' if said_once_text(once) else ""
    return (
        '<h2>Streaming</h2><p class="muted">Latency in audio time under the simulated clock, wall time under the '
        "real-time clock; WER difference paired against the dataset's reference run.</p>"
        + said
        + html_table([{k: row[k] for k in keep} for row in rows], "streaming")
    )


def render_streaming_markdown(runs: list[StoredRun], references: dict[str, StoredRun]) -> str:
    """The leaderboard's streaming section ('' when no run is a stream)."""
    rows = leaderboard_rows(runs, references)
    if not rows:
        return ""
    return (
        "\n## Streaming\n\nEach streaming run's final text scored like any run; its WER against the dataset's "
        "reference run, paired over the examples both scored (bootstrap). Latency: the commit delay (word times) or "
        "end of utterance (utterance segments); OpenBench latency: argmaxinc/OpenBench's duration-weighted mean "
        "(word times). In audio time under the simulated clock, wall time under the real-time clock "
        "(docs/streaming.md).\n\n" + markdown_table(rows)
    )
