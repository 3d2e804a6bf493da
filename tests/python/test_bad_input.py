"""Bad input that used to lose good data, change it silently or fail with a raw C++ message
(issue 13): damaged shards and indexes under on_error skip / quarantine, a bit flip in a gzip
shard, `sluice index --recover`, JSON numbers a feature type cannot hold, out-of-range map
outputs, stage arguments and iterator options that cannot work, an unwritable quarantine path.
"""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import sluice
from conftest import BUILD
from sluice_fixtures import id_records

SLUICE = str(BUILD / "bin" / "sluice")


def run(*args, check=None):
    r = subprocess.run([SLUICE, *map(str, args)], capture_output=True, text=True, timeout=300)
    if check is not None:
        assert r.returncode == check, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def make_dataset(tmp_path, codec="none", records=256, shard_size="4KB", name="ds"):
    """A dataset of `records` Examples {text, i} in several shards; returns its directory."""
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps({"text": f"record {i} " + "x" * 40, "i": i}) + "\n"
                           for i in range(records)))
    out = tmp_path / name
    run("convert", "jsonl", src, out, "--codec", codec, "--shard-size", shard_size, check=0)
    return out


def shards_of(directory):
    return sorted(p for p in directory.iterdir()
                  if ".tfrecord" in p.name and not p.name.endswith(".idx"))


def ids(ds, **options):
    """The `i` feature of every record the dataset yields."""
    ds = ds.parse_example({"i": "int64"})
    return [int(e["i"]) for e in ds.iterator(**options)]


def records_of(shard):
    return sluice.read(str(shard))


# --- damaged shards and indexes under on_error (item 6) -------------------------------

def truncate(path, drop):
    size = path.stat().st_size
    os.truncate(path, size - drop)


DAMAGE = {
    "truncated_shard": lambda shard: truncate(shard, 30),
    "truncated_shard_without_index": lambda shard: (truncate(shard, 30),
                                                    os.remove(str(shard) + ".idx")),
    "corrupt_index": lambda shard: _flip(shard.with_name(shard.name + ".idx"), 40),
    "zero_byte_index": lambda shard: open(str(shard) + ".idx", "wb").close(),
    "foreign_index": lambda shard: shutil.copy(
        shards_of(shard.parent)[-1].with_name(shards_of(shard.parent)[-1].name + ".idx"),
        str(shard) + ".idx"),
}


def _flip(path, at):
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_shard_or_index_keeps_the_intact_records_under_skip(tmp_path, damage):
    ds_dir = make_dataset(tmp_path)
    shards = shards_of(ds_dir)
    assert len(shards) >= 4
    first = shards[0]
    intact_before = [ids(records_of(s)) for s in shards]
    DAMAGE[damage](first)

    # The read's own policy, and the iterator's: both keep every intact record.
    for ds, options in ((sluice.read(str(ds_dir), on_error="skip"), {}),
                        (sluice.read(str(ds_dir)), {"on_error": "skip"})):
        got = ids(ds, **options)
        others = [i for s in intact_before[1:] for i in s]
        assert got[len(got) - len(others):] == others, damage
        kept = got[:len(got) - len(others)]
        assert kept == intact_before[0][:len(kept)], damage
        if damage.startswith("truncated"):
            assert len(intact_before[0]) - 2 <= len(kept) < len(intact_before[0])
        else:
            assert kept == intact_before[0]  # only the index was bad: nothing is lost


def test_damaged_shard_fails_at_iterator_start_under_raise(tmp_path):
    ds_dir = make_dataset(tmp_path)
    first = shards_of(ds_dir)[0]
    truncate(first, 30)
    with pytest.raises(sluice.DataLossError, match="index does not match shard"):
        sluice.read(str(ds_dir), on_error="raise")
    ds = sluice.read(str(ds_dir))  # the policy is the iterator's: it decides at its start
    with pytest.raises(sluice.DataLossError) as e:
        ds.iterator()
    assert first.name in str(e.value) and "on_error = skip or quarantine" in str(e.value)


def test_quarantine_names_the_damaged_shard(tmp_path):
    ds_dir = make_dataset(tmp_path)
    first = shards_of(ds_dir)[0]
    truncate(first, 30)
    q = tmp_path / "quarantine.tsv"
    it = sluice.read(str(ds_dir)).iterator(on_error="quarantine", quarantine_path=str(q))
    n = sum(1 for _ in it)
    stats = it.stats()["stages"][0]
    assert stats["skipped"] >= 1 and stats["quarantined"] == 1
    del it
    lines = q.read_text().splitlines()
    assert len(lines) == 1
    shard, index, stage, message = lines[0].split("\t")
    assert shard.endswith(first.name) and index == "-" and stage == "read"
    assert "intact record" in message
    assert n >= 250


