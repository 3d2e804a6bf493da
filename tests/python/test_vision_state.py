"""State of decode_image pipelines read from shard files:
`sluice.read(...).shuffle(...).parse_example(...).decode_image(...)[.repeat][.batch][.prefetch]`.
`ds.iterator(state=it.state())` yields exactly what the uninterrupted iterator yields from
there, pixels included (the crops are random), whether the state was taken before the first
next(), after a few, at the epoch boundary or at the end, in every shuffle mode. A reported
bug said a state taken before the first next() restored into an empty stream."""
import io

import numpy as np
import pytest
from PIL import Image

import sluice
from sluice import vision

IMAGES = 22  # 4 shards; no batch size used here divides it


def jpeg(width, height, seed):
    rng = np.random.default_rng(seed)
    img = Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=85)
    return out.getvalue()


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    directory = tmp_path_factory.mktemp("images")
    paths = []
    for s in range(4):
        labels = range(s, IMAGES, 4)
        records = [sluice.make_example({"image/encoded": jpeg(24 + 2 * i, 20 + i % 4, i),
                                        "label": i}) for i in labels]
        path = directory / f"part-{s}.tfrecord"
        sluice.write_records(str(path), records)
        paths.append(str(path))
    return paths


def pipeline(paths, mode, repeat, batch, prefetch, parallelism=2):
    ds = (sluice.read(paths)
          .shuffle(seed=0, mode=mode, block_shards=2, buffer_size=5)
          .parse_example({"image/encoded": "bytes", "label": "int64"})
          .decode_image("image/encoded", vision.RandomResizedCrop(8),
                        vision.RandomHorizontalFlip(), layout="NHWC", dtype="uint8",
                        parallelism=parallelism))
    if repeat:
        ds = ds.repeat(2)
    if batch:
        ds = ds.batch(4)
    if prefetch:
        ds = ds.prefetch(3)
    return ds


def items(elements):
    return [(np.atleast_1d(e["label"]).tolist(), e["image"].tobytes()) for e in elements]


def take(it, n):
    return items(next(it) for _ in range(n))


TAILS = [(False, False, False), (False, True, False), (False, True, True), (True, True, True),
         (True, False, True)]


@pytest.mark.parametrize("mode", ["none", "global", "block", "buffer"])
@pytest.mark.parametrize("repeat,batch,prefetch", TAILS)
def test_state_at_every_breakpoint_restores_the_same_stream(shards, mode, repeat, batch,
                                                            prefetch):
    ds = pipeline(shards, mode, repeat, batch, prefetch)
    full = items(ds.iterator())
    samples = IMAGES * (2 if repeat else 1)
    assert len(full) == ((samples + 3) // 4 if batch else samples)
    # With batch, the epoch boundary falls inside batch 6: cut before and after it.
    boundary = (IMAGES // 4, IMAGES // 4 + 1) if batch else (IMAGES,)
    for cut in (0, 1, 3, *boundary, len(full)):
        it = ds.iterator()
        head = take(it, cut)
        state = it.state()
        rest = items(ds.iterator(state=state, threads=1))
        assert len(rest) == len(full) - cut, f"cut {cut}: the restored stream is short"
        assert head + rest == full, f"cut {cut}: the restored stream differs"


@pytest.mark.parametrize("mode", ["global", "block", "buffer"])
def test_state_of_an_untouched_iterator_restores_everything(shards, mode):
    # The reported shape: defaults everywhere (autotuned decode, one thread per core).
    ds = pipeline(shards, mode, repeat=False, batch=True, prefetch=False, parallelism=-1)
    state = ds.iterator().state()
    assert items(ds.iterator(state=state)) == items(ds.iterator())
    # Also through a DataLoader-style second state() call before any next().
    it = ds.iterator(state=state)
    assert it.state() == state
    assert len(items(it)) == (IMAGES + 3) // 4
