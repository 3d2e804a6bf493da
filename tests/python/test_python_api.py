"""The Python API end to end: every stage as a method, iteration, batches as numpy arrays,
Python map/filter, schema, cardinality, options, stats and the stall report.
Run: make pytest  (or SLUICE_BUILD=build /usr/bin/python3 -m pytest tests/python)
"""
import os

import numpy as np
import pytest

import sluice
from sluice_fixtures import (ID_FEATURES, example_records, id_records, ids_dataset, ids_of,
                             parse_id)


def test_issue_example_pipeline_end_to_end():
    records = example_records(1000)
    ds = (sluice.from_records([records[:400], records[400:]])
          .shuffle(seed=0)
          .shard(0, 1)
          .parse_example({"name": "bytes", "label": "int64", "vec": "float32[3]"})
          .batch(256, drop_remainder=True)
          .prefetch(4))
    it = ds.iterator(epoch=0)
    batches = list(it)
    assert len(batches) == 3 == len(ds)
    b = batches[0]
    assert set(b) == {"name", "label", "vec"}
    assert b["label"].dtype == np.int64 and b["label"].shape == (256,)
    assert b["vec"].dtype == np.float32 and b["vec"].shape == (256, 3)
    np.testing.assert_array_equal(b["vec"][:, 0], b["label"].astype(np.float32))
    assert isinstance(b["name"], sluice.Strings) and len(b["name"]) == 256
    assert b["name"][0] == b"item-%d" % b["label"][0]
    labels = np.concatenate([x["label"] for x in batches])
    assert len(set(labels.tolist())) == 768  # shuffled, no repeats
    assert labels.tolist() != sorted(labels.tolist())


def test_for_loop_iterates_epoch_zero():
    ds = ids_dataset()
    assert ids_of(list(ds)) == list(range(100))
    assert ids_of(ds) == ids_of(ds.iterator(epoch=0))


def test_epochs_have_their_own_order():
    ds = sluice.from_records(id_records([50, 50])).shuffle(seed=5).map(
        parse_id, output=ID_FEATURES)
    e0, e1 = ids_of(ds.iterator(epoch=0)), ids_of(ds.iterator(epoch=1))
    assert sorted(e0) == sorted(e1) == list(range(100))
    assert e0 != e1
    assert ids_of(ds.iterator(epoch=1)) == e1  # a pure function of (data, seed, epoch)


@pytest.mark.parametrize("mode", ["global", "block", "buffer"])
def test_shuffle_modes_are_permutations(mode):
    ds = sluice.from_records(id_records([30, 30, 40])).shuffle(
        seed=1, mode=mode, block_shards=2, buffer_size=16).map(parse_id, output=ID_FEATURES)
    got = ids_of(ds)
    assert sorted(got) == list(range(100)) and got != list(range(100))


