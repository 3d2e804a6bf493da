"""sluice on S3 against a real server (Ceph RGW, started once per session by the
`s3_server` fixture): conversions to s3:// match local ones byte for byte, boto3 and sluice
read each other's objects, and the errors users meet are clear and never show a secret.
"""
import json
import os
import random
import subprocess

import pytest

import sluice
from s3_server import read_ids_and_names as records
from s3_server import s3_server  # noqa: F401  (the session fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
SLUICE = os.path.join(BUILD, "bin", "sluice")


def run(args, env, check=None):
    r = subprocess.run([SLUICE, *map(str, args)], capture_output=True, text=True, env=env,
                       timeout=300)
    if check is not None:
        assert r.returncode == check, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def write_jsonl(path, n, blob=0, seed=1):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            row = {"id": i, "text": f"document {i}", "score": rng.random(), "name": f"item-{i}",
                   "tags": [rng.randrange(100) for _ in range(i % 4)]}
            if blob:
                row["blob"] = "".join(rng.choice("abcdefghij") for _ in range(blob))
            f.write(json.dumps(row) + "\n")
    return path


def without_run_id(files):
    """A dataset's files with its run id (random per conversion: in shard names and the
    manifest) replaced by "RUN", and the writer lock's log (pid, host, time) left out, so two
    conversions of the same input compare equal byte for byte."""
    run = json.loads(files["dataset.json"])["run"].encode()
    return {name.replace(run.decode(), "RUN"): data.replace(run, b"RUN")
            for name, data in files.items() if not name.startswith(".sluice-lock")}


def local_files(directory):
    out = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            out[name] = f.read()
    return without_run_id(out)


def s3_objects(client, bucket, prefix):
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            name = o["Key"][len(prefix):]
            out[name] = client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
    return without_run_id(out)


def test_convert_to_s3_matches_a_local_conversion(s3_server, tmp_path):
    env = s3_server.environ()
    data = write_jsonl(tmp_path / "data.jsonl", 3000)
    run(["convert", "jsonl", data, tmp_path / "local", "--shard-size", "64KB"], env, check=0)
    bucket = s3_server.bucket("roundtrip")
    run(["convert", "jsonl", data, f"s3://{bucket}/ds", "--shard-size", "64KB"], env, check=0)
    local = local_files(tmp_path / "local")
    remote = s3_objects(s3_server.client(), bucket, "ds/")
    assert sorted(remote) == sorted(local)
    assert len(local) > 4  # several shards, their indexes and the manifest
    for name in local:
        assert remote[name] == local[name], name
    run(["verify", f"s3://{bucket}/ds"], env, check=0)
    inspect = run(["inspect", f"s3://{bucket}/ds"], env, check=0)
    assert "3000" in inspect.stdout
    assert records(f"s3://{bucket}/ds", env) == records(str(tmp_path / "local"), env)


def test_sluice_reads_a_dataset_uploaded_by_boto3(s3_server, tmp_path):
    env = s3_server.environ()
    data = write_jsonl(tmp_path / "data.jsonl", 1500, seed=2)
    run(["convert", "jsonl", data, tmp_path / "local", "--shard-size", "32KB"], env, check=0)
    bucket = s3_server.bucket("uploaded")
    client = s3_server.client()
    for name in os.listdir(tmp_path / "local"):
        client.upload_file(str(tmp_path / "local" / name), bucket, f"by-boto3/{name}")
    assert records(f"s3://{bucket}/by-boto3", env) == records(str(tmp_path / "local"), env)
    shards = sorted(n for n in os.listdir(tmp_path / "local") if ".tfrecord" in n and
                    not n.endswith(".idx"))
    glob = records(f"s3://{bucket}/by-boto3/data-*.tfrecord*", env)
    assert len(glob) == 1500
    assert len(shards) > 1


def test_boto3_reads_a_multipart_object_sluice_wrote(s3_server, tmp_path):
    env = s3_server.environ()
    data = write_jsonl(tmp_path / "big.jsonl", 600, blob=30000, seed=3)  # ~18 MB of records
    bucket = s3_server.bucket("multipart")
    run(["convert", "jsonl", data, f"s3://{bucket}/big", "--codec", "none", "--shard-size",
         "1GB"], env, check=0)
    run(["convert", "jsonl", data, tmp_path / "big", "--codec", "none", "--shard-size", "1GB"],
        env, check=0)
    client = s3_server.client()
    local = local_files(tmp_path / "big")
    shard = next(n for n in local if n.endswith(".tfrecord"))
    assert len(local[shard]) > 16 << 20  # more than two 8 MiB parts
    run_id = json.loads(client.get_object(Bucket=bucket, Key="big/dataset.json")["Body"].read())
    key = "big/" + shard.replace("RUN", run_id["run"])
    head = client.head_object(Bucket=bucket, Key=key)
    assert head["ContentLength"] == len(local[shard])
    assert "-" in head["ETag"]  # a multipart upload's ETag ("<md5>-<parts>")
    assert client.get_object(Bucket=bucket, Key=key)["Body"].read() == local[shard]


