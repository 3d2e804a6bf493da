"""sluice.dask.to_table (docs/dist.md, "From Dask") on a real distributed.LocalCluster: two
worker processes, one thread each. Every table written is replayed by the independent Delta
reader tests/python/delta_reader.py too.

Not in `make asan-python` (it runs test_python_*.py): starting a cluster under ASan is slow,
and the bindings used here (_TableWriter, _commit_files, _DataFile pickling) are C++ that
test_table.py and the unit tests cover.
"""
import collections
import faulthandler
import os

import pytest

distributed = pytest.importorskip("distributed")
db = pytest.importorskip("dask.bag")
import dask  # noqa: E402

import sluice  # noqa: E402
import sluice.dask  # noqa: E402
from delta_reader import read_snapshot, versions  # noqa: E402
from s3_server import S3Server  # noqa: E402

HANG_SECONDS = 120  # a test that takes longer ends the run with every thread's traceback


@pytest.fixture(scope="module")
def client():
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       scheduler_kwargs={"dashboard": False}, timeout=60)
    c = distributed.Client(cluster, timeout=60)
    faulthandler.cancel_dump_traceback_later()
    try:
        yield c
    finally:
        c.close(timeout=30)
        cluster.close(timeout=30)


@pytest.fixture(scope="module")
def s3_server():
    with S3Server() as server:  # a real S3 server (Ceph RGW), stopped with the module
        yield server


@pytest.fixture(autouse=True)
def bounded():
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def rows(first, n):
    return [{"id": i, "text": f"doc {i}", "tokens": list(range(i % 4))}
            for i in range(first, first + n)]


def examples(rows_):
    return collections.Counter(sluice.make_example(r) for r in rows_)


def stored(path, version=None):
    return collections.Counter(e["record"] for e in sluice.read(str(path), version=version))


def shards_on_disk(path):
    out = set()
    for d, _, names in os.walk(path):
        if "_delta_log" in d:
            continue
        out |= {os.path.relpath(os.path.join(d, n), path) for n in names
                if n.endswith(".tfrecord.zst")}
    return out


def assert_independent_reader_agrees(path):
    t = sluice.Table(path)
    snap = read_snapshot(str(path))
    assert snap.version == t.version()
    assert snap.paths() == t.files()
    for p in snap.decoded_paths():
        assert os.path.exists(os.path.join(path, p)), p
    assert snap.num_records() == t.num_records()
    return snap


def test_bag_of_dicts_is_one_commit_per_call_with_every_record_once(client, tmp_path):
    path = tmp_path / "t"
    first = sluice.dask.to_table(db.from_sequence(rows(0, 300), npartitions=6), path,
                                 name="crawl", description="from dask",
                                 configuration={"delta.checkpointInterval": "50"})
    assert first == (0, 300, 6, 6, False)
    second = sluice.dask.to_table(db.from_sequence(rows(300, 100), npartitions=3), path)
    assert second.version == 1 and second.records == 100
    assert versions(path) == [0, 1]
    assert stored(path) == examples(rows(0, 400))
    assert stored(path, version=0) == examples(rows(0, 300))
    t = sluice.Table(path)
    assert t.schema() == {"id": ("int64", 1), "text": ("bytes", 1), "tokens": ("int64", -1)}
    meta = t.metadata()
    assert (meta["name"], meta["description"]) == ("crawl", "from dask")
    assert meta["configuration"]["delta.checkpointInterval"] == "50"
    assert [h["operation"] for h in t.history()] == ["WRITE", "WRITE"]
    snap = assert_independent_reader_agrees(path)
    assert snap.num_records() == 400
    # One task per partition, each under its own names: part-<job>-<partition>-<uuid>.
    assert len({p.split("-")[1] for p in t.files()}) == 2
    assert len({tuple(p.split("-")[1:3]) for p in t.files()}) == 9
    parsed = t.read().parse_example({"id": "int64", "text": "bytes"})
    assert sorted(int(e["id"]) for e in parsed) == list(range(400))


def test_lines_of_compressed_text_files_stream_into_one_commit(client, tmp_path):
    import glob
    import gzip
    files = sorted(glob.glob("/usr/share/doc/linux-doc-6.1/Documentation/PCI/*.rst.gz"))[:4]
    if not files:
        pytest.skip("linux-doc-6.1 is not installed")
    bag = db.read_text(files, compression="gzip").map(lambda line: {"line": line.rstrip()})
    result = sluice.dask.to_table(bag, tmp_path / "t")
    lines = [{"line": line.rstrip()} for f in files for line in gzip.open(f, "rt")]
    assert result.records == len(lines) and result.partitions == len(files)
    assert stored(tmp_path / "t") == examples(lines)
    assert_independent_reader_agrees(tmp_path / "t")