def test_index_recover_keeps_the_good_prefix_of_a_truncated_shard(tmp_path):
    for codec in ("none", "zstd", "gzip"):
        ds_dir = make_dataset(tmp_path, codec=codec, name=f"ds_{codec}", shard_size="16KB")
        shard = shards_of(ds_dir)[0]
        before = ids(records_of(shard))
        truncate(shard, 25)
        r = run("index", shard)
        assert r.returncode == 1 and "--recover" in r.stderr, r.stderr
        r = run("index", "--recover", shard, check=0)
        assert "kept" in r.stdout and "damaged" in r.stdout, r.stdout
        assert os.path.exists(str(shard) + ".damaged")
        after = ids(records_of(shard))  # strict: a whole, indexed shard again
        assert len(after) < len(before) and after == before[:len(after)], codec
        # A zstd shard this small is one frame of one block: cut, none of it decodes.
        assert len(after) > 0 or codec == "zstd"
        run("verify", shard, check=0)


# --- a stale index that passes the checks at open (item 6, audit follow-up) -------------

def stale_index_shard(tmp_path, codec, old, new, name="s"):
    """A shard holding `new` under the index written for `old` (same file size): a shard
    rewritten in place whose .idx was kept."""
    shard = tmp_path / f"{name}.tfrecord"
    sluice.write_records(str(shard), old, codec=codec)
    old_index = (tmp_path / f"{name}.tfrecord.idx").read_bytes()
    old_size = shard.stat().st_size
    for _ in range(20):  # zstd: the last record grows or shrinks until the sizes agree
        sluice.write_records(str(shard), new, codec=codec)
        delta = old_size - shard.stat().st_size
        if delta == 0:
            break
        new[-1] = new[-1] + os.urandom(delta) if delta > 0 else new[-1][:delta]
    assert shard.stat().st_size == old_size  # what the checks at open compare
    (tmp_path / f"{name}.tfrecord.idx").write_bytes(old_index)
    return shard


def payloads(n, sizes):
    """`n` records of incompressible bytes (zstd stores them raw: the same compressed size in
    any order), record i starting with its number."""
    rng = np.random.default_rng(5)
    return [b"%03d" % i + rng.bytes(sizes[i % len(sizes)]) for i in range(n)]


def read_all(shard, order, read_on_error=None, **options):
    """Records of `shard` in order ("none") or the chunk-aware shuffle, and the read stats."""
    ds = sluice.read(str(shard), chunk_bytes=2048, on_error=read_on_error)
    if order == "chunks":
        ds = ds.shuffle(seed=4, window_chunks=2, lanes=1)
    it = ds.iterator(**options)
    got = [bytes(e["record"]) for e in it]
    return got, it.stats()["stages"][0]


@pytest.mark.parametrize("codec", ["none", "zstd"])
@pytest.mark.parametrize("order", ["none", "chunks"])
def test_stale_index_with_records_swapped_serves_every_record_under_skip(tmp_path, codec, order):
    """Records 2 and 3 swapped (different lengths, same file size, same first and last
    record) under the old .idx: every record is intact and must be read, none twice."""
    old = payloads(40, (100, 300, 170))
    new = old[:2] + [old[3], old[2]] + old[4:]
    shard = stale_index_shard(tmp_path, codec, old, new)
    got, stats = read_all(shard, order, on_error="skip")
    if order == "none":
        assert got == new
    else:
        assert sorted(got) == sorted(new) and len(set(got)) == len(new)
    assert stats["skipped"] == 0
    # The read's policy raise: the first record the index misplaces is the error.
    with pytest.raises(sluice.DataLossError, match="index"):
        read_all(shard, order, read_on_error="raise")
    # The read's policy left to the iterator: every record is intact, so even an iterator
    # that raises reads them all (a position left without a record would raise).
    assert sorted(read_all(shard, order)[0]) == sorted(new)


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_stale_index_positions_without_a_record_are_reported_lost(tmp_path, codec):
    """Records 5 and 6 merged into one of the same framed size: the order (built on the
    index's 20 records) has a position with no record: it is skipped and quarantined by
    number, every record the shard holds is read."""
    old = payloads(20, (200,))
    merged = old[5] + os.urandom(len(old[6]) + 16)  # + the 16 bytes of framing it saves
    new = old[:5] + [merged] + old[7:]
    shard = stale_index_shard(tmp_path, codec, old, new)
    q = tmp_path / "q.tsv"
    got, stats = read_all(shard, "none", on_error="quarantine", quarantine_path=str(q))
    assert got == new
    assert stats["skipped"] == 1 and stats["quarantined"] == 1
    path, index, stage, message = q.read_text().splitlines()[0].split("\t")
    assert path.endswith(shard.name) and index == "6" and stage == "read", (index, message)
    assert "record 6 is lost" in message and "19 intact record(s)" in message, message
    assert "the index listed 20" in message, message


