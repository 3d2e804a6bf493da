#!/usr/bin/python3
"""The node-local cache against a real S3 server (Ceph RGW on loopback, started here with
scripts/s3-server and stopped at the end), every contender on the same data in one run
(docs/cache.md, "Figures on a real S3 server"):

  speed     one epoch of the same pipeline over the same shards, read from
              local files             the shards on local disk (cache off: the default there)
              s3, cache=False         straight from RGW
              s3, cache cold (e1)     the DEFAULT read of s3:// (cache on, default directory
                                      via XDG_CACHE_HOME = a fresh temp dir, default size)
              s3, cache warm (e2)     the next two epochs of the same dataset, same process
                                      (orders 1 and 2), each right after the local epoch of
                                      the same order
            records/s, MB/s (stored bytes per second), the reader's CPU seconds (all its
            threads; less sensitive to other load than wall time) and the ratios to local
            files; local and warm: best of 2 x --repeat epochs, cold: best of --repeat,
            cache=False: once (it is ~5x slower); the contenders interleaved so all meet the
            same load. Also the paired ratios (each warm epoch / the local epoch just before
            it): their median and range.
            Pipelines: "records": read -> shuffle (chunks, the default) -> batch(256) of the
            jsonl dataset (zstd shards of `sluice convert jsonl`, default options); "images":
            read -> shuffle -> parse_example -> decode_image(RandomResizedCrop 224, flip,
            normalize) -> batch(256) of `sluice convert images` shards (default options).
  capacity  3 epochs of the records pipeline from S3 through a cache of 25/50/75/100% of the
            stored bytes (fresh directory each): per epoch the cache's hit rate, the hit rate an
            LRU of the same capacity would have had on the same reads (the cache simulates it),
            and the bytes actually received from RGW (the HTTP engine's counter); then the same
            sizes replayed without disks or network by build/bin/cache_policy_bench on its own
            synthetic dataset (future vs LRU vs MIN), for comparison.

Prints the tables and the command; writes results.json to --out.

    /usr/bin/python3 bench/cache/rgw_bench.py [--build build] [--mb 300] [--images 2000]
        [--repeat 3] [--window-chunks 8] [--only speed,images,capacity] [--out bench/out/cache]

Every read here keeps no decoded chunks between its epochs (keep_decoded_chunks=False): the
warm rows measure the cache, not the decoded chunks a read that fits in memory keeps.

Loopback: RGW shares the 2 cores with the reader, so S3 rows without a cache are pessimistic
for a real network only in CPU, optimistic in latency; the warm-cache row does not touch RGW.
"""
import argparse
import gzip
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from s3_server import S3Server  # noqa: E402

DOCS = pathlib.Path("/usr/share/doc/linux-doc-6.1/Documentation")
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def write_jsonl(path, mb):
    """Paragraphs of the kernel's documentation (linux-doc-6.1), one record each, repeated
    until `mb` MB of text."""
    paragraphs = []
    for f in sorted(DOCS.rglob("*.gz")):
        try:
            text = gzip.open(f, "rt", errors="replace").read()
        except (OSError, EOFError):
            continue
        paragraphs += [p for p in text.split("\n\n") if p.strip()]
    target, written, i = mb * 1_000_000, 0, 0
    with open(path, "w") as out:
        while written < target:
            p = paragraphs[i % len(paragraphs)]
            out.write(json.dumps({"id": i, "text": p}) + "\n")
            written += len(p)
            i += 1
    return i


def convert(build, env, kind, source, outs):
    for out in outs:
        subprocess.run([str(build / "bin" / "sluice"), "convert", kind, str(source), out],
                       check=True, stdout=subprocess.DEVNULL, env=env)


def stored_bytes(folder):
    return sum(p.stat().st_size for p in pathlib.Path(folder).iterdir()
               if ".tfrecord" in p.name and not p.name.endswith(".idx"))


# Every read here measures the node-local cache: a read keeps nothing decoded between its
# iterators (keep_decoded_chunks=False), or a warm epoch of a dataset that fits in memory would
# not touch the cache at all (docs/pipeline.md, "Decoded chunks kept between epochs").
NO_KEEP = {"keep_decoded_chunks": False}


def records_pipeline(path, **read_options):
    import sluice
    return sluice.read(path, **NO_KEEP, **read_options).shuffle(seed=1).batch(256).prefetch(2)


def images_pipeline(path, **read_options):
    import sluice
    return (sluice.read(path, **NO_KEEP, **read_options)
            .shuffle(seed=1)
            .parse_example({"image/encoded": "bytes", "image/class/label": "int64"})
            .decode_image("image/encoded", sluice.vision.RandomResizedCrop(224),
                          sluice.vision.RandomHorizontalFlip(),
                          sluice.vision.Normalize(mean=MEAN, std=STD),
                          layout="NCHW", dtype="float32", output="image")
            .batch(256)
            .prefetch(2))


