"""The one way to fingerprint bytes and files: sha256, read in blocks (model weights are gigabytes).

>>> sha256_of(b"abc")[:16]
'ba7816bf8f01cfea'
"""

from __future__ import annotations

import hashlib
from pathlib import Path

BLOCK = 1 << 22


def sha256_of(source: str | Path | bytes | bytearray) -> str:
    """Hex sha256 of ``source``: bytes as they are, a path by its file's contents."""
    digest = hashlib.sha256()
    if isinstance(source, (bytes, bytearray)):
        digest.update(source)
        return digest.hexdigest()
    with open(source, "rb") as fh:
        for block in iter(lambda: fh.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