def test_serialized_records_are_written_as_given(client, tmp_path):
    path = tmp_path / "t"
    records = [f"r{i}".encode() for i in range(50)]
    result = sluice.dask.to_table(db.from_sequence(records, npartitions=4), path)
    assert result.records == 50 and result.files == 4
    assert stored(path) == collections.Counter(records)
    assert sluice.Table(path).schema() == {}
    assert_independent_reader_agrees(path)


def test_failing_partition_commits_nothing_and_names_the_partition(client, tmp_path):
    path = tmp_path / "t"
    sluice.dask.to_table(db.from_sequence(rows(0, 20), npartitions=2), path)

    def poisoned(row):
        if row["id"] == 25:
            raise ValueError("bad row 25")
        return row
    bag = db.from_sequence(rows(0, 40), npartitions=4).map(poisoned)  # id 25 is in partition 2
    with pytest.raises(sluice.dask.PartitionError, match=r"partition 2 of 4: ValueError: bad row "
                       r"25; nothing was committed") as e:
        sluice.dask.to_table(bag, path)
    assert e.value.partition == 2
    assert versions(path) == [0]
    assert stored(path) == examples(rows(0, 20))
    # Shards of the partitions that succeeded are unreferenced; vacuum reclaims exactly them.
    t = sluice.Table(path)
    leftovers = shards_on_disk(path) - set(t.files())
    removed = t.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert {p for p in removed if p.endswith(".tfrecord.zst")} == leftovers
    assert shards_on_disk(path) == set(t.files())


def test_unencodable_value_names_partition_and_record(client, tmp_path):
    bag = db.from_sequence([{"id": 1}, {"id": 2}, {"id": 3}, {"id": None}], npartitions=2)
    with pytest.raises(sluice.dask.PartitionError,
                       match=r"partition 1 of 2: TypeError: record 1: make_example: feature "
                       r"'id' has an unsupported value None"):
        sluice.dask.to_table(bag, tmp_path / "t")
    assert not os.path.exists(tmp_path / "t" / "_delta_log")
    left = shards_on_disk(tmp_path / "t")  # partition 0's, unreferenced; the failed task
    assert left and not [p for p in left if "-00001-" in p]  # deleted its own


class FlakyRecords:
    """A partition whose first read fails after `after` records; the failing attempt lists the
    shards on disk under `root` into `marker` (which also says it failed once)."""

    def __init__(self, records, after, marker, root):
        self.records, self.after, self.marker, self.root = records, after, marker, root

    def __iter__(self):
        for i, r in enumerate(self.records):
            if i == self.after and not os.path.exists(self.marker):
                with open(self.marker, "w") as f:
                    f.write("\n".join(sorted(shards_on_disk(self.root))))
                raise OSError("injected failure of the first attempt")
            yield r


class DyingRecords(FlakyRecords):
    """Like FlakyRecords, but the first attempt kills its worker process (as the OOM killer
    would): no exception, no clean-up; the nanny restarts the worker and the scheduler
    reschedules the task."""

    def __iter__(self):
        for i, r in enumerate(self.records):
            if i == self.after and not os.path.exists(self.marker):
                with open(self.marker, "w") as f:
                    f.write("\n".join(sorted(shards_on_disk(self.root))))
                os._exit(1)
            yield r


def blobs(first, n):
    """Rows of 200 KB incompressible bytes: a shard closes after its first zstd frame (1 MB)."""
    import random
    return [{"id": i, "blob": random.Random(i).randbytes(200_000)} for i in range(first, first + n)]


def test_retried_partition_leaves_each_record_once(client, tmp_path):
    path, marker = tmp_path / "t", str(tmp_path / "failed-once")
    parts = [dask.delayed(blobs)(0, 5),
             dask.delayed(FlakyRecords)(blobs(5, 15), 12, marker, str(path)),
             dask.delayed(blobs)(20, 5)]
    result = sluice.dask.to_table(parts, path, target_file_size=1000, retries=1)
    with open(marker) as f:  # the first attempt of partition 1 had closed shards when it failed
        assert [p for p in f.read().split() if "-00001-" in p]
    assert result.records == 25 and versions(path) == [0]
    assert stored(path) == examples(blobs(0, 25))
    assert shards_on_disk(path) == set(sluice.Table(path).files())  # the attempt cleaned up
    assert_independent_reader_agrees(path)


