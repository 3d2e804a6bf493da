"""Ctrl-C while a pipeline runs: SIGINT to a process blocked in next(it) raises
KeyboardInterrupt promptly (no hang, no crash), whether the slow work runs on pipeline
threads or on the caller's; the iterator stays usable and loses nothing."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import BUILD

# The hang detector: a slow batch below takes far longer than this to compute.
DEADLINE_SECONDS = 20

PRELUDE = """
import json, sys, threading, time
import sluice
slow = True
working = False
def work(e):
    # parallelism 0: the caller's thread runs the map and blocks in it: the signal, sent once
    # "working" is printed, lands inside this function, not between two of its calls.
    # parallelism 2: only pool threads are slow, so the caller mostly waits for chunks pool
    # threads compute (the wait-check path); the signal may still land while it runs this
    # function for a chunk of its own.
    global working
    if slow and ({par} == 0 or threading.current_thread() is not threading.main_thread()):
        if not working:
            working = True
            print("working", flush=True)
        time.sleep(0.05 if {par} else 60)
    return e
ds = sluice.from_records([b"%d" % i for i in range(20000)]).map(
    work, parallelism={par}, chunk_elements=10)
ds = ds.batch(10000)
it = ds.iterator(threads=2)
print("ready", flush=True)
"""


def run_and_interrupt(body, parallelism):
    script = PRELUDE.format(par=parallelism) + textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        # next(it) is computing a batch that takes minutes; interrupt it once it runs work().
        assert proc.stdout.readline().strip() == "working", proc.stderr.read()
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=DEADLINE_SECONDS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


@pytest.mark.parametrize("parallelism", [2, 0])  # work on pool threads / on the caller's
def test_sigint_during_next_raises_keyboard_interrupt(parallelism):
    code, out, err = run_and_interrupt("next(it)\nprint('not interrupted')", parallelism)
    assert "KeyboardInterrupt" in err, err
    if parallelism == 0:  # the caller's thread was inside the map when the signal came
        assert "in work" in err, err
    assert "not interrupted" not in out
    assert code in (-signal.SIGINT, 128 + signal.SIGINT, 1), (code, err)
    assert "Fatal" not in err and "Segmentation" not in err and "terminate" not in err


@pytest.mark.parametrize("parallelism", [2, 0])
def test_iterator_continues_after_keyboard_interrupt(parallelism):
    body = """
    try:
        next(it)
        print("not interrupted")
    except KeyboardInterrupt:
        slow = False
        ids = [int(r) for b in it for r in b["record"]]
        print(json.dumps(ids))
    """
    code, out, err = run_and_interrupt(body, parallelism)
    assert code == 0, err
    ids = json.loads(out.splitlines()[-1])
    assert ids == list(range(20000))  # nothing lost, nothing repeated
