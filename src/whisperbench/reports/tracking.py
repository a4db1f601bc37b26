"""One run as an experiment tracker sees it: params, metrics, tags, the per-example table and the reports.

The tracker modules (`reports/mlflow_export.py`, `reports/wandb_export.py`) only publish a `TrackedRun`;
what goes in it is decided here, once, so MLflow and W&B carry the same figures.

- **key**: the run's identity (`RunInfo.identity()`: adapter, model, decoding, normalizer, long-form,
  dataset source) plus the dataset's content hash and the weights' sha256, hashed. A re-export of the same run
  finds its tracker run by this key and updates it; another model file or dataset content is another key.
- **params**: what the run *is* (the identity, the weights, the dataset) — fixed for a key, as MLflow requires.
- **tags**: how and where it ran (machine, versions, backend, status, the reference's name) — may change.
- **metrics**: the summary's numbers (WER, CER, RTFx, latency, memory, size, counts), WER's bootstrap CI,
  per-language error rates, and with a reference QoI with its CI and the improved/unchanged/regressed counts,
  and every declared pairing's figure against it (``paired.METRIC.NAME``, ``….ci_low`` / ``….ci_high`` where it
  has an interval: what ``compare --json`` calls ``paired``).

Every string passes `redact.redact` (an endpoint's key in a URL never leaves the machine), and so does every
message of a failed export (`safe_line`: one line, no user:password, no secret query value).

**The network is bounded** (`NETWORK`): each request waits at most 5 s, is retried twice, with short pauses
between tries, so an export to a server that never answers gives up in about 20 s (`worst_case_s`) instead of
MLflow's or W&B's minutes. The tracker modules hand these limits to their client (environment variables the
user has set win: ``MLFLOW_HTTP_REQUEST_TIMEOUT`` and friends).

>>> NETWORK.worst_case_s() < 30
True
>>> safe_line("MLflow at http://u:pw@h:1/: refused,    while retrying")
'MLflow at http://h:1/: refused, while retrying'

>>> flatten({"decoding": {"beam_size": 5, "language": None}, "model": "tiny.en"})
{'decoding.beam_size': '5', 'decoding.language': 'None', 'model': 'tiny.en'}
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..core.redact import redact, redact_text
from ..scoring.metrics import displayed_metrics, metric_named, nested_metrics
from ..scoring.table import metric_values
from ..store.runs import StoredRun
from .compare import compare_runs
from .export import example_frame
from .languages import language_frame, render_language_markdown
from .leaderboard import headline_interval, leaderboard_frame, render_markdown
from .pairings import Paired
from .sections import flat_values

#: the summary.json numbers a tracker gets as metrics (others stay in the run's files)
SUMMARY_METRICS = (
    "wer",
    "cer",
    "num_examples",
    "num_ok",
    "num_failed",
    "substitutions",
    "deletions",
    "insertions",
    "hits",
    "transcript_words",
    "transcript_characters",
    "char_errors",
    "audio_s",
    "infer_s",
    "rtfx",
    "latency_p50_s",
    "latency_p90_s",
    "latency_p99_s",
    "load_s",
    "warmup_s",
    "peak_rss_mb",
    "model_size_mb",
    "wall_s",
    "harness_overhead_pct",
    "macro_error_rate",
)
PARAM_MAX_CHARS = 500  # MLflow's historical limit for a param value; longer values are cut, marked with …


@dataclass(frozen=True)
class NetworkLimits:
    """How long an export may wait on a tracker's server: one request, the retries after a failed one, and the
    pause before the n-th retry (``backoff_s * 2 ** (n - 1)``, the first retry at once)."""

    request_timeout_s: int = 5
    retries: int = 2
    backoff_s: int = 1

    def pauses_s(self) -> list[float]:
        """The pause before each retry (urllib3's schedule: none before the first, then doubling)."""
        return [0.0 if n == 1 else float(self.backoff_s * 2 ** (n - 1)) for n in range(1, self.retries + 1)]

    def worst_case_s(self) -> float:
        """A request to a server that never answers: every try times out, every pause is taken."""
        return self.request_timeout_s * (self.retries + 1) + sum(self.pauses_s())


#: the limits every tracker export runs under (the same for MLflow and W&B)
NETWORK = NetworkLimits()


@contextmanager
def environment_defaults(values: Mapping[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` for the block, except those the user set already; put back after it."""
    added = {name: value for name, value in values.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def safe_line(text: object) -> str:
    """A tracker's message (an error, or where the run went) as one line, every URL in it redacted."""
    return redact_text(" ".join(str(text).split()))


@dataclass
class TrackedRun:
    """What an experiment tracker stores of one whisperbench run (see the module docstring)."""

    key: str
    name: str
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]
    examples: pd.DataFrame
    files: dict[str, str] = field(default_factory=dict)  # artifact path -> text (reports, run.json, summary.json)


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested dicts as dotted keys with string values (what trackers take as params and tags)."""
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, item in value.items():
            flat.update(flatten(item, f"{prefix}{key}."))
        return flat
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (list, tuple)) else str(value)
    if len(text) > PARAM_MAX_CHARS:
        text = text[: PARAM_MAX_CHARS - 1] + "…"
    return {prefix.rstrip("."): text}


def run_key(run: StoredRun) -> str:
    """A stable 32-hex-digit key: the run's identity, its dataset content and its weights."""
    meta = run.meta
    basis = {
        "identity": meta.identity(),
        "dataset": meta.dataset.content_hash,
        "weights": meta.weights.get("sha256") or meta.weights.get("fingerprint"),
    }
    return hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _params(run: StoredRun) -> dict[str, str]:
    meta = run.meta
    weights = {k: v for k, v in meta.weights.items() if isinstance(v, (str, int, float, bool))}
    spec = {
        "adapter": meta.adapter,
        "model": meta.model,
        "label": meta.label,
        "variant": meta.variant,
        "normalizer": meta.normalizer,
        "decoding": meta.decoding,
        "long_form": meta.long_form or {},
        "dataset": {k: v for k, v in meta.dataset.to_dict().items() if v is not None},
        "weights": weights,
    }
    return flatten(redact({k: v for k, v in spec.items() if v not in (None, {}, "")}))


def _tags(run: StoredRun, reference: StoredRun | None) -> dict[str, str]:
    meta = run.meta
    where = {
        "machine": meta.machine,
        "versions": meta.versions,
        "backend": meta.backend,
        "status": meta.status,
        "workers": meta.workers,
        "finished_at": meta.finished_at,
        "run": run.name,
        "reference": reference.name if reference is not None else None,
    }
    tags = flatten(redact({k: v for k, v in where.items() if v not in (None, {}, "")}))
    return {f"whisperbench.{k}": v for k, v in tags.items()}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value):
        return None
    return float(value)


def _metrics(run: StoredRun, reference: StoredRun | None) -> dict[str, float]:
    summary = run.summary.to_dict() if run.summary else {}
    metrics = {name: summary.get(name) for name in SUMMARY_METRICS}
    table = run.score_table(run.normalizer)
    interval = headline_interval(table, metric_named("wer"))
    if interval is not None:
        metrics |= {"wer_ci_low": interval.low, "wer_ci_high": interval.high}
    for language, figures in (summary.get("languages") or {}).items():
        metrics |= {f"language.{language}.{k}": figures.get(k) for k in ("error_rate", "wer", "cer", "num_examples")}
    metrics["language_id_accuracy"] = (summary.get("language_id") or {}).get("accuracy")
    for metric in displayed_metrics():  # each column of a metric's report section (hallucination counts…)
        metrics |= flat_values(summary.get(metric.name), metric)
    for name, value in metric_values(table, nested_metrics()).items():  # WER and CER: their figures above
        metrics |= {f"{name}.{column}": number for column, number in value.items()}
    if reference is not None:
        comparison = compare_runs(reference, run)
        result, paired = comparison.result, comparison.paired
        qoi = paired.get("wer.qoi")
        qoi_ci = qoi.interval if qoi is not None else None
        metrics |= {
            "qoi": result.qoi,
            "qoi_ci_low": qoi_ci[0] if qoi_ci else None,
            "qoi_ci_high": qoi_ci[1] if qoi_ci else None,
            "qoi_joined": result.joined,
            "qoi_improved": result.improved,
            "qoi_unchanged": result.unchanged,
            "qoi_regressed": result.regressed,
        }
        metrics |= {f"language.{language}.qoi": row["qoi"] for language, row in result.by_language().items()}
        metrics |= paired_metrics(paired)
    return {k: v for k, v in ((k, _number(v)) for k, v in metrics.items()) if v is not None}


def paired_metrics(paired: Mapping[str, Paired]) -> dict[str, float | None]:
    """Every declared pairing's figure as tracker metrics: ``paired.METRIC.NAME`` and, where it has an interval,
    ``paired.METRIC.NAME.ci_low`` / ``.ci_high`` (:mod:`whisperbench.reports.pairings`, as compare reads them).

    >>> from whisperbench.scoring.metrics import Pairing
    >>> paired_metrics({"wer.qoi": Paired("wer", Pairing("qoi", "qoi"), 90.0, (85.0, 95.0), 0.95)})
    {'paired.wer.qoi': 90.0, 'paired.wer.qoi.ci_low': 85.0, 'paired.wer.qoi.ci_high': 95.0}
    """
    out: dict[str, float | None] = {}
    for key, figure in paired.items():
        out[f"paired.{key}"] = figure.value
        if figure.interval is not None:
            out[f"paired.{key}.ci_low"], out[f"paired.{key}.ci_high"] = figure.interval
    return out


def _files(run: StoredRun, reference: StoredRun | None) -> dict[str, str]:
    """The run's markdown and HTML report (with its reference when given), run.json and summary.json."""
    from .html import render_html

    runs = [run] + ([reference] if reference is not None and reference is not run else [])
    references = {reference.dataset_hash: reference} if reference is not None else {}
    frame = leaderboard_frame(runs, references)
    title, stamp = f"whisperbench: {run.name}", f"{run.meta.finished_at or 'an unfinished run'} (the run's end)"
    markdown = render_markdown(frame, references, title=title, stamp=stamp) + render_language_markdown(
        language_frame(runs, references)
    )
    files = {
        "report/leaderboard.md": markdown,
        "report/report.html": render_html(frame, runs, references, title, stamp),
        "run/run.json": json.dumps(redact(run.info), indent=2, ensure_ascii=False),
    }
    if run.summary is not None:
        files["run/summary.json"] = json.dumps(redact(run.summary.to_dict()), indent=2, ensure_ascii=False)
    return files


def tracked_run(run: StoredRun, reference: StoredRun | None = None) -> TrackedRun:
    """Everything a tracker stores of ``run`` (QoI and the joined columns when ``reference`` is given)."""
    examples = example_frame(run, reference).map(lambda v: redact(v) if isinstance(v, str) else v)
    return TrackedRun(
        key=run_key(run),
        name=run.name,
        params=_params(run),
        metrics=_metrics(run, reference),
        tags=_tags(run, reference),
        examples=examples,
        files=_files(run, reference),
    )