def test_killed_worker_leaves_unreferenced_shards_that_vacuum_reclaims(client, tmp_path):
    path, marker = tmp_path / "t", str(tmp_path / "killed-once")
    parts = [dask.delayed(blobs)(0, 5),
             dask.delayed(DyingRecords)(blobs(5, 15), 12, marker, str(path)),
             dask.delayed(blobs)(20, 5)]
    result = sluice.dask.to_table(parts, path, target_file_size=1000)
    with open(marker) as f:
        killed = {p for p in f.read().split() if "-00001-" in p}
    assert killed  # shards of the killed attempt, closed before it died
    assert result.records == 25 and versions(path) == [0]
    assert stored(path) == examples(blobs(0, 25))
    t = sluice.Table(path)
    leftovers = shards_on_disk(path) - set(t.files())
    assert killed <= leftovers and all("-00001-" in p for p in leftovers)
    removed = t.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert {p for p in removed if p.endswith(".tfrecord.zst")} == leftovers
    assert shards_on_disk(path) == set(t.files())
    client.wait_for_workers(2, timeout=60)  # the nanny restarted the killed one


def test_two_jobs_appending_at_once_both_commit_once(client, tmp_path):
    import concurrent.futures
    path = tmp_path / "t"
    sluice.dask.to_table(db.from_sequence(rows(0, 10), npartitions=1), path)
    bags = [db.from_sequence(rows(100 * j, 50), npartitions=3) for j in (1, 2, 3)]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda bag: sluice.dask.to_table(bag, path), bags))
    assert sorted(r.version for r in results) == [1, 2, 3] and versions(path) == [0, 1, 2, 3]
    assert stored(path) == examples(rows(0, 10) + rows(100, 50) + rows(200, 50) + rows(300, 50))
    assert len({f.split("-")[1] for f in sluice.Table(path).files()}) == 4  # one job id each
    assert_independent_reader_agrees(path)


def test_overwrite_replaces_every_file(client, tmp_path):
    path = tmp_path / "t"
    sluice.dask.to_table(db.from_sequence(rows(0, 50), npartitions=2), path)
    old = set(sluice.Table(path).files())
    result = sluice.dask.to_table(db.from_sequence(rows(100, 10), npartitions=2), path,
                                  mode="overwrite")
    assert result.version == 1 and versions(path) == [0, 1]
    assert stored(path) == examples(rows(100, 10))
    assert stored(path, version=0) == examples(rows(0, 50))
    assert not old & set(sluice.Table(path).files())
    snap = assert_independent_reader_agrees(path)
    assert {p for p in snap.tombstones} == old
    assert sluice.Table(path).history(1)[0]["operation"] == "WRITE"


def test_empty_partitions_write_no_shard(client, tmp_path):
    path = tmp_path / "t"
    bag = db.from_sequence(rows(0, 40), npartitions=8).filter(lambda r: r["id"] < 10)
    result = sluice.dask.to_table(bag, path)
    assert result.records == 10 and result.partitions == 8 and result.files == 2
    assert stored(path) == examples(rows(0, 10))
    assert_independent_reader_agrees(path)
    nothing = sluice.dask.to_table(bag.filter(lambda r: False), path)
    assert nothing == (0, 0, 0, 8, False)  # an append of nothing commits nothing
    assert versions(path) == [0]


def test_empty_collection_creates_an_empty_table(client, tmp_path):
    path = tmp_path / "t"
    result = sluice.dask.to_table(db.from_sequence([], npartitions=1), path)
    assert result.version == 0 and sluice.Table(path).files() == []
    assert_independent_reader_agrees(path)


def test_inconsistent_feature_across_partitions_names_both(client, tmp_path):
    path = tmp_path / "t"
    parts = [dask.delayed(list)([{"id": 1, "label": 3}]), dask.delayed(list)([]),
             dask.delayed(list)([{"id": 2, "label": 0.5}])]
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"partition 2: feature 'label' is float \(1 value per record\) "
                       r"here, int64 \(1 value per record\) in partition 0; nothing was "
                       r"committed"):
        sluice.dask.to_table(parts, path)
    assert not os.path.exists(path / "_delta_log")


def test_record_against_the_tables_schema_names_partition_and_record(client, tmp_path):
    path = tmp_path / "t"
    sluice.dask.to_table(db.from_sequence(rows(0, 10), npartitions=1), path)
    bad = rows(10, 5)
    bad[3] = {"id": 13, "text": "doc 13"}  # no tokens
    with pytest.raises(sluice.dask.PartitionError,
                       match=r"partition 0 of 1: InvalidArgumentError: record 3: feature "
                       r"'tokens' is absent here, int64 \(a varying number of values\) in the "
                       r"table's features"):
        sluice.dask.to_table(db.from_sequence(bad, npartitions=1), path)
    with pytest.raises(sluice.InvalidArgumentError, match=r"features: feature 'id' is "
                       r"bytes \(1 value per record\) here, int64 \(1 value per record\) in the "
                       r"table at version 0; nothing was written"):
        sluice.dask.to_table(db.from_sequence(rows(0, 1), npartitions=1), path,
                             features={"id": "bytes", "text": "bytes", "tokens": ("int64", -1)})
    assert versions(path) == [0]


