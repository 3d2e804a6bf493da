#!/usr/bin/python3
"""S3 benchmarks against a real server on loopback (Ceph RGW, started here with
scripts/s3-server and stopped at the end), all contenders on the same data in one run:

  throughput  ~--mb MB in --objects objects read whole, best of --repeat:
              sluice       build/bin/s3_read_bench objects --serve (S3 file system: 8 MiB
                           parallel ranged GETs, 64 requests in flight: the defaults), one
                           long-lived process whose rounds are timed in turn with the others
              boto3        16 threads, get_object(...)["Body"].read() of every object
              curl         `curl --parallel --parallel-max 64 --aws-sigv4` of every object
  images      one shuffled epoch of JPEGs through the image pipeline (read -> shuffle ->
              parse_example -> decode_image(RandomResizedCrop(224), flip, normalize) ->
              batch(256)), 2 threads, shards on S3 against the same shards on local disk
  hedging     --reads random --read-kb KiB ranged reads of one object, --concurrency at a
              time, through the fault proxy (tests/tools/fault_proxy.py) adding 500 ms to 1%
              of first bytes;
              p50/p99/p99.9 with and without hedging, and the duplicates sent

Prints a ratio table per part and the command; writes results.json to --out.

    /usr/bin/python3 bench/s3/run.py [--build build] [--mb 200] [--objects 50] [--repeat 3]
        [--images 2000] [--reads 3000] [--read-kb 64] [--concurrency 4]
        [--only throughput,images,hedging] [--out bench/out/s3]

Loopback numbers: no network between client and server, and the server shares the 2 cores
with the clients, so absolute MB/s say little; the ratios (same server, same data, same run)
are the point.
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(ROOT / "tests" / "tools"))
from s3_server import S3Server  # noqa: E402
from tool_servers import FaultProxy  # noqa: E402

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def upload_shards(server, bucket, count, size, workdir):
    """`count` shards of ~`size` bytes (4 KiB records of random bytes, codec none: what a
    dataset of JPEGs is like) written by sluice with their indexes (as `sluice convert`
    writes them), uploaded under obj/ with boto3. The keys of the shards, and their bytes:
    what boto3, curl and the file system read (the pipeline reads the indexes too)."""
    import sluice
    record = 4096
    per_shard = max(1, size // (record + 16))
    folder = pathlib.Path(workdir) / "shards"
    folder.mkdir(exist_ok=True)
    keys = []
    for i in range(count):
        path = folder / f"part-{i:05d}.tfrecord"
        sluice.write_records(str(path), (os.urandom(record) for _ in range(per_shard)))
        keys.append(f"obj/{path.name}")
    indexes = [f"{k}.idx" for k in keys if os.path.exists(folder / f"{k[4:]}.idx")]
    client = server.client()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: client.upload_file(str(folder / k[4:]), bucket, k),
                      keys + indexes))
    sizes = [(folder / k[4:]).stat().st_size for k in keys]
    return keys, sum(sizes)


def time_boto3(client, bucket, keys):
    def get(key):
        return len(client.get_object(Bucket=bucket, Key=key)["Body"].read())

    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        total = sum(pool.map(get, keys))
    return total, time.perf_counter() - start


def time_curl(server, bucket, keys, workdir):
    config = pathlib.Path(workdir) / "curl.cfg"
    lines = ['aws-sigv4 = "aws:amz:us-east-1:s3"',
             f'user = "{server.env["AWS_ACCESS_KEY_ID"]}:{server.env["AWS_SECRET_ACCESS_KEY"]}"',
             'header = "x-amz-content-sha256: UNSIGNED-PAYLOAD"', "parallel", "parallel-max = 64",
             "silent", "fail"]
    for key in keys:
        lines += [f'url = "{server.endpoint}/{bucket}/{key}"', 'output = "/dev/null"']
    config.write_text("\n".join(lines) + "\n")
    start = time.perf_counter()
    subprocess.run(["curl", "-s", "-K", str(config)], check=True)
    return time.perf_counter() - start


class SluiceReader:
    """A long-lived `s3_read_bench objects --serve` process: each round() reads every object
    once in it, as a training job's reader does epoch after epoch (its buffers and
    connections warm), like boto3's client in this process."""

    def __init__(self, build, server, uri, *flags):
        self.proc = subprocess.Popen(
            [str(build / "bin" / "s3_read_bench"), "objects", uri, "--serve", *flags],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=server.environ())

    def round(self):  # -> (bytes, seconds, client CPU seconds)
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"s3_read_bench exited with {self.proc.wait()}")
        row = json.loads(line)
        return row["bytes"], row["seconds"], row["cpu_seconds"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def sluice_stats(build, server, uri):
    """The engine's stats of one read of every object (requests, attempts, first bytes)."""
    out = subprocess.run([str(build / "bin" / "s3_read_bench"), "objects", uri, "--repeat", "1",
                          "--skip-suffix", ".idx"], check=True, capture_output=True, text=True,
                         env=server.environ()).stdout
    return json.loads(out.strip().splitlines()[-1])


def time_pipeline(server, uri, **read_options):
    """sluice.read(uri, **read_options).batch(256), every record, in this process: seconds,
    CPU seconds, payload bytes."""
    import sluice
    saved = {k: os.environ.get(k) for k in server.environ()}
    os.environ.update(server.environ())
    try:
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        payload = 0
        for batch in sluice.read(uri, **read_options).batch(256):
            payload += len(batch["record"].values)
        seconds = time.perf_counter() - start
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return seconds, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, payload


def throughput(args, build, server, workdir):
    bucket = server.bucket("bench-throughput")
    size = args.mb * 1000 * 1000 // args.objects
    keys, total = upload_shards(server, bucket, args.objects, size, workdir)
    uri = f"s3://{bucket}/obj"
    names = ["sluice", "sluice_recycled", "pipeline", "pipeline_cold_cache", "boto3", "curl"]
    best = {k: float("inf") for k in names}
    cpu = {k: float("inf") for k in names}
    server_cpu = {k: float("inf") for k in names}
    stats = None

    def client_cpu(who):  # user + system seconds of this process or of its waited children
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    def run(name, fn):  # fn() -> (seconds, client CPU seconds)
        s0 = server.daemon_cpu_seconds()
        seconds, client = fn()
        best[name] = min(best[name], seconds)
        cpu[name] = min(cpu[name], client)
        server_cpu[name] = min(server_cpu[name], server.daemon_cpu_seconds() - s0)

    readers = {flags: SluiceReader(build, server, uri, "--skip-suffix", ".idx", *flags)
               for flags in ((), ("--reuse-buffers",))}

    def objects(*flags):
        got, seconds, client = readers[flags].round()
        assert got == total, (got, total)
        return seconds, client  # the timed reads only

    def pipeline(**read_options):
        seconds, client, payload = time_pipeline(server, uri, **read_options)
        assert payload > 0.99 * total * 4096 / (4096 + 16), payload
        return seconds, client

    rounds = itertools.count()

    s3 = server.client()

    def boto3():
        c0 = client_cpu(resource.RUSAGE_SELF)
        got, seconds = time_boto3(s3, bucket, keys)
        assert got == total
        return seconds, client_cpu(resource.RUSAGE_SELF) - c0

    def curl():
        c0 = client_cpu(resource.RUSAGE_CHILDREN)
        seconds = time_curl(server, bucket, keys, workdir)
        return seconds, client_cpu(resource.RUSAGE_CHILDREN) - c0

    def cold_cache():  # the default cache, cold: a new directory each time
        # The last round's directory goes first (untimed), as on a machine whose cache evicts:
        # kept, every round's chunk files would take never-used memory, and on this VM the
        # first touch of guest memory costs ~13 us of system time per page (docs/s3.md).
        n = next(rounds)
        shutil.rmtree(pathlib.Path(workdir) / f"cache-{n - 1}", ignore_errors=True)
        return pipeline(cache_dir=str(pathlib.Path(workdir) / f"cache-{n}"))

    contenders = [("sluice_recycled", lambda: objects("--reuse-buffers")),
                  ("pipeline", lambda: pipeline(cache=False)),
                  ("pipeline_cold_cache", cold_cache), ("sluice", objects),
                  ("boto3", boto3), ("curl", curl)]
    # A round of each first, untimed: every reader is then warm (its process's memory and
    # its connections), as a job's is after its first epoch. Before, each round of sluice's
    # file system ran in a new process against boto3 in this long-lived one: 200 MB of new
    # buffers faulted in per round (~0.5 s/GB of client CPU on this VM) made it 0.3-0.6x
    # boto3 where a warm reader is 1.5-1.9x.
    for name, fn in contenders:
        fn()
    for r in range(args.repeat):  # interleaved, so all meet the same load; the order rotates
        for name, fn in contenders[r % len(contenders):] + contenders[:r % len(contenders)]:
            run(name, fn)
    for reader in readers.values():
        reader.close()
    stats = sluice_stats(build, server, uri)
    rates = {k: total / v / 1e6 for k, v in best.items()}
    cpu_per_gb = {k: v / (total / 1e9) for k, v in cpu.items()}
    server_per_gb = {k: v / (total / 1e9) for k, v in server_cpu.items()}
    shards = len(keys)
    print(f"\nthroughput: {shards} shards (4 KiB records, codec none) of ~{total / shards / 1e6:.1f} MB "
          f"= {total / 1e6:.0f} MB (and their indexes, read by the pipeline only) from RGW on "
          f"loopback, best of {args.repeat}; client CPU = the "
          "reader's own user + system seconds, per GB: of the timed reads for sluice's "
          "file system (in its process), of the whole read for the pipeline and boto3 "
          "(in-process) and for curl (its process); server CPU: the RGW, OSD and monitor "
          "daemons' during the read")
    print(f"  {'reader':<58} {'MB/s':>6} {'sluice / it':>12} {'client CPU s/GB':>16} "
          f"{'server CPU s/GB':>16}")
    rows = [("sluice", "sluice file system, fresh buffers (s3_read_bench objects)"),
            ("sluice_recycled", "sluice file system, recycled buffers (--reuse-buffers)"),
            ("pipeline", "sluice.read(s3://..., cache=False).batch(256), all"),
            ("pipeline_cold_cache", "same, node-local cache on (the default), cold"),
            ("boto3", "boto3 get_object, 16 threads"),
            ("curl", "curl --parallel --parallel-max 64")]
    for name, label in rows:
        print(f"  {label:<58} {rates[name]:>6.0f} {rates['pipeline'] / rates[name]:>11.2f}x "
              f"{cpu_per_gb[name]:>16.2f} {server_per_gb[name]:>16.2f}")
    print("  (sluice / it: the pipeline's rate over the row's)")
    for name, label in (("sluice", "file system, fresh buffers"),
                        ("sluice_recycled", "file system, recycled buffers"),
                        ("pipeline", "pipeline, cache=False"),
                        ("pipeline_cold_cache", "pipeline, defaults (cache cold)")):
        print(f"  sluice {label}: {rates[name] / rates['boto3']:.2f}x boto3 (goal >= 1.3x), "
              f"{rates[name] / rates['curl']:.2f}x curl (goal >= 0.9x)")
    # The server shares the machine's CPUs with the reader: at best (a reader costing no
    # CPU at all, every CPU busy serving) it can send ncpu / (server CPU s per GB) GB/s.
    ncpu = len(os.sched_getaffinity(0))
    floor = min(server_per_gb.values())
    ceiling = ncpu / floor * 1e3
    print(f"  server-bound ceiling: {ncpu} CPUs / {floor:.2f} server CPU s/GB = {ceiling:.0f} "
          f"MB/s, i.e. {ceiling / rates['boto3']:.2f}x boto3's rate and "
          f"{ceiling / rates['curl']:.2f}x curl's for a reader that costs nothing")
    return {"shards": shards, "objects": len(keys), "bytes": total, "mb_per_s": rates,
            "client_cpu_s_per_gb": cpu_per_gb, "server_cpu_s_per_gb": server_per_gb,
            "server_bound_ceiling_mb_per_s": ceiling, "sluice_stats": stats}


def make_image_shards(build, server, workdir, images):
    folder = pathlib.Path(workdir) / "images"
    per_class = max(1, images // len(list(pathlib.Path("/usr/share/backgrounds").glob("*.jpg"))))
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make-sample-images"), str(folder),
                    "--per-class", str(per_class), "--size", "500x375"], check=True,
                   stdout=subprocess.DEVNULL)
    local = pathlib.Path(workdir) / "shards"
    bucket = server.bucket("bench-images")
    for out in (str(local), f"s3://{bucket}/shards"):
        subprocess.run([str(build / "bin" / "sluice"), "convert", "images", str(folder), out,
                        "--codec", "none", "--shard-size", "32MB"], check=True,
                       stdout=subprocess.DEVNULL, env=server.environ())
    return str(local), f"s3://{bucket}/shards"


