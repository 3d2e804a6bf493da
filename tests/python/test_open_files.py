"""A local dataset of more shards than half the common descriptor limit reads under
`ulimit -n 1024` (soft and hard): the local file system bounds the descriptors its open files
keep (io::LocalFileSystemOptions::max_open_files) instead of two per shard for the dataset's
whole life."""
import json
import subprocess
import sys

from conftest import BUILD

SLUICE = str(BUILD / "bin" / "sluice")
SHARDS = 600
RECORDS_PER_SHARD = 3

READ_EVERY_RECORD = """
import collections, sys, sluice
seen = collections.Counter()
for batch in sluice.read(sys.argv[1]).parse_example({"n": "int64"}).batch(64):
    seen.update(int(n) for n in batch["n"])
print(len(seen), sum(seen.values()))
"""


def under_low_limit(cmd):
    """`cmd` (a list) run with soft and hard RLIMIT_NOFILE at 1024."""
    script = "ulimit -n 1024 && ulimit -Hn 1024 && exec \"$@\""
    return subprocess.run(["bash", "-c", script, "bash", *map(str, cmd)], capture_output=True,
                          text=True, timeout=600, env={"PYTHONPATH": str(BUILD / "python"),
                                                       "PATH": "/usr/bin:/bin"})


def test_dataset_of_600_shards_reads_every_record_under_ulimit_1024(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out"
    n = SHARDS * RECORDS_PER_SHARD
    src.write_text("".join(json.dumps({"n": i, "text": "x" * 100}) + "\n" for i in range(n)))
    r = subprocess.run([SLUICE, "convert", "jsonl", str(src), str(out), "--shard-size", "300B"],
                       capture_output=True, text=True, timeout=300, env={"SLUICE_SYNC": "0"})
    assert r.returncode == 0, r.stderr
    assert len(json.loads((out / "dataset.json").read_text())["shards"]) == SHARDS

    r = under_low_limit([sys.executable, "-c", READ_EVERY_RECORD, out])
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == [str(n), str(n)]  # every record once
    r = under_low_limit([SLUICE, "verify", out])
    assert r.returncode == 0 and "no faults" in r.stdout, r.stdout + r.stderr
