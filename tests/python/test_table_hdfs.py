"""Tables on hdfs:// (docs/table.md): a commit is a WebHDFS CREATE of a temporary file in
_delta_log/ then a RENAME onto the commit's name with renameoptions=NONE (the namenode refuses
a rename onto an existing name: put-if-absent, and the commit appears whole), read by sluice
and, from the server's backing directory, by tests/python/delta_reader.py (written from
PROTOCOL.md). The HDFS here is tests/tools/webhdfs_server.py, a server written from the
WebHDFS REST document (no Hadoop cluster is available)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sluice
from delta_reader import read_snapshot, versions
from test_table_concurrency import TOOL, run_writers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from tool_servers import WebHdfsServer  # noqa: E402

CLI = Path(os.path.dirname(TOOL)) / "sluice"
ENV = dict(os.environ, HADOOP_USER_NAME="trainer")


@pytest.fixture(scope="module")
def hdfs():
    with WebHdfsServer(block_size=64 << 10, lifetime=600) as server:
        yield server


@pytest.fixture
def hdfs_env(monkeypatch):
    monkeypatch.setenv("HADOOP_USER_NAME", "trainer")


def run(*args, check=0):
    r = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=300,
                       env=ENV)
    assert r.returncode == check, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def test_4_writer_processes_x_5_appends_on_hdfs_give_versions_0_to_19(hdfs, hdfs_env):
    url = hdfs.url("/tables/concurrent")
    reported, attempts = run_writers(url, 4, commits=5, checkpoint_interval=8, env=ENV)
    print(f"HDFS: 20 commits in {attempts} create attempts (the others lost a race)")
    assert sorted(v for v, _, _ in reported) == list(range(20))
    backing = Path(hdfs.root) / "tables" / "concurrent"
    assert versions(str(backing)) == list(range(20))
    snap = read_snapshot(str(backing))
    assert snap.version == 19 and sorted(p for _, p, _ in reported) == snap.paths()
    for version, file, _ in reported:  # each commit adds exactly its writer's file
        log = backing / "_delta_log" / f"{version:020d}.json"
        adds = [json.loads(line)["add"]["path"] for line in log.read_text().splitlines()
                if '"add"' in line]
        assert adds == [file], (version, adds)
    t = sluice.Table(url)
    assert t.version() == 19 and t.files() == snap.paths()
    data = [element["record"] for element in sluice.read(url)]
    assert len(data) == len(set(data)) == 200


def test_convert_into_a_table_on_hdfs_appends_overwrites_and_travels(hdfs, hdfs_env, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"n": i, "text": "x" * (i % 50)}) + "\n"
                           for i in range(500)))
    url = hdfs.url("/tables/converted")
    run("convert", "jsonl", src, url, "--table", "--shard-size", "8KB")
    run("convert", "jsonl", src, url, "--table", "--shard-size", "8KB")
    run("convert", "jsonl", src, url, "--table", "--mode", "overwrite", "--shard-size", "8KB")
    history = json.loads(run("table", "history", url, "--json").stdout)
    assert [h["version"] for h in history] == [2, 1, 0]
    assert all(h["operation"] == "WRITE" for h in history)

    def count(**kw):
        return sum(1 for _ in sluice.read(url, **kw))
    assert (count(version=0), count(version=1), count()) == (500, 1000, 500)
    assert count() == sum(1 for _ in sluice.read(url + "@v2"))
    t = sluice.Table(url)
    old = set(sluice.Table(url, version=1).files()) - set(t.files())
    assert len(old) > 0
    # Vacuum on HDFS: the files the overwrite removed, once older than the retention.
    time.sleep(1.1)
    would = t.vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False)
    assert old <= set(would)
    deleted = t.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert set(deleted) == set(would)
    backing = Path(hdfs.root) / "tables" / "converted"
    assert not any((backing / f).exists() for f in old)
    assert all((backing / f).exists() for f in t.files())
    assert count() == 500  # the latest version is whole after vacuum
    assert read_snapshot(str(backing)).num_records() == 500


def test_keyed_jobs_read_and_write_tables_on_hdfs(hdfs, hdfs_env, tmp_path):
    """stats / dedup / reshard with IN and OUT on hdfs:// (tables and datasets)."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": f"t{i % 40}"}) + "\n"
                           for i in range(300)))
    table = hdfs.url("/tables/keyed")
    run("convert", "jsonl", src, table, "--table", "--shard-size", "4KB")
    stats = json.loads(run("stats", table + "@v0", "--key", "text", "--json").stdout)
    assert stats["records"] == 300 and len(stats["counts"]) == 40
    out = hdfs.url("/tables/keyed-dedup")
    run("dedup", table, out, "--feature", "text", "--table")
    assert ids_of(out) == list(range(40))  # the first of each text, in input order
    run("reshard", table, hdfs.url("/data/resharded"), "--seed", "5", "--shard-size", "8KB")
    assert ids_of(hdfs.url("/data/resharded")) == list(range(300))


def ids_of(url):
    lines = run("inspect", url, "--json", "--records", "100000").stdout.splitlines()
    return sorted(json.loads(line)["id"]["int64"][0] for line in lines)
