"""Read back what W&B wrote offline: the records of a ``run-ID.wandb`` file, as protobuf ``Record``s.

wandb 0.31 no longer ships a Python reader for its transaction log, so the tests read it here from the
format's description: a 7-byte header (``:W&B``, a 2-byte magic, a version byte), then LevelDB log blocks
of 32 KiB, each holding records ``crc32 (4, little-endian) | length (2) | type (1: full, 2: first,
3: middle, 4: last) | data``; a record never starts in a block's last 6 bytes (those are zero padding).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

HEADER = 7
BLOCK = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def _chunks(data: bytes):
    """(type, payload) of every physical record, checksums verified."""
    pos = HEADER
    while pos + 7 <= len(data):
        left_in_block = BLOCK - pos % BLOCK
        if left_in_block < 7:  # the block's zero trailer
            pos += left_in_block
            continue
        checksum, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        payload = data[pos + 7 : pos + 7 + length]
        if kind == 0 and length == 0:
            break
        assert zlib.crc32(payload, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF == checksum, f"bad checksum at {pos}"
        yield kind, payload
        pos += 7 + length


def records(path: Path) -> list:
    """Every ``wandb_internal_pb2.Record`` in ``path``, in order."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path}: not a W&B transaction log"
    out, parts = [], []
    for kind, payload in _chunks(data):
        parts.append(payload)
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(b"".join(parts))
            out.append(record)
            parts = []
    return out