def test_dicts_and_serialized_records_do_not_mix(client, tmp_path):
    parts = [dask.delayed(list)([{"id": 1}]), dask.delayed(list)([b"raw"])]
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"partition 1 holds serialized records \(bytes\), partition 0 "
                       r"dicts of features"):
        sluice.dask.to_table(parts, tmp_path / "t")


def test_rerun_with_the_same_txn_commits_nothing(client, tmp_path):
    path = tmp_path / "t"
    bag = db.from_sequence(rows(0, 30), npartitions=3)
    first = sluice.dask.to_table(bag, path, txn=("ingest", 1))
    shards = shards_on_disk(path)
    again = sluice.dask.to_table(bag, path, txn=("ingest", 1))
    assert again == (0, 0, 0, 3, True) and first.version == 0
    assert shards_on_disk(path) == shards  # nothing was even written
    later = sluice.dask.to_table(bag, path, txn=("ingest", 2))
    assert later.version == 1 and not later.duplicate
    assert read_snapshot(str(path)).txns == {"ingest": 2}
    assert stored(path) == examples(rows(0, 30)) + examples(rows(0, 30))


@pytest.mark.filterwarnings("ignore:Running on a single-machine scheduler")
def test_local_scheduler_without_client_names_the_partition(tmp_path):
    path = tmp_path / "t"
    result = sluice.dask.to_table(db.from_sequence(rows(0, 20), npartitions=2), path,
                                  scheduler="sync")
    assert result.records == 20 and stored(path) == examples(rows(0, 20))
    def poisoned(i):
        if i == 7:
            raise ValueError("bad row 7")
        return {"id": i}
    with pytest.raises(sluice.dask.PartitionError, match=r"partition 2 of 3: ValueError: bad row "
                       r"7; nothing was committed"):  # the bag's map runs inside the write
        sluice.dask.to_table(db.range(9, npartitions=3).map(poisoned), tmp_path / "other",
                             scheduler="sync")
    bad = db.from_sequence([{"id": 1}, {"id": None}], npartitions=2)
    with pytest.raises(sluice.dask.PartitionError, match=r"partition 1 of 2: TypeError: record 0: "
                       r"make_example: feature 'id' has an unsupported value None"):
        sluice.dask.to_table(bad, tmp_path / "other", scheduler="sync")


@pytest.mark.filterwarnings("ignore:Running on a single-machine scheduler")
def test_bad_arguments_are_refused_before_any_task(tmp_path):
    with pytest.raises(TypeError, match=r"expected a dask.bag.Bag"):
        sluice.dask.to_table([{"id": 1}], tmp_path / "t")
    sluice.dask.to_table(db.from_sequence([b"x"]), tmp_path / "t", scheduler="sync")
    with pytest.raises(sluice.InvalidArgumentError, match=r"t@v0: a write goes to the latest"):
        sluice.dask.to_table(db.from_sequence([b"y"]), f"{tmp_path}/t@v0", scheduler="sync")
    assert not os.path.exists(f"{tmp_path}/t@v0")
    with pytest.raises(sluice.InvalidArgumentError, match="only for mode='overwrite'"):
        sluice.dask.to_table(db.from_sequence([]), tmp_path / "t", predicate="a = 'b'")


