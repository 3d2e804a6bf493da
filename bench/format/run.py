#!/usr/bin/python3
"""Format-layer benchmark: sluice's record reader/writer vs cat, zstd and a Python reader.

Runs every contender on the same files in one run and prints a ratio table.
Usage: bench/format/run.py [--build build] [--mb 256] [--repeat 5] [--out bench/out/format]
Corpus: the Linux kernel documentation (Debian's linux-doc-6.1), repeated to --mb MiB, cut
into records of ~1 KiB (text, compressible) and ~100 KiB.
"""
import argparse, glob, gzip, json, os, struct, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def timed(cmd, repeat, stdout=subprocess.DEVNULL):
    """Best wall time of `repeat` runs of a shell command (page cache warm after the first)."""
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, shell=True, check=True, stdout=stdout)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def python_reader(path):
    """The straightforward struct-based TFRecord reader PyTorch users commonly write (no CRC
    check, like the popular `tfrecord` package's default)."""
    n = 0
    with open(path, "rb") as f:
        while True:
            header = f.read(12)
            if not header:
                break
            (length,) = struct.unpack("<Q", header[:8])
            payload = f.read(length)
            f.read(4)
            n += 1
    return n


def make_corpus(path, mb):
    docs = sorted(glob.glob("/usr/share/doc/linux-doc-6.1/Documentation/**/*.rst.gz", recursive=True))
    if not docs:
        sys.exit("linux-doc-6.1 is not installed (scripts/install-deps)")
    text = b"".join(gzip.open(d).read() for d in docs)
    with open(path, "wb") as f:
        written = 0
        while written < mb << 20:
            f.write(text)
            written += len(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "format"))
    args = ap.parse_args()
    tool = os.path.join(args.build, "bin", "format_bench")
    os.makedirs(args.out, exist_ok=True)
    corpus = os.path.join(args.out, "corpus.txt")
    if not os.path.exists(corpus) or os.path.getsize(corpus) < args.mb << 20:
        make_corpus(corpus, args.mb)

    rows = []
    for rec_bytes in (1024, 100 * 1024):
        plain = os.path.join(args.out, f"plain-{rec_bytes}.tfrecord")
        zst = os.path.join(args.out, f"zstd-{rec_bytes}.tfrecord.zst")
        subprocess.run([tool, "frame", corpus, plain, str(rec_bytes)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([tool, "write", plain, zst, "zstd"], check=True, stdout=subprocess.DEVNULL)
        size = os.path.getsize(plain)
        mib = size / 2**20
        label = f"{rec_bytes // 1024} KiB records"

        t_cat = timed(f"cat {plain} > /dev/null", args.repeat)
        t_read = timed(f"{tool} read {plain}", args.repeat)
        rows.append((f"read none, CRC checked ({label})", "cat > /dev/null", mib / t_read, mib / t_cat, "MiB/s"))

        t_zd = timed(f"zstd -q -d -c {zst} > /dev/null", args.repeat)
        t_zr = timed(f"{tool} read {zst}", args.repeat)
        rows.append((f"read zstd ({label})", "zstd -d -c > /dev/null", mib / t_zr, mib / t_zd, "MiB/s"))

        out_zst = "/dev/shm/sluice-bench-write.zst" if os.path.isdir("/dev/shm") else os.path.join(args.out, "w.zst")
        t_zc = timed(f"zstd -q -3 --single-thread -c {plain} > {out_zst}", args.repeat)
        t_zw = timed(f"{tool} write {plain} {out_zst} zstd", args.repeat)
        os.remove(out_zst)
        if os.path.exists(out_zst + ".idx"):
            os.remove(out_zst + ".idx")
        rows.append((f"write zstd-3 ({label})", "zstd -3 --single-thread", mib / t_zw, mib / t_zc, "MiB/s"))

        if rec_bytes == 1024:
            out = subprocess.run([tool, "read", plain], check=True, capture_output=True, text=True).stdout
            n = json.loads(out)["records"]
            t_py = min(_time_call(python_reader, plain) for _ in range(2))
            rows.append((f"records/s, none ({label})", "Python struct reader", n / t_read, n / t_py, "rec/s"))

    print(f"\nsluice format benchmark ({args.mb} MiB of kernel docs, best of {args.repeat}; 1 thread)")
    print(f"{'workload':44} {'peer':26} {'sluice':>12} {'peer':>12} {'ratio':>7}")
    for work, peer, ours, theirs, unit in rows:
        print(f"{work:44} {peer:26} {ours:12,.0f} {theirs:12,.0f} {ours / theirs:6.2f}x  {unit}")
    print(f"\ncommand: bench/format/run.py --mb {args.mb} --repeat {args.repeat}")


def _time_call(fn, *a):
    t0 = time.perf_counter()
    fn(*a)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
