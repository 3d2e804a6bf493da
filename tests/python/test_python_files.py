"""sluice.read over shards on disk: shards written by sluice.RecordWriter in every codec and
a dataset directory written by `sluice convert jsonl` (dataset.json); corrupt, missing and
unfinished files fail with typed errors naming the file and byte offset."""
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import sluice
from conftest import BUILD
from sluice_fixtures import example_records


def write_shards(directory, codec, shards=3, per_shard=50):
    paths = []
    for s in range(shards):
        path = Path(directory) / f"part-{s}.tfrecord"
        n = sluice.write_records(str(path), example_records(per_shard, start=s * per_shard),
                                 codec=codec)
        assert n == per_shard
        paths.append(path)
    return paths


def labels(ds):
    return [int(x) for b in ds for x in np.atleast_1d(b["label"])]


@pytest.mark.parametrize("codec", ["zstd", "gzip", "none"])
def test_read_shards_in_every_codec(tmp_path, codec):
    paths = write_shards(tmp_path, codec)
    ds = sluice.read(paths).parse_example({"label": "int64", "vec": "float32[3]"}).batch(16)
    assert ds.shard_records == [50, 50, 50]
    assert labels(ds) == list(range(150))
    shuffled = sluice.read(str(tmp_path / "part-*.tfrecord")).shuffle(seed=3).parse_example(
        {"label": "int64"})
    got = labels(shuffled)
    assert sorted(got) == list(range(150)) and got != list(range(150))
    single = sluice.read(paths[1]).parse_example({"label": "int64"})  # a Path works too
    assert labels(single) == list(range(50, 100))


def test_read_a_directory_written_by_sluice_convert(tmp_path):
    cli = BUILD / "bin" / "sluice"
    if not cli.exists():
        pytest.fail(f"{cli} not built (make build)")
    lines = [json.dumps({"text": f"line {i}", "n": i, "w": [0.5, i]}) for i in range(300)]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "ds"
    subprocess.run([str(cli), "convert", "jsonl", str(tmp_path / "in.jsonl"), str(out),
                    "--shard-size", "4KB"], check=True, capture_output=True)
    ds = sluice.read(str(out))  # the directory: shards from its dataset.json
    assert len(ds.shard_records) > 1 and sum(ds.shard_records) == 300
    parsed = ds.parse_example({"text": "bytes", "n": "int64", "w": "float32[2]"}).batch(64)
    batches = list(parsed)
    assert np.concatenate([b["n"] for b in batches]).tolist() == list(range(300))
    assert batches[0]["text"][5] == b"line 5"
    np.testing.assert_array_equal(batches[0]["w"][3], [0.5, 3.0])


def test_corrupt_shard_is_a_data_loss_error_naming_file_and_offset(tmp_path):
    (path,) = write_shards(tmp_path, "none", shards=1, per_shard=20)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a payload byte of a record in the middle
    path.write_bytes(bytes(data))
    ds = sluice.read(path, parallelism=1).parse_example({"label": "int64"})
    with pytest.raises(sluice.DataLossError) as info:
        list(ds)
    message = str(info.value)
    assert str(path) in message and "offset" in message, message
    # on_error="skip" drops just the damaged record
    kept = labels(sluice.read(path).parse_example({"label": "int64"}).with_options(
        on_error="skip"))
    assert len(kept) == 19


def test_missing_paths_are_not_found_errors(tmp_path):
    with pytest.raises(sluice.NotFoundError, match="no such shard file"):
        sluice.read(str(tmp_path / "nope"))
    with pytest.raises(sluice.NotFoundError, match="matches no shard"):
        sluice.read(str(tmp_path / "nope-*"))
    with pytest.raises(sluice.InvalidArgumentError, match="no paths"):
        sluice.read([])


def test_record_writer_leaves_no_file_unless_closed(tmp_path):
    path = tmp_path / "x.tfrecord.zst"
    with pytest.raises(RuntimeError):
        with sluice.RecordWriter(str(path)) as w:
            w.write(b"record")
            raise RuntimeError("the job died")
    assert not path.exists()
    w = sluice.RecordWriter(str(path), codec="zstd")
    w.write(b"a")
    w.write(b"b")
    assert w.records_written == 2 and not path.exists()
    w.close()
    assert path.exists() and Path(str(path) + ".idx").exists()
    with pytest.raises(sluice.FailedPreconditionError, match="closed"):
        w.write(b"c")
    assert [bytes(r) for b in sluice.read(path).batch(2) for r in b["record"]] == [b"a", b"b"]
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.RecordWriter(str(tmp_path / "y"), codec="lz4")
