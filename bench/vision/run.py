#!/usr/bin/python3
"""Side-by-side benchmark of the image training path (issue 5), one run, one table.

Work: decode + RandomResizedCrop(224) + RandomHorizontalFlip + Normalize -> float32 NCHW,
on ImageNet-like JPEGs (500x375, quality 90, random crops of the real photos in Debian's
lomiri-wallpapers-20.04, made by scripts/make-sample-images), with 1 and 2 cores (every
contender pinned to the first n CPUs with sched_setaffinity, child processes included):

  sluice       the real pipeline from shards (`sluice convert images` of the same folder with
               its defaults, i.e. zstd): sluice.read -> shuffle() (default: chunks mode) ->
               parse_example -> decode_image(RandomResizedCrop(224), RandomHorizontalFlip,
               Normalize; float32 NCHW) -> batch(256), threads = cores, batches consumed from
               Python (zero-copy numpy)
  sluice none  the same from shards converted with --codec none
  kernel       build/bin/vision_bench (the C++ kernel alone, std::thread workers, images in
               memory): what the pipeline's overhead is measured against
  torchvision  ImageFolder + DataLoader(batch_size=256, num_workers=cores), PIL decode
  opencv       cv2.imdecode + crop + cv2.resize(INTER_LINEAR) + flip + normalize loop,
               one process per core (multiprocessing)
  tjbench      libjpeg-turbo's own full-size decode-only rate on a sample of the same files
               (single-threaded; multiplied by the cores as the ceiling)

Prints a ratio table and the command, writes results.json and a PNG bar chart to --out.
The pipeline row includes reading and decompressing shards, parsing, batching (images are
decoded straight into the batch buffer) and the hand-off to Python.

    /usr/bin/python3 bench/vision/run.py [--images 5000] [--build build] [--out bench/out/vision]

`--slots-ab` only runs the sluice pipeline with decode_image into_batch=True and False (images
decoded straight into the batch buffer, or into arrays of their own that batch copies) and
prints images/s and CPU microseconds per image for each.
"""

import argparse
import json
import multiprocessing as mp
import os
import pathlib
import random
import re
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from peers import pinned, restore_ms  # noqa: E402
PHOTOS = sorted(pathlib.Path("/usr/share/backgrounds").glob("*.jpg"))
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


# ---------------------------------------------------------------- data


def make_images(out_dir, n, size=(500, 375)):
    """An ImageFolder of >= n real-photo tiles by scripts/make-sample-images (the demo's
    generator: random crops of the lomiri wallpapers, JPEG q90); reused when complete."""
    per_class = -(-n // len(PHOTOS))
    done = out_dir / f".complete-{per_class}x{len(PHOTOS)}-{size[0]}x{size[1]}"
    if done.exists():
        return
    print(f"generating {per_class * len(PHOTOS)} {size[0]}x{size[1]} q90 images into "
          f"{out_dir} ...", flush=True)
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make-sample-images"), str(out_dir),
                    "--per-class", str(per_class), "--size", f"{size[0]}x{size[1]}"],
                   check=True, stdout=subprocess.DEVNULL)
    done.touch()


def image_files(out_dir):
    return sorted(out_dir.glob("*/*.jpg"))


# ---------------------------------------------------------------- contenders


