"""Faults of distributed jobs with the real launchers (docs/dist.md, "Publication and faults"):
a rank killed mid-job leaves nothing published and a rerun of the same command reuses the
map tasks already finished (dedup, reshard); a changed input or option reuses nothing; a
slowed task gets a speculative copy and the output holds each record once (convert); rank 0's
progress line. Under mpirun (4 ranks, oversubscribed) and srun on the single-node Slurm
cluster of test_dist.py."""
import json
import os
import re
import shutil
import signal
import subprocess
import time

from test_cli import SLUICE
from test_dist import (ENV, MPIRUN, assert_same_dataset, convert_jsonl, corpus,  # noqa: F401
                       ids, jsonl_files, multiset, ranks_of, records_in_order, run, slurm,
                       srun, task_records, wait_gone)

SLOW_TASK_1 = dict(ENV, SLUICE_FAULT_SLOW_TASK="1:120")  # task 1 hangs; the others finish


def reused(stdout):
    return int(re.search(r"reused:\s+(\d+) task\(s\) of an interrupted run", stdout).group(1))


def ranks_by_command_line(marker):
    """The `sluice` processes whose command line holds `marker` (srun's ranks are children
    of slurmstepd, not of srun)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            comm = open(f"/proc/{pid}/comm").read().strip()
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
        except OSError:
            continue
        if comm == "sluice" and marker in cmdline:
            found.append(int(pid))
    return found


def wait_for_ranks(find, n=4):
    for _ in range(600):
        ranks = find()
        if len(ranks) == n:
            return ranks
        time.sleep(0.05)
    raise AssertionError(f"{n} ranks did not start")


def kill_a_rank_once_tasks_are_recorded(cmd, out, env, find_ranks):
    """Starts `cmd`, kills its last rank once >= 4 map tasks are recorded in OUT's job
    directory; checks that the job failed and published nothing."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ranks = wait_for_ranks(lambda: find_ranks(p))
    for _ in range(1200):
        if len(task_records(out)) >= 4 or p.poll() is not None:
            break
        time.sleep(0.05)
    assert len(task_records(out)) >= 4, p.communicate()
    os.kill(ranks[-1], signal.SIGKILL)
    p.communicate(timeout=60)
    wait_gone(ranks)
    assert p.returncode != 0
    assert not (out / "dataset.json").exists()
    assert len(task_records(out)) >= 4  # kept for the rerun


def dedup(src, out, *flags):
    return [SLUICE, "dedup", src, out, "--codec", "none", *flags]


