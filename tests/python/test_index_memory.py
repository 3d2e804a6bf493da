"""Memory budget (issue 3): peak RSS of a globally shuffled epoch over shard files must not grow
with the dataset. Runs build/bin/index_memory_tool (tests/tools/index_memory_tool.cc) over N
and 10N records of 64 bytes, each epoch in its own process, and compares VmHWM.

Bound: the 10N peak is within 10% of the N peak plus 4 MiB of absolute slack (allocator and
thread-stack noise on a small process). An eager in-memory index (~48 bytes per record for
codec none) would add ~80 MB at 2M records.
"""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
TOOL = os.path.join(BUILD, "bin", "index_memory_tool")
SLACK_KIB = 4 * 1024


def run(*args):
    if not os.path.exists(TOOL):
        pytest.fail(f"{TOOL} not built (set SLUICE_BUILD or run make build)")
    r = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{args}: exit {r.returncode}\n{r.stderr}"
    return r.stdout


def peak_rss_kib(tmp_path, records, codec, *frame_bytes):
    d = tmp_path / f"{codec}-{records}"
    run("write", d, records, codec, *frame_bytes)
    got = json.loads(run("epoch", d))
    assert got["records"] == records
    return got


# zstd: small frames, since every shuffled read decodes the record's whole frame.
@pytest.mark.parametrize("codec,n,frame", [("none", 200_000, []), ("zstd", 50_000, [4096])])
def test_peak_rss_does_not_grow_with_the_dataset(tmp_path, codec, n, frame):
    small = peak_rss_kib(tmp_path, n, codec, *frame)
    large = peak_rss_kib(tmp_path, 10 * n, codec, *frame)
    bound = small["peak_rss_kib"] * 1.10 + SLACK_KIB
    assert large["peak_rss_kib"] <= bound, (
        f"{codec}: peak RSS {large['peak_rss_kib']} KiB for {10 * n} records, "
        f"{small['peak_rss_kib']} KiB for {n} (bound {bound:.0f} KiB)\n{small}\n{large}")
