"""The leaderboard as a Hugging Face model-card section, ready to paste into a model repo's README.md.

Two parts, as the whisperkit-coreml and open_asr_leaderboard pages carry them:

- the card's YAML metadata: a ``model-index`` (written by ``huggingface_hub``'s ``ModelCardData`` /
  ``EvalResult``, so the Hub parses it into its evaluation widget) with, per run, the WER on its dataset and,
  for candidates, the QoI against the dataset's reference;
- per dataset a markdown table: implementation, model, WER, QoI (%), file size (MB), with the reference marked
  and QoI defined under it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..scoring.metrics import Metric
from .escape import md_cell
from .leaderboard import _fmt, shown_metrics

PROJECT_URL = "https://github.com/whisperbench/whisperbench"
QOI_NOTE = (
    "QoI: the share of examples on which the implementation makes no more errors than the reference "
    "(`no_regression = wer(candidate) <= wer(reference)` per example); the reference has 100 % by "
    "definition. WER after Whisper's text normalizer, pooled over the dataset. Status: examples stored of the "
    "dataset's; only finished runs go into the model-index."
)


def _eval_results(rows: list[dict], metrics: list[Metric]) -> list:
    from huggingface_hub import EvalResult

    results = []
    for row in rows:
        if not row["Finished"] or row["WER %"] is None:  # a stopped or empty run's figures are no evaluation result
            continue
        name = f"{row['Implementation']} ({row['Model']})"
        common: dict[str, Any] = {
            "task_type": "automatic-speech-recognition",
            "task_name": "Automatic Speech Recognition",
            "dataset_type": str(row["Dataset"]),
            "dataset_name": str(row["Dataset"]),
            "source_name": "whisperbench",
            "source_url": PROJECT_URL,
        }
        results.append(
            EvalResult(metric_type="wer", metric_name=f"WER {name}", metric_value=round(row["WER %"], 2), **common)
        )
        if not row["Reference"] and row["QoI %"] is not None:
            results.append(
                EvalResult(metric_type="qoi", metric_name=f"QoI {name}", metric_value=round(row["QoI %"], 1), **common)
            )
        results += [
            EvalResult(
                metric_type=m.name, metric_name=f"{m.label} {name}", metric_value=round(row[m.label], 4), **common
            )
            for m in metrics
            if row.get(m.label) is not None
        ]
    return results


def _dataset_table(part: pd.DataFrame, metrics: list[str]) -> str:
    heads = "".join(f" {md_cell(m)} |" for m in metrics)
    lines = [
        f"| | Model | WER | QoI (%) | File Size (MB) | Status |{heads}",
        "|---|---|---|---|---|---|" + "---|" * len(metrics),
    ]
    for _, row in part.iterrows():
        name = md_cell(row["Implementation"]) + (" (reference)" if row["Reference"] else "")
        cells = "".join(f" {_fmt(row[m], 2)} |" for m in metrics)
        lines.append(
            f"| {name} | {md_cell(row['Model'])} | {_fmt(row['WER %'], 2)} | {_fmt(row['QoI %'], 1)} | "
            f"{_fmt(row['Size MB'], 0)} | {md_cell(row['Status'])} |{cells}"
        )
    return "\n".join(lines)


def render_model_card(frame: pd.DataFrame, title: str = "Evaluation results", model_name: str = "") -> str:
    """YAML front matter with the model-index, then one table per dataset (``frame``: `leaderboard_frame`)."""
    from huggingface_hub import ModelCardData

    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    metrics = shown_metrics(frame)
    data = ModelCardData(
        model_name=model_name or title,
        pipeline_tag="automatic-speech-recognition",
        tags=["whisper", "whisperbench", "automatic-speech-recognition"],
        metrics=["wer"],
        eval_results=_eval_results(records, metrics) or None,
    )
    parts = ["---", data.to_yaml(), "---", "", f"# {md_cell(title)}", ""]
    for dataset, part in frame.groupby("Dataset", sort=False):  # the reference first, then by QoI and WER
        part = part.sort_values(["Reference", "QoI %", "WER %"], ascending=[False, False, True], na_position="last")
        parts += [f"Dataset: {md_cell(dataset)}", "", _dataset_table(part, [m.label for m in metrics]), ""]
    parts += [QOI_NOTE, "", f"Measured with [whisperbench]({PROJECT_URL}).", ""]
    return "\n".join(parts)
