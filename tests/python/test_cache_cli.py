"""`sluice cache stats|clear|warm` (docs/cache.md, "Operations"), end to end on a converted
dataset.

Run: SLUICE_BUILD=build /usr/bin/python3 -m pytest tests/python/test_cache_cli.py
"""
import json
import os
import random
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
SLUICE = BUILD / "bin" / "sluice"


def sluice(*args, check=0):
    if not SLUICE.exists():
        pytest.fail(f"{SLUICE} not built")
    r = subprocess.run([str(SLUICE), *map(str, args)], capture_output=True, text=True, timeout=300)
    assert r.returncode == check, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture
def dataset(tmp_path):
    lines = tmp_path / "in.jsonl"
    rng = random.Random(7)  # hex of random bytes: zstd halves it, no more
    lines.write_text("".join(json.dumps({"text": rng.randbytes(100).hex()}) + "\n"
                             for _ in range(3000)))
    sluice("convert", "jsonl", lines, tmp_path / "ds", "--shard-size", "100KB")
    return tmp_path / "ds"


def stats(cache, *extra):
    return json.loads(sluice("cache", "stats", "--cache-dir", cache, "--json", *extra).stdout)


def test_stats_of_a_missing_cache_is_an_error(tmp_path):
    r = sluice("cache", "stats", "--cache-dir", tmp_path / "none", check=1)
    assert "no sluice cache" in r.stderr
    assert not (tmp_path / "none").exists()  # looking does not create it


def test_warm_then_stats_then_clear(dataset, tmp_path):
    cache = tmp_path / "cache"
    shard_bytes = sum(p.stat().st_size for p in dataset.iterdir() if ".tfrecord" in p.name)
    r = sluice("cache", "warm", dataset, "--cache-dir", cache, "--cache-bytes", "64MB")
    assert "fetched" in r.stdout
    s = stats(cache, "--files")
    assert s["capacity_bytes"] == 64_000_000
    assert s["used_bytes"] == s["chunk_bytes"] > shard_bytes
    assert s["temporaries"] == 0
    files = {f["file"].split(":", 1)[1].rsplit("#", 1)[0] for f in s["files"]}
    assert {str(p.resolve()) for p in dataset.iterdir() if ".tfrecord" in p.name} <= files
    # Warming again fetches nothing.
    again = sluice("cache", "warm", dataset, "--cache-dir", cache)
    assert "fetched 0 B" in again.stdout
    assert stats(cache)["capacity_bytes"] == 64_000_000  # kept: no --cache-bytes given
    sluice("cache", "clear", "--cache-dir", cache)
    s = stats(cache)
    assert s["used_bytes"] == s["chunks"] == 0


def test_warm_into_a_small_cache_stays_within_it(dataset, tmp_path):
    cache = tmp_path / "cache"
    r = sluice("cache", "warm", dataset, "--cache-dir", cache, "--cache-bytes", "150KB")
    s = stats(cache)
    assert 0 < s["used_bytes"] <= 150_000
    assert sum(p.stat().st_size for p in dataset.iterdir()) > 2 * 150_000
    assert "do not fit in the cache" in r.stderr