def test_shard_splits_the_epoch_between_ranks():
    base = sluice.from_records(id_records([50, 53])).shuffle(seed=2)
    per_rank = [ids_of(base.shard(r, 3).map(parse_id, output=ID_FEATURES)) for r in range(3)]
    assert all(len(ids) == 103 // 3 for ids in per_rank)
    assert len(set().union(*map(set, per_rank))) == 3 * (103 // 3)
    padded = [ids_of(base.shard(r, 3, remainder="pad").map(parse_id, output=ID_FEATURES))
              for r in range(3)]
    assert all(len(ids) == 35 for ids in padded)
    assert set().union(*map(set, padded)) == set(range(103))


def test_python_map_sees_numpy_bytes_and_returns_new_features():
    seen = []

    def inspect_element(e):
        seen.append({k: (type(v).__name__, getattr(v, "dtype", None)) for k, v in e.items()})
        return {"id": e["id"], "double": e["vec"] * 2, "tag": b"t%d" % e["id"]}

    ds = ids_dataset().map(inspect_element,
                           output={"id": "int64", "double": "float32[3]", "tag": "bytes"})
    assert ds.schema == {"id": "int64[]", "double": "float32[3]", "tag": "string[]"}
    first = next(ds.iterator())
    assert seen[0] == {"id": ("ndarray", np.dtype("int64")),
                       "vec": ("ndarray", np.dtype("float32"))}
    assert first["tag"] == b"t0"
    np.testing.assert_array_equal(first["double"], [0, 0, 0])


def test_python_map_gets_scalar_strings_as_bytes_and_lists_as_strings():
    def check(e):
        assert isinstance(e["record"], bytes)
        return {"parts": e["record"].split(b"0") or [b""]}

    ds = sluice.from_records([b"102030", b"5"]).map(check, output={"parts": "bytes[-1]"})
    out = list(ds)
    assert isinstance(out[0]["parts"], sluice.Strings)
    assert out[0]["parts"].tolist() == [b"1", b"2", b"3", b""]
    assert list(out[1]["parts"]) == [b"5"]


def test_map_with_seed_is_reproducible_per_sample():
    def noisy(e, seed):
        rng = np.random.default_rng(seed)
        return {"id": e["id"], "noise": rng.random()}

    ds = ids_dataset().map(noisy, output={"id": "int64", "noise": "float32"}, with_seed=True)
    a = {int(b["id"]): float(b["noise"]) for b in ds}
    b = {int(x["id"]): float(x["noise"]) for x in ds.iterator()}
    assert a == b and len(set(a.values())) == 100


def test_map_result_must_match_its_output_schema():
    with pytest.raises(sluice.InvalidArgumentError, match="lacks feature 'vec'"):
        list(ids_dataset().map(lambda e: {"id": e["id"]}))
    with pytest.raises(sluice.InvalidArgumentError, match="'extra', which is not in its output"):
        list(ids_dataset().map(lambda e: dict(e, extra=1)))
    with pytest.raises(sluice.InvalidArgumentError, match=r"feature 'vec': got shape \[2\]"):
        list(ids_dataset().map(lambda e: {"id": e["id"], "vec": [1.0, 2.0]}))
    with pytest.raises(sluice.InvalidArgumentError, match="must return a dict"):
        list(ids_dataset().map(lambda e: 3))


def test_builtin_identity_map_and_unknown_builtin():
    assert ids_of(ids_dataset().map("identity")) == list(range(100))
    with pytest.raises(sluice.InvalidArgumentError, match="no built-in function 'nope'"):
        ids_dataset().map("nope")


def test_filter_keeps_what_the_predicate_accepts():
    ds = ids_dataset().filter(lambda e: e["id"] % 3 == 0, name="thirds")
    assert ids_of(ds) == list(range(0, 100, 3))
    assert ds.cardinality() == sluice.UNKNOWN
    with pytest.raises(TypeError, match="unknown"):
        len(ds)


def test_batch_take_skip_repeat_and_cardinality():
    ds = ids_dataset().batch(8)
    assert len(ds) == 13 and len(list(ds)) == 13
    assert len(ids_dataset().batch(8, drop_remainder=True)) == 12
    assert ids_of(ids_dataset().skip(95)) == [95, 96, 97, 98, 99]
    assert ids_of(ids_dataset().take(3)) == [0, 1, 2]
    rep = ids_dataset().repeat(2)
    assert len(rep) == 200 and ids_of(rep)[100:103] == [0, 1, 2]
    assert ids_dataset().repeat().cardinality() == sluice.INFINITE
    assert len(ids_dataset().repeat().take(7)) == 7
    assert ids_of(ids_dataset().repeat().take(150))[-1] == 49


def test_padded_batch_pads_and_adds_masks():
    def ragged(e):
        i = int(e["record"])
        return {"seq": np.arange(i % 4 + 1, dtype=np.int32)}

    ds = sluice.from_records([b"%d" % i for i in range(6)]).map(
        ragged, output={"seq": "int32[-1]"}).padded_batch(3, pad_values={"seq": -1})
    b = next(iter(ds))
    np.testing.assert_array_equal(b["seq"], [[0, -1, -1], [0, 1, -1], [0, 1, 2]])
    np.testing.assert_array_equal(b["seq_mask"], [[1, 0, 0], [1, 1, 0], [1, 1, 1]])


def test_padded_batch_left_side_and_fixed_lengths():
    def ragged(e):
        i = int(e["record"])
        return {"seq": np.arange(i % 4 + 1, dtype=np.int32)}

    base = sluice.from_records([b"%d" % i for i in range(6)]).map(
        ragged, output={"seq": "int32[-1]"})
    b = next(iter(base.padded_batch(3, pad_values={"seq": -1}, padding_side="left")))
    np.testing.assert_array_equal(b["seq"], [[-1, -1, 0], [-1, 0, 1], [0, 1, 2]])
    np.testing.assert_array_equal(b["seq_mask"], [[0, 0, 1], [0, 1, 1], [1, 1, 1]])

    fixed = base.padded_batch(2, drop_remainder=True, lengths={"seq": 5})
    assert fixed.schema["seq"] == "int32[2, 5]"
    b = next(iter(fixed))
    np.testing.assert_array_equal(b["seq"], [[0, 0, 0, 0, 0], [0, 1, 0, 0, 0]])
    with pytest.raises(sluice.InvalidArgumentError, match="more than its fixed length 3"):
        list(base.padded_batch(6, lengths={"seq": 3}))  # record 3 has 4 values
    with pytest.raises(sluice.InvalidArgumentError, match="padding_side"):
        base.padded_batch(2, padding_side="middle")
    with pytest.raises(sluice.InvalidArgumentError, match="unknown feature 'nope'"):
        base.padded_batch(2, lengths={"nope": 4})


def test_bucket_by_length_groups_by_length():
    def seq(e):
        n = int(e["record"]) % 10 + 1
        return {"seq": np.ones(n, np.int64)}

    ds = (sluice.from_records([b"%d" % i for i in range(200)])
          .map(seq, output={"seq": "int64[-1]"})
          .bucket_by_length("seq", boundaries=[4, 8], batch_sizes=[5, 5, 5]))
    batches = list(ds)
    assert sum(len(b["seq"]) for b in batches) == 200
    for b in batches:
        lengths = b["seq_mask"].sum(axis=1)
        assert (lengths.max() < 4) or (lengths.min() >= 4)


def test_schema_shard_records_and_repr():
    ds = sluice.from_records(id_records([3, 4])).shuffle(seed=9).map(
        parse_id, output=ID_FEATURES).batch(2)
    assert ds.schema == {"id": "int64[-1]", "vec": "float32[-1, 3]"}
    assert ds.shard_records == [3, 4]
    assert repr(ds).startswith("sluice.Dataset(from_records(2 shards) -> shuffle(seed=9) -> map(")
    assert "batch(batch_size=2)" in repr(ds)


def test_invalid_stages_raise_at_the_call():
    ds = ids_dataset()
    with pytest.raises(sluice.InvalidArgumentError, match="batch_size"):
        ds.batch(0)
    with pytest.raises(sluice.InvalidArgumentError, match="shuffle must come directly after read"):
        ds.shuffle(seed=1)
    with pytest.raises(sluice.InvalidArgumentError, match="shuffle mode"):
        sluice.from_records([b"x"]).shuffle(mode="sideways")
    with pytest.raises(sluice.InvalidArgumentError, match="rank 3 of world size 2"):
        sluice.from_records([b"x"]).shard(3, 2)
    with pytest.raises(sluice.InvalidArgumentError, match="bad spec"):
        ds.map(parse_id, output={"id": 5})
    with pytest.raises(sluice.InvalidArgumentError, match="unknown dtype 'int7'"):
        ds.map(parse_id, output={"id": "int7"})
    with pytest.raises(sluice.InvalidArgumentError, match="not callable"):
        ds.filter(42)


def test_default_threads_follow_the_affinity_mask():
    saved = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(saved)})  # as `taskset -c N` would
        assert ids_dataset().iterator().stats()["threads"] == 1
    finally:
        os.sched_setaffinity(0, saved)
    assert 1 <= ids_dataset().iterator().stats()["threads"] <= len(saved)


