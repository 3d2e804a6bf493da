#!/usr/bin/python3
"""`sluice verify` against `cat` over the same uncompressed shards (issue 12, item 8).

Builds ~--mb MiB of uncompressed shards from the Linux kernel documentation (Debian's
linux-doc-6.1; `sluice convert jsonl --codec none`, one ~1 KiB text record per line group),
then runs, interleaved --repeat times so both meet the same load:
  cat SHARD... > /dev/null          (what reading the bytes costs)
  sluice verify DIR                 (every record's two CRCs and every index entry checked,
                                     shards in parallel on the machine's cores)
and prints the best wall and CPU time of each and the ratio cat / verify (1.0x = verify as
fast as cat; goal >= 0.8x on wall time with the machine's cores) and the load average (the
ratio moves with it: other load slows the copy out of the page cache both pay). Files are
read once beforehand so both read from the page cache.

Reproduce: make build && /usr/bin/python3 bench/format/verify_vs_cat.py [--mb 1024]
"""
import argparse, glob, json, os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
DOCS = "/usr/share/doc/linux-doc-6.1/Documentation"


def corpus_lines(mb):
    """JSON lines of ~1 KiB of kernel-docs text until `mb` MiB."""
    files = sorted(glob.glob(DOCS + "/**/*.rst*", recursive=True))
    if not files:
        sys.exit(f"no text under {DOCS}: apt-get install linux-doc-6.1")
    out, size, chunk = [], 0, []
    while size < mb << 20:
        for path in files:
            opener = __import__("gzip").open if path.endswith(".gz") else open
            with opener(path, "rt", errors="replace") as f:
                for line in f:
                    chunk.append(line)
                    if sum(map(len, chunk)) >= 1000:
                        rec = json.dumps({"text": "".join(chunk)}) + "\n"
                        out.append(rec)
                        size += len(rec)
                        chunk = []
                        if size >= mb << 20:
                            return out
    return out


def timed(argv):
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=null)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(argv)}")
    return wall, usage.ru_utime + usage.ru_stime


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    sluice = os.path.join(BUILD, "bin", "sluice")
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/tmp")) as tmp:
        src = os.path.join(tmp, "docs.jsonl")
        with open(src, "w") as f:
            f.writelines(corpus_lines(args.mb))
        out = os.path.join(tmp, "shards")
        subprocess.run([sluice, "convert", "jsonl", src, out, "--codec", "none"], check=True,
                       stdout=subprocess.DEVNULL)
        os.unlink(src)
        shards = sorted(glob.glob(os.path.join(out, "*.tfrecord")))
        total = sum(os.path.getsize(s) for s in shards)
        cat = ["cat", *shards]
        verify = [sluice, "verify", out]
        timed(cat), timed(verify)  # warm the page cache
        best = {"cat": [1e9, 1e9], "verify": [1e9, 1e9]}
        for _ in range(args.repeat):
            for name, argv in (("cat", cat), ("verify", verify)):
                wall, cpu = timed(argv)
                best[name] = [min(best[name][0], wall), min(best[name][1], cpu)]
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"{len(shards)} uncompressed shards, {total / 2**20:.0f} MiB, {os.cpu_count()} CPUs; "
              f"best of {args.repeat}; load average {load} (1 / 5 / 15 min, at the end)")
        print(f"{'contender':<28} {'wall s':>8} {'cpu s':>8} {'GB/s (wall)':>12}")
        for name, argv in (("cat SHARD... > /dev/null", "cat"), ("sluice verify DIR", "verify")):
            w, c = best[argv]
            print(f"{name:<28} {w:>8.3f} {c:>8.3f} {total / w / 1e9:>12.2f}")
        print(f"verify / cat rate: {best['cat'][0] / best['verify'][0]:.2f}x wall "
              f"(goal >= 0.8x), {best['cat'][1] / best['verify'][1]:.2f}x CPU")
        print(f"\nReproduce: make build && /usr/bin/python3 bench/format/verify_vs_cat.py "
              f"--mb {args.mb} --repeat {args.repeat}")


if __name__ == "__main__":
    main()
