#!/usr/bin/python3
"""The default shuffle (chunks mode) side by side, in one run (docs/order.md):

1. speed: 200k JSON lines of ~20 bytes converted with `sluice convert jsonl --shard-size
   200KB` (zstd, the default) and with `--codec none`; `read -> shuffle() -> batch(256)`
   iterated from Python, in every shuffle mode, next to a torch DataLoader (shuffle=True)
   over the same records held in memory (workers=0 timed in turn with the default shuffle,
   an epoch after each of sluice's; workers=2 after every sluice row); the first epoch of a fresh read (its chunks
   decoded; the epochs after it start with them, keep_decoded_chunks); and restore + first
   batch into a fresh read;
2. decodes per chunk: 4 ranks (4 pipelines, rank r of 4) read one epoch each; chunk decodes
   summed over the ranks / chunks of the dataset;
3. shuffle quality: records sorted by label (100 labels, contiguous); distinct labels per
   batch of 256 and a positional chi-square (labels x 100 position bins, statistic / degrees
   of freedom: ~1 for a random order) at window sizes from one chunk per lane to the whole
   dataset, next to a true random permutation (numpy), for one rank's batches and for the
   global batches of 4 ranks (each rank's batch of 64, stacked).

Every contender is pinned to the same CPUs (default 2).

Reproduce:
  make build && /usr/bin/python3 bench/order/run.py [--records 200000] [--cores 2]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))

import sluice  # noqa: E402
from peers import collate, count, pinned, restore_ms  # noqa: E402

BATCH = 256


def make_jsonl(path, n):
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"text": f"{words[i % 8]} {i:07d} {words[(i * 7) % 8]}"}) + "\n")


def convert(jsonl, out, codec):
    cmd = [str(BUILD / "bin" / "sluice"), "convert", "jsonl", str(jsonl), str(out),
           "--shard-size", "200KB"]
    if codec != "zstd":
        cmd += ["--codec", codec]
    subprocess.run(cmd, check=True, capture_output=True)
    return cmd


def records_per_second(ds, limit=None, reps=3):
    best = 0.0
    for _ in range(reps):
        it = ds.iterator(epoch=0, threads=0)
        t0 = time.perf_counter()
        n = 0
        for batch in it:
            n += len(batch["record"])
            if limit and n >= limit:
                break
        best = max(best, n / (time.perf_counter() - t0))
    return best


def dataloader_records_per_second(records, workers, reps=3):
    import torch
    from torch.utils.data import DataLoader

    from peers import Records
    torch.set_num_threads(1)
    best = 0.0
    extra = {"prefetch_factor": 2} if workers else {}
    for _ in range(reps):
        loader = DataLoader(Records(records), batch_size=BATCH, shuffle=True,
                            collate_fn=collate, num_workers=workers, **extra)
        t0 = time.perf_counter()
        n = count(loader)
        best = max(best, n / (time.perf_counter() - t0))
    return best


def restore_middle_ms(make_ds):
    """Restore + first batch from a state saved in the middle of the epoch, into a fresh
    read (as after a restart: nothing decoded yet)."""
    ds = make_ds()
    it = ds.iterator(epoch=0)
    for _ in range(len(ds) // 2):
        next(it)
    state = it.state()
    it.close()
    del it, ds  # its kept chunks go (their buffers are recycled) before the restores
    return restore_ms(make_ds, state)


def speed(args, tmp):
    jsonl = tmp / "lines.jsonl"
    make_jsonl(jsonl, args.records)
    dirs = {}
    for codec in ("zstd", "none"):
        dirs[codec] = tmp / f"lines-{codec}"
        cmd = convert(jsonl, dirs[codec], codec)
    print("data: " + " ".join(cmd[:3]) + f" lines.jsonl OUT --shard-size 200KB [--codec none]; "
          f"{args.records:,} lines")
    rows = []
    bases = {codec: sluice.read(str(dirs[codec])) for codec in ("zstd", "none")}
    chunks = {codec: base.num_chunks for codec, base in bases.items()}
    with pinned(args.cores):
        # One untimed epoch of each first: a fresh process's first epoch pays the first touch
        # of its memory (thread stacks, allocator arenas, decoded chunks; ~4.5 ms per MB on
        # these VMs), which would land on whichever row ran first. Then each mode runs on
        # both codecs, one epoch each in turn, best of 3, so both meet the same load.
        for base in bases.values():
            records_per_second(base.shuffle(seed=0).batch(BATCH), reps=1)
        # The DataLoader with workers=0 (the faster peer here) runs in turn with the default
        # shuffle too, an epoch after each of sluice's: the host's speed moves by up to 2x
        # within a run on these shared VMs, and the ratio should compare the same moments.
        records = [r for b in sluice.read(str(dirs["none"])).batch(4096) for r in b["record"]]
        peer0 = 0.0
        for mode in ("chunks", "global", "block", "buffer", "none"):
            best = {}
            for _ in range(3):
                for codec in ("zstd", "none"):
                    base = bases[codec]
                    ds = (base.shuffle(seed=0, mode=mode) if mode != "none" else base).batch(BATCH)
                    limit = 20000 if (codec, mode) in (("zstd", "global"), ("zstd", "block")) else None
                    best[codec] = max(best.get(codec, 0.0), records_per_second(ds, limit, reps=1))
                if mode == "chunks":
                    peer0 = max(peer0, dataloader_records_per_second(records, 0, reps=1))
            rows += [(codec, mode, r) for codec, r in best.items()]
        # The first epoch of a fresh read: every chunk decoded (fetched) in it.
        first = {}
        for _ in range(3):
            for codec in ("zstd", "none"):
                ds = sluice.read(str(dirs[codec])).shuffle(seed=0).batch(BATCH)
                first[codec] = max(first.get(codec, 0.0), records_per_second(ds, reps=1))
        # workers=2 on its own, after sluice's rows: its forked workers slow what runs next.
        peers = [(0, peer0), (2, dataloader_records_per_second(records, 2))]
        restore = {c: restore_middle_ms(
            lambda c=c: sluice.read(str(dirs[c])).shuffle(seed=0).batch(BATCH))
                   for c in ("zstd", "none")}
    rate = {(c, m): r for c, m, r in rows}
    print(f"\nread -> shuffle(mode) -> batch({BATCH}) from Python, records/s (M), "
          f"{args.cores} CPUs; chunks: zstd {chunks['zstd']}, none {chunks['none']}")
    print(f"{'mode':<22} {'zstd':>8} {'none':>8} {'zstd / none':>12}")
    for mode in ("chunks", "global", "block", "buffer", "none"):
        z, u = rate[("zstd", mode)], rate[("none", mode)]
        label = mode + (" (default)" if mode == "chunks" else "")
        print(f"{label:<22} {z / 1e6:>8.3f} {u / 1e6:>8.3f} {z / u:>11.2f}x")
    print(f"{'chunks, a fresh read':<22} {first['zstd'] / 1e6:>8.3f} {first['none'] / 1e6:>8.3f} "
          f"{first['zstd'] / first['none']:>11.2f}x  (its first epoch: every chunk decoded)")
    best_peer = max(r for _, r in peers)
    print(f"\n{'peer (same records, in memory)':<40} {'records/s (M)':>14} {'sluice zstd / peer':>19}")
    for w, r in peers:
        print(f"{'torch DataLoader(shuffle=True), workers=' + str(w):<40} {r / 1e6:>14.3f} "
              f"{rate[('zstd', 'chunks')] / r:>18.1f}x")
    print(f"\ndefault shuffle, zstd / none: {rate[('zstd', 'chunks')] / rate[('none', 'chunks')]:.2f}x "
          f"(goal >= 0.8x); zstd / best DataLoader: {rate[('zstd', 'chunks')] / best_peer:.1f}x "
          f"(goal >= 10x)")
    print(f"restore (middle of the epoch) + first batch, default shuffle: zstd "
          f"{restore['zstd']:.2f} ms, none {restore['none']:.2f} ms (goal < 5 ms on zstd)")


def write_sorted(tmp, n, labels, record_bytes):
    """n records sorted by label; record i = its label (2 bytes LE) + padding."""
    out = tmp / "sorted"
    out.mkdir()
    per_shard = 20000
    pad = b"x" * (record_bytes - 2)
    paths = []
    for s in range(0, n, per_shard):
        path = out / f"part-{s // per_shard:03d}.tfrecord.zst"
        sluice.write_records(str(path), ((i * labels // n).to_bytes(2, "little") + pad
                                         for i in range(s, min(n, s + per_shard))))
        paths.append(str(path))
    return paths


def labels_of(ds):
    out = []
    for batch in ds:
        values, offsets = batch["record"].values, batch["record"].offsets
        starts = offsets[:-1].astype(np.int64)
        out.append(values[starts].astype(np.int64) | (values[starts + 1].astype(np.int64) << 8))
    return np.concatenate(out)


def quality_stats(order_labels, labels, batch):
    n = len(order_labels) // batch * batch
    x = order_labels[:n].reshape(-1, batch)
    distinct = np.mean([len(np.unique(row)) for row in x])
    bins = 100
    pos = np.arange(len(order_labels)) * bins // len(order_labels)
    table = np.zeros((labels, bins))
    np.add.at(table, (order_labels, pos), 1)
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    chi = ((table - expected) ** 2 / np.maximum(expected, 1e-12)).sum()
    return distinct, chi / ((labels - 1) * (bins - 1))


def ranks_global_order(ds, world, per_rank):
    """Global batches: step t stacks batch t of every rank (batch per_rank each)."""
    per = [labels_of(ds.shard(r, world).batch(per_rank)) for r in range(world)]
    steps = min(len(p) for p in per) // per_rank
    return np.concatenate([np.concatenate([p[t * per_rank:(t + 1) * per_rank] for p in per])
                           for t in range(steps)])


def quality(args, tmp):
    labels = 100
    paths = write_sorted(tmp, args.quality_records, labels, args.quality_bytes)
    base = sluice.read(paths)
    chunks = base.num_chunks
    lanes = base.shuffle(seed=1)  # the default lanes for this dataset
    print(f"\nshuffle quality: {args.quality_records:,} records of {args.quality_bytes} bytes "
          f"sorted by label ({labels} labels, contiguous), {chunks} chunks; batches of {BATCH}")
    print(f"{'order':<36} {'1 rank: labels/batch':>21} {'chi2/df':>9} "
          f"{'4 ranks: labels/batch':>22} {'chi2/df':>9}")
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(labels), args.quality_records // labels)
    perm = truth[rng.permutation(len(truth))]
    d, c = quality_stats(perm, labels, BATCH)
    print(f"{'true random permutation (numpy)':<36} {d:>21.1f} {c:>9.2f} {d:>22.1f} {c:>9.2f}")
    seq = labels_of(base.batch(BATCH))
    d, c = quality_stats(seq, labels, BATCH)
    print(f"{'no shuffle':<36} {d:>21.1f} {c:>9.1f} {'':>22} {'':>9}")
    windows = [w for w in (1, 4, 16, 64) if w < chunks] + [chunks]
    for window in windows:
        ds = base.shuffle(seed=1, window_chunks=window)
        one = labels_of(ds.batch(BATCH))
        four = ranks_global_order(ds, 4, BATCH // 4)
        d1, c1 = quality_stats(one, labels, BATCH)
        d4, c4 = quality_stats(four, labels, BATCH)
        name = f"chunks, window {window} chunk{'s' if window > 1 else ''}" + (
            " (all)" if window == chunks else "")
        print(f"{name:<36} {d1:>21.1f} {c1:>9.2f} {d4:>22.1f} {c4:>9.2f}")
    d, c = quality_stats(labels_of(lanes.batch(BATCH)), labels, BATCH)
    print(f"{'chunks, default window (1 GiB budget)':<36} {d:>21.1f} {c:>9.2f}")
    d, c = quality_stats(labels_of(base.shuffle(seed=1, mode="global").batch(BATCH)), labels, BATCH)
    print(f"{'global (per-record permutation)':<36} {d:>21.1f} {c:>9.2f}")
    return paths


def decodes(args, paths):
    chunks = sluice.read(paths).num_chunks
    print(f"\nchunk decodes per epoch, {chunks} chunks, default shuffle (lanes from the dataset):")
    print(f"{'ranks':<8} {'decodes (sum)':>14} {'/ chunks':>9}")
    for world in (1, 2, 4):
        total = 0
        for rank in range(world):  # a read per rank, as in a process per rank
            ds = sluice.read(paths).shuffle(seed=3).shard(rank, world).batch(BATCH)
            it = ds.iterator(epoch=0)
            for _ in it:
                pass
            total += it.stats()["stages"][0]["chunk_decodes"]
        print(f"{world:<8} {total:>14} {total / chunks:>8.2f}x")
    print("(goal with 4 ranks: <= 1.1x)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--quality-records", type=int, default=200_000)
    p.add_argument("--quality-bytes", type=int, default=1000)
    p.add_argument("--skip-speed", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if not args.skip_speed:
            speed(args, tmp)
        paths = quality(args, tmp)
        decodes(args, paths)
    print("\nReproduce: make build && /usr/bin/python3 bench/order/run.py "
          f"--records {args.records} --cores {args.cores}")


if __name__ == "__main__":
    sys.exit(main())