def cpu_seconds():
    """CPU time of this process, all threads (RGW, a separate process, is not in it)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_epoch(ds, epoch):
    """(records, seconds, iterator, cpu seconds) of one epoch."""
    n = sum(ds.shard_records)
    it = ds.iterator(epoch=epoch)
    start, cpu = time.perf_counter(), cpu_seconds()
    seen = 0
    for b in it:
        seen += len(next(iter(b.values()))) if isinstance(b, dict) else len(b)
    seconds = time.perf_counter() - start
    assert seen == n, (seen, n)
    return n, seconds, it, cpu_seconds() - cpu


LOCAL, NOCACHE, COLD, WARM = ("local files", "s3, cache=False", "s3, default read, cold cache (e1)",
                               "s3, default read, warm cache (e2)")


def speed(args, pipeline, local, remote, stored, workdir):
    best = {k: (0.0, float("inf")) for k in (LOCAL, NOCACHE, COLD, WARM)}  # (records/s, cpu s)

    def note(name, n, sec, cpu):
        best[name] = (max(best[name][0], n / sec), min(best[name][1], cpu))

    detail = {}
    paired = []  # per repetition: warm epoch / local epoch of the same order, back to back
    for rep in range(args.repeat):
        if rep == 0:  # ~10x slower than the others: once
            n, sec, it0, cpu = run_epoch(pipeline(remote, cache=False), 0)
            note(NOCACHE, n, sec, cpu)
            nocache_network = it0.stats()["network"]
        # The default read: cache on for s3://, default directory (XDG_CACHE_HOME) and size.
        os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(dir=workdir, prefix=f"xdg{rep}-")
        ds = pipeline(remote)
        n, sec, it1, cpu = run_epoch(ds, 0)
        note(COLD, n, sec, cpu)
        # Warm epochs 1 and 2 (epoch 2 of training and the next), each right after the local
        # epoch of the same order: both rows get as many samples, under the same load.
        for epoch in (1, 2):
            n, sec_local, _, cpu = run_epoch(pipeline(local), epoch)
            note(LOCAL, n, sec_local, cpu)
            n, sec, it2, cpu = run_epoch(ds, epoch)
            note(WARM, n, sec, cpu)
            paired.append(sec_local / sec)
        detail = {"nocache": {"network": nocache_network},
                  "e1": {"cache": it1.stats()["cache"], "network": it1.stats()["network"]},
                  "e2": {"cache": it2.stats()["cache"], "network": it2.stats()["network"]}}
    table = []
    for name, (rate, cpu) in best.items():
        table.append({"read": name, "records_per_s": rate, "mb_per_s": rate * stored / n / 1e6,
                      "vs_local": rate / best[LOCAL][0], "cpu_seconds": cpu,
                      "cpu_vs_local": cpu / best[LOCAL][1]})
    return {"records": n, "stored_bytes": stored, "repeat": args.repeat, "rows": table,
            "warm_vs_local_paired": paired, "last_run": detail}


def print_speed(title, r):
    print(f"\n{title}: {r['records']:,} records, {r['stored_bytes'] / 1e6:.1f} MB stored, "
          f"load {os.getloadavg()[0]:.1f}\n")
    print("| read | records/s | MB/s | / local files | CPU s of the reader | / local files |\n"
          "|---|---|---|---|---|---|")
    for row in r["rows"]:
        print(f"| {row['read']} | {row['records_per_s']:,.0f} | {row['mb_per_s']:.1f} | "
              f"{row['vs_local']:.2f}x | {row['cpu_seconds']:.2f} | {row['cpu_vs_local']:.2f}x |")
    paired = sorted(r["warm_vs_local_paired"])
    print(f"  warm / local, each warm epoch against the local epoch of the same order run just "
          f"before it: median {paired[len(paired) // 2]:.2f}x, "
          f"range {paired[0]:.2f}-{paired[-1]:.2f}x over {len(paired)} pairs")
    e1, e2 = r["last_run"]["e1"], r["last_run"]["e2"]
    net = r["last_run"]["nocache"]["network"] or {}
    print(f"  cache=False: from RGW {net.get('bytes_received', 0) / 1e6:.1f} MB in "
          f"{net.get('requests', 0)} requests")
    for name, e in (("e1", e1), ("e2", e2)):
        c, net = e["cache"], e["network"] or {}
        print(f"  {name}: hit rate {100 * c['hit_rate']:.1f}%, fetched "
              f"{c['fetched_bytes'] / 1e6:.1f} MB, from RGW {net.get('bytes_received', 0) / 1e6:.1f}"
              f" MB in {net.get('requests', 0)} requests, waited {c['fetch_wait_seconds']:.2f} s")


def capacity(args, remote, stored, workdir):
    rows = []
    for pct in (25, 50, 75, 100):
        cache_dir = tempfile.mkdtemp(dir=workdir, prefix=f"cap{pct}-")
        ds = _windowed(remote, cache_dir, stored * pct // 100, args.window_chunks)
        for epoch in range(3):
            _, _, it, _ = run_epoch(ds, epoch)
            st = it.stats()
            c, net = st["cache"], st["network"] or {}
            rows.append({"cache_pct": pct, "epoch": epoch + 1, "policy": c["policy"],
                         "hit_rate": c["hit_rate"], "lru_hit_rate": c["lru_hit_rate"],
                         "reads": c["reads"], "fetched_bytes": c["fetched_bytes"],
                         "rgw_bytes": net.get("bytes_received", 0),
                         "rgw_requests": net.get("requests", 0)})
    return rows


def _windowed(remote, cache_dir, cache_bytes, window_chunks):
    import sluice
    return (sluice.read(remote, cache_dir=cache_dir, cache_bytes=cache_bytes, **NO_KEEP)
            .shuffle(seed=1, window_chunks=window_chunks).batch(256).prefetch(2))


def print_capacity(rows, stored, window_chunks):
    print(f"\ncapacity: 3 epochs of the records pipeline from RGW (shuffle window_chunks="
          f"{window_chunks}), cache = % of the {stored / 1e6:.1f} MB of shards (their indexes "
          f"come on top), load {os.getloadavg()[0]:.1f}\n")
    print("| cache | epoch | chunk reads | hit rate (sluice) | LRU on the same reads | "
          "from RGW MB | / dataset |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['cache_pct']}% | {r['epoch']} | {r['reads']} | {100 * r['hit_rate']:.1f}% | "
              f"{100 * r['lru_hit_rate']:.1f}% | {r['rgw_bytes'] / 1e6:.1f} | "
              f"{r['rgw_bytes'] / stored:.2f}x |")


def replay(build):
    out = subprocess.run([str(build / "bin" / "cache_policy_bench")], check=True,
                         capture_output=True, text=True, timeout=900).stdout
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--mb", type=int, default=300, help="MB of text in the records dataset")
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--window-chunks", type=int, default=8,
                   help="shuffle window of the capacity part (0: the default window)")
    p.add_argument("--only", default="speed,images,capacity")
    p.add_argument("--out", default=str(ROOT / "bench" / "out" / "cache"))
    args = p.parse_args()
    build = pathlib.Path(args.build).resolve()
    sys.path.insert(0, str(build / "python"))
    parts = set(args.only.split(","))
    results = {"load_before": os.getloadavg()}
    print(f"load average {os.getloadavg()[0]:.2f} at start; {os.cpu_count()} cores")
    with S3Server() as server, tempfile.TemporaryDirectory() as workdir:
        saved = dict(os.environ)
        env = server.environ()
        bucket = server.bucket("bench-cache")
        work = pathlib.Path(workdir)
        t = time.perf_counter()
        records = write_jsonl(work / "docs.jsonl", args.mb)
        convert(build, env, "jsonl", work / "docs.jsonl",
                [str(work / "text"), f"s3://{bucket}/text"])
        stored = stored_bytes(work / "text")
        index = sum(p.stat().st_size for p in (work / "text").glob("*.idx"))
        print(f"records dataset: {records:,} paragraphs, {stored / 1e6:.1f} MB of zstd shards "
              f"+ {index / 1e6:.1f} MB of indexes, uploaded in {time.perf_counter() - t:.0f} s")
        results["records_dataset"] = {"records": records, "shard_bytes": stored,
                                      "index_bytes": index}
        os.environ.clear()
        os.environ.update(env)
        try:
            if "speed" in parts:
                r = speed(args, records_pipeline, str(work / "text"), f"s3://{bucket}/text",
                          stored, workdir)
                print_speed("speed, records (read -> shuffle -> batch(256))", r)
                results["speed_records"] = r
            if "images" in parts:
                folder = work / "images"
                per_class = max(1, args.images // len(list(
                    pathlib.Path("/usr/share/backgrounds").glob("*.jpg"))))
                subprocess.run([sys.executable, str(ROOT / "scripts" / "make-sample-images"),
                                str(folder), "--per-class", str(per_class), "--size", "500x375"],
                               check=True, stdout=subprocess.DEVNULL)
                convert(build, env, "images", folder,
                        [str(work / "img"), f"s3://{bucket}/img"])
                r = speed(args, images_pipeline, str(work / "img"), f"s3://{bucket}/img",
                          stored_bytes(work / "img"), workdir)
                print_speed("speed, images (decode_image 224, batch(256))", r)
                results["speed_images"] = r
            if "capacity" in parts:
                rows = capacity(args, f"s3://{bucket}/text", stored, workdir)
                print_capacity(rows, stored, args.window_chunks)
                results["capacity"] = rows
        finally:
            os.environ.clear()
            os.environ.update(saved)
    if "capacity" in parts:
        out = replay(build)
        print("\nreplay (build/bin/cache_policy_bench, its synthetic dataset, no disk/network):")
        print(out)
        results["replay"] = out
    results["load_after"] = os.getloadavg()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(f"load average {os.getloadavg()[0]:.2f} at the end; results in {out}/results.json")
    print("\n/usr/bin/python3 bench/cache/rgw_bench.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
