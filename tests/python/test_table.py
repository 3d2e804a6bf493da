"""Versioned tables from Python and the CLI (docs/table.md), with every table sluice writes
replayed by tests/python/delta_reader.py, a reader written from PROTOCOL.md without sluice.
"""
import datetime
import json
import os
import re
import subprocess
import time
import uuid

import pytest

import sluice
from delta_reader import DeltaLogError, read_snapshot, versions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
SLUICE = os.path.join(BUILD, "bin", "sluice")


def records(first, n):
    return [str(i).encode() for i in range(first, first + n)]


def read_ids(path, **kw):
    return sorted(int(element["record"]) for element in sluice.read(path, **kw))


def cli(*args, check=0):
    r = subprocess.run([SLUICE, *map(str, args)], capture_output=True, text=True, timeout=300)
    if check is not None:
        assert r.returncode == check, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def assert_same_as_independent_reader(path, version=None):
    t = sluice.Table(path, version=version)
    snap = read_snapshot(str(path), version)
    assert snap.version == t.version()
    assert snap.paths() == t.files()
    assert snap.num_records() == t.num_records()
    assert snap.protocol["minReaderVersion"] == t.protocol()["min_reader_version"]
    assert snap.metadata["id"] == t.metadata()["id"]
    for p in snap.decoded_paths():
        assert os.path.exists(os.path.join(path, p)), p
    return snap


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t"
    sluice.write_table(path, records(0, 10), partition={"source": "a"})
    sluice.write_table(path, records(10, 5), partition={"source": "b"})
    return path


def test_write_table_creates_at_lowest_protocol_and_appends(table):
    t = sluice.Table(table)
    assert t.version() == 1
    assert t.protocol()["min_reader_version"] == 1 and t.protocol()["min_writer_version"] == 2
    assert t.metadata()["partition_columns"] == ["source"]
    assert len(t.files()) == 2 and all(f.startswith("source=") for f in t.files())
    assert t.num_records() == 15
    assert read_ids(table) == list(range(15))
    assert_same_as_independent_reader(table)


def test_read_pins_version_by_kwarg_suffix_and_timestamp(table):
    t = sluice.Table(table)
    first_commit = t.history()[-1]["timestamp"]
    assert read_ids(table, version=0) == list(range(10))
    assert read_ids(f"{table}@v0") == list(range(10))
    assert read_ids(table, timestamp=first_commit) == list(range(10))
    when = datetime.datetime.fromtimestamp(first_commit / 1000, tz=datetime.timezone.utc)
    assert sluice.Table(table, timestamp=when).version() == 0
    with pytest.raises(sluice.InvalidArgumentError, match="before the first commit"):
        sluice.Table(table, timestamp=first_commit - 1)
    with pytest.raises(sluice.NotFoundError, match="latest is 1"):
        sluice.Table(table, version=5)
    with pytest.raises(sluice.InvalidArgumentError, match="no path is a table"):
        sluice.read(os.path.join(table, t.files()[0]), version=0)


def test_dataset_keeps_its_version_after_later_commits(table):
    ds = sluice.read(table).shuffle(seed=4)
    order = [e["record"] for e in ds]
    sluice.write_table(table, records(100, 7), partition={"source": "c"})
    again = [e["record"] for e in ds]
    assert again == order  # the Dataset (and its recipe) read version 1 both times
    assert len(read_ids(table)) == 22


def test_pinned_iterator_state_restores_after_later_commits(table):
    ds = sluice.read(table).shuffle(seed=1).batch(2)
    full = [r for b in ds for r in b["record"].tolist()]
    it = ds.iterator()
    head = [r for _ in range(3) for r in next(it)["record"].tolist()]
    state = it.state()
    sluice.write_table(table, records(100, 4), partition={"source": "c"})
    resumed = sluice.read(f"{table}@v1").shuffle(seed=1).batch(2).iterator(state=state)
    tail = [r for b in resumed for r in b["record"].tolist()]
    assert head + tail == full
    with pytest.raises(sluice.FailedPreconditionError):
        list(sluice.read(table).shuffle(seed=1).batch(2).iterator(state=state))


