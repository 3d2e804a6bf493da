"""hdfs:// end to end: `sluice convert ... hdfs://...` writes the same shards a local
conversion writes, `sluice inspect|verify hdfs://...` and `sluice.read("hdfs://...")` read
them, also through the fault-injecting proxy. The HDFS here is tests/tools/webhdfs_server.py,
a server written from the WebHDFS REST document (no Hadoop cluster is available)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sluice
from conftest import BUILD

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from tool_servers import FaultProxy, WebHdfsServer  # noqa: E402

CLI = BUILD / "bin" / "sluice"


@pytest.fixture(scope="module")
def hdfs():
    with WebHdfsServer(block_size=64 << 10, lifetime=600) as server:
        yield server


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "in.jsonl"
    path.write_text("".join(json.dumps({"text": f"line {i} " + "z" * (i % 97), "n": i}) + "\n"
                            for i in range(2000)))
    return path


def run(*args, check=0):
    if not CLI.exists():
        pytest.fail(f"{CLI} not built (make build)")
    env = dict(os.environ, HADOOP_USER_NAME="trainer")
    r = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == check, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def shard_files(directory):
    return sorted(p.name for p in Path(directory).iterdir() if ".tfrecord" in p.name)


def by_position(directory):
    """Shard files by name without the writer's run id (data-<run>-00000...: each conversion
    has its own), so two conversions' shards pair up."""
    return {re.sub(r"-[0-9a-f]{12}-", "-", name): Path(directory) / name
            for name in shard_files(directory)}


def assert_same_shards(remote, local):
    remote, local = by_position(remote), by_position(local)
    assert sorted(remote) == sorted(local)
    for name in local:
        assert remote[name].read_bytes() == local[name].read_bytes(), name


def test_convert_to_hdfs_writes_the_shards_a_local_conversion_writes(hdfs, jsonl, tmp_path):
    run("convert", "jsonl", jsonl, tmp_path / "local", "--shard-size", "40KB")
    run("convert", "jsonl", jsonl, hdfs.url("/data/remote"), "--shard-size", "40KB")
    remote = Path(hdfs.root) / "data" / "remote"  # the server's backing directory
    assert_same_shards(remote, tmp_path / "local")
    assert len(shard_files(remote)) > 4
    assert not [p.name for p in remote.iterdir() if ".tmp-" in p.name]  # no temporaries
    manifest = json.loads((remote / "dataset.json").read_text())
    assert manifest["total_records"] == 2000


def test_inspect_and_verify_read_hdfs(hdfs, jsonl, tmp_path):
    url = hdfs.url("/data/checked")
    run("convert", "jsonl", jsonl, url, "--codec", "none", "--shard-size", "40KB")
    r = run("inspect", url, "--json", "--records", 5)
    assert [json.loads(line)["n"]["int64"] for line in r.stdout.splitlines()] == [[i] for i in
                                                                                  range(5)]
    assert "no faults" in run("verify", url).stdout
    shard = Path(hdfs.root) / "data" / "checked" / shard_files(Path(hdfs.root) / "data" /
                                                               "checked")[0]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    r = run("verify", url, check=1)
    assert f"{url}/{shard.name}" in r.stdout + r.stderr


def test_python_read_of_hdfs_equals_the_local_read(hdfs, jsonl, tmp_path):
    run("convert", "jsonl", jsonl, tmp_path / "local", "--shard-size", "40KB")
    run("convert", "jsonl", jsonl, hdfs.url("/data/py"), "--shard-size", "40KB")
    features = {"text": "bytes", "n": "int64"}
    local = list(sluice.read(str(tmp_path / "local")).parse_example(features).batch(256))
    remote = list(sluice.read(hdfs.url("/data/py")).parse_example(features).batch(256))
    np.testing.assert_array_equal(np.concatenate([b["n"] for b in remote]),
                                  np.concatenate([b["n"] for b in local]))
    assert [t for b in remote for t in b["text"]] == [t for b in local for t in b["text"]]


def test_missing_hdfs_dataset_is_a_clear_error(hdfs):
    r = run("inspect", hdfs.url("/data/none"), check=1)
    assert "hdfs://" in r.stderr and "/data/none" in r.stderr
    with pytest.raises(sluice.NotFoundError):
        sluice.read(hdfs.url("/data/none"))


def test_convert_and_read_through_faults_stay_exact(hdfs, jsonl, tmp_path):
    with FaultProxy([hdfs.namenode_addr] + hdfs.datanode_addrs, seed=5, faults=[
            "status:p=0.1", "reset:p=0.1,path=namenoderpcaddress",
            "truncate:p=0.1,path=op=OPEN&"]) as proxy:
        url = f"hdfs://127.0.0.1:{proxy.ports[0]}/data/faulty"
        run("convert", "jsonl", jsonl, url, "--shard-size", "40KB")
        run("convert", "jsonl", jsonl, tmp_path / "local", "--shard-size", "40KB")
        remote = Path(hdfs.root) / "data" / "faulty"
        assert_same_shards(remote, tmp_path / "local")
        assert "no faults" in run("verify", url).stdout
        faults = proxy.counts()["faults"]
        assert faults.get("status", 0) > 0 and faults.get("reset", 0) > 0