# --- positional reads by default, mapping on request (item 9) ---------------------------

def test_read_indexes_a_shard_without_idx_by_positional_reads_or_mapped(tmp_path):
    ds_dir = make_dataset(tmp_path, records=50, shard_size="1MB")
    shard, = shards_of(ds_dir)
    os.remove(str(shard) + ".idx")
    for mapped in (False, True):
        assert ids(sluice.read(str(shard), map_uncompressed=mapped)) == list(range(50))


# --- a bit flip in a gzip shard (item 7) ------------------------------------------------

def test_gzip_bit_flip_costs_the_records_after_it_not_the_shard(tmp_path):
    ds_dir = make_dataset(tmp_path, codec="gzip", records=120, shard_size="1MB")
    shard, = shards_of(ds_dir)
    good = shard.read_bytes()
    for at in (len(good) - 6, len(good) - 300, len(good) // 2):  # trailer CRC, late, middle
        data = bytearray(good)
        data[at] ^= 0x04
        shard.write_bytes(bytes(data))
        got = ids(sluice.read(str(shard), on_error="skip"))
        assert got == sorted(set(got)) and set(got) <= set(range(120)), at  # nothing corrupt
        assert len(got) >= (120 if at == len(good) - 6 else 30), (at, len(got))


# --- JSON numbers a feature type cannot hold (item 3) -----------------------------------

def inspect_values(out, field):
    r = run("inspect", out, "--json", "--records", 100, check=0)
    return [next(iter(json.loads(line)[field].values())) for line in r.stdout.splitlines()]


def write_jsonl(path, lines):
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    return path


def test_convert_jsonl_types_a_field_from_the_whole_input_not_its_first_line(tmp_path):
    """Integers first, fractions later: the later lines used to be skipped ("is float here
    but int64 in earlier lines"); the field is float, every line kept."""
    xs = [1, 2.5, -16777216, True, [3, 0.25]]
    ns = [12345678901, 16777217, 1, -5, [7, 8]]
    src = write_jsonl(tmp_path / "x.jsonl", [{"text": str(i), "x": x, "n": n}
                                             for i, (x, n) in enumerate(zip(xs, ns))])
    r = run("convert", "jsonl", src, tmp_path / "out", check=0)
    assert "skipped" not in r.stderr, r.stderr
    assert inspect_values(tmp_path / "out", "x") == [[1.0], [2.5], [-16777216.0], [1.0],
                                                     [3.0, 0.25]]
    assert inspect_values(tmp_path / "out", "n") == [[12345678901], [16777217], [1], [-5],
                                                     [7, 8]]  # all integers: int64
    features = json.loads((tmp_path / "out" / "dataset.json").read_text())["features"]
    assert features["x"]["type"] == "float" and features["n"]["type"] == "int64"


def test_convert_jsonl_stops_before_writing_when_no_type_holds_every_value(tmp_path):
    """1.5, 16777217, 12345678901: float32 cannot hold the integers, int64 not the fraction.
    Two of three lines used to be skipped; now nothing is written and the error names the
    field, the lines and --schema."""
    src = write_jsonl(tmp_path / "x.jsonl", [{"text": "a", "x": 1.5}, {"text": "b", "x": 16777217},
                                             {"text": "c", "x": 12345678901}])
    out = tmp_path / "out"
    r = run("convert", "jsonl", src, out, check=1)
    assert f'field "x" mixes integers and fractions (the first fraction on {src}:1)' in r.stderr
    assert f"the integer 16777217 on {src}:2" in r.stderr and "--schema x=float" in r.stderr
    assert not out.exists() or [p.name for p in out.iterdir()
                                if not p.name.startswith(".sluice-lock")] == []
    r = run("convert", "jsonl", src, out, "--schema", "x=float", check=0)
    assert "skipped" not in r.stderr, r.stderr
    assert inspect_values(out, "x") == [[1.5], [16777216.0], [12345678848.0]]  # rounded
    r = run("convert", "jsonl", src, tmp_path / "ints", "--schema", "x=int64", check=0)
    assert f"{src}:1: field \"x\" is float here" in r.stderr, r.stderr
    assert inspect_values(tmp_path / "ints", "x") == [[16777217], [12345678901]]


def test_convert_jsonl_names_integers_beyond_int64(tmp_path):
    src = tmp_path / "x.jsonl"
    src.write_text('{"text": "a", "n": 1}\n'
                   '{"text": "b", "n": 18446744073709551616}\n'
                   '{"text": "c", "n": 9223372036854775808}\n'
                   '{"text": "d", "m": 123456789012345678901234567890}\n'
                   '{"text": "e", "n": 2}\n')
    r = run("convert", "jsonl", src, tmp_path / "out", check=0)
    for line, value in ((2, "18446744073709551616"), (3, "9223372036854775808"),
                        (4, "123456789012345678901234567890")):
        assert f"{src}:{line}: field" in r.stderr and f"integer {value} is beyond the int64" \
            in r.stderr, r.stderr
    assert "write 1.0" not in r.stderr
    assert inspect_values(tmp_path / "out", "n") == [[1], [2]]


def test_convert_jsonl_refuses_floats_beyond_float32(tmp_path):
    src = tmp_path / "x.jsonl"
    src.write_text('{"text": "a", "f": 1.5}\n{"text": "b", "f": 1e40}\n'
                   '{"text": "c", "f": 1e-50}\n{"text": "d", "f": 2.25}\n')
    r = run("convert", "jsonl", src, tmp_path / "out", check=0)
    assert f"{src}:2: field \"f\" (float): 1e+40 is beyond float32's range" in r.stderr, r.stderr
    assert f"{src}:3: field \"f\" (float): 1e-50 is too small for float32" in r.stderr
    assert inspect_values(tmp_path / "out", "f") == [[1.5], [2.25]]


# --- out-of-range map outputs, stage arguments and options (item 11) --------------------

def test_map_output_that_does_not_fit_its_dtype_names_the_record():
    def big(e):
        i = int(e["record"])
        return {"v": 2**40 if i == 3 else i}
    ds = sluice.from_records(id_records((6,))).map(big, output={"v": "int32"})
    with pytest.raises(sluice.InvalidArgumentError) as e:
        list(ds)
    message = str(e.value)
    assert "record 3" in message and "feature 'v'" in message and "1099511627776" in message
    assert "int32" in message
    for value, dtype in ((1.5, "int64"), (1e40, "float32"), (70000.0, "float16"),
                         (np.array([1, -1]), "uint8"), (np.array([2**31]), "int32")):
        ds = sluice.from_records([b"0"]).map(lambda e, v=value: {"v": v}, output={"v": dtype})
        with pytest.raises(sluice.InvalidArgumentError, match="does not fit its dtype"):
            list(ds)
    ok = sluice.from_records([b"0"]).map(lambda e: {"v": [0.1, 3, 2**24]},
                                         output={"v": "float32[3]"})
    assert list(ok)[0]["v"].tolist() == [np.float32(0.1), 3.0, 16777216.0]


def test_batch_larger_than_the_data_is_one_batch_and_absurd_sizes_are_named():
    ds = sluice.from_records(id_records((5,)))
    for n in (2**40, 2**62):
        batches = list(ds.batch(n))
        assert len(batches) == 1 and len(batches[0]["record"]) == 5
        assert list(ds.batch(n, drop_remainder=True)) == []
    for n in (0, -1, 2**64, 1.5):
        with pytest.raises(sluice.InvalidArgumentError, match="batch: batch_size"):
            ds.batch(n)


def test_buffer_shuffle_of_size_zero_is_refused():
    ds = sluice.from_records(id_records((5,)))
    with pytest.raises(sluice.InvalidArgumentError, match="buffer_size must be >= 1"):
        ds.shuffle(mode="buffer", buffer_size=0)
    assert len(list(ds.shuffle(mode="buffer", buffer_size=2**40, seed=1))) == 5


@pytest.mark.parametrize("options,match", [
    ({"memory_budget": 0}, "memory_budget"),
    ({"memory_budget": -5}, "memory_budget"),
    ({"threads": -1}, "threads"),
    ({"threads": 100000}, "threads"),
])
def test_iterator_options_that_cannot_work_are_refused(options, match):
    ds = sluice.from_records(id_records((5,)))
    with pytest.raises(sluice.InvalidArgumentError, match=match):
        ds.iterator(**options)


# --- an unwritable quarantine path (item 12) --------------------------------------------

def test_unwritable_quarantine_path_fails_before_any_record(tmp_path):
    consumed = []

    def fail_third(e):
        consumed.append(int(e["record"]))
        if consumed[-1] == 2:
            raise ValueError("bad record")
        return e
    ds = sluice.from_records(id_records((6,))).map(fail_third, on_error="quarantine",
                                                   parallelism=0)
    with pytest.raises(sluice.Error, match="quarantine"):
        ds.iterator(quarantine_path=str(tmp_path / "missing" / "dir" / "q.tsv"))
    with pytest.raises(sluice.InvalidArgumentError, match="quarantine_path"):
        ds.iterator()
    assert consumed == []