def test_history_delete_restore_optimize_vacuum(table):
    t = sluice.Table(table)
    assert t.delete("source = 'a'")["version"] == 2
    assert t.num_records() == 5
    history = t.history()
    assert [h["operation"] for h in history] == ["DELETE", "WRITE", "WRITE"]
    assert [h["version"] for h in history] == [2, 1, 0]
    assert all(history[i]["timestamp"] > history[i + 1]["timestamp"] for i in range(2))
    assert t.restore(1)["version"] == 3
    assert t.num_records() == 15
    for i in range(3):
        sluice.write_table(table, records(20 + i, 1), partition={"source": "b"})
    t.update()
    result = t.optimize()
    assert result["numFilesRemoved"] == 4 and result["numFilesAdded"] == 1
    assert read_ids(table) == sorted(list(range(15)) + [20, 21, 22])
    assert_same_as_independent_reader(table, version=2)
    assert t.vacuum() == []  # everything is younger than 7 days
    with pytest.raises(sluice.FailedPreconditionError, match="enforce_retention_duration"):
        t.vacuum(retention_hours=0)
    time.sleep(0.05)  # a retention of 0: files removed before now
    would = t.vacuum(retention_hours=0, enforce_retention_duration=False)
    assert len(would) == 8  # the four compacted shards and their indexes
    assert all(os.path.exists(os.path.join(table, f)) for f in would)
    deleted = t.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert deleted == would and not any(os.path.exists(os.path.join(table, f)) for f in deleted)
    assert read_ids(table) == sorted(list(range(15)) + [20, 21, 22])
    assert_same_as_independent_reader(table)


def test_append_shards_written_by_record_writer_with_txn(tmp_path):
    path = tmp_path / "t"
    sluice.Table.create(path, features={"x": "int64"})
    os.makedirs(path / "batch-1")
    sluice.write_records(str(path / "batch-1" / "a.tfrecord.zst"), records(0, 3))
    sluice.write_records(str(path / "batch-1" / "b.tfrecord.zst"), records(3, 4))
    t = sluice.Table(path)
    v = t.append(["batch-1/a.tfrecord.zst", "batch-1/b.tfrecord.zst"], txn=("job-9", 1))
    assert v == 1 and t.num_records() == 7
    assert t.append(["batch-1/a.tfrecord.zst"], txn=("job-9", 1)) == 1  # a retry: nothing new
    assert sluice.Table(path).version() == 1
    assert t.schema() == {"x": ("int64", 1)}
    assert_same_as_independent_reader(path)


def test_writer_aborts_on_exception_and_overwrite_replaces(table):
    t = sluice.Table(table)
    before = set(os.listdir(table / "source=c")) if (table / "source=c").exists() else set()
    with pytest.raises(RuntimeError):
        with t.writer(partition={"source": "c"}) as w:
            w.write(b"99")
            raise RuntimeError("job failed")
    after = set(os.listdir(table / "source=c")) if (table / "source=c").exists() else set()
    assert after == before  # no shard left behind
    assert sluice.Table(table).version() == 1
    with t.writer(partition={"source": "a"}) as w:
        w.write(b"1000")
        w.commit(mode="overwrite", predicate="source = 'a'")
    assert read_ids(table) == list(range(10, 15)) + [1000]


def test_checkpoints_are_replayed_by_the_independent_reader(tmp_path):
    path = tmp_path / "t"
    for i in range(12):
        sluice.write_table(path, records(i, 1))
    t = sluice.Table(path)
    t.checkpoint()
    assert t.protocol()["min_reader_version"] == 3
    assert "v2Checkpoint" in t.protocol()["reader_features"]
    names = os.listdir(path / "_delta_log")
    assert any(".checkpoint." in n and n.endswith(".json") for n in names)
    hint = json.loads((path / "_delta_log" / "_last_checkpoint").read_text())
    assert hint["version"] == t.version()
    sluice.write_table(path, records(100, 1))
    snap = assert_same_as_independent_reader(path)
    assert snap.num_records() == 13
    assert_same_as_independent_reader(path, version=5)


def test_truncated_commit_is_a_clear_error_naming_the_file(table):
    commit = table / "_delta_log" / "00000000000000000001.json"
    data = commit.read_bytes()
    commit.write_bytes(data[: len(data) - 40])
    with pytest.raises(sluice.DataLossError, match="00000000000000000001.json"):
        sluice.Table(table)
    r = cli("table", "files", table, check=1)
    assert "00000000000000000001.json" in r.stderr
    assert sluice.Table(table, version=0).num_records() == 10  # earlier versions still read
    with pytest.raises(DeltaLogError):
        read_snapshot(str(table))


