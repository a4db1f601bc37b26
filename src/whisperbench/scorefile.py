"""A run's score table on disk: one Arrow IPC file per normalizer beside predictions.jsonl, read memory-mapped.

The file records the table version, the normalizer, the per-example metrics it holds and a stamp of
predictions.jsonl (size and modification time); a file that disagrees with any of them is stale and read as absent,
so the caller rebuilds it from the predictions
(the durable record). Writing is atomic, and a folder that cannot be written keeps no table.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Optional

from .scoring.table import TABLE_VERSION, metrics_key

logger = logging.getLogger(__name__)


def read_table(path: Path, normalizer: str, stamp: str) -> Optional[Any]:
    """The ``pyarrow.Table`` at ``path``, memory-mapped; None when it is missing, unreadable, of another table
    version or normalizer, or written from predictions other than those stamped ``stamp`` (stale)."""
    import pyarrow as pa

    if not path.exists():
        return None
    try:
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    except (OSError, pa.ArrowInvalid) as exc:
        logger.warning("score table %s unreadable (%s): rebuilding it", path, exc)
        return None
    meta = table.schema.metadata or {}
    wanted = {
        b"version": TABLE_VERSION.encode(),
        b"normalizer": normalizer.encode(),
        b"predictions": stamp.encode(),
        b"metrics": metrics_key().encode(),
    }
    if any(meta.get(key, b"" if key == b"metrics" else None) != value for key, value in wanted.items()):
        logger.info("score table %s is stale: rebuilding it from the predictions", path)
        return None
    return table


def write_table(path: Path, table: Any, normalizer: str, stamp: str) -> None:
    """Write ``table`` to ``path`` with its version, normalizer and predictions stamp, atomically; a folder that
    cannot be written keeps no table (a warning: it is rebuilt next time)."""
    import pyarrow as pa

    table = table.replace_schema_metadata(
        {"version": TABLE_VERSION, "normalizer": normalizer, "predictions": stamp, "metrics": metrics_key()}
    )
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=1 << 17)
        os.replace(tmp, path)
    except OSError as exc:
        logger.warning("cannot write the score table %s (%s): it will be rebuilt next time", path, exc)
        tmp.unlink(missing_ok=True)
