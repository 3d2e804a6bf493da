"""Writing shards from Python (tests, small datasets, tools). For whole datasets with a
manifest use `sluice convert` (docs/cli.md)."""

from __future__ import annotations

from typing import Any, Iterable

from ._sluice import RecordWriter


def write_records(path: str, records: Iterable[bytes], *, codec: str = "zstd",
                  **options: Any) -> int:
    """Writes `records` as one shard at `path` (plus its index) and returns how many.
    codec: "zstd" (default), "gzip" or "none"; options: zstd_level, zstd_frame_bytes,
    write_index. The file appears only once everything is written."""
    count = 0
    with RecordWriter(path, codec=codec, **options) as writer:
        for record in records:
            writer.write(record)
            count += 1
    return count
