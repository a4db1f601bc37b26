"""Per-example results as a pandas DataFrame, optionally joined with a reference run by id."""

from __future__ import annotations

import pandas as pd

from ..scoring.engine import rescored_all
from ..scoring.metrics import per_example_metrics
from ..scoring.qoi_table import qoi_tables
from ..store.runs import StoredRun

COLUMNS = [
    "id",
    "status",
    "error",
    "transcript",
    "hypothesis",
    "transcript_norm",
    "hypothesis_norm",
    "wer",
    "hits",
    "substitutions",
    "deletions",
    "insertions",
    "audio_s",
    "infer_s",
]


def example_frame(run: StoredRun, reference: StoredRun | None = None) -> pd.DataFrame:
    """One row per example, scored with the run's (or the reference's) normalizer."""
    normalizer = reference.normalizer if reference else run.normalizer
    rows = [p.to_row() for p in rescored_all(run.predictions, normalizer)]
    frame = pd.DataFrame(rows, columns=COLUMNS) if rows else pd.DataFrame(columns=COLUMNS)
    frame.insert(0, "run", run.name)
    _add_metric_columns(frame, run.score_table(normalizer))
    if reference is not None:
        joined = {
            e.id: e
            for e in qoi_tables(reference.score_table(normalizer), run.score_table(normalizer), normalizer).examples
        }
        frame["reference_run_hypothesis"] = frame["id"].map(
            lambda i: joined[i].reference_hypothesis if i in joined else None
        )
        frame["reference_run_errors"] = frame["id"].map(lambda i: joined[i].reference_errors if i in joined else None)
        frame["errors"] = frame["id"].map(lambda i: joined[i].candidate_errors if i in joined else None)
        frame["regressed"] = frame["id"].map(lambda i: joined[i].regressed if i in joined else None)
    return frame


def _add_metric_columns(frame: pd.DataFrame, table) -> None:
    """Each per-example metric's columns (``METRIC.COLUMN`` in the score table), joined by id, under the column's
    own name unless the frame already has one of that name (then ``METRIC.COLUMN``)."""
    prefixes = tuple(f"{metric.name}." for metric in per_example_metrics())
    names = [name for name in table.column_names if name.startswith(prefixes)] if prefixes else []
    if not names:
        return
    ids = table["id"].to_pylist()
    for name in names:
        by_id = dict(zip(ids, table[name].to_pylist()))
        short = name.split(".", 1)[1]
        frame[short if short not in frame.columns else name] = frame["id"].map(by_id)