def test_wrong_secret_is_signature_mismatch_without_the_secret(s3_server, tmp_path):
    bucket = s3_server.bucket("errors")
    s3_server.client().put_object(Bucket=bucket, Key="x.tfrecord", Body=b"")
    secret = "wrong-secret-value-d41d8cd98f00b204e9800998ecf8427e"
    env = s3_server.environ(AWS_SECRET_ACCESS_KEY=secret)
    r = run(["convert", "jsonl", write_jsonl(tmp_path / "d.jsonl", 10), f"s3://{bucket}/w"], env)
    assert r.returncode != 0
    assert "SignatureDoesNotMatch" in r.stderr or "HTTP 403" in r.stderr, r.stderr
    assert secret not in r.stderr and secret not in r.stdout
    assert s3_server.env["AWS_SECRET_ACCESS_KEY"] not in r.stderr


def test_unknown_access_key_is_named_as_such(s3_server, tmp_path):
    bucket = s3_server.bucket("errors")
    env = s3_server.environ(AWS_ACCESS_KEY_ID="AKNOSUCHKEY000000000",
                            AWS_SECRET_ACCESS_KEY="some-secret-9f86d081884c7d65")
    r = run(["convert", "jsonl", write_jsonl(tmp_path / "d.jsonl", 10), f"s3://{bucket}/u"], env)
    assert r.returncode != 0
    assert "InvalidAccessKeyId" in r.stderr, r.stderr
    assert "some-secret-9f86d081884c7d65" not in r.stderr


def test_missing_bucket_and_missing_object_are_clear(s3_server):
    env = s3_server.environ()
    r = run(["inspect", "s3://no-such-bucket-anywhere/ds"], env)
    assert r.returncode != 0
    assert "s3://no-such-bucket-anywhere/ds" in r.stderr, r.stderr
    bucket = s3_server.bucket("errors")
    r = run(["verify", f"s3://{bucket}/nothing-here.tfrecord"], env)
    assert r.returncode != 0
    assert f"s3://{bucket}/nothing-here.tfrecord" in r.stderr, r.stderr
    with pytest.raises(sluice.NotFoundError, match="nothing-here"):
        records(f"s3://{bucket}/nothing-here", env)


def test_no_credentials_says_where_it_looked(s3_server, tmp_path):
    env = s3_server.environ(AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None)
    bucket = s3_server.bucket("errors")
    r = run(["inspect", f"s3://{bucket}/ds"], env)
    assert r.returncode != 0
    assert "no AWS credentials" in r.stderr, r.stderr
    assert "AWS_NO_SIGN_REQUEST" in r.stderr


def test_profile_in_aws_files_supplies_endpoint_and_keys(s3_server, tmp_path):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        "[test]\naws_access_key_id = {}\naws_secret_access_key = {}\n".format(
            s3_server.env["AWS_ACCESS_KEY_ID"], s3_server.env["AWS_SECRET_ACCESS_KEY"]))
    (home / ".aws" / "config").write_text(
        "[profile test]\nregion = us-east-1\ns3 =\n  endpoint_url = {}\n".format(s3_server.endpoint))
    env = s3_server.environ(AWS_ENDPOINT_URL=None, AWS_ACCESS_KEY_ID=None,
                            AWS_SECRET_ACCESS_KEY=None, AWS_PROFILE="test",
                            SLUICE_S3_TEST_HOME=None)
    env["HOME"] = str(home)
    bucket = s3_server.bucket("profiles")
    data = write_jsonl(tmp_path / "d.jsonl", 50)
    run(["convert", "jsonl", data, f"s3://{bucket}/p"], env, check=0)
    run(["verify", f"s3://{bucket}/p"], env, check=0)


def test_stall_report_has_a_network_line_when_reading_from_s3(s3_server, tmp_path):
    env = s3_server.environ()
    data = write_jsonl(tmp_path / "d.jsonl", 400, seed=4)
    bucket = s3_server.bucket("report")
    run(["convert", "jsonl", data, f"s3://{bucket}/r", "--shard-size", "16KB"], env, check=0)
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        it = sluice.read(f"s3://{bucket}/r", cache=False).iterator()
        assert sum(1 for _ in it) == 400
        network = it.stats()["network"]
        report = it.report()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert network is not None and network["requests"] > 0, network
    assert network["bytes_received"] > 0
    assert "network: " in report, report
