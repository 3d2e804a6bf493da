#!/usr/bin/python3
"""sluice.dask.to_table throughput (docs/dist.md, "From Dask"), in one run on the same rows:

- peer: sluice.write_table in one process (the rows made and encoded in that process), the
  baseline a user without Dask gets;
- to_table on a distributed.LocalCluster of W worker processes x 1 thread (the DEFAULT
  to_table settings: dict rows, zstd, schema checked), the rows made on the workers
  (db.range(N).map(row)), so only the shards' descriptions travel back;
- the same with serialized rows (bytes made by make_example inside the map), which skips
  to_table's schema check.

Each configuration writes a fresh table; wall time of the call (cluster start excluded),
best of --reps. The ratio is write_table's time over the row's time (> 1: faster).

Reproduce:
  cmake --build build --target _sluice
  /usr/bin/python3 bench/dask/run.py [--rows 200000] [--workers 1,2] [--partitions 16]
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))

import dask.bag as db  # noqa: E402
import distributed  # noqa: E402

import sluice  # noqa: E402
import sluice.dask  # noqa: E402


def row(i):
    return {"id": i, "text": f"document {i} " * 8, "tokens": list(range(i % 32))}


def serialized(i):
    return sluice.make_example(row(i))


def best(reps, fn):
    times = []
    for _ in range(reps):
        root = tempfile.mkdtemp(prefix="sluice-dask-bench-")
        try:
            t0 = time.perf_counter()
            fn(os.path.join(root, "t"))
            times.append(time.perf_counter() - t0)
        finally:
            shutil.rmtree(root)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    n, parts = args.rows, args.partitions
    print(f"$ /usr/bin/python3 bench/dask/run.py --rows {n} --workers {args.workers} "
          f"--partitions {parts} --reps {args.reps}   (load {os.getloadavg()[0]:.1f})")
    peer = best(args.reps, lambda p: sluice.write_table(p, (serialized(i) for i in range(n))))
    table = [("write_table, 1 process (peer)", peer)]
    for w in [int(x) for x in args.workers.split(",") if x]:
        with distributed.LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=None,
                                      scheduler_kwargs={"dashboard": False}) as cluster, \
                distributed.Client(cluster):
            dicts = db.range(n, npartitions=parts).map(row)
            table.append((f"to_table dicts, {w} worker(s) (default)",
                          best(args.reps, lambda p: sluice.dask.to_table(dicts, p))))
            raw = db.range(n, npartitions=parts).map(serialized)
            table.append((f"to_table bytes, {w} worker(s)",
                          best(args.reps, lambda p: sluice.dask.to_table(raw, p))))
    print(f"{'configuration':<40} {'seconds':>8} {'records/s':>10} {'ratio':>6}")
    for name, t in table:
        print(f"{name:<40} {t:8.2f} {n / t:10.0f} {peer / t:5.2f}x")


if __name__ == "__main__":
    main()