def test_options_reach_the_iterator():
    ds = ids_dataset().with_options(threads=1, autotune=False)
    it = ds.iterator()
    list(it)
    assert it.stats()["threads"] == 1
    assert ds.iterator(threads=2).stats()["threads"] == 2
    with pytest.raises(sluice.InvalidArgumentError, match="unknown iterator option"):
        ds.iterator(thread=2)
    with pytest.raises(sluice.InvalidArgumentError, match="on_error"):
        ds.iterator(on_error="ignore")


def test_stats_and_report():
    it = ids_dataset().batch(10).prefetch(2).iterator()
    assert len(list(it)) == 10
    stats = it.stats()
    assert stats["elements"] == 10
    assert [s["name"] for s in stats["stages"]] == ["read", "map", "batch", "prefetch"]
    assert stats["stages"][1]["elements"] == 100
    # Share of a stage's chunks the consumer's thread produced itself (docs/pipeline.md).
    assert all(0.0 <= s["consumer_share"] <= 1.0 for s in stats["stages"])
    report = it.report()
    assert "trainer waited" in report and "prefetch" in report


def test_stats_count_fresh_buffers_which_stay_few_once_the_pool_is_warm():
    ds = (sluice.from_records(example_records(100))
          .parse_example({"label": "int64", "vec": ("float32", [3])})
          .repeat(400).batch(10).prefetch(2))
    it = ds.iterator(threads=2)
    batches = sum(1 for _ in it)
    assert batches == 4000
    # Without reuse every batch would take two fresh buffers (label, vec) and every parsed
    # record two more; with it they stop at the pipeline's high-water mark (~400 buffers
    # in flight: read tasks of at most an epoch's 100 records, parsed records, batches).
    assert 0 < it.stats()["buffer_allocations"] < batches // 4


