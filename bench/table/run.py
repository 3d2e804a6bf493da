#!/usr/bin/python3
"""Table benchmarks (docs/table.md, "Performance"), in one run:

1. open time vs number of commits: tables of N = 10 / 1,000 / 100,000 commits, generated
   directly as log files (commit JSON as sluice writes it; data files are not needed to
   open), in two shapes: "append" (one shard added per commit: N live files, so the
   checkpoint itself grows with N) and "rolling" (each commit replaces the previous shard,
   as an overwrite does: one live file, only the log grows). "checkpointed" is the DEFAULT (a
   checkpoint every 100 commits: the newest one at the last multiple of 100, written by
   `sluice table checkpoint`, so an open replays at most 99 commits after it);
   "no checkpoint" replays every commit. Opened by sluice (sluice.Table(path), the C++ log
   reader) and by the independent Python reader tests/python/delta_reader.py (the peer: the
   same protocol, no sluice code), both warm-cache, median of --reps.
2. commit throughput of concurrent appenders: P processes (build/bin/table_append_tool),
   each writing a 10-record shard and committing it K times, into one fresh table; the
   commits per second of all of them together, and the mean attempts per commit (lost
   races). The peer is the storage primitive alone: P Python processes racing to create
   the next numbered file with O_CREAT|O_EXCL and nothing else (the ceiling any Delta
   writer on this file system can reach).

Reproduce:
  cmake --build build --target sluice _sluice table_append_tool
  /usr/bin/python3 bench/table/run.py [--sizes 10,1000,100000] [--writers 1,4,16]
      [--commits 20] [--root DIR]
"""
import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import sluice  # noqa: E402
from delta_reader import read_snapshot  # noqa: E402

CHECKPOINT_INTERVAL = 100  # sluice's default (as delta-rs)


def file_name(version):
    return f"part-{version:08d}-00000.tfrecord.zst"


def commit_text(version, timestamp, rolling):
    """The lines of one sluice commit (commitInfo, one add, for "rolling" the remove of the
    previous file), as CommitText writes them."""
    actions = [{"add": {"path": file_name(version), "partitionValues": {}, "size": 4096,
                        "modificationTime": timestamp, "dataChange": True,
                        "stats": json.dumps({"numRecords": 100})}}]
    if rolling and version > 1:
        actions.append({"remove": {"path": file_name(version - 1), "deletionTimestamp": timestamp,
                                   "dataChange": True}})
    info = {"commitInfo": {"timestamp": timestamp, "operation": "WRITE",
                           "operationParameters": {"mode": "Overwrite" if rolling
                                                   else "Append"},
                           "readVersion": version - 1, "isBlindAppend": not rolling,
                           "engineInfo": "sluice/bench", "sluice": {"actions": len(actions)}}}
    return "".join(json.dumps(a) + "\n" for a in [info] + actions)


def generate(path, commits, checkpointed, rolling):
    """A table of `commits` versions, under a protocol that allows V2 checkpoints (what a
    sluice table has after its first checkpoint)."""
    log = path / "_delta_log"
    log.mkdir(parents=True)
    t0 = 1_700_000_000_000
    protocol = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                             "readerFeatures": ["v2Checkpoint"],
                             "writerFeatures": ["v2Checkpoint"]}}
    metadata = {"metaData": {"id": "5f1b7c5e-0000-4000-8000-000000000000",
                             "format": {"provider": "tfrecord", "options": {}},
                             "schemaString": '{"type":"struct","fields":[]}',
                             "partitionColumns": [], "configuration": {},
                             "createdTime": t0}}
    info = {"commitInfo": {"timestamp": t0, "operation": "CREATE TABLE",
                           "engineInfo": "sluice/bench", "sluice": {"actions": 2}}}
    (log / f"{0:020d}.json").write_text(
        json.dumps(info) + "\n" + json.dumps(protocol) + "\n" + json.dumps(metadata) + "\n")
    last_checkpoint = (commits - 1) // CHECKPOINT_INTERVAL * CHECKPOINT_INTERVAL
    for v in range(1, commits):
        (log / f"{v:020d}.json").write_text(commit_text(v, t0 + v, rolling))
        if checkpointed and v == last_checkpoint:
            subprocess.run([str(BUILD / "bin" / "sluice"), "table", "checkpoint", str(path)],
                           check=True, capture_output=True)


