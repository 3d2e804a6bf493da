#!/usr/bin/python3
"""Format-layer benchmark: sluice's record reader/writer vs cat, zstd and a Python reader.

Runs every contender on the same files in one run and prints a ratio table.
Usage: bench/format/run.py [--build build] [--mb 256] [--repeat 5] [--out bench/out/format]
Corpus: the Linux kernel documentation (Debian's linux-doc-6.1), repeated to --mb MiB, cut
into records of ~1 KiB (text, compressible) and ~100 KiB.

Every contender is a whole process started the same way (no shell in between; stdout to
/dev/null or to the output file), so start-up and reading the input count for all alike.
The default read is what a user gets (positional reads into a reused buffer); the mapped
read (RecordReaderOptions::map_uncompressed) is the opt-in memory map, which dies with SIGBUS
if the file is truncated while it is read.
Each is run --repeat times, the runs of sluice and its peer interleaved so both meet the
same load, and two figures are kept per contender:
  wall: the best elapsed time, what a user waits for, but inflated by anything else
        running on the machine;
  cpu:  the best user+sys time of the process (getrusage of the child), which other load
        disturbs much less; on a shared machine this is the figure to trust.
Both are single-threaded, so on an idle machine the two agree.
"""
import argparse, glob, gzip, json, os, struct, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_once(argv, stdout_path=None):
    """(wall seconds, user+sys seconds) of one run of argv."""
    with open(stdout_path or os.devnull, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}")
    return wall, usage.ru_utime + usage.ru_stime


def compare(contenders, repeat):
    """Best (wall, cpu) of each (argv, stdout_path), runs interleaved round-robin."""
    best = [[float("inf"), float("inf")] for _ in contenders]
    for _ in range(repeat):
        for b, (argv, stdout_path) in zip(best, contenders):
            wall, cpu = run_once(argv, stdout_path)
            b[0], b[1] = min(b[0], wall), min(b[1], cpu)
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


def time_python_reader(path, repeat):
    """Best (wall, cpu) of the Python reader, in this process."""
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        python_reader(path)
        best = [min(best[0], time.perf_counter() - t0), min(best[1], time.process_time() - c0)]
    return best


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
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else args.out
    out_zst = os.path.join(scratch, f"sluice-bench-write-{os.getpid()}.zst")

    rows = []  # (workload, peer, unit, amount, sluice (wall, cpu), peer (wall, cpu))
    for rec_bytes in (1024, 100 * 1024):
        plain = os.path.join(args.out, f"plain-{rec_bytes}.tfrecord")
        zst = os.path.join(args.out, f"zstd-{rec_bytes}.tfrecord.zst")
        subprocess.run([tool, "frame", corpus, plain, str(rec_bytes)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([tool, "write", plain, zst, "zstd"], check=True, stdout=subprocess.DEVNULL)
        mib = os.path.getsize(plain) / 2**20
        label = f"{rec_bytes // 1024} KiB records"

        read, mapped, cat = compare([([tool, "read", plain], None),
                                     ([tool, "read", plain, "--mapped"], None),
                                     (["cat", plain], None)], args.repeat)
        rows.append((f"read none, CRC checked ({label})", "cat > /dev/null", "MiB/s", mib, read, cat))
        rows.append((f"  same, mapped (map_uncompressed)", "cat > /dev/null", "MiB/s", mib, mapped,
                     cat))

        zread, zcat = compare([([tool, "read", zst], None), (["zstd", "-q", "-d", "-c", zst], None)],
                              args.repeat)
        rows.append((f"read zstd ({label})", "zstd -d -c > /dev/null", "MiB/s", mib, zread, zcat))

        zwrite, zcomp = compare([([tool, "write", plain, out_zst, "zstd"], None),
                                 (["zstd", "-q", "-3", "--single-thread", "-c", plain], out_zst)],
                                args.repeat)
        for f in (out_zst, out_zst + ".idx"):
            if os.path.exists(f):
                os.remove(f)
        rows.append((f"write zstd-3 ({label})", "zstd -3 --single-thread", "MiB/s", mib, zwrite, zcomp))

        if rec_bytes == 1024:
            out = subprocess.run([tool, "read", plain], check=True, capture_output=True, text=True).stdout
            n = json.loads(out)["records"]
            py = time_python_reader(plain, min(args.repeat, 2))
            rows.append((f"records/s, none ({label})", "Python struct reader", "rec/s", n, read, py))

    print(f"\nsluice format benchmark ({args.mb} MiB of kernel docs, best of {args.repeat}; 1 thread)")
    print("wall: best elapsed time; cpu: best user+sys time (robust to other load; trust this one "
          "on a shared machine)")
    print(f"{'workload':42} {'peer':24} {'sluice wall':>12} {'peer wall':>12} {'ratio':>6}"
          f" {'sluice cpu':>12} {'peer cpu':>12} {'ratio':>6}")
    for work, peer, unit, amount, ours, theirs in rows:
        print(f"{work:42} {peer:24} {amount / ours[0]:12,.0f} {amount / theirs[0]:12,.0f}"
              f" {theirs[0] / ours[0]:5.2f}x {amount / ours[1]:12,.0f} {amount / theirs[1]:12,.0f}"
              f" {theirs[1] / ours[1]:5.2f}x  {unit}")
    print(f"\ncommand: bench/format/run.py --mb {args.mb} --repeat {args.repeat}")


if __name__ == "__main__":
    main()
