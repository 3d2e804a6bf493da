"""Shared pieces of the Python-side benchmarks: the timing rule and the PyTorch DataLoader
peer that bench/pipeline/pipeline_bench.py and bench/python/python_bench.py both run."""
import contextlib
import os
import time

import numpy as np
from torch.utils.data import DataLoader, Dataset


def best_ns_per_element(run, n, reps=3):
    """Best of `reps` runs of `run()` (which returns the elements it saw), in ns/element."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        seen = run()
        elapsed = time.perf_counter() - t0
        assert seen == n, (seen, n)
        best = min(best, elapsed / n)
    return best * 1e9


def collate(records):
    """Byte strings as (values, offsets), the layout of sluice's string batches."""
    offsets = np.zeros(len(records) + 1, dtype=np.uint64)
    np.cumsum([len(r) for r in records], out=offsets[1:])
    return np.frombuffer(b"".join(records), dtype=np.uint8), offsets


def count(batches):
    """Elements in an iterable of (values, offsets) batches."""
    return sum(len(offsets) - 1 for _, offsets in batches)


class Records(Dataset):
    """A map-style dataset over records held in memory; per-sample work is the identity."""

    def __init__(self, records):
        self.records = records

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]


def dataloader_ns_per_element(records, batch, workers, reps=3):
    """torch DataLoader over `records` with `workers` worker processes, in ns/element."""
    ds = Records(records)
    extra = {"prefetch_factor": 2} if workers else {}
    return best_ns_per_element(
        lambda: count(DataLoader(ds, batch_size=batch, collate_fn=collate, num_workers=workers,
                                 **extra)), len(records), reps)


def restore_ms(make_ds, state, reps=5):
    """Best of `reps`: ms from `make_ds().iterator(state=state)` to its first element
    (`make_ds` builds the sluice Dataset that saved `state`). Each rep builds a fresh read, as
    a restarted process would: a read keeps the decoded chunks of its last iterator
    (keep_decoded_chunks), which would make every rep after the first a warm one."""
    best = float("inf")
    for _ in range(reps):
        ds = make_ds()
        t0 = time.perf_counter()
        it = ds.iterator(state=state)
        next(it)
        best = min(best, time.perf_counter() - t0)
        it.close()
        # The read goes before the next rep's, untimed: its chunk buffers are recycled for
        # the next decodes, as a process's earlier iterators' are.
        del it, ds
    return best * 1e3


@contextlib.contextmanager
def pinned(cores):
    """Runs the block, and every thread and process it starts, on the first `cores` CPUs:
    "n cores" means n CPUs for every contender (sluice's consumer thread, which helps run
    stages, and DataLoader's main process included)."""
    everything = os.sched_getaffinity(0)
    os.sched_setaffinity(0, sorted(everything)[:cores])
    try:
        yield
    finally:
        os.sched_setaffinity(0, everything)