def median_seconds(fn, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def open_times(root, sizes, shapes, reps):
    rows = []
    for shape in shapes:
        for n in sizes:
            for checkpointed in (True, False):
                if n <= CHECKPOINT_INTERVAL and not checkpointed:
                    continue  # the same table
                path = root / f"open-{shape}-{n}-{'cp' if checkpointed else 'nocp'}"
                generate(path, n, checkpointed, shape == "rolling")
                assert sluice.Table(path).version() == n - 1
                assert read_snapshot(str(path)).version == n - 1
                r = max(1, reps if n < 100_000 or checkpointed else 1)
                ours = median_seconds(lambda: sluice.Table(path).version(), r)
                peer = median_seconds(lambda: read_snapshot(str(path)), r)
                live = len(sluice.Table(path).files())
                rows.append((shape, n, live, "every 100 (default)" if checkpointed else "none",
                             ours, peer))
                shutil.rmtree(path)
    return rows


def bare_put_if_absent(directory, commits):
    """Claims the next free numbered file with O_EXCL until `commits` are ours."""
    mine, v = 0, 0
    while mine < commits:
        try:
            fd = os.open(os.path.join(directory, f"{v:020d}.json"),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            os.write(fd, b'{"commitInfo":{}}\n')
            os.close(fd)
            mine += 1
        except FileExistsError:
            pass
        v += 1


def throughput(root, writers, commits):
    tool = BUILD / "bin" / "table_append_tool"
    rows = []
    for p in writers:
        path = root / f"append-{p}"
        start = time.perf_counter()
        procs = [subprocess.Popen([str(tool), str(path), "--commits", str(commits), "--writer",
                                   str(w)], stdout=subprocess.PIPE, text=True)
                 for w in range(p)]
        attempts = []
        for proc in procs:
            out, _ = proc.communicate()
            assert proc.returncode == 0
            attempts += [int(line.split()[2]) for line in out.splitlines()]
        ours = time.perf_counter() - start
        assert sluice.Table(path).version() == p * commits - 1
        shutil.rmtree(path)

        bare = root / f"bare-{p}"
        bare.mkdir()
        start = time.perf_counter()
        workers = [multiprocessing.Process(target=bare_put_if_absent,
                                           args=(str(bare), commits))
                   for _ in range(p)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        peer = time.perf_counter() - start
        shutil.rmtree(bare)
        rows.append((p, p * commits, p * commits / ours, statistics.mean(attempts),
                     p * commits / peer))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,1000,100000")
    ap.add_argument("--shapes", default="append,rolling")
    ap.add_argument("--writers", default="1,4,16", help="'' to skip the throughput part")
    ap.add_argument("--commits", type=int, default=50, help="per writer")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--root", help="where tables are made (default: a temp dir)")
    args = ap.parse_args()
    root = Path(args.root or tempfile.mkdtemp(prefix="sluice-table-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"command: /usr/bin/python3 bench/table/run.py --sizes {args.sizes} --shapes "
          f"{args.shapes} --writers '{args.writers}' --commits {args.commits} --reps {args.reps}")
    print(f"cpus: {os.cpu_count()}, tables under {root}\n")

    print("open time (warm cache, median):", flush=True)
    print(f"{'shape':<8} {'commits':>8} {'live files':>10}  {'checkpoints':<20} "
          f"{'sluice ms':>10} {'py reader ms':>13} {'ratio':>6}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    for shape, n, live, cp, ours, peer in open_times(root, sizes, args.shapes.split(","),
                                                     args.reps):
        print(f"{shape:<8} {n:>8} {live:>10}  {cp:<20} {ours * 1e3:>10.2f} {peer * 1e3:>13.2f} "
              f"{peer / ours:>5.1f}x", flush=True)

    writers = [int(s) for s in args.writers.split(",") if s]
    if writers:
        print(f"\ncommit throughput ({args.commits} commits per writer process, one table):")
        print(f"{'writers':>8} {'commits':>8} {'sluice/s':>9} {'attempts':>9} "
              f"{'bare O_EXCL/s':>14} {'ratio':>6}")
        for p, n, ours, attempts, peer in throughput(root, writers, args.commits):
            print(f"{p:>8} {n:>8} {ours:>9.1f} {attempts:>9.2f} {peer:>14.1f} "
                  f"{ours / peer:>5.2f}x", flush=True)
    if not args.root:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
