"""Smoke test: examples/train_images.py trains a few steps on a small shard through
decode_image (and through its --pil slow path), printing the loss and the stall report."""
import io
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import sluice

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train_images.py"


@pytest.fixture(scope="module")
def shard(tmp_path_factory):
    path = tmp_path_factory.mktemp("shards") / "train-00000.tfrecord"
    rng = np.random.default_rng(0)
    records = []
    for i in range(48):
        pixels = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
        out = io.BytesIO()
        Image.fromarray(pixels).save(out, format="JPEG", quality=85)
        records.append(sluice.make_example({"image/encoded": out.getvalue(),
                                            "image/class/label": i % 3}))
    sluice.write_records(str(path), records)
    return path


@pytest.mark.parametrize("extra", [[], ["--pil"]])
def test_example_trains_a_few_steps(shard, extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(sluice.__path__[0]),
                                                    env.get("PYTHONPATH")] if p)
    r = subprocess.run([sys.executable, str(EXAMPLE), str(shard), "--steps", "25",
                        "--batch-size", "8", "--size", "32", "--threads", "2", *extra],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "step   25  loss" in r.stdout
    assert "decode_pil" in r.stdout if extra else "map:decode_image" in r.stdout
    assert "loader state for a checkpoint" in r.stdout
