"""sluice on S3 behind the fault proxy (tests/tools/fault_proxy.py) in front of the real
server (Ceph RGW), for the faults where the wire lies (issue 35, items 1, 5, 9):

- an ambiguous put-if-absent (the server stored it, the client saw a reset; the retry gets
  412) is recognised as this writer's own object: the dataset is published, the writer lock
  taken, the table commit and checkpoint written, once;
- a 206 whose Content-Range is not the range asked for is a transfer fault: retried, and if
  the retries run out the read fails naming the object and range, in skip mode too (never a
  silent short read).
"""
import json
import os
import subprocess
import sys

import pytest

import sluice
from s3_server import read_ids_and_names as read_all
from s3_server import s3_server  # noqa: F401  (the session fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from tool_servers import FaultProxy  # noqa: E402

BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
SLUICE = os.path.join(BUILD, "bin", "sluice")
HANG_GUARD = 120  # seconds: far beyond any retry schedule below; only a hang reaches it
RECORDS = 600


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wire")
    path = tmp / "data.jsonl"
    with open(path, "w") as f:
        for i in range(RECORDS):
            f.write(json.dumps({"id": i, "text": f"doc {i}", "name": f"record-{i}",
                                "pad": "x" * (i % 200)}) + "\n")
    expected = [(i, f"record-{i}".encode()) for i in range(RECORDS)]
    return str(path), expected


def rgw_address(s3_server):
    return s3_server.endpoint.removeprefix("http://")


def through(s3_server, proxy, **changes):
    return s3_server.environ(AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy.ports[0]}", **changes)


def cli(args, env):
    return subprocess.run([SLUICE, *args], capture_output=True, text=True, env=env,
                          timeout=HANG_GUARD)


def fired(proxy, kind):
    return [e for e in proxy.log() if e["fault"] == kind]


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_ambiguous_put_of_dataset_json_publishes_a_readable_dataset(s3_server, jsonl, codec):
    data, expected = jsonl
    uri = f"s3://{s3_server.bucket('wire-manifest')}/ds-{codec}"
    with FaultProxy([rgw_address(s3_server)],
                    faults=["ambiguous:method=PUT,path=/dataset\\.json$,first=1"]) as proxy:
        r = cli(["convert", "jsonl", data, uri, "--codec", codec, "--shard-size", "16KB"],
                through(s3_server, proxy))
        puts = fired(proxy, "ambiguous")
    assert r.returncode == 0, r.stderr
    assert len(puts) == 1 and puts[0]["path"].endswith("/dataset.json"), puts
    assert "another writer" not in r.stderr, r.stderr
    env = s3_server.environ()
    assert read_all(uri, env, cache=False) == expected
    v = cli(["verify", uri], env)
    assert v.returncode == 0, v.stdout + v.stderr


def test_ambiguous_put_of_the_writer_lock_lets_the_run_proceed(s3_server, jsonl):
    data, expected = jsonl
    bucket = s3_server.bucket("wire-lock")
    uri = f"s3://{bucket}/ds"
    with FaultProxy([rgw_address(s3_server)],
                    faults=["ambiguous:method=PUT,path=/\\.sluice-lock\\.1$,first=1"]) as proxy:
        r = cli(["convert", "jsonl", data, uri, "--shard-size", "16KB"],
                through(s3_server, proxy))
        assert len(fired(proxy, "ambiguous")) == 1
    assert r.returncode == 0, r.stderr
    assert "being written by another writer" not in r.stderr, r.stderr
    assert read_all(uri, s3_server.environ(), cache=False) == expected
    # The lock was released: a second writer into the same directory is not refused by it.
    again = cli(["convert", "jsonl", data, uri, "--shard-size", "16KB"], s3_server.environ())
    assert "being written by another writer" not in again.stderr, again.stderr


def table_history(uri, env):
    r = cli(["table", "history", uri, "--json"], env)
    assert r.returncode == 0, r.stderr
    return sorted(h["version"] for h in json.loads(r.stdout))