def test_partition_by_takes_each_records_value_as_delta_does(client, tmp_path):
    path = tmp_path / "t"
    sources = ["web", "books", "web/2", None]
    data = [dict(r, source=sources[r["id"] % 4]) for r in rows(0, 40)]
    result = sluice.dask.to_table(db.from_sequence(data, npartitions=3), path,
                                  partition_by=["source"])
    assert result.version == 0 and result.records == 40
    t = sluice.Table(path)
    assert t.metadata()["partition_columns"] == ["source"]
    assert "source" not in t.schema()  # the value lives in the path and the log, not the record
    by_value = collections.Counter(tuple(f["partition_values"].items()) for f in t.file_details())
    assert set(by_value) == {(("source", s),) for s in sources}
    assert {f.split("/")[0] for f in t.files()} == {
        "source=web", "source=books", "source=web%252F2", "source=__HIVE_DEFAULT_PARTITION__"}
    assert stored(path) == examples([{k: v for k, v in r.items() if k != "source"}
                                     for r in data])
    assert_independent_reader_agrees(path)
    t.delete("source = 'web'")
    assert stored(path) == examples([{k: v for k, v in r.items() if k != "source"}
                                     for r in data if r["source"] != "web"])
    with pytest.raises(sluice.dask.PartitionError, match=r"partition 0 of 1: "
                       r"InvalidArgumentError: record 0 has no partition column 'source'"):
        sluice.dask.to_table(db.from_sequence(rows(0, 2), npartitions=1), path,
                             partition_by=["source"])
    with pytest.raises(sluice.InvalidArgumentError, match=r"is partitioned by \['source'\], "
                       r"not \[\]: pass partition_by="):
        sluice.dask.to_table(db.from_sequence(rows(0, 2), npartitions=1), path)
    assert versions(path) == [0, 1]  # the write and the delete


def set_environ(env):
    os.environ.clear()
    os.environ.update(env)


def test_workers_write_an_s3_table_the_client_commits(client, s3_server, tmp_path, monkeypatch):
    from test_table_concurrency import mirror
    env = s3_server.environ()
    saved = client.run(lambda: dict(os.environ))
    client.run(set_environ, env)  # S3 settings are resolved per call, on every worker
    try:
        for k in [k for k in os.environ if k.startswith("AWS_")]:
            monkeypatch.delenv(k)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        uri = f"s3://{s3_server.bucket('dask')}/t"
        first = sluice.dask.to_table(db.from_sequence(rows(0, 60), npartitions=4), uri,
                                     txn=("job", 1))
        again = sluice.dask.to_table(db.from_sequence(rows(0, 60), npartitions=4), uri,
                                     txn=("job", 1))
        assert first.version == 0 and first.files == 4 and again.duplicate
        assert stored(uri) == examples(rows(0, 60))
        files = sluice.Table(uri).files()
    finally:
        for worker, before in saved.items():
            client.run(set_environ, before, workers=[worker])
    mirror(s3_server.client(), "dask", "t", tmp_path / "copy")
    assert read_snapshot(str(tmp_path / "copy")).paths() == files
    assert_independent_reader_agrees(tmp_path / "copy")


def bag_shapes():
    def rec(i):
        return {"id": i}

    def block(a):
        return [rec(i) for i in range(a, a + 5)]
    return {
        "from_delayed": lambda: db.from_delayed([dask.delayed(block)(a) for a in (0, 5, 10)]),
        "concat": lambda: db.concat([db.range(5, npartitions=2).map(rec),
                                     db.range(3, npartitions=1).map(rec)]),
        "repartition": lambda: db.range(20, npartitions=4).map(rec).repartition(2),
        "flatten": lambda: db.from_sequence([[1, 2], [3], [4, 5, 6]], npartitions=2)
                             .flatten().map(rec),
        "distinct": lambda: db.from_sequence([1, 1, 2, 3, 3, 4], npartitions=3)
                              .distinct().map(rec),
        "persisted": lambda: db.range(10, npartitions=3).map(rec).persist(scheduler="sync"),
    }


@pytest.mark.filterwarnings("ignore:Running on a single-machine scheduler")
@pytest.mark.parametrize("shape", sorted(bag_shapes()))
def test_bag_graph_shapes_write_what_the_bag_computes(shape, tmp_path):
    """The write tasks take each partition's task out of the bag's optimized graph: every
    shape of graph must give exactly what the bag computes."""
    bag = bag_shapes()[shape]()
    result = sluice.dask.to_table(bag, tmp_path / "t", scheduler="sync")
    assert result.partitions == bag.npartitions
    assert stored(tmp_path / "t") == examples(bag.compute(scheduler="sync"))


STREAM_SCRIPT = """
import os, resource, sys
import dask.bag as db
import sluice.dask
def row(i):
    return {"id": i, "blob": os.urandom(100_000)}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
bag = db.range(2000, npartitions=1).map(row)  # one partition of 200 MB
result = sluice.dask.to_table(bag, sys.argv[1], scheduler="sync", codec="none")
assert result.records == 2000, result
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_a_partition_streams_into_its_shards_without_being_held_in_memory(tmp_path):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", STREAM_SCRIPT, str(tmp_path / "t")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    growth_mb = int(r.stdout.split()[-1])
    assert growth_mb < 64, f"peak RSS grew by {growth_mb} MB writing a 200 MB partition"
    assert sluice.Table(tmp_path / "t").num_records() == 2000
