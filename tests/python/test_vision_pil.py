"""sluice's image kernels against Pillow and torchvision, on real photos.

Drives build/bin/vision_tool (tests/tools/vision_tool.cc). Run with
    SLUICE_BUILD=build /usr/bin/python3 -m pytest -q tests/python/test_vision_pil.py
The photos are Debian's lomiri-wallpapers-20.04 (/usr/share/backgrounds/*.jpg).
"""

import glob
import os
import pathlib
import subprocess

import numpy as np
import pytest
from PIL import Image

BUILD = pathlib.Path(os.environ.get("SLUICE_BUILD", "build"))
TOOL = BUILD / "bin" / "vision_tool"
PHOTOS = sorted(glob.glob("/usr/share/backgrounds/*.jpg"))

# The bar: mean absolute difference from Pillow at most 2/255 (in 0..255 units: 2).
MAX_MAD = 2.0

pytestmark = [
    pytest.mark.skipif(not TOOL.exists(), reason=f"{TOOL} not built"),
    pytest.mark.skipif(not PHOTOS, reason="lomiri-wallpapers-20.04 not installed"),
]


def run_tool(*args):
    out = subprocess.run([str(TOOL), *map(str, args)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def sluice_decode(path, tmp_path):
    raw = tmp_path / "decoded.rgb"
    w, h = map(int, run_tool("decode", path, raw).split())
    return np.fromfile(raw, np.uint8).reshape(h, w, 3)


def sluice_resize(path, box, size, tmp_path, dct=True):
    raw = tmp_path / "resized.rgb"
    denom = int(run_tool("resize", path, *box, *size, raw, *([] if dct else ["--no-dct"])))
    return np.fromfile(raw, np.uint8).reshape(size[1], size[0], 3), denom


def mad(a, b):
    return float(np.abs(a.astype(np.int32) - np.asarray(b, dtype=np.int32)).mean())


@pytest.fixture(scope="module")
def tiles(tmp_path_factory):
    """ImageNet-like 500x375 q90 JPEGs cut from the photos (as the benchmark's data)."""
    out = tmp_path_factory.mktemp("tiles")
    paths = []
    for i, photo in enumerate(PHOTOS):
        im = Image.open(photo).convert("RGB")
        im.draft("RGB", (im.width // 4, im.height // 4))
        small = im.resize((im.width // 4, im.height // 4), Image.BILINEAR)
        for j, (x, y) in enumerate([(0, 0), (small.width - 500, small.height - 375)]):
            path = out / f"tile{i}_{j}.jpg"
            small.crop((x, y, x + 500, y + 375)).save(path, quality=90)
            paths.append(path)
    return paths


@pytest.mark.parametrize("photo", PHOTOS, ids=os.path.basename)
def test_decode_equals_pillow(photo, tmp_path):
    # Same libjpeg-turbo, same ISLOW IDCT and fancy upsampling: bit-exact is expected; allow
    # a JPEG-decoder tolerance of 1 in case Pillow's libjpeg build differs.
    ours = sluice_decode(photo, tmp_path)
    ref = np.asarray(Image.open(photo).convert("RGB"))
    assert ours.shape == ref.shape
    assert np.abs(ours.astype(np.int32) - ref).max() <= 1


def boxes_for(w, h):
    return [
        ((0, 0, w, h), (224, 224)),  # strong downscale: 1/8 DCT scaling
        ((0, 0, w, h), (320, 180)),  # non-square output
        ((100.5, 200.25, 1100.5, 950.75), (224, 224)),  # fractional box, 1/2 or 1/4
        ((w / 3, h / 4, w / 3 + 900, h / 4 + 600), (224, 224)),
        ((1000, 1000, 1300, 1250), (224, 224)),  # small crop, no DCT scaling
        ((2000, 1500, 2100, 1580), (224, 224)),  # upscale
        ((10, 10, w - 10, h - 10), (900, 600)),
    ]


@pytest.mark.parametrize("photo", PHOTOS, ids=os.path.basename)
def test_resize_box_matches_pillow(photo, tmp_path):
    im = Image.open(photo).convert("RGB")
    scales_used = set()
    for box, size in boxes_for(*im.size):
        ref = im.resize(size, Image.BILINEAR, box=box, reducing_gap=None)
        ours, denom = sluice_resize(photo, box, size, tmp_path)
        scales_used.add(denom)
        assert mad(ours, ref) <= MAX_MAD, (box, size, denom)
        if denom != 1:  # the same box decoded at full scale
            ours, _ = sluice_resize(photo, box, size, tmp_path, dct=False)
        # Without DCT scaling only Pillow's intermediate 8-bit rounding differs.
        assert mad(ours, ref) <= 0.5, (box, size)
    assert {1, 2, 8} <= scales_used  # the DCT-scaled paths were exercised


def test_resize_on_tiles_matches_pillow(tiles, tmp_path):
    rng = np.random.default_rng(0)
    for path in tiles:
        im = Image.open(path).convert("RGB")
        for _ in range(5):
            w = rng.uniform(40, 500)
            h = rng.uniform(30, 375)
            x = rng.uniform(0, 500 - w)
            y = rng.uniform(0, 375 - h)
            box = (x, y, x + w, y + h)
            ref = im.resize((224, 224), Image.BILINEAR, box=box, reducing_gap=None)
            ours, _ = sluice_resize(path, box, (224, 224), tmp_path)
            assert mad(ours, ref) <= 0.5, box


def test_eval_pipeline_matches_torchvision(tiles, tmp_path):
    tv = pytest.importorskip("torchvision.transforms")
    pipeline = tv.Compose([tv.Resize(256), tv.CenterCrop(224)])
    for path in tiles:
        ref = np.asarray(pipeline(Image.open(path).convert("RGB")))
        raw = tmp_path / "eval.rgb"
        run_tool("eval", path, raw)
        ours = np.fromfile(raw, np.uint8).reshape(224, 224, 3)
        assert mad(ours, ref) <= MAX_MAD


def ks_statistic(a, b):
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    return float(np.abs(np.searchsorted(a, grid, "right") / len(a) -
                        np.searchsorted(b, grid, "right") / len(b)).max())


def test_random_resized_crop_distribution_matches_torchvision():
    torch = pytest.importorskip("torch")
    tv = pytest.importorskip("torchvision.transforms")
    n, width, height = 20000, 500, 375
    torch.manual_seed(0)
    image = torch.empty(3, height, width)
    ref = np.array([tv.RandomResizedCrop.get_params(image, [0.08, 1.0], [3 / 4, 4 / 3])
                    for _ in range(n)], dtype=np.float64)  # (top, left, h, w)
    ours = np.loadtxt(run_tool("rrc", width, height, n, 1).splitlines())
    for name, f in [("area", lambda r: r[:, 2] * r[:, 3] / (width * height)),
                    ("log_ratio", lambda r: np.log(r[:, 3] / r[:, 2])),
                    ("centre_x", lambda r: (r[:, 1] + r[:, 3] / 2) / width),
                    ("centre_y", lambda r: (r[:, 0] + r[:, 2] / 2) / height)]:
        # KS critical value at alpha = 0.001 for two samples of 20000: 0.0195.
        assert ks_statistic(f(ours), f(ref)) < 0.0195, name


def test_cmyk_and_gray_jpegs_match_pillow(tmp_path):
    im = Image.open(PHOTOS[0]).convert("RGB").resize((320, 180))
    for mode in ("CMYK", "L"):
        path = tmp_path / f"{mode}.jpg"
        im.convert(mode).save(path, quality=95)
        ref = np.asarray(Image.open(path).convert("RGB"))
        ours = sluice_decode(path, tmp_path)
        assert np.abs(ours.astype(np.int32) - ref).max() <= 1, mode


def test_png_variants_match_pillow(tmp_path):
    im = Image.open(PHOTOS[1]).convert("RGB").resize((97, 61))
    variants = {
        "rgb": im,
        "rgba": im.convert("RGBA"),
        "palette": im.convert("P", palette=Image.ADAPTIVE, colors=50),
        "gray": im.convert("L"),
        "gray_alpha": im.convert("LA"),
    }
    for name, variant in variants.items():
        path = tmp_path / f"{name}.png"
        variant.save(path)
        ref = np.asarray(Image.open(path).convert("RGB"))
        assert np.array_equal(sluice_decode(path, tmp_path), ref), name
