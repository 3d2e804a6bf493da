#!/usr/bin/python3
"""Pipeline overhead side by side: sluice vs torch.utils.data.DataLoader vs a plain Python
generator, all doing read -> map(identity) -> batch(256) over the same small records
(64 bytes, batched as one values buffer + offsets, which is what sluice's batch produces).

Runs build/bin/pipeline_bench --json for sluice's numbers in the same run, then the Python
peers, and prints a ratio table.

Reproduce:
  cmake --build build --target pipeline_bench && /usr/bin/python3 bench/pipeline/pipeline_bench.py
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import best_ns_per_element, collate, count, dataloader_ns_per_element  # noqa: E402
import torch  # noqa: E402

BATCH = 256
RECORD_BYTES = 64
N_PY = 200_000  # Python peers are slower: fewer records, same per-element measure


def identity(x):
    return x


def generator(records):
    batch = []
    for r in records:
        batch.append(identity(r))
        if len(batch) == BATCH:
            yield collate(batch)
            batch = []
    if batch:
        yield collate(batch)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    binary = os.environ.get("SLUICE_BENCH_BIN", os.path.join(root, "build", "bin", "pipeline_bench"))
    cpp = json.loads(subprocess.run([binary, "--json"], check=True, capture_output=True,
                                    text=True).stdout)

    records = [bytes([97 + i % 26]) * RECORD_BYTES for i in range(N_PY)]
    rows = [
        ("sluice, 1 thread", cpp["ns_per_element"]["1"]),
        ("sluice, 2 threads", cpp["ns_per_element"]["2"]),
    ]
    torch.set_num_threads(1)
    for workers in (0, 2):
        rows.append((f"DataLoader, num_workers={workers}",
                     dataloader_ns_per_element(records, BATCH, workers)))
    rows.append(("Python generator", best_ns_per_element(lambda: count(generator(records)), N_PY)))

    base = rows[0][1]
    print(f"read -> map(identity) -> batch({BATCH}) -> prefetch, {RECORD_BYTES}-byte records "
          f"(sluice: {cpp['records']:,}, Python peers: {N_PY:,}); {os.cpu_count()} cores\n")
    print(f"{'pipeline':<28} {'ns/element':>11} {'ns/elem/stage':>14} {'x sluice 1t':>12}")
    for name, ns in rows:
        print(f"{name:<28} {ns:>11.1f} {ns / cpp['stages']:>14.1f} {ns / base:>12.1f}")
    print(f"\nsluice with global shuffle: {cpp['ns_per_element_global_shuffle']['1']:.1f} ns/element "
          f"(1 thread), {cpp['ns_per_element_global_shuffle']['2']:.1f} (2 threads)")
    r = cpp["restore_ms"]
    print(f"sluice restore + first batch, 10M-record epoch: start {r['start']:.3f} ms, "
          f"middle {r['middle']:.3f} ms, end {r['end']:.3f} ms")
    m = cpp["peak_rss_mib"]
    print(f"sluice peak RSS, 2000 batches: 1M records {m['1M']} MiB, 10M records {m['10M']} MiB")
    print("\nReproduce: cmake --build build --target pipeline_bench && "
          "/usr/bin/python3 bench/pipeline/pipeline_bench.py")


if __name__ == "__main__":
    sys.exit(main())
