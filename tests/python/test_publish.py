"""Crash safety and concurrency of `sluice convert` (docs/manifest.md, "Commit point").

The crash test stops a conversion at every operation that publishes (each file closed into
place, each rename, put-if-absent, delete, directory creation), at a sample of plain writes
(through the test-only SLUICE_FAULT_INJECTION hook: the process kills itself with SIGKILL
before that operation), and at random moments with a real `kill -9`. After each crash the
output must be either absent (no dataset.json; `verify`, `inspect` and `sluice.read` refuse
the directory) or the complete dataset (`verify` clean, every record there); and a rerun must
succeed, leaving nothing of the crashed run behind. SLUICE_CRASH_TEST_SCALE=N (default 1)
multiplies the input size, the sampled writes and the kill -9 rounds.
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

import sluice
from conftest import BUILD
from s3_server import s3_server  # noqa: F401  (the session fixture)

SLUICE = str(BUILD / "bin" / "sluice")
SCALE = int(os.environ.get("SLUICE_CRASH_TEST_SCALE", "1"))
FAULT_COUNTS = re.compile(r"sluice: fault injection: (.*)$", re.M)


def run(*args, env=None, check=None):
    if not os.path.exists(SLUICE):
        pytest.fail(f"{SLUICE} not built (set SLUICE_BUILD or run make build)")
    full_env = dict(os.environ, **(env or {}))
    r = subprocess.run([SLUICE, *map(str, args)], capture_output=True, text=True, timeout=300,
                       env=full_env)
    if check is not None:
        assert r.returncode == check, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def write_jsonl(path, lines, start=0):
    path.write_text("".join(json.dumps({"text": f"line {i} " + "x" * (100 + i % 97), "n": i}) +
                            "\n" for i in range(start, start + lines)))
    return path


def convert_args(src, out, *extra):
    return ["convert", "jsonl", src, out, "--shard-size", "8KB", *extra]


def numbers(out):
    return [int(n) for b in sluice.read(str(out)).parse_example({"n": "int64"}).batch(4096)
            for n in b["n"]]


def dataset_files(out):
    """The files dataset.json names, plus dataset.json."""
    m = json.loads((out / "dataset.json").read_text())
    files = {"dataset.json"}
    for s in m["shards"]:
        files |= {s["path"], s.get("index", s["path"])}
    files |= {v for k, v in m["metadata"].items() if k.endswith("_file")}
    return files


def stray_files(out):
    """Files in `out` that the published dataset does not use (the lock's one entry aside)."""
    present = {p.name for p in out.iterdir()}
    return {f for f in present - dataset_files(out) if not re.fullmatch(r"\.sluice-lock\.\d+", f)}


def assert_complete(out, expected, leftovers_allowed=True):
    r = run("verify", out)
    assert r.returncode == 0 and "no faults" in r.stdout, r.stdout + r.stderr
    assert f"{len(expected)} records" in r.stdout, r.stdout
    assert leftovers_allowed or "not part of the dataset" not in r.stderr, r.stderr
    assert numbers(out) == expected


def assert_absent(out):
    """No dataset: every reader refuses the directory instead of reading part of it."""
    assert not (out / "dataset.json").exists()
    if not out.exists():
        return
    r = run("verify", out)
    assert r.returncode == 1 and "no faults" not in r.stdout, r.stdout + r.stderr
    assert ("no dataset.json" in r.stderr or "no such" in r.stderr), r.stderr
    assert run("inspect", out).returncode == 1
    with pytest.raises((sluice.FailedPreconditionError, sluice.NotFoundError)):
        sluice.read(str(out))


def check_after_crash(out, convert, expected, outcomes, label):
    """The crash left nothing or everything; a rerun of `convert` (or a clean) leaves the
    complete dataset and nothing else."""
    if (out / "dataset.json").exists():
        outcomes["complete"] += 1
        assert_complete(out, expected)
        run("clean", out, check=0)  # at most the dead writer's lock is left
    else:
        outcomes["absent"] += 1
        assert_absent(out)
        run(*convert, check=0)
        assert_complete(out, expected, leftovers_allowed=False)
    assert stray_files(out) == set(), (label, stray_files(out))


def fault_counts(src, out):
    r = run(*convert_args(src, out), env={"SLUICE_FAULT_INJECTION": "count"}, check=0)
    counts = dict((k, int(v)) for k, v in
                  (item.split() for item in FAULT_COUNTS.search(r.stderr).group(1).split(", ")))
    return counts


def test_crash_at_every_publication_step_leaves_nothing_or_the_whole_dataset(tmp_path):
    lines = 400 * SCALE
    src = write_jsonl(tmp_path / "in.jsonl", lines)
    expected = list(range(lines))
    counts = fault_counts(src, tmp_path / "counted")
    assert counts["put"] >= 3 and counts["close"] >= 6, counts  # lock, manifest, release
    rng = random.Random(13)
    plan = [(op, k) for op in ("mkdir", "create", "close", "rename", "put", "delete")
            for k in range(1, counts[op] + 1)]
    plan += [("write", k) for k in sorted(rng.sample(range(1, counts["write"] + 1),
                                                     min(counts["write"], 8 * SCALE)))]
    outcomes = {"absent": 0, "complete": 0}
    points = {}  # operation -> crash points tried
    for i, (op, k) in enumerate(plan):
        out = tmp_path / f"out{i}"
        r = run(*convert_args(src, out), env={"SLUICE_FAULT_INJECTION": f"crash:{op}:{k}"})
        assert r.returncode == -signal.SIGKILL, (op, k, r.returncode, r.stderr)
        check_after_crash(out, convert_args(src, out), expected, outcomes, f"crash:{op}:{k}")
        points[op] = points.get(op, 0) + 1
    print(f"\ncrash points {len(plan)}, per operation {points} (of {counts}): dataset absent "
          f"{outcomes['absent']}, complete {outcomes['complete']}")
    # Every publishing operation was a crash point: each file moved to its name happens in
    # its close (no rename at the end: docs/manifest.md, "Commit point"), so the closes are
    # the renames of the "at every rename".
    for op in ("mkdir", "create", "close", "rename", "put", "delete"):
        assert points.get(op, 0) == counts[op], (op, points, counts)
    assert counts["rename"] == 0 and counts["close"] >= counts["create"] - 1, counts
    assert outcomes["absent"] > 0 and outcomes["complete"] > 0


def test_kill_9_at_random_moments_leaves_nothing_or_the_whole_dataset(tmp_path):
    lines = 40000 * SCALE
    src = write_jsonl(tmp_path / "in.jsonl", lines)
    expected = list(range(lines))
    start = time.monotonic()
    run("convert", "jsonl", src, tmp_path / "timed", "--shard-size", "256KB", check=0)
    seconds = time.monotonic() - start
    rng = random.Random(7)
    outcomes = {"absent": 0, "complete": 0}
    rounds = 12 * SCALE
    for i in range(rounds):
        out = tmp_path / f"out{i}"
        convert = ["convert", "jsonl", src, out, "--shard-size", "256KB"]
        proc = subprocess.Popen([SLUICE, *map(str, convert)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        # every fourth kill lands near the end, where the commit is
        time.sleep(rng.uniform(0.85, 1.05) * seconds if i % 4 == 3 else rng.uniform(0, seconds))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        assert proc.returncode != 0 or (out / "dataset.json").exists()
        check_after_crash(out, convert, expected, outcomes, f"kill -9 round {i}")
    print(f"\nkill -9 rounds {rounds} (uninterrupted run {seconds:.2f} s): dataset absent "
          f"{outcomes['absent']}, complete {outcomes['complete']}")
    assert outcomes["absent"] > 0


def test_concurrent_converts_into_one_directory_give_one_whole_dataset(tmp_path):
    """Four converts of different inputs at once: exactly one publishes; the others are
    refused with a message naming the writer (or the published dataset), never a mix."""
    sources = [write_jsonl(tmp_path / f"in{w}.jsonl", 3000 + 500 * w, start=100000 * w)
               for w in range(4)]
    for round_ in range(3):
        out = tmp_path / f"out{round_}"
        procs = [subprocess.Popen([SLUICE, *map(str, convert_args(s, out))],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for s in sources]
        errors = [p.communicate(timeout=120)[1] for p in procs]
        results = [(p.returncode, err) for p, err in zip(procs, errors)]
        winners = [w for w, (rc, _) in enumerate(results) if rc == 0]
        assert len(winners) == 1, results
        for rc, err in results:
            if rc != 0:
                assert rc == 1 and ("is being written by another writer" in err or
                                    "dataset.json exists" in err), err
        w = winners[0]
        assert_complete(out, list(range(100000 * w, 100000 * w + 3000 + 500 * w)))
        assert stray_files(out) == set()


def test_concurrent_overwrites_never_mix(tmp_path):
    out = tmp_path / "out"
    sources = [write_jsonl(tmp_path / f"in{w}.jsonl", 2000 + 300 * w, start=100000 * w)
               for w in range(3)]
    run(*convert_args(sources[0], out), check=0)
    procs = [subprocess.Popen([SLUICE, *map(str, convert_args(s, out, "--overwrite"))],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for s in sources]
    results = [(p, p.communicate(timeout=120)[1]) for p in procs]
    results = [(p.returncode, err) for p, err in results]
    assert any(rc == 0 for rc, _ in results), results
    for rc, err in results:
        assert rc == 0 or "is being written by another writer" in err, err
    got = numbers(out)
    w = got[0] // 100000
    assert got == list(range(100000 * w, 100000 * w + 2000 + 300 * w))
    assert stray_files(out) == set()


def test_unpublished_output_is_refused_by_every_reader(tmp_path):
    """Killed after writing every shard, just before publishing dataset.json: today's readers
    must not take the shards for a (smaller) dataset."""
    src = write_jsonl(tmp_path / "in.jsonl", 300)
    out = tmp_path / "out"
    counts = fault_counts(src, tmp_path / "counted")
    r = run(*convert_args(src, out), env={"SLUICE_FAULT_INJECTION": "crash:put:2"})
    assert r.returncode == -signal.SIGKILL
    assert any(p.name.endswith(".tfrecord.zst") for p in out.iterdir())
    r = run("verify", out, check=1)
    assert "no dataset.json: this directory holds the unpublished output of a writer" in r.stderr
    assert "which was interrupted" in r.stderr and f"sluice clean {out}" in r.stderr, r.stderr
    r = run("inspect", out, check=1)
    assert "unpublished output" in r.stderr
    with pytest.raises(sluice.FailedPreconditionError, match="unpublished output"):
        sluice.read(str(out))
    assert counts["put"] == 3


def test_rerun_after_a_crash_reclaims_and_never_mixes_old_and_new(tmp_path):
    old = write_jsonl(tmp_path / "old.jsonl", 400)
    new = write_jsonl(tmp_path / "new.jsonl", 250, start=5000)
    out = tmp_path / "out"
    r = run(*convert_args(old, out), env={"SLUICE_FAULT_INJECTION": "crash:close:5"})
    assert r.returncode == -signal.SIGKILL
    crashed = {p.name for p in out.iterdir() if not p.name.startswith(".sluice-lock")}
    assert crashed  # some shards of the crashed run
    r = run(*convert_args(new, out), check=0)
    assert "reclaimed" in r.stderr and "left by interrupted runs" in r.stderr, r.stderr
    assert numbers(out) == list(range(5000, 5250))
    assert not crashed & {p.name for p in out.iterdir()}
    assert stray_files(out) == set()


def test_verify_reports_leftovers_and_clean_removes_them(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", 300)
    out = tmp_path / "out"
    run(*convert_args(src, out), check=0)
    # an overwrite killed just after its commit: the replaced dataset's files are left
    # (delete 1 is the lock's superseded entry; delete 2 the first replaced file)
    r = run(*convert_args(src, out, "--overwrite"), env={"SLUICE_FAULT_INJECTION": "crash:delete:2"})
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert (out / "dataset.json").exists()
    r = run("verify", out, check=0)  # the dataset is whole: leftovers are warnings, not faults
    assert "no faults" in r.stdout
    assert "not part of the dataset" in r.stderr and f"sluice clean {out}" in r.stderr, r.stderr
    r = run("clean", out, "--dry-run", check=0)
    assert "would remove" in r.stdout
    assert stray_files(out) != set()
    r = run("clean", out, check=0)
    assert "the published dataset is untouched" in r.stdout
    assert stray_files(out) == set()
    assert_complete(out, list(range(300)), leftovers_allowed=False)


def test_crash_at_every_step_of_an_overwrite_leaves_the_old_or_the_new_dataset(tmp_path):
    """`convert --overwrite` of an existing dataset stopped before each publishing operation
    (and a sample of writes): the directory holds the complete old dataset or the complete
    new one (verify clean), never a mix; a rerun succeeds."""
    old_src = write_jsonl(tmp_path / "old.jsonl", 400)
    new_src = write_jsonl(tmp_path / "new.jsonl", 300, start=5000)
    old, new = list(range(400)), list(range(5000, 5300))
    base = tmp_path / "base"
    run(*convert_args(old_src, base), check=0)
    counted = tmp_path / "counted"
    shutil.copytree(base, counted)
    r = run(*convert_args(new_src, counted, "--overwrite"),
            env={"SLUICE_FAULT_INJECTION": "count"}, check=0)
    counts = dict((k, int(v)) for k, v in
                  (item.split() for item in FAULT_COUNTS.search(r.stderr).group(1).split(", ")))
    # dataset.json is replaced by a write closed into place (no rename operation); the
    # replaced dataset's files are deleted after the commit
    assert counts["rename"] == 0 and counts["delete"] >= 2, counts
    rng = random.Random(17)
    plan = [(op, k) for op in ("mkdir", "create", "close", "rename", "put", "delete")
            for k in range(1, counts[op] + 1)]
    plan += [("write", k) for k in sorted(rng.sample(range(1, counts["write"] + 1),
                                                     min(counts["write"], 6 * SCALE)))]
    outcomes = {"old": 0, "new": 0}
    for i, (op, k) in enumerate(plan):
        out = tmp_path / f"out{i}"
        shutil.copytree(base, out)
        r = run(*convert_args(new_src, out, "--overwrite"),
                env={"SLUICE_FAULT_INJECTION": f"crash:{op}:{k}"})
        assert r.returncode == -signal.SIGKILL, (op, k, r.returncode, r.stderr)
        v = run("verify", out)
        assert v.returncode == 0 and "no faults" in v.stdout, (op, k, v.stdout + v.stderr)
        got = numbers(out)
        assert got in (old, new), (op, k, got[:3], len(got))  # never a mix
        outcomes["old" if got == old else "new"] += 1
        run(*convert_args(new_src, out, "--overwrite"), check=0)
        assert numbers(out) == new and stray_files(out) == set(), (op, k, stray_files(out))
    print(f"\noverwrite crash points {len(plan)} (operations {counts}): old dataset "
          f"{outcomes['old']}, new dataset {outcomes['new']}, mixed 0")
    assert outcomes["old"] > 0 and outcomes["new"] > 0


def test_overwrite_replaces_the_dataset_and_its_files(tmp_path):
    out = tmp_path / "out"
    run(*convert_args(write_jsonl(tmp_path / "a.jsonl", 500), out), check=0)
    first = dataset_files(out)
    run(*convert_args(write_jsonl(tmp_path / "b.jsonl", 120, start=900), out, "--overwrite"),
        check=0)
    assert numbers(out) == list(range(900, 1020))
    assert not (first - {"dataset.json"}) & {p.name for p in out.iterdir()}
    assert stray_files(out) == set()


def test_manifest_path_leaving_the_dataset_is_refused(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", 50)
    out = tmp_path / "out"
    run(*convert_args(src, out), check=0)
    other = tmp_path / "other"
    run(*convert_args(write_jsonl(tmp_path / "o.jsonl", 20, start=777), other), check=0)
    m = json.loads((out / "dataset.json").read_text())
    victim = json.loads((other / "dataset.json").read_text())["shards"][0]
    m["shards"] = [dict(victim, path="../other/" + victim["path"], index="../other/" +
                        victim["index"])]
    m["total_records"] = victim["records"]
    (out / "dataset.json").write_text(json.dumps(m))
    expected = (f"{out}/dataset.json: shards[0].path: a '..' component leaves the dataset "
                f"directory ('../other/{victim['path']}')")
    for command in ("inspect", "verify"):
        r = run(command, out, check=1)
        assert expected in r.stderr, r.stderr
    with pytest.raises(sluice.DataLossError, match=re.escape(expected)):
        sluice.read(str(out))
    # a symbolic link pointing out is refused the same way
    m["shards"][0]["path"] = "link.tfrecord.zst"
    del m["shards"][0]["index"]
    (out / "dataset.json").write_text(json.dumps(m))
    os.symlink(other / victim["path"], out / "link.tfrecord.zst")
    r = run("inspect", out, check=1)
    assert "outside the dataset directory" in r.stderr, r.stderr


def test_manifest_disagreeing_with_a_shard_fails_inspect_and_read(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", 600)
    out = tmp_path / "out"
    run(*convert_args(src, out), check=0)
    m = json.loads((out / "dataset.json").read_text())
    shard = m["shards"][1]
    data = (out / shard["path"]).read_bytes()
    (out / shard["path"]).write_bytes(data[:len(data) - 100])  # truncated after publication
    r = run("inspect", out, check=1)
    assert (f"shards[1] {shard['path']}: the manifest says {shard['file_bytes']} bytes, the "
            f"shard file has {len(data) - 100}") in r.stderr, r.stderr
    with pytest.raises(sluice.DataLossError):
        sluice.read(str(out), on_error="raise")
    with pytest.raises(sluice.DataLossError):  # without a read policy: at the iterator's start
        sluice.read(str(out)).iterator()
    (out / shard["path"]).write_bytes(data)
    m["shards"][1]["records"] += 1  # a count edited by hand
    m["total_records"] += 1
    (out / "dataset.json").write_text(json.dumps(m))
    r = run("inspect", out, check=1)
    assert f"the manifest says {shard['records']} records, the shard holds" in r.stderr, r.stderr
    with pytest.raises(sluice.DataLossError, match="the manifest says"):
        sluice.read(str(out), on_error="raise")
    with pytest.raises(sluice.DataLossError, match="the manifest says"):
        sluice.read(str(out)).iterator()
    assert len(list(sluice.read(str(out)).iterator(on_error="skip"))) == m["total_records"] - 1


def test_bad_fault_injection_plan_is_an_error():
    r = run("inspect", "/nowhere", env={"SLUICE_FAULT_INJECTION": "explode:any:1"}, check=1)
    assert "SLUICE_FAULT_INJECTION" in r.stderr


def hold_lock(out, pid, host=None):
    """Writes the lock entry a writer (pid on host) holding OUT would have written."""
    out.mkdir(exist_ok=True)
    (out / ".sluice-lock.1").write_text(json.dumps({
        "run": "0123456789ab", "pid": pid, "host": host or socket.gethostname(),
        "pid_start_ticks": 0, "started": "2026-01-01T00:00:00Z", "command": "a test"}))


def test_second_writer_is_refused_before_writing_anything(tmp_path):
    """OUT held by a live writer (this very process): convert (shards or token cache) and
    clean are refused naming it, and write nothing."""
    src = write_jsonl(tmp_path / "in.jsonl", 50)
    out = tmp_path / "out"
    hold_lock(out, os.getpid())
    model = os.path.join(os.path.dirname(__file__), "..", "data", "text",
                         "kernel_docs_unigram400.model")
    for args in (convert_args(src, out), convert_args(src, out, "--overwrite"),
                 ["convert", "text", src, out, "--tokenizer", model, "--token-cache"],
                 ["clean", out]):
        r = run(*args, check=1)
        assert (f"{out} is being written by another writer: run 0123456789ab (a test), pid "
                f"{os.getpid()} on host {socket.gethostname()}") in r.stderr, r.stderr
        assert "wait for it to finish" in r.stderr
        assert sorted(p.name for p in out.iterdir()) == [".sluice-lock.1"]
    r = run("verify", out, check=1)
    assert "which may still be running" in r.stderr, r.stderr


def test_lock_of_a_dead_writer_is_taken_over(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", 50)
    out = tmp_path / "out"
    gone = subprocess.Popen(["true"])
    gone.wait()
    hold_lock(out, gone.pid)
    run(*convert_args(src, out), check=0)
    assert_complete(out, list(range(50)), leftovers_allowed=False)
    hold_lock(tmp_path / "foreign", gone.pid, host="another-host")
    r = run(*convert_args(src, tmp_path / "foreign"), check=1)
    assert f"sluice clean --break-lock {tmp_path / 'foreign'}" in r.stderr, r.stderr
    run("clean", tmp_path / "foreign", "--break-lock", check=0)
    run(*convert_args(src, tmp_path / "foreign"), check=0)


def test_fault_injection_wraps_the_file_system_each_path_names(s3_server, tmp_path):
    """Under SLUICE_FAULT_INJECTION a local input and an s3:// output each go through their own
    file system: the dataset lands in the bucket, nothing under a local "s3:" directory."""
    src = write_jsonl(tmp_path / "in.jsonl", 200)
    bucket = s3_server.bucket("faultwrap")
    env = dict(s3_server.environ(), SLUICE_FAULT_INJECTION="count")
    r = subprocess.run([SLUICE, *convert_args(src, f"s3://{bucket}/ds")], capture_output=True,
                       text=True, timeout=300, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "s3:").exists()
    keys = [o["Key"] for o in
            s3_server.client().list_objects_v2(Bucket=bucket, Prefix="ds/").get("Contents", [])]
    assert "ds/dataset.json" in keys
    assert len(FAULT_COUNTS.findall(r.stderr)) == 2  # one line per file system
