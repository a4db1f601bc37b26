"""A resolved model (:class:`SourceModel`), the cache folder, and strings memoized there (sha256 of files).

The lowest layer of :mod:`whisperbench.models`: readers, formats and the registry use it; it uses none of them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.hashing import sha256_of
from ..core.json_files import cache_dir, write_json_atomic
from .checkpoint import MULTILINGUAL_MIN_VOCAB, is_multilingual


@dataclass(frozen=True)
class SourceModel:
    """A resolved model: where it is, its format, its weights' identity, dimensions and precision."""

    name: str
    path: Path  # the file or folder its own implementation loads
    format: str
    sha256: str  # of the weight file, or of the list of weight files' sha256
    dims: dict = field(default_factory=dict, hash=False)
    dtype: str = ""
    quantized: bool = False
    weight_files: tuple[Path, ...] = ()
    size_bytes: int = 0
    origin: str = ""  # "package …", "path", "hf:REPO@REVISION", "openai:NAME"

    @property
    def folder(self) -> Path:
        """The folder holding the weights (the file's parent for a one-file format)."""
        return self.path if self.path.is_dir() else self.path.parent

    @property
    def multilingual(self) -> bool:
        """From the vocabulary (51,864 tokens: English-only), never from the name."""
        return is_multilingual(self.dims.get("n_vocab", MULTILINGUAL_MIN_VOCAB))

    @property
    def key(self) -> str:
        """The cache key of conversions from this model: its name and the first 12 hex digits of its sha256."""
        return f"{self.name.replace('/', '_')}-{self.sha256[:12]}"

    def describe(self) -> dict[str, Any]:
        """What run.json records about the weights."""
        return {
            "name": self.name,
            "format": self.format,
            "origin": self.origin,
            "path": str(self.path),
            "source_sha256": self.sha256,
            "dims": dict(self.dims),
            "dtype": self.dtype,
            "quantized": self.quantized,
            "multilingual": self.multilingual,
            "size_mb": round(self.size_bytes / 1e6, 2),
            "weight_files": [f.name for f in self.weight_files],
        }


def _sha256_file(path: Path) -> str:
    """sha256 of a file, memoized next to the cache by (path, size, mtime)."""
    stat = path.stat()
    return memoized(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}", lambda: sha256_of(path))


def memoized(memo_key: str, compute: Callable[[], str]) -> str:
    """A string computed once per cache (``<cache>/hashes.json``), e.g. a weight file's sha256."""
    memo_path = cache_dir() / "hashes.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    if memo_key in memo:
        return memo[memo_key]
    memo[memo_key] = compute()
    with contextlib.suppress(OSError):  # a read-only cache only costs a re-hash
        write_json_atomic(memo_path, memo, indent=None)
    return memo[memo_key]