def epoch_rate(path, threads, **read_options):
    import sluice
    ds = (sluice.read(path, **read_options)
          .shuffle(seed=1)
          .parse_example({"image/encoded": "bytes", "image/class/label": "int64"})
          .decode_image("image/encoded", sluice.vision.RandomResizedCrop(224),
                        sluice.vision.RandomHorizontalFlip(),
                        sluice.vision.Normalize(mean=MEAN, std=STD),
                        layout="NCHW", dtype="float32", output="image", parallelism=threads)
          .batch(256)
          .prefetch(2)
          .with_options(threads=threads))
    n = sum(ds.shard_records)
    start = time.perf_counter()
    seen = sum(b["image"].shape[0] for b in ds.iterator())
    assert seen == n, (seen, n)
    return n / (time.perf_counter() - start)


def images(args, build, server, workdir):
    local, remote = make_image_shards(build, server, workdir, args.images)
    saved = dict(os.environ)
    os.environ.update(server.environ())
    try:
        rows = {"local disk": 0.0, "s3 (default: node-local cache, cold)": 0.0,
                "s3 (cache=False)": 0.0}
        for _ in range(args.repeat):
            rows["local disk"] = max(rows["local disk"], epoch_rate(local, 2))
            # The default configuration reads through the node-local cache (docs/cache.md): a
            # fresh cache directory each time, so the epoch is a first one, all from S3.
            cold = tempfile.mkdtemp(dir=workdir)
            rows["s3 (default: node-local cache, cold)"] = max(
                rows["s3 (default: node-local cache, cold)"], epoch_rate(remote, 2, cache_dir=cold))
            rows["s3 (cache=False)"] = max(rows["s3 (cache=False)"],
                                           epoch_rate(remote, 2, cache=False))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    print(f"\nimages: one shuffled epoch of {args.images} JPEGs (500x375) through decode_image "
          f"-> batch(256), 2 threads, best of {args.repeat}")
    print(f"  {'shards on':<40} {'images/s':>8} {'/ local':>12}")
    for name, rate in rows.items():
        print(f"  {name:<40} {rate:>8.0f} {rate / rows['local disk']:>11.2f}x")
    return {"images_per_s": rows}


