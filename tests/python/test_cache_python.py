"""sluice.read(..., cache_dir=, cache_bytes=) and the cache's figures in iterator.stats() and
the stall report (docs/cache.md)."""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import sluice
from conftest import BUILD
from s3_server import s3_server  # noqa: F401  (the session fixture)
from sluice_fixtures import example_records


def write_shards(directory, shards=3, per_shard=80):
    directory.mkdir()
    for s in range(shards):
        sluice.write_records(str(directory / f"part-{s}.tfrecord"),
                             example_records(per_shard, start=s * per_shard), codec="zstd")
    return directory


def epoch(ds):
    it = ds.iterator()
    labels = [int(x) for b in it for x in np.atleast_1d(b["label"])]
    return labels, it


def test_cache_dir_keeps_the_chunks_read(tmp_path):
    data = write_shards(tmp_path / "data")
    cache = tmp_path / "cache"
    # keep_decoded_chunks=False: else the second epoch starts with the decoded chunks of the
    # first and reads nothing from the cache.
    ds = sluice.read(str(data / "*.tfrecord"), cache_dir=cache, cache_bytes="64MB",
                     keep_decoded_chunks=False).shuffle(seed=1).parse_example(
                         {"label": "int64"}).batch(16)
    first, it1 = epoch(ds)
    assert sorted(first) == list(range(240))
    s1 = it1.stats()["cache"]
    assert s1["dir"] == str(cache) and s1["capacity_bytes"] == 64_000_000
    assert s1["reads"] > 0  # (opening the shards fetched their first chunks: maybe all hits)
    second, it2 = epoch(ds)
    assert second == first
    s2 = it2.stats()["cache"]
    assert s2["reads"] > 0 and s2["misses"] == 0 and s2["fetched_bytes"] == 0
    assert s2["hit_rate"] + s2["joined"] / s2["reads"] == pytest.approx(1.0)
    assert "cache " + str(cache) + ": hit rate" in it2.report()
    stats = json.loads(subprocess.run(
        [str(BUILD / "bin" / "sluice"), "cache", "stats", "--cache-dir", str(cache), "--json"],
        capture_output=True, text=True, check=True).stdout)
    assert 0 < stats["used_bytes"] <= 64_000_000


def test_local_paths_are_not_cached_unless_asked(tmp_path):
    data = write_shards(tmp_path / "data")
    labels, it = epoch(sluice.read(str(data / "*.tfrecord")).parse_example({"label": "int64"}))
    assert it.stats()["cache"] is None
    _, it = epoch(sluice.read(str(data / "*.tfrecord"), cache=False, cache_dir=tmp_path / "c")
                  .parse_example({"label": "int64"}))
    assert it.stats()["cache"] is None


def test_bad_cache_bytes_is_an_error(tmp_path):
    data = write_shards(tmp_path / "data")
    with pytest.raises(sluice.InvalidArgumentError, match="cache_bytes"):
        sluice.read(str(data / "*.tfrecord"), cache_dir=tmp_path / "c", cache_bytes="lots")
    with pytest.raises(sluice.InvalidArgumentError, match="cache_bytes"):
        sluice.read(str(data / "*.tfrecord"), cache_dir=tmp_path / "c", cache_bytes=-1)


def test_s3_reads_go_on_when_the_cache_dir_is_unusable(s3_server, tmp_path):
    """The cache is best effort: a cache_dir on a full disk (its ledger is /dev/full, which
    says ENOSPC) or one that cannot be created used to fail every read of s3:// with
    "ledger: No space left on device"; now every record is read from the server and the
    stall report says once that the cache is bypassed."""
    data = write_shards(tmp_path / "data")
    bucket = s3_server.bucket("bypassed-cache")
    client = s3_server.client()
    for name in os.listdir(data):
        client.upload_file(str(data / name), bucket, f"ds/{name}")
    full = tmp_path / "full"
    full.mkdir()
    os.symlink("/dev/full", full / "ledger")
    (tmp_path / "file").write_text("in the way")
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(s3_server.environ())
        for cache_dir, reason in ((full, "No space left on device"),
                                  (tmp_path / "file" / "cache", str(tmp_path / "file"))):
            labels, it = epoch(sluice.read(f"s3://{bucket}/ds/*.tfrecord", cache_dir=cache_dir)
                               .parse_example({"label": "int64"}).batch(16))
            assert sorted(labels) == list(range(240)), cache_dir
            stats = it.stats()["cache"]
            assert reason in stats["bypassed"] and stats["reads"] > 0, stats
            report = it.report()
            assert report.count("bypassed") == 1, report
            assert f"cache {cache_dir}: bypassed" in report
    finally:
        os.environ.clear()
        os.environ.update(saved)
