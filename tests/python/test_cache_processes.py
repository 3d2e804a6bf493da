"""The cache across real processes of one node (build/bin/cache_tool, docs/cache.md): single
flight (each chunk fetched once by the node, counted at the simulated remote's shared log),
capacity never exceeded while processes race, a crash mid-fetch or between write and publish
leaves no visible partial chunk and the chunk is taken over, restart reuses the cache.

Run: SLUICE_BUILD=build /usr/bin/python3 -m pytest tests/python/test_cache_processes.py
"""
import collections
import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
TOOL = BUILD / "bin" / "cache_tool"
BLOCK = 65536

pytestmark = pytest.mark.skipif(not TOOL.exists(), reason="cache_tool not built")


def make_data(path, files=3, blocks=6):
    path.mkdir()
    for f in range(files):
        # Different bytes in every block, and a short last block.
        data = b"".join(bytes([(f * 31 + b) % 251]) * BLOCK for b in range(blocks)) + b"tail"
        (path / f"shard-{f}.bin").write_bytes(data)
    return files * (blocks + 1)


def start(cache, data, log=None, **opts):
    cmd = [str(TOOL), "--cache", str(cache), "--data", str(data), "--block", str(BLOCK)]
    if log:
        cmd += ["--log", str(log)]
    for key, value in opts.items():
        cmd += ["--" + key.replace("_", "-")] + ([] if value is True else [str(value)])
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=60):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def fetch_counts(log):
    counts = collections.Counter()
    for line in log.read_text().splitlines():
        path, offset, _ = line.rsplit(" ", 2)
        counts[(path, int(offset))] += 1
    return counts


def published_bytes(cache):
    """Bytes of published chunk files, summed while holding the ledger's lock: every publish
    and eviction happens under it, so this is one instant's total, not a walk that counts an
    evicted file and the file that replaced it."""
    ledger = cache / "ledger"
    if not ledger.exists():
        return 0
    with open(ledger, "rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _sum_published(cache)


def _sum_published(cache):
    total = 0
    for root, _, files in os.walk(cache / "chunks"):
        for name in files:
            if ".tmp-" not in name:
                try:
                    total += os.path.getsize(os.path.join(root, name))
                except FileNotFoundError:
                    pass  # evicted while we looked
    return total


def temp_files(cache):
    return [n for _, _, files in os.walk(cache / "chunks") for n in files if ".tmp-" in n]


def test_four_processes_fetch_each_chunk_once(tmp_path):
    chunks = make_data(tmp_path / "data")
    log = tmp_path / "fetches.log"
    procs = [start(tmp_path / "cache", tmp_path / "data", log, latency=0.02, seed=s, threads=3)
             for s in range(4)]
    stats = [finish(p) for p in procs]
    counts = fetch_counts(log)
    assert len(counts) == chunks
    assert set(counts.values()) == {1}, counts
    assert sum(s["fetches"] for s in stats) == chunks
    assert sum(s["reads"] for s in stats) == 4 * chunks
    assert all(s["bad"] == 0 and s["lock_timeouts"] == 0 for s in stats)


def test_processes_never_exceed_the_capacity(tmp_path):
    make_data(tmp_path / "data", files=4, blocks=8)
    capacity = 5 * BLOCK
    procs = [start(tmp_path / "cache", tmp_path / "data", bytes=capacity, seed=s, threads=2)
             for s in range(4)]
    worst = 0
    while any(p.poll() is None for p in procs):
        worst = max(worst, published_bytes(tmp_path / "cache"))
    stats = [finish(p) for p in procs]
    worst = max(worst, published_bytes(tmp_path / "cache"))
    assert worst <= capacity
    assert all(s["used"] <= capacity for s in stats)


@pytest.mark.parametrize("event", ["staged", "published"])
def test_crash_leaves_no_partial_chunk_and_the_next_process_recovers(tmp_path, event):
    make_data(tmp_path / "data", files=1, blocks=2)
    cache = tmp_path / "cache"
    crashed = start(cache, tmp_path / "data", kill_at=event, threads=1)
    crashed.communicate(timeout=60)
    assert crashed.returncode == -signal.SIGKILL
    if event == "staged":
        # Killed between writing the file and publishing it: only a temporary remains.
        assert published_bytes(cache) == 0
        assert len(temp_files(cache)) == 1
    stats = finish(start(cache, tmp_path / "data", threads=1))
    assert stats["bad"] == 0
    assert temp_files(cache) == []  # the dead process's temporary is gone
    assert stats["used"] == published_bytes(cache)


def test_a_waiting_process_takes_over_from_a_crashed_fetcher(tmp_path):
    make_data(tmp_path / "data", files=1, blocks=0)  # one 4-byte chunk
    cache, log = tmp_path / "cache", tmp_path / "fetches.log"
    first = start(cache, tmp_path / "data", log, latency=30, events=True, threads=1)
    assert first.stdout.readline().strip() == "event fetch"  # holds the chunk's node lock
    second = start(cache, tmp_path / "data", log, threads=1)
    time.sleep(0.3)  # the second process is now waiting for the first one's fetch
    assert second.poll() is None
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    stats = finish(second, timeout=20)
    assert stats["bad"] == 0
    assert stats["fetches"] == 1 and stats["lock_timeouts"] == 0
    assert published_bytes(cache) > 0


def test_restart_reuses_the_cache(tmp_path):
    chunks = make_data(tmp_path / "data")
    log = tmp_path / "fetches.log"
    finish(start(tmp_path / "cache", tmp_path / "data", log))
    again = finish(start(tmp_path / "cache", tmp_path / "data", log, seed=7))
    assert again["hits"] == chunks and again["fetches"] == 0
    assert sum(fetch_counts(log).values()) == chunks
