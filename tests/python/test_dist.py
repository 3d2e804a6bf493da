"""Distributed jobs with the real launchers: OpenMPI's mpirun (4 ranks on 2 cores,
oversubscribed) and Slurm's srun on a single-node cluster this module starts itself
(scripts/slurm-cluster), against the same job in one process (docs/dist.md)."""
import collections
import json
import os
import signal
import subprocess
import time

import pytest

from test_cli import BUILD, ROOT, SLUICE, image_folder, inspect_json, sluice  # noqa: F401

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4"]
ENV = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1")


def run(cmd, env=None, timeout=120, check=0):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or ENV)
    if check is not None:
        assert r.returncode == check, f"{cmd}\nexit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A dataset of 600 records in ~12 shards: ids 0..599, text "doc i % 250" (so ids 250..599
    repeat earlier texts), label i % 7, lang from a skewed list."""
    d = tmp_path_factory.mktemp("corpus")
    langs = ["en"] * 6 + ["de", "fr", "fr", "ja"]
    with open(d / "in.jsonl", "w") as f:
        for i in range(600):
            f.write(json.dumps({"text": f"doc {i % 250}", "id": i, "label": i % 7,
                                "lang": langs[i % len(langs)]}) + "\n")
    sluice("convert", "jsonl", d / "in.jsonl", d / "ds", "--shard-size", "2KB", "--codec", "none",
           check=0)
    assert len([p for p in os.listdir(d / "ds") if p.endswith(".tfrecord")]) >= 8
    return d


def ids(path):
    return sorted(r["id"]["int64"][0] for r in inspect_json(path))


def stats_json(cmd):
    return json.loads(run(cmd).stdout)


def test_stats_in_one_process_counts_each_value(corpus):
    out = stats_json([SLUICE, "stats", corpus / "ds", "--key", "label", "--json"])
    assert out["records"] == 600
    assert out["counts"] == {str(k): len(range(k, 600, 7)) for k in range(7)}
    assert out["ranks"] == 1


def test_stats_under_mpirun_equals_one_process(corpus):
    one = stats_json([SLUICE, "stats", corpus / "ds", "--key", "lang", "--json"])
    four = stats_json(MPIRUN + [SLUICE, "stats", corpus / "ds", "--key", "lang", "--json"])
    assert four["counts"] == one["counts"] == {"en": 360, "de": 60, "fr": 120, "ja": 60}
    assert four["ranks"] == 4
    assert len(four["final_aggregation"]["entries_per_rank"]) == 4


def test_stats_of_a_missing_feature_counts_missing(corpus):
    out = stats_json(MPIRUN + [SLUICE, "stats", corpus / "ds", "--key", "nope", "--json"])
    assert out["missing"] == 600 and out["counts"] == {}


def test_dedup_keeps_the_first_occurrence_of_each_text(corpus, tmp_path):
    r = run(MPIRUN + [SLUICE, "dedup", corpus / "ds", tmp_path / "out", "--feature", "text",
                      "--codec", "none"])
    assert "records out: 250" in r.stdout
    assert ids(tmp_path / "out") == list(range(250))  # known answer: the first of each text


def test_dedup_of_whole_records_in_one_process_removes_nothing_here(corpus, tmp_path):
    run([SLUICE, "dedup", corpus / "ds", tmp_path / "out"])  # ids differ: no two records equal
    assert ids(tmp_path / "out") == list(range(600))


def test_dedup_refuses_to_overwrite_a_published_dataset(corpus, tmp_path):
    run(MPIRUN + [SLUICE, "dedup", corpus / "ds", tmp_path / "out", "--feature", "text"])
    r = run(MPIRUN + [SLUICE, "dedup", corpus / "ds", tmp_path / "out", "--feature", "text"],
            check=1)
    assert "exists" in r.stderr


def test_a_slowed_task_gets_a_speculative_copy_and_counts_stay_exact(corpus):
    env = dict(ENV, SLUICE_FAULT_SLOW_TASK="2:120")  # cancelled when the copy wins
    start = time.monotonic()
    r = run(MPIRUN + [SLUICE, "stats", corpus / "ds", "--key", "label", "--json"], env=env)
    assert time.monotonic() - start < 100
    out = json.loads(r.stdout)
    assert out["speculative_copies"] >= 1
    assert out["counts"] == {str(k): len(range(k, 600, 7)) for k in range(7)}


def test_dedup_with_overwrite_replaces_its_earlier_output(corpus, tmp_path):
    run([SLUICE, "dedup", corpus / "ds", tmp_path / "out"])
    run([SLUICE, "dedup", corpus / "ds", tmp_path / "out", "--feature", "text", "--overwrite"])
    assert ids(tmp_path / "out") == list(range(250))


def test_keyed_jobs_read_a_table_version_and_write_into_a_table(corpus, tmp_path):
    """IN may be a table (its live files at a version), OUT a table (one commit)."""
    from delta_reader import read_snapshot
    table = tmp_path / "in"
    run([SLUICE, "convert", "jsonl", corpus / "in.jsonl", table, "--table", "--shard-size", "2KB",
         "--codec", "none"])  # version 0
    run([SLUICE, "reshard", f"{table}@v0", table, "--table", "--mode", "overwrite", "--seed", "3",
         "--shard-size", "5KB"])  # version 1: the same records, other shards
    four = stats_json(MPIRUN + [SLUICE, "stats", f"{table}@v0", "--key", "lang", "--json"])
    latest = stats_json([SLUICE, "stats", table, "--key", "lang", "--json"])
    assert four["counts"] == latest["counts"] == {"en": 360, "de": 60, "fr": 120, "ja": 60}
    out = tmp_path / "deduped"
    run(MPIRUN + [SLUICE, "dedup", table, out, "--feature", "text", "--table"])
    run([SLUICE, "dedup", f"{table}@v0", out, "--feature", "text", "--table"])
    snap = read_snapshot(str(out))
    assert snap.version == 1 and snap.num_records() == 2 * 250
    assert json.loads(snap.metadata["schemaString"])["fields"]  # the input's features
    run([SLUICE, "dedup", f"{table}@v0", out, "--feature", "text", "--table", "--mode",
         "overwrite"])
    assert read_snapshot(str(out)).num_records() == 250
    # version 0 is in input order: the first of each text is ids 0..249 (the known answer)
    assert sorted(r["id"]["int64"][0] for r in inspect_json(out)) == list(range(250))


def records_in_order(path):
    return [r["id"]["int64"][0] for r in inspect_json(path)]


def test_reshard_is_the_same_for_one_and_four_ranks_and_keeps_every_record(corpus, tmp_path):
    run([SLUICE, "reshard", corpus / "ds", tmp_path / "one", "--shard-size", "5KB", "--seed", "7"])
    r = run(MPIRUN + [SLUICE, "reshard", corpus / "ds", tmp_path / "four", "--shard-size", "5KB",
                      "--seed", "7"])
    assert "records: 600" in r.stdout
    one, four = records_in_order(tmp_path / "one"), records_in_order(tmp_path / "four")
    assert one == four  # a function of the input and the seed only
    assert sorted(one) == list(range(600)) and one != list(range(600))
    shards = json.load(open(tmp_path / "four" / "dataset.json"))["shards"]
    assert len(shards) > 1
    run([SLUICE, "reshard", corpus / "ds", tmp_path / "other", "--shard-size", "5KB", "--seed", "8"])
    assert records_in_order(tmp_path / "other") != one


def test_reshard_under_a_tiny_memory_budget_spills_and_still_keeps_every_record(corpus, tmp_path):
    run(MPIRUN + [SLUICE, "reshard", corpus / "ds", tmp_path / "out", "--memory-budget", "64KiB",
                  "--shard-size", "5KB"])
    assert sorted(records_in_order(tmp_path / "out")) == list(range(600))


@pytest.mark.parametrize("job", ["stats", "dedup", "reshard"])
def test_a_job_leaves_nothing_in_its_spill_directory(corpus, tmp_path, job):
    # Map outputs, spills and exchange files are the job's own: a spill directory filled
    # with each finished job's run files (they were left behind once) fills /tmp in time.
    spill = tmp_path / "spill"
    spill.mkdir()
    args = {"stats": ["--key", "lang", "--json"], "dedup": [tmp_path / "out", "--feature", "text"],
            "reshard": [tmp_path / "out", "--memory-budget", "64KiB", "--shard-size", "5KB"]}[job]
    run(MPIRUN + [SLUICE, job, corpus / "ds", *args, "--spill-dir", spill])
    assert sorted(os.listdir(spill)) == []


def test_a_record_larger_than_the_exchange_budget_names_stage_and_budget(corpus, tmp_path):
    r = run(MPIRUN + [SLUICE, "reshard", corpus / "ds", tmp_path / "out", "--memory-budget", "200B"],
            check=1)
    assert "reshard" in r.stderr and "memory budget" in r.stderr and "rank " in r.stderr
    assert not (tmp_path / "out" / "dataset.json").exists()


# --- convert under MPI: the same dataset, as a multiset of records, as one process writes ----

MODEL = os.path.join(ROOT, "tests", "data", "text", "kernel_docs_unigram400.model")


@pytest.fixture(scope="module")
def jsonl_files(tmp_path_factory):
    """3 JSONL files (1,200 lines). File 0 fixes "score" as float on its line 5; file 2 holds
    integer scores (floats then, as in one process) and, on its line 8, an "x" of another type
    than file 1 fixed (a bad line in one process); one line is not JSON."""
    d = tmp_path_factory.mktemp("jsonl")
    for f in range(3):
        with open(d / f"part{f}.jsonl", "w") as out:
            for i in range(400):
                doc = {"text": f"doc {f} {i}", "id": f * 1000 + i}
                if (f, i) == (0, 5):
                    doc["score"] = 1.5
                if f == 2:
                    doc["score"] = i
                if (f, i) == (1, 3):
                    doc["x"] = [1, 2]
                if (f, i) == (2, 7):
                    doc["x"] = "a string"
                out.write(("{not json" if (f, i) == (1, 100) else json.dumps(doc)) + "\n")
    return d


@pytest.fixture(scope="module")
def text_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("text")
    for f in range(3):
        (d / f"t{f}.txt").write_text("".join(f"file {f} line {i} of the corpus\n"
                                             for i in range(300 * (f + 1))))
    return d


def multiset(path):
    return sorted(json.dumps(r, sort_keys=True) for r in inspect_json(path))


def features(path):
    return json.load(open(path / "dataset.json"))["features"]


def assert_same_dataset(one, four):
    assert multiset(four) == multiset(one)
    assert features(four) == features(one)


def convert_jsonl(jsonl_files, out):
    return [SLUICE, "convert", "jsonl", jsonl_files / "part*.jsonl", out, "--task-size", "4KB",
            "--codec", "none"]


def convert_text(text_files, out):
    return [SLUICE, "convert", "text", text_files / "t*.txt", out, "--tokenizer", MODEL,
            "--task-size", "4KB"]


def convert_images(image_folder, out):
    return [SLUICE, "convert", "images", image_folder[0], out, "--task-size", "4KB"]


def test_convert_jsonl_under_mpirun_types_fields_as_one_process_and_keeps_every_record(
        jsonl_files, tmp_path):
    one = run(convert_jsonl(jsonl_files, tmp_path / "one"))
    four = run(MPIRUN + convert_jsonl(jsonl_files, tmp_path / "four"))
    assert "records:   1198" in one.stdout and "records:   1198" in four.stdout
    assert "converted again" in four.stdout  # file 2's tasks typed "score" as int64 first
    assert_same_dataset(tmp_path / "one", tmp_path / "four")
    assert features(tmp_path / "four")["score"]["type"] == "float"
    assert len(json.load(open(tmp_path / "four" / "dataset.json"))["shards"]) > 3  # ranges
    assert not (tmp_path / "four" / ".sluice-job").exists()


def test_convert_jsonl_under_mpirun_types_from_the_whole_input_not_the_first_task(tmp_path):
    """Integers in the first files, fractions in the last: the field is float and no line is
    lost, as in one process; an integer float32 cannot hold then stops the job before
    anything is published, naming the field and --schema."""
    d = tmp_path / "in"
    d.mkdir()
    for f in range(3):
        (d / f"p{f}.jsonl").write_text("".join(
            json.dumps({"text": f"{f} {i}", "x": i if f < 2 else i + 0.5}) + "\n"
            for i in range(300)))
    cmd = lambda out: [SLUICE, "convert", "jsonl", d / "p*.jsonl", out, "--task-size", "4KB",
                       "--codec", "none"]
    one = run(cmd(tmp_path / "one"))
    four = run(MPIRUN + cmd(tmp_path / "four"))
    assert "records:   900" in one.stdout and "records:   900" in four.stdout, four.stdout
    assert_same_dataset(tmp_path / "one", tmp_path / "four")
    assert features(tmp_path / "four")["x"]["type"] == "float"
    with open(d / "p2.jsonl", "a") as out:
        out.write(json.dumps({"text": "big", "x": 16777217}) + "\n")
    r = run(MPIRUN + cmd(tmp_path / "bad"), check=None)
    assert r.returncode != 0
    assert 'field "x" mixes integers and fractions' in r.stderr and "--schema x=" in r.stderr
    assert not (tmp_path / "bad" / "dataset.json").exists()


def test_convert_text_under_mpirun_equals_one_process(text_files, tmp_path):
    run(convert_text(text_files, tmp_path / "one"))
    r = run(MPIRUN + convert_text(text_files, tmp_path / "four"))
    assert "records:   1800" in r.stdout
    assert_same_dataset(tmp_path / "one", tmp_path / "four")


def test_convert_images_under_mpirun_equals_one_process(image_folder, tmp_path):
    run(convert_images(image_folder, tmp_path / "one"))
    r = run(MPIRUN + convert_images(image_folder, tmp_path / "four"))
    assert "skipped:   2" in r.stdout
    assert_same_dataset(tmp_path / "one", tmp_path / "four")
    meta = json.load(open(tmp_path / "four" / "dataset.json"))["metadata"]
    assert (tmp_path / "four" / meta["classes_file"]).read_text() == "cat\ndog\nzebra\n"


def test_a_glob_matching_nothing_is_an_error_naming_it(tmp_path):
    r = run([SLUICE, "convert", "jsonl", tmp_path / "none*.jsonl", tmp_path / "out"], check=1)
    assert "none*.jsonl: no file matches" in r.stderr
    assert not (tmp_path / "out" / "dataset.json").exists()


def test_a_token_cache_under_mpirun_is_refused_and_leaves_no_dataset(text_files, tmp_path):
    r = run(MPIRUN + convert_text(text_files, tmp_path / "out") + ["--token-cache"], check=None)
    assert r.returncode != 0
    assert "--token-cache is written by one process" in r.stderr
    assert not (tmp_path / "out" / "dataset.json").exists()
    assert not (tmp_path / "out" / ".sluice-job").exists()


def table_adds(root):
    """Per commit of the table's log: the records of the files it added."""
    log = sorted(os.listdir(root / "_delta_log"))
    counts = []
    for name in (n for n in log if n.endswith(".json")):
        actions = [json.loads(line) for line in open(root / "_delta_log" / name) if line.strip()]
        counts.append(sum(json.loads(a["add"]["stats"])["numRecords"] for a in actions
                          if "add" in a))
    return counts


