"""Publish a `TrackedRun` to MLflow (``pip install 'whisperbench[mlflow]'``; imported only when used).

One MLflow run per whisperbench run key (tag ``whisperbench.key``): a re-export finds it and updates it —
the tags and artifacts are replaced, the metrics get their new value (MLflow keeps a metric's history; the
run shows the latest), the params are the same by construction. The tracking URI is ``--tracking-uri``, else
MLflow's own (``MLFLOW_TRACKING_URI``, else its default). Artifacts: ``examples.csv``, ``examples.json``
(one object per example), ``report/leaderboard.md``, ``report/report.html``, ``run/run.json``,
``run/summary.json``.

Every request to a tracking server runs under `tracking.NETWORK` (MLflow's own ``MLFLOW_HTTP_REQUEST_TIMEOUT``,
``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, ``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR`` and ``..._BACKOFF_JITTER``, unless
the user set them), and a failure is one redacted line.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ..errors import WhisperbenchError
from .escape import spreadsheet_safe
from .tracking import NETWORK, TrackedRun, environment_defaults, safe_line

KEY_TAG = "whisperbench.key"
DEFAULT_EXPERIMENT = "whisperbench"
_BATCH = 100  # MLflow's log_batch takes at most 100 params per call
#: MLflow's HTTP settings (read at each request) from the one network policy
NETWORK_ENV = {
    "MLFLOW_HTTP_REQUEST_TIMEOUT": str(NETWORK.request_timeout_s),
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": str(NETWORK.retries),
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": str(NETWORK.backoff_s),
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0",
}


def _client(tracking_uri: str | None):
    try:
        from mlflow import MlflowClient
    except ImportError as exc:
        raise WhisperbenchError("export --to mlflow needs MLflow: pip install 'whisperbench[mlflow]'") from exc
    try:
        return MlflowClient(tracking_uri=tracking_uri)
    except Exception as exc:  # MLflow refuses a store (e.g. a file store without MLFLOW_ALLOW_FILE_STORE)
        raise WhisperbenchError(safe_line(f"MLflow tracking URI {tracking_uri or '(MLflow default)'}: {exc}")) from exc


def _experiment_id(client, name: str) -> str:
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        return client.create_experiment(name)
    if experiment.lifecycle_stage != "active":
        raise WhisperbenchError(f"MLflow experiment {name!r} is deleted: restore it or pass another --experiment")
    return experiment.experiment_id


def _find_or_create(client, experiment_id: str, tracked: TrackedRun) -> tuple[str, bool]:
    found = client.search_runs([experiment_id], filter_string=f"tags.`{KEY_TAG}` = '{tracked.key}'", max_results=2)
    if found:
        return found[0].info.run_id, False
    run = client.create_run(experiment_id, run_name=tracked.name, tags={KEY_TAG: tracked.key})
    return run.info.run_id, True


def _log_values(client, run_id: str, tracked: TrackedRun) -> None:
    from mlflow.entities import Metric, Param, RunTag

    stamp = int(time.time() * 1000)
    existing = client.get_run(run_id).data.params
    params = [Param(k, v) for k, v in tracked.params.items() if existing.get(k) != v]
    changed = [p.key for p in params if p.key in existing]
    if changed:  # the key covers the params: a change means the run was edited by hand
        raise WhisperbenchError(
            f"MLflow run {run_id} has other values for {', '.join(changed[:5])}: "
            "it is not this run's export (delete it, or use another --experiment)"
        )
    metrics = [Metric(k, v, stamp, 0) for k, v in tracked.metrics.items()]
    tags = [RunTag(k, v) for k, v in tracked.tags.items()]
    for start in range(0, max(len(params), len(metrics), len(tags)), _BATCH):
        client.log_batch(
            run_id,
            metrics=metrics[start : start + _BATCH],
            params=params[start : start + _BATCH],
            tags=tags[start : start + _BATCH],
        )


def _log_files(client, run_id: str, tracked: TrackedRun) -> None:
    with tempfile.TemporaryDirectory(prefix="whisperbench-mlflow-") as tmp:
        root = Path(tmp)
        spreadsheet_safe(tracked.examples).to_csv(root / "examples.csv", index=False)
        tracked.examples.to_json(root / "examples.json", orient="records", force_ascii=False, indent=1)
        for name, text in tracked.files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        client.log_artifacts(run_id, str(root))


def publish(tracked: TrackedRun, tracking_uri: str | None = None, experiment: str | None = None) -> str:
    """Create or update the MLflow run of ``tracked``; returns a line saying which."""
    client = _client(tracking_uri)  # first: it names the extra when MLflow is not installed
    from mlflow.exceptions import MlflowException

    where = tracking_uri or client.tracking_uri
    with environment_defaults(NETWORK_ENV):
        try:
            experiment_id = _experiment_id(client, experiment or DEFAULT_EXPERIMENT)
            run_id, created = _find_or_create(client, experiment_id, tracked)
            _log_values(client, run_id, tracked)
            _log_files(client, run_id, tracked)
            client.set_terminated(run_id, "FINISHED")
        except MlflowException as exc:  # an unreachable server, a store MLflow refuses, no permission
            raise WhisperbenchError(safe_line(f"MLflow at {where}: {exc.message}")) from exc
    return safe_line(
        f"MLflow: {'created' if created else 'updated'} run {run_id} ({tracked.name}) in "
        f"experiment {experiment or DEFAULT_EXPERIMENT!r} at {where}"
    )
