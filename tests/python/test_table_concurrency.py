"""Concurrent writer processes and kill -9 on a local table (docs/table.md, "Concurrent
writers" and "Crashes"). Writers are build/bin/table_append_tool processes; the table is
checked with sluice and with tests/python/delta_reader.py (written from PROTOCOL.md).

Sizes: 16 writers x 10 appends always; the crash test runs SLUICE_TABLE_CRASH_RUNS rounds
(default 30; hundreds for a soak: SLUICE_TABLE_CRASH_RUNS=300) of 3 writers killed with
SIGKILL at random moments, with checkpoints every 7 commits so kills also land in them.
"""
import json
import os
import random
import re
import signal
import subprocess
import time

import pytest

import sluice
from delta_reader import read_snapshot, versions
from s3_server import s3_server  # noqa: F401  (the session fixture: one RGW per test run)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
TOOL = os.path.join(BUILD, "bin", "table_append_tool")
COMMITTED = re.compile(r"^committed (\d+) (\d+) (\S+) (\d+)")


def start_writer(path, writer, commits, checkpoint_interval=100, records=10):
    if not os.path.exists(TOOL):
        pytest.fail(f"{TOOL} not built (set SLUICE_BUILD or run make build)")
    return subprocess.Popen(
        [TOOL, str(path), "--commits", str(commits), "--records", str(records), "--writer",
         str(writer), "--checkpoint-interval", str(checkpoint_interval)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def committed_lines(stdout):
    """(version, path, records) of every commit a writer reported as done."""
    out = []
    for line in stdout.splitlines():
        m = COMMITTED.match(line)
        if m:
            out.append((int(m.group(1)), m.group(3), int(m.group(4))))
    return out


def run_writers(uri, writers, commits, checkpoint_interval, env):
    """`writers` writer processes of `commits` appends of 10 records each, run to the end:
    every (version, path, records) they reported, and their commit attempts in all."""
    procs = [subprocess.Popen([TOOL, uri, "--commits", str(commits), "--records", "10",
                               "--writer", str(w), "--checkpoint-interval",
                               str(checkpoint_interval)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for w in range(writers)]
    reported, attempts = [], 0
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        reported += committed_lines(out)
        attempts += sum(int(m.group(2)) for m in map(COMMITTED.match, out.splitlines()) if m)
    return reported, attempts


def all_records(path):
    return [element["record"] for element in sluice.read(str(path))]


def test_16_writer_processes_x_10_appends_give_versions_0_to_159(tmp_path):
    path = tmp_path / "t"
    writers = [start_writer(path, w, commits=10) for w in range(16)]
    reported = []
    for p in writers:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        reported += committed_lines(out)
    assert len(reported) == 160
    assert versions(str(path)) == list(range(160))
    assert sorted(v for v, _, _ in reported) == list(range(160))
    snap = read_snapshot(str(path))
    t = sluice.Table(path)
    assert t.version() == snap.version == 159
    # Every commit's file is live, once; each commit file adds exactly its writer's file.
    assert sorted(p for _, p, _ in reported) == snap.paths() == t.files()
    for version, file, _ in reported:
        log = path / "_delta_log" / f"{version:020d}.json"
        actions = [json.loads(line) for line in log.read_text().splitlines()]
        adds = [a["add"]["path"] for a in actions if "add" in a]
        assert adds == [file], (version, adds)
        assert actions[0]["commitInfo"]["operation"] == "WRITE"
    data = all_records(path)
    assert len(data) == len(set(data)) == 1600
    assert t.protocol()["min_reader_version"] == 3  # the checkpoint at version 100 upgraded it


def test_kill_9_of_writers_never_loses_or_half_commits(tmp_path):
    runs = int(os.environ.get("SLUICE_TABLE_CRASH_RUNS", "30"))
    rng = random.Random(int(os.environ.get("SLUICE_TABLE_CRASH_SEED", "15")))
    path = tmp_path / "t"
    reported = []
    killed_mid_run = 0
    for run in range(runs):
        writers = [start_writer(path, f"{run}.{w}", commits=100000, checkpoint_interval=7,
                                records=rng.randint(1, 20)) for w in range(3)]
        time.sleep(rng.uniform(0.05, 0.6))
        for p in writers:
            time.sleep(rng.uniform(0, 0.05))
            p.send_signal(signal.SIGKILL)
        for p in writers:
            out, err = p.communicate(timeout=60)
            assert p.returncode == -signal.SIGKILL, err
            killed_mid_run += 1
            reported += committed_lines(out)
        if not reported:
            continue
        # The table always opens, with every commit a writer saw complete.
        snap = read_snapshot(str(path))
        t = sluice.Table(path)
        assert t.version() == snap.version
        assert versions(str(path)) == list(range(snap.version + 1))
        assert t.files() == snap.paths()
        live = set(snap.paths())
        for version, file, records in reported:
            assert version <= snap.version and file in live, (version, file)
    # No partial commit is visible: every live file is whole and holds what the log says.
    t = sluice.Table(path)
    assert len(all_records(path)) == t.num_records() >= sum(r for _, _, r in reported)
    # Leftovers of the killed writers (uncommitted shards, temp files) are reclaimed.
    deleted = t.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    live = set()
    for f in t.file_details():
        live.add(f["path"])
        live.add(f["path"] + ".idx")
    on_disk = set()
    for directory, _, names in os.walk(path):
        for name in names:
            rel = os.path.relpath(os.path.join(directory, name), path)
            if rel.startswith("_delta_log"):
                assert ".tmp-" not in name, rel
            else:
                on_disk.add(rel)
    assert on_disk == live, (sorted(on_disk - live)[:5], sorted(live - on_disk)[:5])
    assert len(all_records(path)) == t.num_records()
    print(f"crash runs: {runs}, writers killed: {killed_mid_run}, commits seen complete: "
          f"{len(reported)}, latest version: {t.version()}, leftovers vacuumed: {len(deleted)}")


# --- The same on the real S3 server (Ceph RGW, scripts/s3-server): commits are PUTs with
# If-None-Match: *, which RGW honours (412 for all but one of racing writers).

def mirror(client, bucket, prefix, into):
    """Copies every object under s3://bucket/prefix/ to the directory `into`."""
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/")
    for page in pages:
        for obj in page.get("Contents", []):
            local = into / obj["Key"][len(prefix) + 1:]
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes(client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read())


def test_8_writer_processes_x_5_appends_on_s3_give_versions_0_to_39(s3_server, tmp_path):
    s3 = s3_server
    bucket = s3.bucket("table-concurrency")
    uri = f"s3://{bucket}/t"
    env = s3.environ()
    reported, attempts = run_writers(uri, 8, commits=5, checkpoint_interval=10, env=env)
    print(f"S3: 40 commits in {attempts} put attempts (the others lost a race: 412)")
    assert sorted(v for v, _, _ in reported) == list(range(40))
    local = tmp_path / "t"
    mirror(s3.client(), bucket, "t", local)
    assert versions(str(local)) == list(range(40))
    snap = read_snapshot(str(local))
    assert snap.version == 39
    assert sorted(p for _, p, _ in reported) == snap.paths()
    for version, file, _ in reported:
        log = local / "_delta_log" / f"{version:020d}.json"
        adds = [json.loads(line)["add"]["path"] for line in log.read_text().splitlines()
                if '"add"' in line]
        assert adds == [file], (version, adds)
    # sluice reads the table on S3 itself: the same version, files and records.
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        t = sluice.Table(uri)
        assert t.version() == 39 and t.files() == snap.paths()
        assert [h["version"] for h in t.history(limit=3)] == [39, 38, 37]
        # Vacuum walks the table's keys on S3 (ages from ListObjectsV2's LastModified) and
        # deletes the leftover of a crashed writer, never a live file.
        s3.client().put_object(Bucket=bucket, Key="t/part-crashed-00000.tfrecord.zst", Body=b"x")
        time.sleep(1.1)  # S3 modification times have 1 s resolution
        deleted = t.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
        assert deleted == ["part-crashed-00000.tfrecord.zst"], deleted
        listed = s3.client().list_objects_v2(Bucket=bucket, Prefix="t/part-crashed")
        assert listed["KeyCount"] == 0
        data = [element["record"] for element in sluice.read(uri)]
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert len(data) == len(set(data)) == 400