def test_cli_table_commands(table):
    history = json.loads(cli("table", "history", table, "--json").stdout)
    assert [h["version"] for h in history] == [1, 0]
    files = json.loads(cli("table", "files", table, "--version", "0", "--json").stdout)
    assert files["version"] == 0 and len(files["files"]) == 1
    assert files["files"][0]["records"] == 10
    assert "source=a" in cli("table", "files", table).stdout
    deleted = json.loads(cli("table", "delete", table, "--where", "source = 'b'", "--json").stdout)
    assert deleted["version"] == 2
    restored = json.loads(cli("table", "restore", table, "--version", "1", "--json").stdout)
    assert restored["version"] == 3
    vac = json.loads(cli("table", "vacuum", table, "--json").stdout)
    assert vac == {"dry_run": True, "files": [], "bytes": 0}
    r = cli("table", "vacuum", table, "--retention-hours", "1", check=1)
    assert "enforce" in r.stderr
    opt = json.loads(cli("table", "optimize", table, "--json").stdout)
    assert len(opt["filesRemoved"]) == 0  # one file per partition: nothing to compact
    inspect = cli("inspect", table).stdout
    assert "table: version 3" in inspect and "15 records" in inspect
    assert "table: version 0" in cli("inspect", f"{table}@v0").stdout
    assert cli("table", "files", table / "nope", check=1).stderr.count("not a table") == 1
    assert_same_as_independent_reader(table)


def test_cli_append_creates_a_table_from_shards(tmp_path):
    path = tmp_path / "t"
    os.makedirs(path)
    sluice.write_records(str(path / "x.tfrecord"), records(0, 5), codec="none")
    out = json.loads(cli("table", "append", path, "x.tfrecord", "--partition", "lang=en",
                         "--txn", "app:3", "--json").stdout)
    assert out == {"version": 0, "attempts": 1, "duplicate": False}
    again = json.loads(cli("table", "append", path, "x.tfrecord", "--partition", "lang=en",
                           "--txn", "app:3", "--json").stdout)
    assert again["duplicate"] is True
    t = sluice.Table(path)
    assert t.metadata()["partition_columns"] == ["lang"] and t.num_records() == 5
    assert_same_as_independent_reader(path)


def test_state_of_a_version_restored_on_another_names_both_versions(table):
    sluice.write_table(table, records(100, 4), partition={"source": "c"})  # version 2
    sluice.write_table(table, records(200, 4), partition={"source": "c"})  # version 3
    it = sluice.read(f"{table}@v1").shuffle(seed=1).batch(2).iterator()
    next(it)
    state = it.state()
    with pytest.raises(sluice.FailedPreconditionError) as e:
        next(sluice.read(table).shuffle(seed=1).batch(2).iterator(state=state))
    assert f"version 1 of table {table}" in str(e.value)
    assert f"version 3 of table {table}" in str(e.value)
    resumed = sluice.read(table, version=1).shuffle(seed=1).batch(2).iterator(state=state)
    assert sum(len(b["record"]) for b in resumed) == 13  # the 15 of version 1, less 2


def test_table_property_checkpoint_interval(tmp_path):
    never = tmp_path / "never"
    sluice.Table.create(never, configuration={"delta.checkpointInterval": "0"})
    for i in range(101):  # past the default interval of 100
        sluice.write_table(never, records(i, 1))
    t = sluice.Table(never)
    assert t.version() == 101
    assert (t.protocol()["min_reader_version"], t.protocol()["min_writer_version"]) == (1, 2)
    assert not [n for n in os.listdir(never / "_delta_log") if ".checkpoint." in n]
    assert_same_as_independent_reader(never)
    every3 = tmp_path / "every3"
    sluice.Table.create(every3, configuration={"delta.checkpointInterval": "3"})
    for i in range(3):
        sluice.write_table(every3, records(i, 1))
    assert json.loads((every3 / "_delta_log" / "_last_checkpoint").read_text())["version"] == 3
    with pytest.raises(sluice.InvalidArgumentError, match="delta.checkpointInterval"):
        sluice.Table.create(tmp_path / "bad", configuration={"delta.checkpointInterval": "often"})


