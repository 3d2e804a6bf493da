"""The default shuffle (chunks mode) and the exactly-once sharding from Python: every record
once per epoch on zstd, gzip and uncompressed shards, a new order per epoch, the chunk
window and lanes options, remainder="exact" for evaluation, and a state of another dataset
with the same record counts refused with both named (docs/order.md)."""
import pytest

import sluice

COUNTS = [300, 0, 257, 130]


def write(tmp_path, codec, prefix=b""):
    paths, next_id = [], 0
    for s, n in enumerate(COUNTS):
        path = tmp_path / f"part-{s}.tfrecord"
        sluice.write_records(str(path), (prefix + b"%d" % (next_id + i) for i in range(n)),
                             codec=codec, zstd_frame_bytes=512)
        next_id += n
        paths.append(str(path))
    return paths


def ids(ds):
    out = []
    for batch in ds:
        out += [int(r.lstrip(b"x")) for r in batch["record"]]
    return out


@pytest.mark.parametrize("codec", ["zstd", "gzip", "none"])
def test_default_shuffle_misses_or_repeats_a_record_or_keeps_the_order(tmp_path, codec):
    # 512-byte chunks (gzip: one per shard, deflate cannot restart), a window of 2 of them.
    ds = sluice.read(write(tmp_path, codec), chunk_bytes=512).shuffle(
        seed=3, window_chunks=2, lanes=1).batch(16)
    assert ds.num_chunks >= (3 if codec == "gzip" else 20)
    first, second = ids(ds.iterator(epoch=0)), ids(ds.iterator(epoch=1))
    assert sorted(first) == sorted(second) == list(range(sum(COUNTS)))
    assert first != sorted(first) and first != second


def test_exact_remainder_drops_or_repeats_a_sample(tmp_path):
    ds = sluice.read(write(tmp_path, "zstd")).shuffle(seed=1)
    world = 4  # 687 records: ranks 0-2 take 172, rank 3 takes 171
    seen = [ids(ds.shard(rank, world, remainder="exact").batch(50)) for rank in range(world)]
    assert [len(s) for s in seen] == [172, 172, 172, 171]
    assert sorted(sum(seen, [])) == list(range(sum(COUNTS)))
    assert [len(ds.shard(r, world, remainder="exact")) for r in range(world)] == [172, 172, 172, 171]
    with pytest.raises(sluice.InvalidArgumentError, match="'drop', 'pad' or 'exact'"):
        ds.shard(0, 2, remainder="even")


def test_state_of_another_dataset_with_equal_counts_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = sluice.read(write(tmp_path / "a", "zstd")).shuffle(seed=2).batch(8)
    b = sluice.read(write(tmp_path / "b", "zstd", prefix=b"x")).shuffle(seed=2).batch(8)
    assert a.shard_records == b.shard_records
    it = a.iterator()
    next(it)
    with pytest.raises(sluice.Error, match="another dataset snapshot") as e:
        b.iterator(state=it.state())
    assert f"under {tmp_path / 'a'} " in str(e.value) and f"under {tmp_path / 'b'} " in str(e.value)


def test_chunk_stats_count_one_decode_per_chunk_and_window(tmp_path):
    ds = sluice.read(write(tmp_path, "zstd")).shuffle(seed=5, lanes=1)  # one window: all
    it = ds.batch(32).iterator(threads=2)  # readers: the 2 threads and the consumer
    assert len(ids(it)) == sum(COUNTS)
    read = it.stats()["stages"][0]
    assert read["chunk_decodes"] == ds.num_chunks
    assert read["chunk_evictions"] == 0
    # Readers keep the chunks they hold between tasks: a few takes per chunk (one per
    # reader), not one per task of 64 records.
    assert ds.num_chunks <= read["chunk_takes"] <= 8 * ds.num_chunks < sum(COUNTS) / 4


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_next_epoch_starts_with_the_chunks_the_last_one_decoded(tmp_path, codec):
    paths = write(tmp_path, codec)
    ds = sluice.read(paths).shuffle(seed=5).batch(32)
    cold = sluice.read(paths, keep_decoded_chunks=False).shuffle(seed=5).batch(32)
    for epoch in range(3):
        it, control = ds.iterator(epoch=epoch), cold.iterator(epoch=epoch)
        assert ids(it) == ids(control)  # the same stream as decoding again
        read, control_read = it.stats()["stages"][0], control.stats()["stages"][0]
        assert control_read["chunk_decodes"] == ds.num_chunks
        assert control_read["chunk_kept"] == 0
        assert read["chunk_decodes"] == (ds.num_chunks if epoch == 0 else 0)
        assert read["chunk_kept"] == (0 if epoch == 0 else ds.num_chunks)


def test_an_unshuffled_read_keeps_from_its_second_pass(tmp_path):
    # Its window is a chunk: a single pass recycles a few buffers instead of keeping them all.
    ds = sluice.read(write(tmp_path, "zstd")).batch(32)
    for epoch in range(3):
        it = ds.iterator(epoch=epoch)
        assert ids(it) == list(range(sum(COUNTS)))
        read = it.stats()["stages"][0]
        assert read["chunk_decodes"] == (0 if epoch == 2 else ds.num_chunks)
        assert read["chunk_kept"] == (ds.num_chunks if epoch == 2 else 0)


def test_a_dataset_larger_than_the_cache_keeps_nothing(tmp_path):
    ds = sluice.read(write(tmp_path, "zstd")).shuffle(seed=5).batch(32)
    budget = 4096  # the decoded-chunk cache: 2 KiB, below the dataset's decoded bytes
    for epoch in range(2):
        it = ds.iterator(epoch=epoch, memory_budget=budget)
        assert sorted(ids(it)) == list(range(sum(COUNTS)))
        read = it.stats()["stages"][0]
        assert read["chunk_kept"] == 0
        assert read["chunk_decodes"] >= ds.num_chunks
