"""sluice on S3 behind a fault-injecting proxy (tests/tools/fault_proxy.py) in front of a
real server (Ceph RGW): 503 storms, resets mid-body, truncated bodies, slow first bytes,
stalls. Whatever happens, nothing corrupt is returned (records are compared, CRCs checked),
nothing hangs, and every read finishes or fails within its deadline with an error naming the
object, the status and the attempts.
"""
import _thread
import json
import os
import subprocess
import sys
import threading
import time

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
RECORDS = 2000


@pytest.fixture(scope="module")
def dataset(s3_server, tmp_path_factory):
    """A dataset on the server (several zstd shards) and its records as read locally."""
    tmp = tmp_path_factory.mktemp("faults")
    with open(tmp / "data.jsonl", "w") as f:
        for i in range(RECORDS):
            f.write(json.dumps({"id": i, "text": f"doc {i}", "name": f"record-{i}", "pad": "x" * (i % 300)}) + "\n")
    bucket = s3_server.bucket("faults")
    env = s3_server.environ()
    for out in (str(tmp / "local"), f"s3://{bucket}/ds"):
        subprocess.run([SLUICE, "convert", "jsonl", str(tmp / "data.jsonl"), out,
                        "--shard-size", "32KB"], check=True, capture_output=True, env=env,
                       timeout=HANG_GUARD)
    shards = sum(1 for n in os.listdir(tmp / "local") if n.endswith(".tfrecord.zst"))
    return {"uri": f"s3://{bucket}/ds", "expected": read_all(str(tmp / "local"), env),
            "shards": shards}


def rgw_address(s3_server):
    return s3_server.endpoint.removeprefix("http://")


def through(s3_server, proxy, **changes):
    return s3_server.environ(AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy.ports[0]}", **changes)


@pytest.mark.parametrize("faults", [
    ["status:first=5"],                          # a 503 SlowDown storm at the start
    ["status:p=0.15"],                           # 503s scattered over every request
    ["reset:p=0.2,method=GET"],                  # connections reset half-way through bodies
    ["truncate:p=0.2,method=GET,at=0.3"],        # bodies cut short, cleanly closed
    ["delay:p=0.05,ms=300"],                     # heavy tail of first-byte latency
], ids=["storm", "scattered-503", "resets", "truncated", "heavy-tail"])
def test_reads_through_faults_return_exactly_the_records(s3_server, dataset, faults):
    with FaultProxy([rgw_address(s3_server)], faults=faults, seed=11) as proxy:
        # 10 attempts, as boto3 users set it: with p = 0.2 per attempt the default 6 leave a
        # request failing in ~1 of 15,000, enough across hundreds of GETs to flake now and then.
        env = through(s3_server, proxy, AWS_MAX_ATTEMPTS="10")
        got = read_all(dataset["uri"], env, cache=False)
        counts = proxy.counts(by="path")
    assert got == dataset["expected"]
    assert sum(counts["faults"].values()) > 0, counts  # the faults did happen


def run_cli(args, env):
    start = time.monotonic()
    r = subprocess.run([SLUICE, *args], capture_output=True, text=True, env=env,
                       timeout=HANG_GUARD)
    return r, time.monotonic() - start


def test_stalled_bodies_are_abandoned_and_retried(s3_server, dataset):
    """Three bodies stop after 30% for 60 s; with a 1 s stall timeout each is abandoned and
    sent again, and verify (which checks every record's CRC) passes."""
    with FaultProxy([rgw_address(s3_server)], faults=["stall:first=3,ms=60000,at=0.3,method=GET"],
                    seed=5) as proxy:
        env = through(s3_server, proxy, SLUICE_HTTP_STALL_TIMEOUT="1")
        r, _ = run_cli(["verify", dataset["uri"]], env)
        faults = proxy.counts(by="path")["faults"]
    assert r.returncode == 0, r.stderr
    assert faults.get("stall", 0) > 0


def test_permanent_503_fails_naming_object_status_and_attempts(s3_server, dataset):
    with FaultProxy([rgw_address(s3_server)], faults=["status:method=GET"], seed=1) as proxy:
        r, _ = run_cli(["verify", dataset["uri"]], through(s3_server, proxy))
    assert r.returncode != 0
    assert "HTTP 503 SlowDown" in r.stderr, r.stderr
    assert "after 6 attempts" in r.stderr, r.stderr
    assert dataset["uri"] in r.stderr
    assert s3_server.env["AWS_SECRET_ACCESS_KEY"] not in r.stderr


def test_max_attempts_from_the_aws_environment_bounds_the_retries(s3_server, dataset):
    with FaultProxy([rgw_address(s3_server)], faults=["status:method=GET"], seed=1) as proxy:
        r, _ = run_cli(["verify", dataset["uri"]], through(s3_server, proxy,
                                                             AWS_MAX_ATTEMPTS="2"))
    assert r.returncode != 0
    assert "after 2 attempts" in r.stderr, r.stderr
    r, _ = run_cli(["verify", dataset["uri"]], s3_server.environ(AWS_MAX_ATTEMPTS="zero"))
    assert r.returncode != 0 and "AWS_MAX_ATTEMPTS = 'zero'" in r.stderr, r.stderr