def test_a_killed_dedup_publishes_nothing_and_a_rerun_reuses_its_finished_map_tasks(corpus,
                                                                                   tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    shutil.copytree(corpus / "ds", src)
    kill_a_rank_once_tasks_are_recorded(
        MPIRUN + dedup(src, out, "--feature", "text", "--no-speculation"), out, SLOW_TASK_1,
        ranks_of)
    changed = tmp_path / "changed"
    shutil.copytree(out, changed)  # the same interrupted job, for the changed input below

    r = run(MPIRUN + dedup(src, out, "--feature", "text"))
    assert reused(r.stdout) >= 4
    assert "records out: 250" in r.stdout
    assert ids(out) == list(range(250))  # known answer: the first of each text
    assert not (out / ".sluice-job").exists()

    # The input changes (other shards, other records): the kept map outputs are stale.
    lines = tmp_path / "other.jsonl"
    lines.write_text("".join(json.dumps({"text": f"t {i % 40}", "id": i}) + "\n"
                             for i in range(300)))
    run([SLUICE, "convert", "jsonl", lines, src, "--overwrite", "--shard-size", "2KB",
         "--codec", "none"])
    r = run(MPIRUN + dedup(src, changed, "--feature", "text"))
    assert reused(r.stdout) == 0
    assert ids(changed) == list(range(40))


def test_a_killed_reshard_publishes_nothing_and_a_rerun_reuses_its_finished_map_tasks(corpus,
                                                                                     tmp_path):
    def cmd(out, seed, *flags):
        return [SLUICE, "reshard", corpus / "ds", out, "--shard-size", "5KB", "--seed", str(seed),
                *flags]

    out = tmp_path / "out"
    kill_a_rank_once_tasks_are_recorded(MPIRUN + cmd(out, 7, "--no-speculation"), out,
                                        SLOW_TASK_1, ranks_of)
    changed = tmp_path / "changed"
    shutil.copytree(out, changed)

    r = run(MPIRUN + cmd(out, 7))
    assert reused(r.stdout) >= 4
    assert "records: 600" in r.stdout
    run(cmd(tmp_path / "one", 7))
    in_order = records_in_order(out)
    assert in_order == records_in_order(tmp_path / "one")  # a function of input and seed only
    assert sorted(in_order) == list(range(600))
    assert multiset(out) == multiset(corpus / "ds")
    assert not (out / ".sluice-job").exists()

    # Another seed is another job: nothing of the interrupted one is reused.
    r = run(MPIRUN + cmd(changed, 8))
    assert reused(r.stdout) == 0
    run(cmd(tmp_path / "one8", 8))
    assert records_in_order(changed) == records_in_order(tmp_path / "one8")


PROGRESS = re.compile(r"^(?P<label>[a-z ]+): tasks (?P<done>\d+)/(?P<total>\d+), "
                      r"(?P<rate>[\d.]+[kM]?) records/s, ETA (?P<eta>-|\d+ s), "
                      r"(?P<stragglers>\d+) straggler\(s\), "
                      r"(?P<copies>\d+) speculative cop(?:y|ies)$")


def speculative_copies(stdout):
    return int(re.search(r"(\d+) speculative cop(?:y|ies)", stdout).group(1))


def check_progress_lines(stderr, label, copies):
    """Rank 0's progress lines (not a terminal: one at the start, every 5 s, one at the end)."""
    lines = [m for m in map(PROGRESS.match, stderr.splitlines()) if m]
    assert lines, stderr
    assert {m["label"] for m in lines} == {label}
    last = lines[-1]
    assert last["done"] == last["total"] and int(last["total"]) > 4
    assert last["eta"] == "-"
    assert float(re.sub("[kM]", "", last["rate"])) > 0
    assert int(last["copies"]) == copies >= 1
    for m in lines[:-1]:
        assert int(m["done"]) < int(m["total"]) == int(last["total"])
        assert (m["eta"] == "-") == (m["done"] == "0")  # an estimate once a task is done


def test_a_slowed_convert_task_gets_a_speculative_copy_and_keeps_each_record_once(jsonl_files,
                                                                                  tmp_path):
    env = dict(ENV, SLUICE_FAULT_SLOW_TASK="2:120")  # cancelled when the copy wins
    r = run(MPIRUN + convert_jsonl(jsonl_files, tmp_path / "four"), env=env)
    copies = speculative_copies(r.stdout)
    assert copies >= 1
    check_progress_lines(r.stderr, "sluice convert jsonl", copies)
    run(convert_jsonl(jsonl_files, tmp_path / "one"))
    assert_same_dataset(tmp_path / "one", tmp_path / "four")
    # The losing attempt's shards are gone: every data file is listed.
    listed = {s["path"] for s in json.load(open(tmp_path / "four" / "dataset.json"))["shards"]}
    data = {n for n in os.listdir(tmp_path / "four") if ".tfrecord" in n and ".idx" not in n}
    assert data == listed


def test_keyed_job_flags_are_refused_by_convert_with_the_commands_they_apply_to(jsonl_files,
                                                                               tmp_path):
    for flag in (["--memory-budget", "1MiB"], ["--spill-dir", "/tmp"], ["--no-combine"],
                 ["--no-salt"]):
        r = run(convert_jsonl(jsonl_files, tmp_path / "out") + flag, check=2)
        assert flag[0] in r.stderr and "stats, dedup and reshard" in r.stderr
        assert not (tmp_path / "out").exists()


# --- the same under Slurm -----------------------------------------------------------------

def test_srun_a_killed_dedup_publishes_nothing_and_a_rerun_reuses_finished_tasks(corpus, slurm,
                                                                                 tmp_path):
    out = tmp_path / "out"
    kill_a_rank_once_tasks_are_recorded(
        srun(*dedup(corpus / "ds", out, "--feature", "text", "--no-speculation")), out,
        dict(slurm, SLUICE_FAULT_SLOW_TASK="1:120"), lambda p: ranks_by_command_line(str(out)))
    r = run(srun(*dedup(corpus / "ds", out, "--feature", "text")), env=slurm)
    assert reused(r.stdout) >= 4
    assert "records out: 250" in r.stdout
    assert ids(out) == list(range(250))


def test_srun_a_slowed_task_gets_a_speculative_copy_and_keeps_each_record_once(jsonl_files,
                                                                               slurm, tmp_path):
    env = dict(slurm, SLUICE_FAULT_SLOW_TASK="2:120")
    r = run(srun(*convert_jsonl(jsonl_files, tmp_path / "four")), env=env)
    assert speculative_copies(r.stdout) >= 1
    run(convert_jsonl(jsonl_files, tmp_path / "one"))
    assert_same_dataset(tmp_path / "one", tmp_path / "four")