def hedging(args, build, server):
    bucket = server.bucket("bench-hedging")
    client = server.client()
    client.put_object(Bucket=bucket, Key="big", Body=os.urandom(64 << 20))
    rgw = server.endpoint.removeprefix("http://")
    rows = {}
    # The same proxy without injected delays first: the tail the loopback setup has by itself
    # (a p50 of a few ms, so the scheduling jitter of 2 shared cores is a large multiple of
    # it). Then with every first byte `--base-ms` later, as from S3 (tens of ms to the first
    # byte, AWS's performance guidelines), without and with the heavy tail.
    base = [f"delay:ms={args.base_ms:g},method=GET"] if args.base_ms else []
    heavy = ["delay:p=0.01,ms=500,method=GET"]
    groups = [([], "loopback, "), (base, f"+{args.base_ms:g} ms, "),
              (base + heavy, f"+{args.base_ms:g} ms, tail, ")]
    if not args.base_ms:
        groups = [groups[0], (heavy, "tail, ")]
    for faults, label in groups:
        with FaultProxy([rgw], faults=faults, seed=3) as proxy:
            env = server.environ(AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy.ports[0]}")
            for hedge in [None] + args.hedge_quantiles:
                cmd = [str(build / "bin" / "s3_read_bench"), "latency", f"s3://{bucket}/big",
                       "--reads", str(args.reads), "--size", str(args.read_kb << 10),
                       "--concurrency", str(args.concurrency)]
                if hedge is None:
                    cmd.append("--no-hedge")
                elif hedge:
                    cmd += ["--hedge-quantile", str(hedge)]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                                     env=env).stdout
                name = label + ("plain" if hedge is None else
                                "hedged" + (f" at p{100 * hedge:g}" if hedge else ""))
                rows[name] = json.loads(out.strip().splitlines()[-1])
    print(f"\nhedging: {args.reads} random {args.read_kb} KiB reads, {args.concurrency} at a "
          "time, through the fault proxy; loopback: no delay added; +N ms: every first byte "
          "N ms later; tail: +500 ms on 1% of first bytes")
    print(f"  {'':<28} {'p50 ms':>8} {'p99 ms':>8} {'p99.9 ms':>9} {'p99.9/p50':>10} "
          f"{'extra req':>10}")
    for name, r in rows.items():
        print(f"  {name:<28} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['p999_ms']:>9.1f} "
              f"{r['p999_ms'] / r['p50_ms']:>9.1f}x {100 * r['extra']:>9.1f}%")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--mb", type=int, default=200)
    p.add_argument("--objects", type=int, default=50)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--reads", type=int, default=3000)
    # Small reads, few at a time: the proxy (Python) must not be the bottleneck, or its
    # queueing hides the tail the hedges are for.
    p.add_argument("--read-kb", type=int, default=64)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--base-ms", type=float, default=20,
                   help="first-byte latency the proxy adds to every GET (S3-like rows; 0: none)")
    p.add_argument("--hedge-quantiles", default="0",
                   help="hedged rows: comma-separated first-byte quantiles to hedge at "
                        "(0: the default, p95)")
    p.add_argument("--only", default="throughput,images,hedging")
    p.add_argument("--out", default=str(ROOT / "bench" / "out" / "s3"))
    args = p.parse_args()
    build = pathlib.Path(args.build).resolve()
    sys.path.insert(0, str(build / "python"))
    parts = set(args.only.split(","))
    args.hedge_quantiles = [float(q) for q in args.hedge_quantiles.split(",")]
    results = {}
    with S3Server() as server, tempfile.TemporaryDirectory() as workdir:
        if "throughput" in parts:
            results["throughput"] = throughput(args, build, server, workdir)
        if "images" in parts:
            results["images"] = images(args, build, server, workdir)
        if "hedging" in parts:
            results["hedging"] = hedging(args, build, server)
    print("\n/usr/bin/python3 bench/s3/run.py " + " ".join(sys.argv[1:]))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
