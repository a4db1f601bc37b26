"""A run's score table on disk: one Arrow IPC file per normalizer beside predictions.jsonl, read memory-mapped, and
beside it its check (``scores-<normalizer>.arrow.check``, JSON).

A score table is derived, never trusted: it is read only when it proves that it is intact and that it was derived
from these raw outputs by this scorer. The check holds the SHA-256 of the table file's bytes (a flipped bit, a
truncated or hand-edited file no longer matches), the table version, the normalizer, the per-example metrics it
holds, the scorer (a digest of the scoring code that computed it: :func:`scorer_digest`) and a stamp of
predictions.jsonl (size and modification time in ns); the file's own metadata repeats them. A table that disagrees
with any of them, or has no check, is stale and read as absent, so the caller rebuilds it from the predictions (the
durable record). Writing is atomic (the table, then its check), and a folder that cannot be written keeps no table.

Limit: the raw input is identified by its size and modification time, not hashed on every read (hashing a million
lines would cost each ``compare`` a second); an edit that keeps both is not seen.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from .digest import sha256_of
from .scoring.table import TABLE_VERSION, metrics_key

logger = logging.getLogger(__name__)

#: the modules whose code decides a score table's contents (normalizing, aligning, the columns, the metrics)
SCORER_MODULES = ("normalize", "wer", "summary", "table", "metrics", "formatting", "hallucination", "timing")


@lru_cache(maxsize=None)
def scorer_digest() -> str:
    """A digest of the scoring code (the source of :data:`SCORER_MODULES` and the table version): a table computed
    by other code is rebuilt."""
    folder = Path(__file__).resolve().parent / "scoring"
    digest = hashlib.sha256(TABLE_VERSION.encode())
    for name in SCORER_MODULES:
        path = folder / f"{name}.py"
        digest.update(path.read_bytes() if path.exists() else name.encode())
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


def read_table(path: Path, normalizer: str, stamp: str) -> Optional[Any]:
    """The ``pyarrow.Table`` at ``path``, memory-mapped; None when it is missing, has no check or a check it fails
    (bytes changed, another table version, normalizer, scorer or set of metrics, or written from predictions other
    than those stamped ``stamp``), or cannot be read."""
    import pyarrow as pa

    if not path.exists():
        return None
    try:
        check = json.loads(check_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        logger.info("score table %s has no readable check: rebuilding it from the predictions", path)
        return None
    wanted = _expected(normalizer, stamp)
    if not isinstance(check, dict) or any(check.get(key) != value for key, value in wanted.items()):
        logger.info("score table %s is stale: rebuilding it from the predictions", path)
        return None
    try:
        if sha256_of(path) != check.get("sha256"):
            logger.warning("score table %s does not match its checksum (changed or corrupt): rebuilding it", path)
            return None
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    except (OSError, pa.ArrowInvalid) as exc:
        logger.warning("score table %s unreadable (%s): rebuilding it", path, exc)
        return None
    return table


def write_table(path: Path, table: Any, normalizer: str, stamp: str) -> None:
    """Write ``table`` to ``path`` with its version, normalizer, scorer and predictions stamp, then its check,
    atomically; a folder that cannot be written keeps no table (a warning: it is rebuilt next time)."""
    import pyarrow as pa

    facts = _expected(normalizer, stamp)
    table = table.replace_schema_metadata(facts)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    check_tmp = check_path(tmp)
    try:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=1 << 17)
        check_tmp.write_text(json.dumps(facts | {"sha256": sha256_of(tmp)}), encoding="utf-8")
        os.replace(tmp, path)
        os.replace(check_tmp, check_path(path))
    except OSError as exc:
        logger.warning("cannot write the score table %s (%s): it will be rebuilt next time", path, exc)
        tmp.unlink(missing_ok=True)
        check_tmp.unlink(missing_ok=True)
