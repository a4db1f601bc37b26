"""Publish a `TrackedRun` to Weights & Biases (``pip install 'whisperbench[wandb]'``; imported only when used).

The W&B run id is the whisperbench run key, opened with ``resume="allow"``: a re-export updates the same
W&B run (its config, summary and tags) instead of making another. Offline (``WANDB_MODE=offline``) each
export writes a ``wandb/offline-run-*-KEY`` folder carrying that id, and ``wandb sync`` merges them into the
one run. The per-example table, the reports, run.json and summary.json go into one artifact
``whisperbench-KEY`` (type ``evaluation``): W&B versions artifacts by content, so exporting unchanged results
again adds no version. The config holds the params and the tags (nested as in run.json), the summary the metrics.

Every request runs under `tracking.NETWORK` (W&B's ``WANDB_HTTP_TIMEOUT``, ``WANDB__GRAPHQL_RETRY_MAX``,
``WANDB__GRAPHQL_RETRY_WAIT_MAX_SECONDS`` and ``WANDB_INIT_TIMEOUT``, unless the user set them); W&B's own
terminal output is off (``WANDB_SILENT``: it prints the server URL as given, password and all), so is its
error telemetry (``WANDB_ERROR_REPORTING``: its exporter waits 10 s at exit), and a failure is one redacted line.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import WhisperbenchError
from .tracking import NETWORK, TrackedRun, environment_defaults, safe_line

DEFAULT_PROJECT = "whisperbench"
#: W&B's settings (read when it starts in this process) from the one network policy
NETWORK_ENV = {
    "WANDB_HTTP_TIMEOUT": str(NETWORK.request_timeout_s),
    "WANDB__GRAPHQL_RETRY_MAX": str(NETWORK.retries),
    "WANDB__GRAPHQL_RETRY_WAIT_MIN_SECONDS": str(NETWORK.backoff_s),
    "WANDB__GRAPHQL_RETRY_WAIT_MAX_SECONDS": str(max(NETWORK.pauses_s() + [1.0])),
    "WANDB__FILE_STREAM_RETRY_MAX": str(NETWORK.retries),
    "WANDB__FILE_STREAM_TIMEOUT_SECONDS": str(NETWORK.request_timeout_s),
    "WANDB_INIT_TIMEOUT": str(NETWORK.worst_case_s()),  # wandb.init as a whole
    "WANDB_SILENT": "true",
    # W&B's own error telemetry: its exporter waits 10 s at exit for a server that may not answer
    "WANDB_ERROR_REPORTING": "false",
}


def _wandb():
    try:
        import wandb
    except ImportError as exc:
        raise WhisperbenchError("export --to wandb needs Weights & Biases: pip install 'whisperbench[wandb]'") from exc
    return wandb


def _artifact(wandb, tracked: TrackedRun, folder: Path):
    artifact = wandb.Artifact(
        f"whisperbench-{tracked.key}",
        type="evaluation",
        description=f"whisperbench run {tracked.name}: per-example results and reports",
    )
    artifact.add(
        wandb.Table(dataframe=tracked.examples.astype(object).where(tracked.examples.notna(), None)), "examples"
    )
    for name, text in tracked.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        artifact.add_file(str(path), name=name)
    return artifact


def publish(
    tracked: TrackedRun, project: str | None = None, entity: str | None = None, directory: str | None = None
) -> str:
    """Create or update the W&B run of ``tracked``; returns a line saying where it went."""
    wandb = _wandb()
    with environment_defaults(NETWORK_ENV):
        run = _init(wandb, tracked, project, entity, directory)
        return _log(wandb, run, tracked, project)


def _init(wandb, tracked: TrackedRun, project: str | None, entity: str | None, directory: str | None):
    config = {"params": tracked.params, "tags": tracked.tags}
    try:
        return wandb.init(
            project=project or DEFAULT_PROJECT,
            entity=entity,
            id=tracked.key,
            name=tracked.name,
            resume="allow",
            job_type="evaluation",
            config=config,
            dir=directory,
            reinit="create_new",
            tags=[tracked.params.get("adapter", "?"), tracked.params.get("model", "?")[:64]],
        )
    except (wandb.errors.Error, TimeoutError) as exc:  # not logged in, no network, a project one may not write to
        raise WhisperbenchError(
            safe_line(
                f"W&B: {exc} (set WANDB_API_KEY, or WANDB_MODE=offline to write the run "
                "locally and `wandb sync` it later)"
            )
        ) from exc


def _log(wandb, run, tracked: TrackedRun, project: str | None) -> str:
    config = {"params": tracked.params, "tags": tracked.tags}
    try:
        run.config.update(config, allow_val_change=True)  # a resumed run takes the new tags
        run.summary.update(tracked.metrics)
        with tempfile.TemporaryDirectory(prefix="whisperbench-wandb-") as tmp:
            run.log_artifact(_artifact(wandb, tracked, Path(tmp)))  # files are copied to staging here
    finally:
        run.finish()
        wandb.teardown()  # flushes the run's files: finish() can return before an offline log is written
    mode = os.environ.get("WANDB_MODE", "online")
    where = Path(run.dir).parent if mode in ("offline", "dryrun") else (run.url or run.dir)
    return safe_line(
        f"W&B ({mode}): run {tracked.key} ({tracked.name}) in project {project or DEFAULT_PROJECT!r}: {where}"
    )