def test_iterator_close_and_context_manager():
    with ids_dataset().iterator() as it:
        next(it)
    assert it.closed
    with pytest.raises(sluice.FailedPreconditionError, match="closed"):
        next(it)
    it.close()  # idempotent


def test_make_example_round_trips_through_parse_example():
    rec = sluice.make_example({"i": [1, 2], "f": 0.5, "b": [b"x", "y"], "one": 7})
    ds = sluice.from_records([rec]).parse_example(
        {"i": "int64[2]", "f": "float32", "b": "bytes[-1]", "one": "int64"})
    e = next(iter(ds))
    np.testing.assert_array_equal(e["i"], [1, 2])
    assert e["f"] == np.float32(0.5) and e["one"] == 7
    assert e["b"].tolist() == [b"x", b"y"]
    with pytest.raises(TypeError, match="unsupported value"):
        sluice.make_example({"x": {"no": 1}})


def test_float16_and_int32_features():
    ds = sluice.from_records([b"1", b"2"]).map(
        lambda e: {"h": np.full(2, int(e["record"]), np.float16), "i": int(e["record"])},
        output={"h": "float16[2]", "i": "int32"}).batch(2)
    b = next(iter(ds))
    assert b["h"].dtype == np.float16 and b["i"].dtype == np.int32
    np.testing.assert_array_equal(b["h"], [[1, 1], [2, 2]])


def test_one_iterator_has_one_consumer_thread():
    import threading
    import time

    def slow(e):
        time.sleep(0.2)
        return e

    it = sluice.from_records([b"a"] * 4).map(slow, parallelism=1).iterator()
    errors = []
    t = threading.Thread(target=lambda: next(it))
    t.start()
    time.sleep(0.05)  # the thread is inside next(it), the GIL released
    for call in (lambda: next(it), it.state, it.close):
        try:
            call()
        except sluice.FailedPreconditionError as e:
            errors.append(str(e))
    t.join()
    assert len(errors) == 3 and all("another thread" in e for e in errors)
    assert it.stats()["elements"] == 1
    it.close()


def test_read_and_shuffle_defaults_are_the_libraries_own():
    """Python's defaults of read() and shuffle() are the C++ options' (one source of truth):
    every such parameter defaults to the value the extension module reports."""
    import inspect
    from sluice import _sluice
    for fn, key in ((sluice.read, "read"), (sluice.Dataset.shuffle, "shuffle")):
        params = inspect.signature(fn).parameters
        for name, value in _sluice.DEFAULTS[key].items():
            assert params[name].default == value, (key, name)
    assert _sluice.DEFAULTS["shuffle"]["buffer_size"] == 10000  # ShuffleOptions' documented one
    assert _sluice.DEFAULTS["read"]["chunk_bytes"] == 1 << 20
