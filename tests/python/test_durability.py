"""Durability before the commit point (docs/durability.md).

`sluice convert jsonl` and a table writer run under strace, and the trace of their sync,
rename, link and mkdir calls must show, for every data and index file, its data synced before
its rename into place and its directory synced after that rename, all before the commit
record (dataset.json, a table commit) is linked into place; the commit's own data synced
before its link and its directory after. SLUICE_SYNC=0 (the opt-out for scratch data) makes
the same runs sync nothing.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD

SLUICE = str(BUILD / "bin" / "sluice")
TRACED = "fsync,fdatasync,rename,renameat,renameat2,link,linkat,mkdir,mkdirat"
CALL = re.compile(r"^(\w+)\((.*)\)\s+= (-?\d+)")
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
FD_PATH = re.compile(r"^\d+<(.*?)>")
CALL_NAMES = {"renameat": "rename", "renameat2": "rename", "linkat": "link", "mkdirat": "mkdir"}
PYTHON_ENV = {"PYTHONPATH": str(BUILD / "python")}

pytestmark = pytest.mark.skipif(shutil.which("strace") is None,
                                reason="strace is not installed (scripts/install-deps)")


def traced(cmd, tmp_path, env=None):
    """Runs `cmd` under strace -f; returns its successful calls in order of completion, as
    dicts {call, paths, start, end} (start/end: line numbers where the call began/returned)."""
    out = tmp_path / "strace.txt"
    r = subprocess.run(["strace", "-f", "-y", "-qq", "-e", f"trace={TRACED}", "-o", str(out),
                        *cmd], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stdout + r.stderr
    pending, calls = {}, []
    for n, line in enumerate(out.read_text().splitlines()):
        pid, _, text = line.partition(" ")
        text = text.strip()
        if text.endswith("<unfinished ...>"):
            pending[pid] = (n, text[:-len("<unfinished ...>")].rstrip())
            continue
        start = n
        if text.startswith("<..."):
            start, head = pending.pop(pid)
            text = head + text[text.index("resumed>") + len("resumed>"):]
        m = CALL.match(text)
        if m is None or m.group(3) != "0":
            continue
        name, args = m.group(1), m.group(2)
        if name in ("fsync", "fdatasync"):
            paths = [FD_PATH.match(args).group(1)]
        else:
            paths = QUOTED.findall(args)
        calls.append({"call": CALL_NAMES.get(name, name), "paths": paths,
                      "start": start, "end": n})
    return calls


def check_synced_before_commits(calls, is_commit):
    """Every file renamed into place, and every directory made, before a commit (a link to a
    name `is_commit` accepts) is durable before that commit starts; the commit too, after.
    Returns the files renamed into place and the commits."""
    syncs = [c for c in calls if c["call"] in ("fsync", "fdatasync")]

    def synced(path, after, before):
        return any(s["paths"][0] == path and s["start"] > after and s["end"] < before
                   for s in syncs)

    commits = [c for c in calls if c["call"] == "link" and is_commit(c["paths"][1])]
    assert commits, "no commit was linked into place"
    finalized = []
    for c in calls:
        if c["call"] == "rename" and ".tmp-" in c["paths"][0]:
            finalized.append(c)
    for commit in commits:
        tmp, final = commit["paths"]
        assert synced(tmp, -1, commit["start"]), f"{final}: its data was not synced before link"
        assert synced(os.path.dirname(final), commit["end"], 1 << 60), \
            f"{final}: its directory was not synced after the link"
        for r in (r for r in finalized if r["end"] < commit["start"]):
            tmp, final = r["paths"]
            assert synced(tmp, -1, r["start"]), f"{final}: not synced before its rename"
            assert synced(os.path.dirname(final), r["end"], commit["start"]), \
                f"{final}: its directory not synced between its rename and commit {commit}"
        for d in (c for c in calls if c["call"] == "mkdir" and c["end"] < commit["start"]):
            path = d["paths"][0]
            assert synced(os.path.dirname(path), d["end"], commit["start"]), \
                f"{path}: its parent not synced between its mkdir and commit {commit}"
    return [r["paths"][1] for r in finalized], commits


def write_jsonl(path, lines):
    path.write_text("".join(json.dumps({"text": "line %d " % i + "x" * (50 + i % 97), "n": i}) +
                            "\n" for i in range(lines)))
    return path


def test_convert_syncs_every_shard_and_index_before_dataset_json(tmp_path):
    tmp_path = tmp_path.resolve()  # strace names synced descriptors by their resolved paths
    src, out = write_jsonl(tmp_path / "in.jsonl", 3000), tmp_path / "out"
    calls = traced([SLUICE, "convert", "jsonl", str(src), str(out), "--shard-size", "16KB"],
                   tmp_path)
    finalized, commits = check_synced_before_commits(
        calls, lambda p: os.path.basename(p) == "dataset.json")
    assert len(commits) == 1
    manifest = json.loads((out / "dataset.json").read_text())
    named = {s["path"] for s in manifest["shards"]} | {s["index"] for s in manifest["shards"]}
    assert len(manifest["shards"]) > 3
    assert named <= {os.path.basename(p) for p in finalized}, "a shard was not renamed in place"


TABLE_WRITER = """
import sys, sluice
for version, source in enumerate(["a", "b"]):
    sluice.write_table(sys.argv[1], [b"record %d %s" % (i, source.encode()) for i in range(300)],
                       partition={"source": source})
"""


def test_table_commits_follow_the_sync_of_their_files(tmp_path):
    tmp_path = tmp_path.resolve()
    table = tmp_path / "t"
    calls = traced([sys.executable, "-c", TABLE_WRITER, str(table)], tmp_path, PYTHON_ENV)
    commit_name = re.compile(r"/_delta_log/\d{20}\.json$")
    finalized, commits = check_synced_before_commits(calls, lambda p: bool(commit_name.search(p)))
    assert len(commits) == 2
    data = [p for p in finalized if "/source=" in p]
    assert any("/source=a/" in p for p in data) and any("/source=b/" in p for p in data)
    # The second version's files were finalized after the first commit, before the second.
    assert any(commits[0]["end"] < c["start"] < commits[1]["start"] for c in calls
               if c["call"] == "rename" and "/source=b/" in c["paths"][1])


def test_sluice_sync_0_syncs_nothing(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", 500)
    calls = traced([SLUICE, "convert", "jsonl", str(src), str(tmp_path / "out")], tmp_path,
                   env={"SLUICE_SYNC": "0"})
    calls += traced([sys.executable, "-c", TABLE_WRITER, str(tmp_path / "t")], tmp_path,
                    env={"SLUICE_SYNC": "0", **PYTHON_ENV})
    assert [c for c in calls if c["call"] in ("fsync", "fdatasync")] == []
    assert any(c["call"] == "link" and c["paths"][1].endswith("dataset.json") for c in calls)