def test_convert_into_a_table_appends_one_commit_per_job(jsonl_files, tmp_path):
    out = tmp_path / "table"
    first = run(MPIRUN + convert_jsonl(jsonl_files, out) + ["--table"])
    assert f"table:     committed version 0 of {out}\n" in first.stdout
    second = run(convert_jsonl(jsonl_files, out) + ["--table"])  # one process: same job path
    assert f"table:     committed version 1 of {out}\n" in second.stdout
    assert table_adds(out) == [1198, 1198]
    assert not (out / "dataset.json").exists() and not (out / ".sluice-job").exists()
    r = run(convert_jsonl(jsonl_files, out) + ["--table", "--overwrite"], check=1)
    assert "--overwrite with --table" in r.stderr and "--mode overwrite" in r.stderr
    assert table_adds(out) == [1198, 1198]


def test_convert_into_a_table_with_mode_overwrite_replaces_its_files(jsonl_files, tmp_path):
    from delta_reader import read_snapshot
    out = tmp_path / "table"
    run(convert_jsonl(jsonl_files, out) + ["--table", "--mode", "overwrite"])  # creates it
    run(convert_jsonl(jsonl_files, out) + ["--table"])
    before = read_snapshot(str(out))
    assert (before.version, before.num_records()) == (1, 2 * 1198)
    run(MPIRUN + convert_jsonl(jsonl_files, out) + ["--table", "--mode", "overwrite"])
    after = read_snapshot(str(out))
    assert (after.version, after.num_records()) == (2, 1198)
    assert not set(after.files) & set(before.files)  # every earlier file removed
    assert set(after.tombstones) == set(before.files)
    assert after.commit_infos[2]["operationParameters"]["mode"] == "Overwrite"  # as Spark writes it
    assert read_snapshot(str(out), 1).num_records() == 2 * 1198  # time travel still works
    r = run(convert_jsonl(jsonl_files, tmp_path / "plain") + ["--mode", "overwrite"], check=2)
    assert "--mode requires --table" in r.stderr