def test_no_answer_fails_at_the_deadline(s3_server, dataset):
    with FaultProxy([rgw_address(s3_server)], faults=["delay:ms=90000,method=GET"],
                    seed=1) as proxy:
        env = through(s3_server, proxy, SLUICE_HTTP_TIMEOUT="3")
        r, seconds = run_cli(["verify", dataset["uri"]], env)
    assert r.returncode != 0
    assert "no complete response within 3 s" in r.stderr, r.stderr
    print(f"failed after {seconds:.1f} s with a 3 s deadline")


def test_interrupt_and_close_with_requests_in_flight_do_not_wait_for_them(s3_server, dataset):
    """Ctrl-C while next() waits on chunk GETs the proxy holds for 60 s, then close(): both
    return without waiting for the held requests (they are cancelled). The reads at open
    (one small GET per shard for its codec) pass; every later shard GET is held."""
    shards = dataset["shards"]
    faults = [f"delay:ms=60000,method=GET,path=\\.zst$,after={shards}"]
    with FaultProxy([rgw_address(s3_server)], faults=faults, seed=1) as proxy:
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(through(s3_server, proxy))
        interrupted_at = []

        def interrupt_once_a_chunk_get_is_held():
            deadline = time.monotonic() + HANG_GUARD
            while time.monotonic() < deadline:
                gets = [e for e in proxy.log() if e["method"] == "GET" and
                        e["path"].endswith(".zst")]
                if len(gets) > shards:
                    break
                time.sleep(0.02)
            interrupted_at.append(time.monotonic())
            _thread.interrupt_main()

        try:
            it = (sluice.read(dataset["uri"], cache=False).shuffle(seed=1)
                  .parse_example({"id": "int64"}).prefetch().iterator(threads=2))
            threading.Thread(target=interrupt_once_a_chunk_get_is_held, daemon=True).start()
            with pytest.raises(KeyboardInterrupt):
                next(it)
            it.close()
            closed = time.monotonic() - interrupted_at[0]
        finally:
            os.environ.clear()
            os.environ.update(saved)
        held = sum(1 for e in proxy.log() if e["path"].endswith(".zst")) - shards
    print(f"interrupted and closed {closed * 1000:.0f} ms after a GET was held ({held} held)")
    assert held > 0
    assert closed < 10, "next()/close() waited for the held requests"


@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cold-cache"])
def test_a_dataset_opens_without_a_head_and_reads_each_shard_in_one_get(s3_server, tmp_path,
                                                                        cache):
    """The listing of the dataset's directory says it is a directory and gives every file's
    size and ETag, so opening makes no HEAD at all (table probe, directory, manifest, shards,
    indexes); an unshuffled read fetches a shard's adjacent chunks in one GET (up to 8 MiB),
    not one per ~1 MiB chunk, without the node-local cache (the reader groups them) and
    through it, cold (the cache groups its fetches). Each request costs the server about a
    millisecond of CPU (bench/s3)."""
    with open(tmp_path / "big.jsonl", "w") as f:
        for i in range(3000):
            f.write(json.dumps({"id": i, "text": "p" * 1000, "name": f"record-{i}"}) + "\n")
    bucket = s3_server.bucket("requests-cold" if cache else "requests-nocache")
    uri = f"s3://{bucket}/ds"
    subprocess.run([SLUICE, "convert", "jsonl", str(tmp_path / "big.jsonl"), uri, "--codec",
                    "none", "--shard-size", "2MB"], check=True, capture_output=True,
                   env=s3_server.environ(), timeout=HANG_GUARD)
    options = {"cache_dir": str(tmp_path / "cache")} if cache else {"cache": False}
    with FaultProxy([rgw_address(s3_server)]) as proxy:
        got = read_all(uri, through(s3_server, proxy), **options)
        by_range = proxy.counts(by="range")["by_key"]
    assert [i for i, _ in got] == list(range(3000))
    assert not [k for k in by_range if k.startswith("HEAD ")], by_range
    listings = sum(n for k, n in by_range.items() if k.split()[1] == f"/{bucket}")
    assert listings <= 3, by_range  # is it a table (twice: Python, then C++), the directory
    shards = {key.split()[1] for key in by_range if key.split()[1].endswith(".tfrecord")}
    assert len(shards) >= 2, by_range
    for shard in shards:
        data_gets = []
        for key, n in by_range.items():
            method, path, *rng = key.split()
            if method == "GET" and path == shard and rng and rng[0].startswith("bytes="):
                first, last = map(int, rng[0][len("bytes="):].split("-"))
                if last - first + 1 > 4096:  # not one of the open's header checks
                    data_gets += [last - first + 1] * n
        assert len(data_gets) == 1, (shard, data_gets)  # the whole ~2 MB shard
        assert data_gets[0] > (1 << 20), data_gets
