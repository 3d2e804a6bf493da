"""sluice.read(..., cache_dir=, cache_bytes=) and the cache's figures in iterator.stats() and
the stall report (docs/cache.md)."""
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import sluice
from conftest import BUILD
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
