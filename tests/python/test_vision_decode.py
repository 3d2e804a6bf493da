"""Dataset.decode_image from Python: shapes and dtypes after batch, the same crops after a
restore, bad images under raise and skip, and bad arguments raising at the call."""
import io

import numpy as np
import pytest
from PIL import Image

import sluice
from sluice import vision

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def jpeg(width, height, seed):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (height // 4 + 1, width // 4 + 1, 3), dtype=np.uint8)
    img = Image.fromarray(pixels).resize((width, height), Image.BILINEAR)
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=90)
    return out.getvalue()


def records(n, bad=()):
    out = []
    for i in range(n):
        data = jpeg(60 + 7 * (i % 5), 45 + 5 * (i % 3), i)
        if i in bad:
            data = data[: len(data) // 2]
        out.append(sluice.make_example({"image/encoded": data, "label": i}))
    return out


def dataset(n=20, bad=(), *ops, batch=4, **kw):
    ops = ops or (vision.RandomResizedCrop(32), vision.RandomHorizontalFlip(),
                  vision.Normalize(mean=MEAN, std=STD))
    return (sluice.from_records(records(n, bad))
            .shuffle(seed=3)
            .parse_example({"image/encoded": "bytes", "label": "int64"})
            .decode_image("image/encoded", *ops, **kw)
            .batch(batch))


def test_batch_is_float32_nchw_of_the_crop_size():
    ds = dataset(layout="NCHW", dtype="float32", output="image")
    assert ds.schema == {"image": "float32[4, 3, 32, 32]", "label": "int64[4]"} or \
        ds.schema == {"image": "float32[-1, 3, 32, 32]", "label": "int64[-1]"}
    batch = next(iter(ds.iterator()))
    assert batch["image"].shape == (4, 3, 32, 32)
    assert batch["image"].dtype == np.float32
    assert batch["label"].shape == (4,)
    # Normalized values of [0, 1] pixels lie within these bounds.
    assert batch["image"].min() >= (0 - max(MEAN)) / min(STD) - 1e-5
    assert batch["image"].max() <= (1 - min(MEAN)) / min(STD) + 1e-5


def test_resize_center_crop_uint8_nhwc_matches_pil_closely():
    ds = dataset(8, (), vision.Resize(24), vision.CenterCrop(16), layout="NHWC", dtype="uint8",
                 batch=8)
    ds_plain = (sluice.from_records(records(8)).parse_example({"image/encoded": "bytes"})
                .decode_image("image/encoded", vision.Resize(24), vision.CenterCrop(16),
                              layout="NHWC", dtype="uint8"))
    batch = next(iter(ds))
    assert batch["image"].shape == (8, 16, 16, 3) and batch["image"].dtype == np.uint8
    first = next(iter(ds_plain))["image"]
    # torchvision: Resize(24) truncates the longer side, CenterCrop rounds the offsets.
    img = Image.open(io.BytesIO(jpeg(60, 45, 0))).convert("RGB")  # record 0
    w, h = img.size
    img = img.resize((int(24 * w / h), 24), Image.BILINEAR)
    left, top = int(round((img.size[0] - 16) / 2)), int(round((img.size[1] - 16) / 2))
    want = np.asarray(img.crop((left, top, left + 16, top + 16)), dtype=np.float64)
    assert np.abs(first.astype(np.float64) - want).mean() <= 2.0


def test_float16_output():
    batch = next(iter(dataset(dtype="float16", layout="NHWC")))
    assert batch["image"].shape == (4, 32, 32, 3) and batch["image"].dtype == np.float16


def test_restore_reproduces_the_same_crops():
    ds = dataset(24)
    full = [b["image"].copy() for b in ds.iterator()]
    it = ds.iterator()
    next(it), next(it)
    state = it.state()
    rest = [b["image"].copy() for b in ds.iterator(state=state)]
    assert len(rest) == len(full) - 2
    for a, b in zip(rest, full[2:]):
        np.testing.assert_array_equal(a, b)


def test_thread_count_does_not_change_the_crops():
    one = [b["image"].copy() for b in dataset(16).with_options(threads=1)]
    two = [b["image"].copy() for b in dataset(16, parallelism=2).with_options(threads=2)]
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype,layout", [("float32", "NCHW"), ("float16", "NHWC"),
                                          ("uint8", "NHWC")])
@pytest.mark.parametrize("bad", [(), (3, 9)])
def test_decoding_into_the_batch_equals_decoding_then_copying(dtype, layout, bad):
    ops = (vision.RandomResizedCrop((24, 20)), vision.RandomHorizontalFlip())
    if dtype != "uint8":
        ops += (vision.Normalize(mean=MEAN, std=STD),)

    def run(into_batch, drop_remainder):
        ds = (sluice.from_records(records(23, bad)).shuffle(seed=3)
              .parse_example({"image/encoded": "bytes", "label": "int64"})
              .decode_image("image/encoded", *ops, dtype=dtype, layout=layout,
                            on_error="skip", into_batch=into_batch)
              .repeat(2)
              .batch(5, drop_remainder=drop_remainder)
              .with_options(threads=2))
        return [(b["image"].copy(), b["label"].copy()) for b in ds]

    for drop_remainder in (False, True):
        fused, copied = run(True, drop_remainder), run(False, drop_remainder)
        good = 2 * (23 - len(bad))
        assert sum(len(labels) for _, labels in fused) == (good // 5 * 5 if drop_remainder
                                                           else good)
        shape = (5, 3, 24, 20) if layout == "NCHW" else (5, 24, 20, 3)
        assert fused[0][0].shape == shape and fused[0][0].dtype == np.dtype(dtype)
        assert len(fused) == len(copied)
        for (a, la), (b, lb) in zip(fused, copied):
            np.testing.assert_array_equal(la, lb)
            np.testing.assert_array_equal(a, b)


def test_truncated_jpeg_raises_naming_the_record():
    with pytest.raises(sluice.DataLossError, match=r"decode_image.*record 5"):
        for _ in dataset(12, (5,), batch=1):
            pass


def test_truncated_jpeg_is_skipped_under_skip():
    labels = [int(x) for b in dataset(12, (5,), on_error="skip", batch=1) for x in b["label"]]
    assert sorted(labels) == [i for i in range(12) if i != 5]


def test_bad_arguments_raise_at_the_call():
    parsed = sluice.from_records(records(2)).parse_example({"image/encoded": "bytes"})
    with pytest.raises(sluice.InvalidArgumentError):
        parsed.decode_image("image/encoded", vision.RandomResizedCrop(8), dtype="int7")
    with pytest.raises(sluice.InvalidArgumentError, match="uint8, float16 or float32"):
        parsed.decode_image("image/encoded", vision.RandomResizedCrop(8), dtype="int64")
    with pytest.raises(sluice.InvalidArgumentError):  # Normalize needs a float dtype
        parsed.decode_image("image/encoded", vision.CenterCrop(8),
                            vision.Normalize(mean=MEAN, std=STD), dtype="uint8")
    with pytest.raises(sluice.NotFoundError):
        parsed.decode_image("jpeg", vision.CenterCrop(8))
    with pytest.raises(TypeError):
        parsed.decode_image("image/encoded", "RandomResizedCrop(8)")