def test_append_shards_written_by_a_shard_writer(tmp_path):
    path = tmp_path / "t"
    t = sluice.Table.create(path)
    run_id = lambda: uuid.uuid4().hex[:12]  # noqa: E731
    with sluice.ShardWriter(path / "crawl-7", run_id=run_id(), target_shard_bytes=64) as w:
        for r in records(0, 20):
            w.write(r)
    assert len(w.shards) > 1 and w.records_written == 20
    assert not (path / "crawl-7" / "dataset.json").exists()  # a part of a run: not published
    assert t.append(w) == 1
    assert sorted(t.files()) == sorted(f"crawl-7/{s}" for s in w.shards)
    with sluice.ShardWriter(path, run_id=run_id()) as w2:  # into the root itself
        w2.write(b"20")
    assert t.append(w2, txn=("job-2", 1)) == 2
    assert read_ids(path) == list(range(21))
    assert_same_as_independent_reader(path)
    with pytest.raises(RuntimeError):
        with sluice.ShardWriter(path / "crawl-8", run_id=run_id()) as w3:
            w3.write(b"x")
            raise RuntimeError("job failed")
    assert not list((path / "crawl-8").glob("*.zst"))  # aborted: nothing left
    with sluice.ShardWriter(tmp_path / "elsewhere", run_id=run_id()) as w4:
        w4.write(b"x")
    with pytest.raises(sluice.InvalidArgumentError, match="not under the table root"):
        t.append(w4)


PARQUET_TABLE_LOG = [
    {"commitInfo": {"timestamp": 1700000000000, "operation": "WRITE",
                    "engineInfo": "Apache-Spark/3.5.0 Delta-Lake/3.1.0"}},
    {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
    {"metaData": {"id": "p", "format": {"provider": "parquet", "options": {}},
                  "schemaString": '{"type":"struct","fields":[]}', "partitionColumns": [],
                  "configuration": {}, "createdTime": 1700000000000}},
    {"add": {"path": "part-00000.snappy.parquet", "partitionValues": {}, "size": 12,
             "modificationTime": 1700000000000, "dataChange": True}},  # no stats
]


def test_table_of_parquet_files_is_refused_at_open(tmp_path):
    path = tmp_path / "spark"
    os.makedirs(path / "_delta_log")
    (path / "_delta_log" / "00000000000000000000.json").write_text(
        "".join(json.dumps(a) + "\n" for a in PARQUET_TABLE_LOG))
    (path / "part-00000.snappy.parquet").write_bytes(b"PAR1....PAR1")
    message = f"table {path} version 0: its data files are parquet"
    for on_error in (None, "skip"):
        with pytest.raises(sluice.UnimplementedError, match=message):
            sluice.read(path, on_error=on_error)
    r = cli("inspect", path, check=1)
    assert message in r.stderr and "sluice reads tables of sluice shards" in r.stderr
    # The log itself reads: the file's record count is unknown ("?", null).
    assert sluice.Table(path).files() == ["part-00000.snappy.parquet"]
    text = cli("table", "files", path).stdout
    assert "1 file(s), ? records" in text and " -1 " not in text
    assert re.search(r"part-00000\.snappy\.parquet +\? +12 ", text), text
    files = json.loads(cli("table", "files", path, "--json").stdout)
    assert files["files"][0]["records"] is None


def test_restore_by_timestamp(table):
    t = sluice.Table(table)
    v1, v0 = [h["timestamp"] for h in t.history()]
    assert t.restore(timestamp=v0)["version"] == 2  # ms since the epoch: version 0's files
    assert t.num_records() == 10
    when = datetime.datetime.fromtimestamp(v1 / 1000, tz=datetime.timezone.utc)
    assert t.restore(timestamp=when)["version"] == 3  # a datetime: version 1's files
    assert sluice.Table(table).num_records() == 15
    with pytest.raises(sluice.InvalidArgumentError, match="before the first commit"):
        t.restore(timestamp=v0 - 1)
    with pytest.raises(TypeError):
        t.restore(1, timestamp=v0)


def test_shard_writer_on_its_own_publishes_a_dataset(tmp_path):
    with sluice.ShardWriter(tmp_path / "ds", target_shard_bytes=64, codec="gzip") as w:
        for r in records(0, 10):
            w.write(r)
    assert len(w.shards) > 1 and (tmp_path / "ds" / "dataset.json").exists()
    assert read_ids(tmp_path / "ds") == list(range(10))