def task_records(out):
    """The committed tasks recorded in OUT's job records (.sluice-job/<job>/task-*.json)."""
    root = out / ".sluice-job"
    if not root.exists():
        return []
    return [n for job in root.iterdir() if job.is_dir() for n in os.listdir(job)
            if n.startswith("task-")]


def ranks_of(p):
    for _ in range(300):  # the ranks, children of mpirun
        kids = subprocess.run(["pgrep", "-P", str(p.pid), "-x", "sluice"], capture_output=True,
                              text=True).stdout.split()
        if len(kids) == 4:
            return [int(k) for k in kids]
        time.sleep(0.05)
    raise AssertionError("mpirun did not start 4 ranks")


def wait_gone(pids, seconds=60):
    """mpirun can exit while its other ranks are still dying (under load): bounded wait until
    they have exited (zombies count as gone: the writer lock takes a zombie's lock over)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                        alive.append(pid)
            except (FileNotFoundError, ProcessLookupError):
                pass
        if not alive:
            return
        time.sleep(0.05)
    raise AssertionError(f"ranks {pids} still running {seconds} s after mpirun exited")


def test_a_killed_convert_publishes_nothing_and_a_rerun_reuses_finished_tasks(jsonl_files,
                                                                              tmp_path):
    out = tmp_path / "out"
    env = dict(ENV, SLUICE_FAULT_SLOW_TASK="6:120")  # task 6 hangs; the others finish
    p = subprocess.Popen(MPIRUN + convert_jsonl(jsonl_files, out) + ["--no-speculation"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ranks = ranks_of(p)
    victim = ranks[-1]
    job = out / ".sluice-job"
    for _ in range(600):  # until a few tasks are recorded as finished
        if len(task_records(out)) >= 4:
            break
        time.sleep(0.05)
    os.kill(victim, signal.SIGKILL)
    p.wait(timeout=60)
    wait_gone(ranks)
    assert p.returncode != 0
    assert not (out / "dataset.json").exists()
    assert len(task_records(out)) >= 4
    r = run(MPIRUN + convert_jsonl(jsonl_files, out))
    reused = int(r.stdout.split(" reused from an interrupted run")[0].split(", ")[-1])
    assert reused >= 4
    run(convert_jsonl(jsonl_files, tmp_path / "one"))
    assert_same_dataset(tmp_path / "one", out)
    assert not job.exists()
    # The killed run's shards that were not kept are gone: every file is listed or a side file.
    listed = {s["path"] for s in json.load(open(out / "dataset.json"))["shards"]}
    data = {n for n in os.listdir(out) if ".tfrecord" in n and not n.endswith(".idx")}
    assert data == listed


def test_ctrl_c_of_mpirun_commits_nothing_and_a_rerun_commits_once(jsonl_files, tmp_path):
    """SIGINT to mpirun (Ctrl-C) while a convert into a table runs: no commit, the finished
    tasks are kept, and the rerun reuses them and commits once."""
    from delta_reader import read_snapshot
    out = tmp_path / "table"
    env = dict(ENV, SLUICE_FAULT_SLOW_TASK="6:120")  # task 6 hangs; the others finish
    p = subprocess.Popen(MPIRUN + convert_jsonl(jsonl_files, out) + ["--table",
                                                                    "--no-speculation"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ranks = ranks_of(p)
    job = out / ".sluice-job"
    for _ in range(600):  # until a few tasks are recorded as finished
        if len(task_records(out)) >= 4:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)
    wait_gone(ranks)
    assert p.returncode != 0
    log = out / "_delta_log"
    assert not log.exists() or not [n for n in os.listdir(log) if n.endswith(".json")]
    assert len(task_records(out)) >= 4
    r = run(MPIRUN + convert_jsonl(jsonl_files, out) + ["--table"])
    reused = int(r.stdout.split(" reused from an interrupted run")[0].split(", ")[-1])
    assert reused >= 4
    snap = read_snapshot(str(out))
    assert snap.version == 0 and snap.num_records() == 1198
    assert not job.exists()


# --- Slurm: a single-node cluster on 127.0.0.1, started and stopped by this module --------

@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    state = tmp_path_factory.mktemp("slurm")
    script = os.path.join(ROOT, "scripts", "slurm-cluster")
    subprocess.run([script, "start", state], check=True, timeout=60)
    try:
        env = dict(ENV, SLURM_CONF=str(state / "slurm.conf"))
        yield env
    finally:
        subprocess.run([script, "stop", state], timeout=60)


def srun(*args):
    return ["timeout", "120", "srun", "-n", "4", "--mpi=pmix", *map(str, args)]


def test_srun_stats_equals_one_process(corpus, slurm):
    one = stats_json([SLUICE, "stats", corpus / "ds", "--key", "label", "--json"])
    four = json.loads(run(srun(SLUICE, "stats", corpus / "ds", "--key", "label", "--json"),
                          env=slurm).stdout)
    assert four["ranks"] == 4
    assert four["counts"] == one["counts"]


def test_srun_dedup_known_answer(corpus, slurm, tmp_path):
    r = run(srun(SLUICE, "dedup", corpus / "ds", tmp_path / "out", "--feature", "text"),
            env=slurm)
    assert "records out: 250" in r.stdout
    assert ids(tmp_path / "out") == list(range(250))


def test_srun_without_pmix_is_refused_with_a_hint(corpus, slurm):
    r = run(["timeout", "60", "srun", "-n", "2", "--mpi=none", SLUICE, "stats", corpus / "ds",
             "--key", "label"], env=slurm, check=None)
    assert r.returncode != 0
    assert "srun --mpi=pmix" in r.stderr


@pytest.mark.parametrize("kind", ["jsonl", "text", "images"])
def test_srun_convert_equals_one_process(kind, jsonl_files, text_files, image_folder, slurm,
                                         tmp_path):
    make = {"jsonl": lambda out: convert_jsonl(jsonl_files, out),
            "text": lambda out: convert_text(text_files, out),
            "images": lambda out: convert_images(image_folder, out)}[kind]
    run(make(tmp_path / "one"))
    run(srun(*make(tmp_path / "four")), env=slurm)
    assert_same_dataset(tmp_path / "one", tmp_path / "four")
