#!/usr/bin/python3
"""Throughput of `sluice convert jsonl|text` with 1, 2 and 4 MPI ranks against the same
command in one process without MPI (the default a new user gets), on the same files in one
run (docs/dist.md, "Benchmarks"). Each configuration runs --repeat times; the best is kept.

  /usr/bin/python3 bench/dist/convert_scaling.py [--build build] [--mb 48] [--repeat 2]

The corpus is lines of the kernel documentation (linux-doc-6.1), as JSON lines and as text,
in 8 files. mpirun runs --oversubscribe with OMPI_MCA_mpi_yield_when_idle=1."""
import argparse
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "tests", "data", "text", "kernel_docs_unigram400.model")
DOCS = "/usr/share/doc/linux-doc-6.1/Documentation"


def kernel_lines():
    for path in sorted(glob.glob(DOCS + "/**/*.rst*", recursive=True)):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", errors="replace") as f:
            for line in f:
                line = line.strip()
                if len(line) > 20:
                    yield line


def make_corpus(d, mb, files=8):
    os.makedirs(d / "jsonl"), os.makedirs(d / "text")
    target = mb << 20
    outs_j = [open(d / "jsonl" / f"part{i}.jsonl", "w") for i in range(files)]
    outs_t = [open(d / "text" / f"part{i}.txt", "w") for i in range(files)]
    written, n = 0, 0
    while written < target:
        for line in kernel_lines():
            doc = json.dumps({"text": line, "id": n, "len": len(line), "score": n % 97 / 7.0})
            outs_j[n % files].write(doc + "\n")
            outs_t[n % files].write(line + "\n")
            written += len(doc) + 1
            n += 1
            if written >= target:
                break
    for f in outs_j + outs_t:
        f.close()
    return n


def timed(cmd, env):
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{r.stderr}")
    return time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--mb", type=int, default=48, help="MiB of JSON lines")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    sluice = os.path.join(args.build, "bin", "sluice")
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1")
    from pathlib import Path
    tmp = Path(tempfile.mkdtemp(prefix="sluice-convert-bench-"))
    try:
        records = make_corpus(tmp, args.mb)
        jsonl_mb = sum(os.path.getsize(p) for p in glob.glob(str(tmp / "jsonl" / "*"))) / 2**20
        text_mb = sum(os.path.getsize(p) for p in glob.glob(str(tmp / "text" / "*"))) / 2**20
        kinds = {
            "jsonl": (jsonl_mb, lambda out: [sluice, "convert", "jsonl", str(tmp / "jsonl" / "*"),
                                             out]),
            "text": (text_mb, lambda out: [sluice, "convert", "text", str(tmp / "text" / "*"),
                                           out, "--tokenizer", MODEL]),
        }
        configs = [("one process, no MPI (default)", [])] + [
            (f"mpirun -np {n}", ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n)])
            for n in (1, 2, 4)]
        print(f"{records} records; {os.cpu_count()} cores; best of {args.repeat}")
        print(f"| command | configuration | seconds | MB/s | vs one process |")
        print(f"|---|---|---|---|---|")
        for kind, (mb, make) in kinds.items():
            base = None
            for name, prefix in configs:
                best = float("inf")
                for i in range(args.repeat):
                    out = str(tmp / f"out-{kind}-{len(prefix)}-{i}")
                    best = min(best, timed(prefix + make(out), env))
                    shutil.rmtree(out)
                base = base or best
                print(f"| convert {kind} ({mb:.0f} MiB) | {name} | {best:.2f} | {mb / best:.1f} "
                      f"| {base / best:.2f}x |", flush=True)
        print(f"\n/usr/bin/python3 bench/dist/convert_scaling.py --mb {args.mb} "
              f"--repeat {args.repeat}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
