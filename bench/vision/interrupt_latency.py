#!/usr/bin/python3
"""How late Ctrl-C arrives while decode_image works on very large photos (issue 13, item 10).

A child process iterates `from_records(photos).decode_image(...).batch(8)`; the parent sends
SIGINT at a random moment of the run and measures, on the shared monotonic clock, when the
child's `for` loop caught KeyboardInterrupt. docs/python.md promises ~50 ms.

  bench/vision/interrupt_latency.py [--build build] [--baseline-build DIR] [--megapixels 81]
                                    [--runs 5]

Rows: the default stage (what a user gets: autotuned parallelism, DCT scaling) and
parallelism 0 (the consumer's thread decodes every chunk itself: the worst case), each with
DCT scaling off too (a full-size decode per photo). --baseline-build runs the same rows
with another build (e.g. main before the fix) in the same run, for the ratio.
"""
import argparse, io, os, random, signal, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r"""
import sys, time
import sluice, sluice.vision as V
records = [open(p, "rb").read() for p in sys.argv[1].split(",")] * 8
par, dct = int(sys.argv[2]), sys.argv[3] == "1"
ds = sluice.from_records(records).decode_image(
    "record", V.RandomResizedCrop(224), parallelism=par, dct_scaling=dct).batch(8)
it = ds.iterator()
print("ready", flush=True)
try:
    for _ in it:
        pass
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
"""


def make_photos(directory, megapixels, count):
    from PIL import Image
    side = int((megapixels * 1e6) ** 0.5)
    wallpaper = sorted(p for p in os.listdir("/usr/share/backgrounds") if p.endswith(".jpg"))
    paths = []
    for i in range(count):
        src = Image.open(os.path.join("/usr/share/backgrounds", wallpaper[i % len(wallpaper)]))
        big = src.convert("RGB").resize((side, side))
        path = os.path.join(directory, f"photo-{i}.jpg")
        big.save(path, quality=90)
        paths.append(path)
    return paths


def latency(build, photos, parallelism, dct, rng):
    """Seconds from SIGINT to the child's KeyboardInterrupt, or None if it finished first."""
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    child = subprocess.Popen([sys.executable, "-c", CHILD, ",".join(photos), str(parallelism),
                              "1" if dct else "0"], stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdout.readline().strip() == "ready"
    time.sleep(rng.uniform(0.5, 2.0))
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    line = child.stdout.readline().split()
    child.wait(timeout=120)
    return float(line[1]) - sent if line and line[0] == "interrupted" else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline-build")
    ap.add_argument("--megapixels", type=float, default=81)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(13)
    builds = [("sluice", args.build)] + ([("baseline", args.baseline_build)]
                                          if args.baseline_build else [])
    with tempfile.TemporaryDirectory() as tmp:
        photos = make_photos(tmp, args.megapixels, 2)
        rows = []
        for par, dct in ((-1, True), (-1, False), (0, True), (0, False)):
            cells = []
            for _, build in builds:
                got = [latency(build, photos, par, dct, rng) for _ in range(args.runs)]
                got = [g for g in got if g is not None]
                cells.append((statistics.median(got), max(got)) if got else (float("nan"),) * 2)
            rows.append((par, dct, cells))
    print(f"\nCtrl-C latency while decode_image works on {args.megapixels:g}-megapixel photos "
          f"(batch 8; {args.runs} runs each, SIGINT at a random moment; goal ~0.05 s)")
    head = "".join(f" {name + ' median':>16} {name + ' max':>13}" for name, _ in builds)
    print(f"{'stage':42}{head}" + (f" {'ratio (median)':>15}" if len(builds) > 1 else ""))
    for par, dct, cells in rows:
        label = (f"parallelism {'autotuned' if par < 0 else par}, "
                 f"{'DCT scaling' if dct else 'full-size decode'}")
        line = f"{label:42}" + "".join(f" {m:15.3f}s {x:12.3f}s" for m, x in cells)
        if len(cells) > 1:
            line += f" {cells[1][0] / cells[0][0]:14.1f}x"
        print(line)
    print(f"\ncommand: bench/vision/interrupt_latency.py --megapixels {args.megapixels:g} "
          f"--runs {args.runs}" + (" --baseline-build DIR" if args.baseline_build else ""))


if __name__ == "__main__":
    main()