def test_ambiguous_table_commit_and_checkpoint_are_written_once(s3_server, jsonl):
    """Two table writes and a checkpoint whose commit PUTs are ambiguous leave the same
    versions as the same writes without faults (none failed, none doubled)."""
    data, expected = jsonl
    bucket = s3_server.bucket("wire-table")
    faults = ["ambiguous:method=PUT,path=/_delta_log/0{20}\\.json$,first=1",
              "ambiguous:method=PUT,path=/_delta_log/0{19}1\\.json$,first=1",
              "ambiguous:method=PUT,path=\\.checkpoint\\.,first=1"]
    histories = {}
    for name, rules in (("clean", []), ("faulted", faults)):
        uri = f"s3://{bucket}/{name}"
        with FaultProxy([rgw_address(s3_server)], faults=rules) as proxy:
            env = through(s3_server, proxy)
            for _ in range(2):
                r = cli(["convert", "jsonl", data, uri, "--table", "--shard-size", "16KB"], env)
                assert r.returncode == 0, r.stderr
            c = cli(["table", "checkpoint", uri], env)
            assert c.returncode == 0, c.stderr
            assert len(fired(proxy, "ambiguous")) == len(rules)
        env = s3_server.environ()
        histories[name] = table_history(uri, env)
        assert sorted(read_all(uri, env, cache=False)) == sorted(expected * 2)
        keys = [o["Key"] for o in s3_server.client().list_objects_v2(
            Bucket=bucket, Prefix=f"{name}/_delta_log/").get("Contents", [])]
        assert len([k for k in keys if ".checkpoint." in k]) == 1, keys
        assert any(k.endswith("_last_checkpoint") for k in keys), keys
    assert histories["faulted"] == histories["clean"]
    assert histories["clean"] == list(range(len(histories["clean"])))


@pytest.fixture(scope="module")
def dataset(s3_server, jsonl):
    data, expected = jsonl
    bucket = s3_server.bucket("wire-range")
    uri = f"s3://{bucket}/ds"
    r = cli(["convert", "jsonl", data, uri, "--shard-size", "16KB"], s3_server.environ())
    assert r.returncode == 0, r.stderr
    listed = s3_server.client().list_objects_v2(Bucket=bucket, Prefix="ds/")["Contents"]
    shards = sum(1 for o in listed if o["Key"].endswith(".tfrecord.zst"))
    assert shards >= 3
    return uri, expected, shards


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_wrong_content_range_is_retried_and_every_record_returned(s3_server, dataset, on_error):
    uri, expected, _ = dataset
    with FaultProxy([rgw_address(s3_server)], faults=["wrong_range:method=GET,p=0.3"],
                    seed=7) as proxy:
        # 10 attempts: with p = 0.3 per attempt a request then fails in ~1 of 170,000.
        env = through(s3_server, proxy, AWS_MAX_ATTEMPTS="10")
        got = read_all(uri, env, cache=False, on_error=on_error)
        rewritten = [e for e in fired(proxy, "wrong_range") if e.get("content_range")]
    assert got == expected
    assert rewritten, "no Content-Range was rewritten"


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("when", ["open", "chunks"])
def test_wrong_content_range_on_every_attempt_fails_naming_object_and_range(s3_server, dataset,
                                                                            on_error, when):
    """Every GET of a shard answered with another range, from the first (the open's header
    check) or only after the open (the chunk reads, whose records skip mode would otherwise
    drop): the read fails with IoError naming object and ranges, never a short read."""
    uri, _, shards = dataset
    after = 0 if when == "open" else shards  # the open reads each shard's header once
    rule = f"wrong_range:method=GET,path=\\.tfrecord\\.zst$,after={after}"
    with FaultProxy([rgw_address(s3_server)], faults=[rule], seed=1) as proxy:
        env = through(s3_server, proxy, AWS_MAX_ATTEMPTS="3")
        with pytest.raises(sluice.IoError) as e:
            read_all(uri, env, cache=False, on_error=on_error)
        assert fired(proxy, "wrong_range")
    message = str(e.value)
    assert uri in message and ".tfrecord" in message, message
    assert "asked for bytes " in message and "Content-Range: bytes " in message, message
    assert "after 3 attempts" in message, message
    assert s3_server.env["AWS_SECRET_ACCESS_KEY"] not in message


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"])
def test_endpoint_with_user_info_is_refused_without_printing_the_secret(variable):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({variable: "http://AKID:SECRET@127.0.0.1:9", "AWS_ACCESS_KEY_ID": "k",
                "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"})
    r = cli(["inspect", "s3://bucket/ds"], env)
    assert r.returncode != 0
    assert "user info is not supported" in r.stderr, r.stderr
    assert "127.0.0.1:9" in r.stderr, r.stderr  # still names where it was pointed
    assert "SECRET" not in r.stdout + r.stderr and "AKID" not in r.stdout + r.stderr, r.stderr
