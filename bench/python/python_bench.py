#!/usr/bin/python3
"""The pipeline benchmark of docs/pipeline.md from Python: read -> map(identity) ->
batch(256) -> prefetch over 2M 64-byte records, iterated by a Python for-loop (batches as
numpy / Strings), next to the same pipeline driven from C++ (build/bin/pipeline_bench) and
to torch.utils.data.DataLoader doing the same per-sample work (identity, then batches as a
values + offsets pair) at equal cores. Prints a ratio table and the command.

Goal (issue 4): Python iteration >= 0.9x the C++ rate.

Reproduce:
  cmake --build build --target _sluice pipeline_bench && \\
    PYTHONPATH=build/python /usr/bin/python3 bench/python/python_bench.py
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))
import sluice  # noqa: E402

RECORDS, RECORD_BYTES, SHARDS, BATCH = 2_000_000, 64, 16, 256  # as pipeline_bench.cc
PEER_RECORDS = 200_000  # DataLoader is slower: fewer records, same per-element measure
REPS = 3


def best_ns_per_element(run, n):
    """Best of REPS runs of `run()` (which returns the elements it saw), in ns/element."""
    best = float("inf")
    for _ in range(REPS):
        t0 = time.perf_counter()
        seen = run()
        elapsed = time.perf_counter() - t0
        assert seen == n, (seen, n)
        best = min(best, elapsed / n)
    return best * 1e9


def sluice_python(threads):
    shards = [[b"x" * RECORD_BYTES] * (RECORDS // SHARDS)] * SHARDS
    ds = (sluice.from_records(shards).map("identity", name="identity").batch(BATCH)
          .prefetch(2).with_options(threads=threads))

    def run():
        seen = 0
        for batch in ds:
            seen += len(batch["record"])
        return seen
    return best_ns_per_element(run, RECORDS)


class Records(Dataset):
    def __init__(self, records):
        self.records = records

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]  # identity


def collate(records):
    """Byte strings as (values, offsets), the layout of sluice's string batches."""
    offsets = np.zeros(len(records) + 1, dtype=np.uint64)
    np.cumsum([len(r) for r in records], out=offsets[1:])
    return np.frombuffer(b"".join(records), dtype=np.uint8), offsets


def dataloader(workers):
    ds = Records([b"x" * RECORD_BYTES] * PEER_RECORDS)
    extra = {"prefetch_factor": 2} if workers else {}

    def run():
        loader = DataLoader(ds, batch_size=BATCH, collate_fn=collate, num_workers=workers,
                            **extra)
        return sum(len(offsets) - 1 for _, offsets in loader)
    return best_ns_per_element(run, PEER_RECORDS)


def cpp_rates():
    binary = Path(os.environ.get("SLUICE_BENCH_BIN", BUILD / "bin" / "pipeline_bench"))
    if not binary.exists():
        sys.exit(f"{binary} not built: cmake --build build --target pipeline_bench")
    out = subprocess.run([str(binary), "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["ns_per_element"]


def main():
    torch.set_num_threads(1)
    cpp = cpp_rates()
    rows = []
    for threads, workers in ((1, 0), (2, 2)):
        c = cpp[str(threads)]
        py = sluice_python(threads)
        dl = dataloader(workers)
        rows.append((threads, workers, c, py, dl))

    print(f"read -> map(identity) -> batch({BATCH}) -> prefetch over {RECORDS:,} records of "
          f"{RECORD_BYTES} bytes (DataLoader: {PEER_RECORDS:,}); {os.cpu_count()} cores; "
          f"best of {REPS}\n")
    print(f"{'cores':<6}{'C++ Next':>10}{'Python':>10}{'Python/':>9}{'per batch':>11}"
          f"{'DataLoader':>12}{'sluice vs':>11}")
    print(f"{'':<6}{'ns/elem':>10}{'ns/elem':>10}{'C++ rate':>9}{'Python us':>11}"
          f"{'ns/elem':>12}{'DataLoader':>11}")
    for threads, workers, c, py, dl in rows:
        print(f"{threads:<6}{c:>10.1f}{py:>10.1f}{c / py:>8.2f}x{(py - c) * BATCH / 1e3:>11.2f}"
              f"{dl:>12.1f}{dl / py:>10.1f}x")
    print("\ncores: sluice threads = DataLoader num_workers (0 for 1 core). 'Python/C++ rate' is"
          "\nthe Python loop's elements/s over C++'s (goal >= 0.9x); 'per batch' is what Python"
          "\nadds per batch of 256; 'sluice vs DataLoader' is sluice's Python rate over"
          "\nDataLoader's.")
    print("\nReproduce: cmake --build build --target _sluice pipeline_bench && "
          "PYTHONPATH=build/python /usr/bin/python3 bench/python/python_bench.py")


if __name__ == "__main__":
    main()