def run_sluice(build, images_dir, cores, mode, passes, extra=()):
    cmd = [str(build / "bin" / "vision_bench"), "--images", str(images_dir), "--threads",
           ",".join(map(str, cores)), "--mode", mode, "--passes", str(passes), *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for r in rows:
        assert r["errors"] == 0, r
    return {r["threads"]: r["images_per_s"] for r in rows}


def make_shards(build, images_dir, shards_dir, codec):
    """The image folder as sluice shards (32 MB), made once with `sluice convert images`:
    codec "zstd" is convert's default (no --codec flag). Returns the shards' total bytes."""
    if not (shards_dir / "dataset.json").exists():
        cmd = [str(build / "bin" / "sluice"), "convert", "images", str(images_dir),
               str(shards_dir), "--shard-size", "32MB"]
        if codec != "zstd":
            cmd += ["--codec", codec]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return sum(f.stat().st_size for f in shards_dir.glob("*.tfrecord*") if f.suffix != ".idx")


def image_dataset(build, shards_dir, cores, into_batch=True):
    sys.path.insert(0, str(build / "python"))
    import sluice

    return (sluice.read(str(shards_dir))
            .shuffle(seed=0)
            .parse_example({"image/encoded": "bytes", "image/class/label": "int64"})
            .decode_image("image/encoded", sluice.vision.RandomResizedCrop(224),
                          sluice.vision.RandomHorizontalFlip(),
                          sluice.vision.Normalize(mean=MEAN.tolist(), std=STD.tolist()),
                          layout="NCHW", dtype="float32", output="image",
                          parallelism=cores,  # fixed: autotune's warm-up would skew short runs
                          into_batch=into_batch))


def run_restore(build, shards_dir, cores, reps=3):
    """ms from a saved state (after 3 batches) to the first batch of a restored iterator:
    the image pipeline, and its read -> batch(256) part alone."""
    import sluice

    def full():  # a fresh read each time: as after a restart, nothing decoded yet
        return image_dataset(build, shards_dir, cores).batch(
            256, drop_remainder=True).with_options(threads=cores)

    def read_only():
        return sluice.read(str(shards_dir)).shuffle(seed=0).batch(256).with_options(threads=cores)

    out = {}
    for name, make_ds in (("pipeline", full), ("read", read_only)):
        it = make_ds().iterator()
        for _ in range(3):
            next(it)
        state = it.state()
        it.close()
        del it
        out[name] = restore_ms(make_ds, state, reps)
    return out


def run_sluice_pipeline(build, shards_dir, cores, epochs=4, into_batch=True, cpu=None):
    """images/s of the whole pipeline in steady state (after 8 warm-up batches). With a `cpu`
    list, appends the process's CPU microseconds per image."""
    ds = (image_dataset(build, shards_dir, cores, into_batch)
          .repeat(epochs)
          .batch(256, drop_remainder=True)
          .prefetch(4)  # as in the API of issue 4; 2 leaves the CPUs idle ~5% at 2 cores
          .with_options(threads=cores))
    it = ds.iterator()
    batches = epochs * sum(ds.shard_records) // 256 - 1  # stop before the end: keep the report
    # Steady state: start the clock once the buffer pool holds the batch buffers the pipeline
    # cycles through (5 with prefetch(4), stats()["buffer_allocations"] flat from then on).
    # Their first touch is the kernel zeroing 154 MB each (~38k page faults, ~7% of the CPU
    # of a 4-epoch run): a start-up cost, like the workers' start that torchvision's clock
    # skips, and vision_bench likewise touches its batch buffers before its clock starts.
    warmup = min(8, batches // 2)  # short runs (--images 600) keep half their batches
    for _ in range(warmup):
        batch = next(it)
    start, start_cpu = time.perf_counter(), time.process_time()
    timed = batches - warmup
    for _ in range(timed):
        batch = next(it)
        assert batch["image"].shape == (256, 3, 224, 224)
    rate = timed * 256 / (time.perf_counter() - start)
    if cpu is not None:
        cpu.append((time.process_time() - start_cpu) / (timed * 256) * 1e6)
    return rate, it.report()


def run_slots_ab(args, build, shards_dir, cores):
    """decode_image into the batch buffer (into_batch=True) against into per-image arrays that
    batch copies (False): images/s and the process's CPU time per image, same pipeline."""
    print(f"{'cores':>5} {'into_batch':>10} {'images/s':>9} {'cpu us/image':>13}")
    for r in range(args.rounds):
        for c in cores:
            for into_batch in (False, True):
                cpu = []
                rate, _ = run_sluice_pipeline(build, shards_dir, c, epochs=args.passes,
                                              into_batch=into_batch, cpu=cpu)
                print(f"{c:>5} {str(into_batch):>10} {rate:>9.0f} {cpu[0]:>13.0f}", flush=True)
    print("command: /usr/bin/python3 " + " ".join([str(pathlib.Path(sys.argv[0]))] + sys.argv[1:]))


def run_tjbench(files, sample):
    """Full-size decode to RGB, one thread; harmonic mean of per-file frame rates."""
    seconds = 0.0
    picked = files[:: max(1, len(files) // sample)][:sample]
    for f in picked:
        out = subprocess.run(["tjbench", str(f), "-rgb", "-benchtime", "0.3", "-warmup", "0.1",
                              "-nowrite"], capture_output=True, text=True, check=True).stdout
        # Verbose format: "Decompress    --> Frame rate:         856.750986 fps"
        fps = float(re.search(r"Decompress\s+-->\s+Frame rate:\s+([0-9.]+) fps", out).group(1))
        seconds += 1.0 / fps
    return len(picked) / seconds


def _sample_rrc(rng, width, height):
    """torchvision's RandomResizedCrop.get_params (scale (0.08, 1), ratio (3/4, 4/3))."""
    area = width * height
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ratio = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
        w = int(round(np.sqrt(target * ratio)))
        h = int(round(np.sqrt(target / ratio)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, height - h), rng.randint(0, width - w), h, w
    return 0, 0, height, width


def _opencv_worker(paths):
    import cv2

    cv2.setNumThreads(1)
    blobs = [np.fromfile(p, np.uint8) for p in paths]
    rng = random.Random(0)
    start = time.perf_counter()
    for blob in blobs:
        bgr = cv2.imdecode(blob, cv2.IMREAD_COLOR)
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        i, j, h, w = _sample_rrc(rng, rgb.shape[1], rgb.shape[0])
        out = cv2.resize(rgb[i:i + h, j:j + w], (224, 224), interpolation=cv2.INTER_LINEAR)
        if rng.random() < 0.5:
            out = cv2.flip(out, 1)
        chw = np.ascontiguousarray(((out.astype(np.float32) / 255 - MEAN) / STD).transpose(2, 0, 1))
        assert chw.shape == (3, 224, 224)
    return time.perf_counter() - start


def run_opencv(files, cores):
    shards = [files[k::cores] for k in range(cores)]
    start = time.perf_counter()
    with mp.Pool(cores) as pool:
        pool.map(_opencv_worker, shards)  # includes reading files and pool start-up
    wall = time.perf_counter() - start
    return len(files) / wall


def _torch_worker_init(_):
    import torch

    torch.set_num_threads(1)


def run_torchvision(images_dir, cores):
    import torch
    import torchvision.datasets as datasets
    import torchvision.transforms as T

    torch.set_num_threads(1)
    transform = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize(MEAN.tolist(), STD.tolist())])
    dataset = datasets.ImageFolder(str(images_dir), transform=transform)
    loader = torch.utils.data.DataLoader(dataset, batch_size=256, shuffle=True,
                                         num_workers=cores, worker_init_fn=_torch_worker_init)
    seen, start = 0, None
    for images, _ in loader:
        assert images.shape[1:] == (3, 224, 224) and images.dtype == torch.float32
        if start is None:  # steady state: start the clock once the workers are up
            start = time.perf_counter()
            continue
        seen += images.shape[0]
    return seen / (time.perf_counter() - start)


# ---------------------------------------------------------------- report


def chart(results, cores, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["sluice pipeline", "sluice kernel", "torchvision", "opencv",
             "sluice full decode only", "tjbench x cores (full decode only)"]
    keys = ["sluice", "kernel", "torchvision", "opencv", "sluice_decode_only", "tjbench_ceiling"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / len(keys)
    for k, (name, key) in enumerate(zip(names, keys)):
        values = [results[str(c)][key] for c in cores]
        xs = [i + (k - (len(keys) - 1) / 2) * width for i in range(len(cores))]
        bars = ax.bar(xs, values, width, label=name)
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks(range(len(cores)), [f"{c} core{'s' if c > 1 else ''}" for c in cores])
    ax.set_ylabel("images / s")
    ax.set_title("decode + RandomResizedCrop(224) + flip + normalize -> float32 NCHW\n"
                 "500x375 q90 JPEGs")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "vision"))
    parser.add_argument("--cores", default="1,2")
    parser.add_argument("--passes", type=int, default=2, help="sluice passes over the images")
    parser.add_argument("--tjbench-sample", type=int, default=50)
    parser.add_argument("--hd", type=int, default=500,
                        help="also measure this many 1920x1080 photos, where DCT scaling applies"
                             " (0: skip)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every contender this many times, keep the best (noisy hosts)")
    parser.add_argument("--slots-ab", action="store_true",
                        help="only compare decode_image into_batch=True/False (sluice pipeline)")
    args = parser.parse_args()

    out = pathlib.Path(args.out)
    images_dir = out / "images"
    cores = [int(c) for c in args.cores.split(",")]
    make_images(images_dir, args.images)
    files = image_files(images_dir)
    build = pathlib.Path(args.build)
    shards = {codec: out / f"shards-{codec}" for codec in ("zstd", "none")}
    shard_bytes = {codec: make_shards(build, images_dir, d, codec) for codec, d in shards.items()}
    shards_dir = shards["zstd"]  # what `sluice convert images` writes by default
    if args.slots_ab:
        return run_slots_ab(args, build, shards_dir, cores)
    reports = {}

    load_before = os.getloadavg()[0]
    best = {}

    def measure(key, fn):
        value = fn()
        best[key] = max(best.get(key, 0.0), value)

    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}: tjbench, sluice ...", flush=True)
        with pinned(1):
            measure("tjbench", lambda: run_tjbench(files, args.tjbench_sample))
        for c in cores:
            with pinned(c):
                measure(("kernel", c),
                        lambda: run_sluice(build, images_dir, [c], "train", args.passes)[c])
                measure(("sluice_decode_only", c),
                        lambda: run_sluice(build, images_dir, [c], "decode", 1)[c])
                pipeline_rate, reports[c] = run_sluice_pipeline(build, shards_dir, c, epochs=4)
                measure(("sluice", c), lambda: pipeline_rate)
                measure(("sluice_none", c),
                        lambda: run_sluice_pipeline(build, shards["none"], c, epochs=4)[0])
                print(f"round {r + 1}/{args.rounds}: torchvision and opencv with {c} core(s) ...",
                      flush=True)
                measure(("torchvision", c), lambda: run_torchvision(images_dir, c))
                measure(("opencv", c), lambda: run_opencv(files, c))
    with pinned(cores[-1]):
        restore = {codec: run_restore(build, d, cores[-1]) for codec, d in shards.items()}
    load_after = os.getloadavg()[0]

    results = {"images": len(files), "tjbench_1core": best["tjbench"], "rounds": args.rounds,
               "load_average": [load_before, load_after], "shard_bytes": shard_bytes,
               "restore_ms": restore}
    for c in cores:
        results[str(c)] = {key: best[(key, c)]
                           for key in ("sluice", "sluice_none", "kernel", "sluice_decode_only",
                                       "torchvision", "opencv")}
        results[str(c)]["tjbench_ceiling"] = best["tjbench"] * c

    print()
    print(f"{len(files)} JPEGs 500x375 q90; images/s (higher is better), best of {args.rounds}; "
          f"{os.cpu_count()} cores, load average {load_before:.1f} -> {load_after:.1f}")
    if max(load_before, load_after) > 0.5 * os.cpu_count():
        print("warning: the host was busy with other work; multi-core numbers are unreliable")
    header = (f"{'cores':>5} {'sluice':>8} {'s. none':>8} {'kernel':>8} {'torchvision':>11} "
              f"{'opencv':>8} {'tjbench*c':>9} {'sluice dec':>10} | {'/torchvision':>12} "
              f"{'none/tv':>8} {'/opencv':>8} {'/tjbench*c':>10} {'/kernel':>8}")
    print(header)
    print("-" * len(header))
    for c in cores:
        r = results[str(c)]
        print(f"{c:>5} {r['sluice']:>8.0f} {r['sluice_none']:>8.0f} {r['kernel']:>8.0f} "
              f"{r['torchvision']:>11.0f} {r['opencv']:>8.0f} {r['tjbench_ceiling']:>9.0f} "
              f"{r['sluice_decode_only']:>10.0f} | "
              f"{r['sluice'] / r['torchvision']:>11.2f}x "
              f"{r['sluice_none'] / r['torchvision']:>7.2f}x {r['sluice'] / r['opencv']:>7.2f}x "
              f"{r['sluice'] / r['tjbench_ceiling']:>9.2f}x {r['sluice'] / r['kernel']:>7.2f}x")
    print()
    print("sluice = `sluice convert images` with its defaults (zstd) -> read -> shuffle() -> "
          "decode_image(RRC(224) + flip + normalize, float32 NCHW) -> batch(256), from Python;")
    print("s. none = the same from shards converted with --codec none;")
    zstd_mb, none_mb = shard_bytes["zstd"] / 1e6, shard_bytes["none"] / 1e6
    print(f"shards: zstd {zstd_mb:.1f} MB, none {none_mb:.1f} MB (zstd saves "
          f"{100 * (1 - zstd_mb / none_mb):.1f}%)")
    for codec in ("zstd", "none"):
        print(f"restore + first batch ({codec}, {cores[-1]} threads): image pipeline "
              f"{restore[codec]['pipeline']:.1f} ms, read -> batch(256) alone "
              f"{restore[codec]['read']:.2f} ms")
    print("kernel = the same decode + augment in C++ threads on images in memory (no pipeline);")
    print("sluice dec = full-size decode only; tjbench*c = libjpeg-turbo full decode x cores.")
    print(f"\nstall report of the sluice pipeline with {cores[-1]} threads:\n"
          f"{reports[cores[-1]]}\n")
    print("command: /usr/bin/python3 " + " ".join([str(pathlib.Path(sys.argv[0]))] + sys.argv[1:]))
    if args.hd:
        results["hd"] = run_hd(args, out, build)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    chart(results, cores, out / "vision_bench.png")
    print(f"wrote {out / 'results.json'} and {out / 'vision_bench.png'}")


def run_hd(args, out, build):
    """1920x1080 photos, 1 core: where DCT-domain scaling and crop decoding both apply."""
    hd_dir = out / "images_hd"
    make_images(hd_dir, args.hd, size=(1920, 1080))
    files = image_files(hd_dir)
    best = {}
    for _ in range(args.rounds):
        for key, value in [
            ("tjbench", lambda: run_tjbench(files, args.tjbench_sample)),
            ("sluice", lambda: run_sluice(build, hd_dir, [1], "train", args.passes)[1]),
            ("sluice_no_dct",
             lambda: run_sluice(build, hd_dir, [1], "train", args.passes, ["--no-dct"])[1]),
            ("sluice_decode_only", lambda: run_sluice(build, hd_dir, [1], "decode", 1)[1]),
        ]:
            best[key] = max(best.get(key, 0.0), value())
    print()
    print(f"{len(files)} JPEGs 1920x1080 q90, 1 core, images/s, best of {args.rounds}:")
    print(f"  sluice train (DCT scaling + crop decode) {best['sluice']:8.0f}  "
          f"{best['sluice'] / best['tjbench']:.2f}x tjbench")
    print(f"  sluice train, crop decode only           {best['sluice_no_dct']:8.0f}  "
          f"{best['sluice_no_dct'] / best['tjbench']:.2f}x tjbench")
    print(f"  sluice full decode only                  {best['sluice_decode_only']:8.0f}  "
          f"{best['sluice_decode_only'] / best['tjbench']:.2f}x tjbench")
    print(f"  tjbench full decode only                 {best['tjbench']:8.0f}")
    return best


if __name__ == "__main__":
    main()
