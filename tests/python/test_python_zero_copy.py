"""Batches reach numpy (and torch) without a copy: every array's memory lies inside the
pipeline's batch buffer, the array keeps that buffer alive after the iterator is gone, and
the pipeline never writes into a buffer an array still uses."""
import gc

import numpy as np
import torch

import sluice
from sluice_fixtures import ids_dataset, ids_of


def inside_base(arr):
    base = arr.base
    assert isinstance(base, sluice._sluice.BatchBuffer), type(base)
    start = arr.ctypes.data
    return base.address <= start and start + arr.nbytes <= base.address + base.capacity


def test_batch_arrays_lie_inside_the_batch_buffer():
    batch = next(ids_dataset().batch(16).iterator())
    for name in ("id", "vec"):
        assert inside_base(batch[name]), name
        assert batch[name].flags.writeable and batch[name].flags.c_contiguous
    assert batch["id"].base is not batch["vec"].base  # one buffer per feature


def test_array_keeps_its_buffer_alive_after_the_iterator_is_gone():
    it = ids_dataset().batch(16).iterator()
    batch = next(it)
    vec = batch["vec"]
    expected = np.repeat(np.arange(16, dtype=np.float32), 3).reshape(16, 3)
    it.close()
    del it, batch
    gc.collect()
    for _ in range(3):  # other pipelines now allocate and fill buffers
        list(ids_dataset().batch(16))
    np.testing.assert_array_equal(vec, expected)
    assert vec.base.ref_count == 1  # the array's base holds the only reference


def test_pipeline_never_overwrites_a_batch_still_in_use():
    it = ids_dataset((500,)).batch(10).prefetch(4).iterator()
    kept = [next(it) for _ in range(5)]
    copies = [{k: v.copy() for k, v in b.items()} for b in kept]
    rest = list(it)  # buffers of dropped batches get recycled meanwhile
    assert len(rest) == 45
    for b, c in zip(kept, copies):
        for k in b:
            np.testing.assert_array_equal(b[k], c[k])
    addresses = {b["id"].ctypes.data for b in kept}
    assert len(addresses) == 5


def test_strings_are_views_of_the_buffer():
    ds = sluice.from_records([b"a", b"bb", b"", b"dddd"]).batch(4)
    s = next(iter(ds))["record"]
    assert isinstance(s, sluice.Strings)
    values, offsets = s.values, s.offsets
    assert values.dtype == np.uint8 and offsets.dtype == np.uint64
    assert offsets.tolist() == [0, 1, 3, 3, 7]
    assert values.tobytes() == b"abbdddd"
    assert s.tolist() == [b"a", b"bb", b"", b"dddd"] and s[-1] == b"dddd" and len(s) == 4
    assert s.shape == (4,)
    assert s.numpy().dtype == object and s.numpy()[1] == b"bb"
    # offsets sit at the start of the buffer, values right after them
    assert values.base is s and offsets.base is s
    assert values.ctypes.data - offsets.ctypes.data >= offsets.nbytes


def test_torch_from_numpy_shares_the_memory():
    batch = next(ids_dataset().batch(8).iterator())
    t = torch.from_numpy(batch["vec"])
    assert t.data_ptr() == batch["vec"].ctypes.data
    assert ids_of([batch]) == list(range(8))
