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
import os
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))
import sluice  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from peers import best_ns_per_element, dataloader_ns_per_element, pinned  # noqa: E402

RECORDS, RECORD_BYTES, SHARDS, BATCH = 2_000_000, 64, 16, 256  # as pipeline_bench.cc
PEER_RECORDS = 200_000  # DataLoader is slower: fewer records, same per-element measure
REPS = 3  # alternating C++ / Python rounds; each round takes the best of 5 passes


def sluice_python(threads):
    """The pipeline of pipeline_bench.cc (same records, shards and stages), iterated from
    Python: one numpy / Strings batch dict per step."""
    shards = [[b"x" * RECORD_BYTES] * (RECORDS // SHARDS)] * SHARDS
    ds = (sluice.from_records(shards).map("identity", name="identity").batch(BATCH)
          .prefetch(2).with_options(threads=threads))

    def run():
        seen = 0
        for batch in ds:
            seen += len(batch["record"])
        return seen
    return lambda: best_ns_per_element(run, RECORDS, reps=5)


def cpp_pass(threads):
    """pipeline_bench --overhead-only: the same pipeline driven by Iterator::Next in C++
    (best of 5 passes over its 2M records), ns/element."""
    binary = Path(os.environ.get("SLUICE_BENCH_BIN", BUILD / "bin" / "pipeline_bench"))
    if not binary.exists():
        sys.exit(f"{binary} not built: cmake --build build --target pipeline_bench")

    def run():
        out = subprocess.run([str(binary), "--overhead-only", str(threads)], check=True,
                             capture_output=True, text=True).stdout
        return float(out.split()[0])
    return run


def dataloader(workers):
    records = [b"x" * RECORD_BYTES] * PEER_RECORDS
    return dataloader_ns_per_element(records, BATCH, workers, reps=REPS)


def main():
    torch.set_num_threads(1)
    rows = []
    for threads, workers in ((1, 0), (2, 2)):
        # C++ and Python passes alternate, so that load from other processes hits both alike.
        with pinned(threads):
            cpp, py = cpp_pass(threads), sluice_python(threads)
            c = p = float("inf")
            for _ in range(REPS):
                c = min(c, cpp())
                p = min(p, py())
            rows.append((threads, workers, c, p, dataloader(workers)))

    print(f"read -> map(identity) -> batch({BATCH}) -> prefetch over {RECORDS:,} records of "
          f"{RECORD_BYTES} bytes (DataLoader: {PEER_RECORDS:,}); {os.cpu_count()} cores; "
          f"load average {os.getloadavg()[0]:.1f}; best of {5 * REPS} passes\n")
    print(f"{'cores':<6}{'C++ Next':>10}{'Python':>10}{'Python/':>9}{'per batch':>11}"
          f"{'DataLoader':>12}{'sluice vs':>11}")
    print(f"{'':<6}{'ns/elem':>10}{'ns/elem':>10}{'C++ rate':>9}{'Python us':>11}"
          f"{'ns/elem':>12}{'DataLoader':>11}")
    for threads, workers, c, py, dl in rows:
        print(f"{threads:<6}{c:>10.1f}{py:>10.1f}{c / py:>8.2f}x{(py - c) * BATCH / 1e3:>11.2f}"
              f"{dl:>12.1f}{dl / py:>10.1f}x")
    print("\ncores: CPUs the process may use (sched_setaffinity), and sluice threads ="
          "\nDataLoader num_workers (0 for 1 core). 'Python/C++ rate' is"
          "\nthe Python loop's elements/s over C++'s (goal >= 0.9x); 'per batch' is what Python"
          "\nadds per batch of 256; 'sluice vs DataLoader' is sluice's Python rate over"
          "\nDataLoader's.")
    print("\nReproduce: cmake --build build --target _sluice pipeline_bench && "
          "PYTHONPATH=build/python /usr/bin/python3 bench/python/python_bench.py")


if __name__ == "__main__":
    main()
