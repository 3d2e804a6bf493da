#!/usr/bin/python3
"""Trains a small CNN on the demo image shards (`make demo` writes them to
data/sample-shards) for a few hundred steps on CPU, reading them with sluice.

Prints the loss as it goes down, images/s, the pipeline's stall report, and the size of the
loader's state (what a checkpoint stores to resume the data stream exactly).

  PYTHONPATH=build/python /usr/bin/python3 examples/train_images.py data/sample-shards

Images are decoded and augmented by the pipeline's decode_image stage (C++, libjpeg-turbo,
no GIL), the ImageNet training recipe: RandomResizedCrop(224) + RandomHorizontalFlip +
Normalize into float32 NCHW batches, each image decoded straight into its batch slot. The
model is deliberately tiny (a patchify stem), so that on a CPU, as with a real model on a
GPU, decoding is the expensive part: the stall report then names decode_image as the
bottleneck and says how much of the time the trainer waited for it.
`--pil` switches to the slow path for comparison: a Python map decoding with PIL.
"""
import argparse
import io
import json
import os
import time

import numpy as np
import torch
import torch.nn as nn
from PIL import Image

import sluice
import sluice.torch

FEATURES = {"image/encoded": "bytes", "image/class/label": "int64"}


def decode_pil(size):
    """SLOW PATH (Python + PIL): JPEG bytes -> size x size RGB, flipped for half the samples.
    The flip comes from the sample's seed, so augmentation is reproducible on resume."""
    def decode(example, seed):
        img = Image.open(io.BytesIO(example["image/encoded"]))
        img.draft("RGB", (2 * size, 2 * size))  # JPEG DCT scaling: decode at reduced size
        img = img.convert("RGB").resize((size, size), Image.BILINEAR)
        pixels = np.asarray(img, dtype=np.uint8)
        if seed & 1:
            pixels = pixels[:, ::-1]
        return {"image": pixels, "label": example["image/class/label"]}
    return decode


def pipeline(shards, size, batch_size, threads, pil=False):
    ds = sluice.read(shards).shuffle(seed=0).parse_example(FEATURES)
    if pil:
        ds = ds.map(decode_pil(size), name="decode_pil", with_seed=True, parallelism=threads,
                    output={"image": f"uint8[{size}, {size}, 3]", "label": "int64"})
    else:
        ds = ds.decode_image("image/encoded",
                             sluice.vision.RandomResizedCrop(size),
                             sluice.vision.RandomHorizontalFlip(),
                             sluice.vision.Normalize(mean=sluice.vision.IMAGENET_MEAN,
                                                     std=sluice.vision.IMAGENET_STD),
                             layout="NCHW", dtype="float32", output="image")
    return (ds.repeat()                     # epochs follow each other, each in its own order
            .batch(batch_size, drop_remainder=True)
            .prefetch(4)
            .with_options(threads=threads))


def to_model_input(images, pil):
    """decode_image already gives normalized float32 NCHW; the PIL path gives uint8 NHWC."""
    if pil:
        return images.permute(0, 3, 1, 2).float().div_(255).sub_(0.5)
    return images


def small_cnn(classes, size):
    """A CNN cheap enough on a CPU that the input pipeline is what the trainer waits for (as
    it is with a real model on a GPU): a patchify stem (8x8 patches: 224 -> 28) and one
    strided 3x3 convolution, ~0.3 ms of CPU per 224x224 image for forward + backward, about
    half of what decoding and augmenting that image costs."""
    patch = 8 if size >= 64 else 2
    return nn.Sequential(
        nn.Conv2d(3, 16, patch, stride=patch), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, classes))


def count_classes(shards):
    """The class count `sluice convert images` put in dataset.json (its classes_file lists
    the names, one per label); 1000 for shards without one."""
    path = os.path.join(shards, "dataset.json")
    if os.path.exists(path):
        with open(path) as f:
            metadata = json.load(f).get("metadata", {})
        if "num_classes" in metadata:
            return int(metadata["num_classes"])
    return 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shards", nargs="?", default="data/sample-shards")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--size", type=int, default=224,
                        help="image side in pixels (RandomResizedCrop's size)")
    parser.add_argument("--threads", type=int, default=2, help="sluice threads")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--pil", action="store_true",
                        help="slow path: decode with PIL in a Python map instead of decode_image")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))
    classes = count_classes(args.shards)
    model = small_cnn(classes, args.size)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    loader = sluice.torch.TorchLoader(pipeline(args.shards, args.size, args.batch_size,
                                               args.threads, args.pil))
    print(f"sluice {sluice.__version__}: {args.shards}, {classes} classes, "
          f"{sum(loader.dataset.shard_records)} images; batch {args.batch_size}, "
          f"{args.size}x{args.size}, {args.steps} steps on CPU, decode with "
          f"{'PIL (slow path)' if args.pil else 'decode_image'}")

    label_key = "label" if args.pil else "image/class/label"  # the PIL map renames it
    start, window, running = time.perf_counter(), time.perf_counter(), 0.0
    for step, batch in enumerate(loader, 1):
        images = to_model_input(batch["image"], args.pil)
        loss = loss_fn(model(images), batch[label_key])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.item()
        if step % 25 == 0:
            now = time.perf_counter()
            rate = 25 * args.batch_size / (now - window)
            print(f"step {step:4d}  loss {running / 25:.3f}  {rate:6.0f} images/s")
            window, running = now, 0.0
        if step == args.steps:
            break
    elapsed = time.perf_counter() - start
    print(f"\n{args.steps * args.batch_size} images in {elapsed:.1f} s: "
          f"{args.steps * args.batch_size / elapsed:.0f} images/s")
    state = loader.state_dict()
    print(f"loader state for a checkpoint: epoch {state['epoch']}, "
          f"{len(state['iterator'])} bytes\n")
    print(loader.report())


if __name__ == "__main__":
    main()
