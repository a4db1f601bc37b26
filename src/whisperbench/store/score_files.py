"""A run's score table on disk: one Arrow IPC file per normalizer beside predictions.jsonl, read memory-mapped, and
beside it its check (``scores-<normalizer>.arrow.check``, JSON).

A score table is derived, never trusted: it is read only when it proves that it is intact and that it was derived
from these raw outputs by this scorer. The check holds the SHA-256 of the table file's bytes (a flipped bit, a
truncated or hand-edited file no longer matches), the table version, the normalizer, the version of each
per-example metric's code (``metrics``: the digest of the module defining it, with a plug-in's distribution and
version: :func:`whisperbench.scoring.table.metrics_key`), the scorer (a digest of the code of the base columns:
:func:`scorer_digest`), the stamp of predictions.jsonl (size, modification and change times in ns) and the SHA-256
of predictions.jsonl's content when the table was written; the file's own metadata repeats them. A table that
disagrees with any of them but the metrics, or has no check, is stale and read as absent, so the caller rebuilds it
from the predictions (the durable record). A metric whose code changed, or that was installed since, is computed
again on its own: its columns are left out when the table is read, and the reader adds them and writes the table
back (:meth:`whisperbench.store.StoredRun.score_table`). Writing is atomic (the table, then its check), and a folder
that cannot be written keeps no table.

The raw input is checked cheaply: while its stamp is the one recorded, nothing is hashed (an edit cannot keep
the change time: setting the modification time back changes it); when the stamp differs (an edit, a copied
folder), the content is hashed and the table is used only where it is the recorded content (a copied run keeps its
table; its check is brought up to date): 1.2 s for a million lines (560 MB, sha256, 2026-11-29). A check anyone
can recompute proves nothing against a forger: the gate also scores a random sample of the lines again
(:meth:`whisperbench.store.runs.StoredRun.verified`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from functools import cache
from pathlib import Path
from typing import Any

from ..core.hashing import sha256_of
from ..scoring.metrics import per_example_metrics
from ..scoring.table import TABLE_VERSION, kept_metrics, metrics_key

logger = logging.getLogger(__name__)

#: the packages and modules whose code decides every score table's base columns (normalizing, aligning, counting,
#: the table's layout): every module of them found on disk, but those defining a per-example metric's kernel (each
#: versioned on its own: :attr:`~whisperbench.scoring.metrics.Metric.code_version`)
SCORER_CODE = ("scoring", "types.py")


@cache
def scorer_digest() -> str:
    """A digest of the code of a table's base columns (every module of :data:`SCORER_CODE` but the per-example
    metrics' own, by name and content, and the table version): a table computed by other code is rebuilt whole."""
    root = Path(__file__).resolve().parents[1]  # the package root: SCORER_CODE is relative to it
    metric_files = {Path(m.source_file).resolve() for m in per_example_metrics() if m.source_file}
    digest = hashlib.sha256(TABLE_VERSION.encode())
    for entry in SCORER_CODE:
        where = root / entry
        for path in sorted(where.glob("*.py")) if where.is_dir() else [where]:
            if path not in metric_files:
                digest.update(f"{path.relative_to(root)}\0".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def check_path(path: Path) -> Path:
    """Where the check of the table at ``path`` lives."""
    return path.with_name(path.name + ".check")


def _expected(normalizer: str, stamp: str) -> dict[str, str]:
    return {
        "version": TABLE_VERSION,
        "normalizer": normalizer,
        "predictions": stamp,
        "metrics": metrics_key(),
        "scorer": scorer_digest(),
    }


def predictions_stamp(predictions: Path) -> str:
    """What a score table records of predictions.jsonl to tell it changed without reading it: size, modification
    and change times in ns (``absent`` where there is none)."""
    try:
        stat = predictions.stat()
    except FileNotFoundError:
        return "absent"
    return f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}"


def content_sha256(predictions: Path) -> str | None:
    """The SHA-256 of predictions.jsonl's bytes (None where it is absent)."""
    try:
        return sha256_of(predictions)
    except FileNotFoundError:
        return None


def read_table(path: Path, normalizer: str, stamp: str, predictions: Path) -> Any | None:
    """The ``pyarrow.Table`` at ``path``, memory-mapped; None when it is missing, has no check or a check it fails
    (bytes changed, another table version, normalizer or scorer code, or written from other predictions:
    ``predictions`` as it is now, stamped ``stamp``, hashed where the stamp differs), or cannot be read. The
    columns of a metric whose code changed since (or that is no longer installed) are left out
    (:func:`~whisperbench.scoring.table.kept_metrics`): the caller computes the metrics it then lacks
    (:func:`~whisperbench.scoring.table.lacking_metrics`), not the whole table."""
    import pyarrow as pa

    if not path.exists():
        return None
    try:
        check = json.loads(check_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        logger.info("score table %s has no readable check: rebuilding it from the predictions", path)
        return None
    wanted = _expected(normalizer, stamp)
    if not isinstance(check, dict) or any(check.get(key) != wanted[key] for key in ("version", "normalizer", "scorer")):
        logger.info("score table %s is stale (other scoring code): rebuilding it from the predictions", path)
        return None
    if not _same_predictions(path, check, stamp, predictions):
        logger.info("score table %s was written from other predictions: rebuilding it from them", path)
        return None
    try:
        if sha256_of(path) != check.get("sha256"):
            logger.warning("score table %s does not match its checksum (changed or corrupt): rebuilding it", path)
            return None
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    except (OSError, pa.ArrowInvalid) as exc:
        logger.warning("score table %s unreadable (%s): rebuilding it", path, exc)
        return None
    return kept_metrics(table, _recorded(check))


def _recorded(check: dict) -> dict[str, str]:
    """The metrics of a table's check with the versions of their code (``{}`` where it names none readably)."""
    try:
        recorded = json.loads(check.get("metrics") or "{}")
    except (TypeError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _same_predictions(path: Path, check: dict, stamp: str, predictions: Path) -> bool:
    """Whether the table of ``check`` was written from ``predictions`` as they are: the same stamp, else the same
    content hash (the check then records the new stamp, where the folder is writable)."""
    if check.get("predictions") == stamp:
        return True
    recorded = check.get("content")
    if not isinstance(recorded, str) or content_sha256(predictions) != recorded:
        return False
    with contextlib.suppress(OSError):  # a read-only store: hashed again next time
        check_path(path).write_text(json.dumps(check | {"predictions": stamp}), encoding="utf-8")
    return True


def write_table(path: Path, table: Any, normalizer: str, stamp: str, predictions: Path) -> None:
    """Write ``table`` to ``path`` with its version, normalizer, scorer and predictions stamp, then its check
    (with the content hash of ``predictions`` where they are still as stamped), atomically; a folder that cannot
    be written keeps no table (a warning: it is rebuilt next time)."""
    import pyarrow as pa

    facts = _expected(normalizer, stamp)
    content = content_sha256(predictions)
    if predictions_stamp(predictions) != stamp:
        content = None  # changed since the table was built from it: the content hashed is not the table's
    table = table.replace_schema_metadata(facts)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    check_tmp = check_path(tmp)
    try:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=1 << 17)
        check_tmp.write_text(json.dumps(facts | {"sha256": sha256_of(tmp), "content": content}), encoding="utf-8")
        os.replace(tmp, path)
        os.replace(check_tmp, check_path(path))
    except OSError as exc:
        logger.warning("cannot write the score table %s (%s): it will be rebuilt next time", path, exc)
        tmp.unlink(missing_ok=True)
        check_tmp.unlink(missing_ok=True)
