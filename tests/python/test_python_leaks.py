"""Iterating 10k batches leaks nothing: no Python objects (tracemalloc, gc), no references
(sys.getrefcount of the types and dtypes every batch uses), no memory (RSS bound)."""
import gc
import os
import sys
import tracemalloc

import numpy as np

import sluice
from sluice_fixtures import id_records


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def parse(e):
    i = int(e["record"])
    return {"id": i, "vec": np.full(4, i, np.float32), "name": e["record"]}


def test_iterating_10k_batches_leaks_nothing():
    ds = (sluice.from_records(id_records([500, 500]))
          .shuffle(seed=1)
          .map(parse, output={"id": "int64", "vec": "float32[4]", "name": "bytes"})
          .repeat()
          .batch(2)
          .prefetch(4))
    it = ds.iterator()

    def consume(n):
        total = 0
        for _ in range(n):
            b = next(it)
            total += int(b["id"].sum()) + int(b["vec"][0, 0]) + len(b["name"][0])
            total += len(b["name"].values) + int(b["name"].offsets[-1])
        return total

    consume(2000)  # warm up: pools, chunks and caches reach their steady size
    gc.collect()
    watched = [np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.uint8),
               np.dtype(np.uint64), sluice.Strings, sluice._sluice.BatchBuffer, parse, ds]
    refs_before = [sys.getrefcount(o) for o in watched]
    objects_before = len(gc.get_objects())
    rss_before = rss_bytes()
    tracemalloc.start()
    snap_before = tracemalloc.take_snapshot()

    consume(10_000)
    gc.collect()

    snap_after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    diff = snap_after.compare_to(snap_before, "lineno")
    grown = sum(s.size_diff for s in diff)
    assert grown < 64 * 1024, diff[:5]
    del snap_before, snap_after, diff
    gc.collect()
    assert [sys.getrefcount(o) for o in watched] == refs_before
    assert len(gc.get_objects()) - objects_before < 50
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):  # ASan's quarantine holds memory
        assert rss_bytes() - rss_before < 32 << 20
    it.close()
