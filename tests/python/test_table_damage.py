"""Tables under the operator commands and damaged logs (issue 35): `sluice verify` checks a
table's versions instead of calling its files leftovers, `sluice clean` refuses a table, and a
commit of deeply nested JSON or an empty commit file is an error, never a crash.
"""
import os
import subprocess
import sys

import pytest

import sluice

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
SLUICE = os.path.join(BUILD, "bin", "sluice")


def cli(*args):
    return subprocess.run([SLUICE, *map(str, args)], capture_output=True, text=True, timeout=300)


def records(first, n):
    return [str(i).encode() for i in range(first, first + n)]


def files_under(path):
    return sorted(os.path.relpath(os.path.join(d, f), path)
                  for d, _, names in os.walk(path) for f in names)


@pytest.fixture
def many_versions(tmp_path):
    """A table of 40 versions whose shards (named by the writers' runs, as a crashed convert's
    leftovers are) sit in its root: appends, a restore and an optimize, so that files of older
    versions stay on disk unreferenced by the latest."""
    path = tmp_path / "t"
    for i in range(36):
        sluice.write_table(path, records(10 * i, 10))
    t = sluice.Table(path)
    t.restore(20)
    sluice.write_table(path, records(1000, 10))
    t.update()
    t.optimize()
    sluice.write_table(path, records(2000, 10))
    assert sluice.Table(path).version() == 39
    return path


def test_verify_checks_a_healthy_table_and_recommends_no_clean(many_versions):
    r = cli("verify", many_versions)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verified table" in r.stdout and "version 39" in r.stdout and "no faults" in r.stdout
    assert "clean" not in r.stdout + r.stderr and "never published" not in r.stderr
    r = cli("verify", many_versions, "--version", 5)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "version 5: 6 shard(s), 60 records: no faults" in r.stdout


def test_verify_names_a_damaged_file_of_the_version(many_versions):
    t = sluice.Table(many_versions, version=3)
    victim = os.path.join(many_versions, t.files()[0])
    with open(victim, "r+b") as f:
        f.truncate(os.path.getsize(victim) - 5)
    r = cli("verify", many_versions, "--version", 3)
    assert r.returncode == 1, r.stdout + r.stderr
    assert t.files()[0] in r.stdout and "version 3 of the table says" in r.stdout
    assert "--version applies to tables only" in cli("verify", victim, "--version", 3).stderr


def test_clean_refuses_a_table_and_removes_nothing(many_versions, tmp_path):
    partitioned = tmp_path / "p"
    sluice.write_table(partitioned, records(0, 10), partition={"source": "a"})
    for table, target in ((many_versions, many_versions), (partitioned, partitioned / "source=a")):
        before = files_under(table)
        for args in (("clean", target), ("clean", "--dry-run", target)):
            r = cli(*args)
            assert r.returncode == 1, r.stdout + r.stderr
            assert f"sluice table vacuum {table}" in r.stderr and "would remove" not in r.stdout
            assert files_under(table) == before
    assert cli("verify", many_versions).returncode == 0


NESTED = 70000


def nest_commit_info(path, version):
    line = ('{"commitInfo":{"operation":"WRITE","nested":' + "[" * NESTED + "]" * NESTED + "}}\n")
    commit = path / "_delta_log" / f"{version:020d}.json"
    commit.write_text(line)
    return commit


def test_deeply_nested_commit_info_is_an_error_in_the_cli(tmp_path):
    path = tmp_path / "t"
    sluice.write_table(path, records(0, 10))
    commit = nest_commit_info(path, 1)
    for args in (("table", "history", path), ("inspect", path)):
        r = cli(*args)
        assert r.returncode == 1, f"{args}: exit {r.returncode}\n{r.stderr}"  # not a signal
        assert "nested more than" in r.stderr and commit.name in r.stderr, r.stderr
        assert "(version 1)" in r.stderr


def test_deeply_nested_commit_info_is_an_error_in_python(tmp_path):
    path = tmp_path / "t"
    sluice.write_table(path, records(0, 10))
    nest_commit_info(path, 1)
    # In a child process: the crash this guards against kills the interpreter.
    script = f"""
import sluice
for open_it in (lambda: sluice.Table({str(path)!r}), lambda: list(sluice.read({str(path)!r}))):
    try:
        open_it()
    except sluice.DataLossError as e:
        assert "nested more than" in str(e) and "(version 1)" in str(e), str(e)
    else:
        raise SystemExit("no error")
assert sluice.Table({str(path)!r}, version=0).num_records() == 10
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", f"exit {r.returncode}\n{r.stderr}"


@pytest.mark.parametrize("text", ["", "\n \n"])
def test_empty_commit_file_is_data_loss_naming_its_version(tmp_path, text):
    path = tmp_path / "t"
    sluice.write_table(path, records(0, 10))
    sluice.write_table(path, records(10, 10))
    (path / "_delta_log" / f"{1:020d}.json").write_text(text)
    with pytest.raises(sluice.DataLossError, match=r"00000000000000000001\.json \(version 1\)"):
        sluice.read(path)
    assert sluice.Table(path, version=0).num_records() == 10
