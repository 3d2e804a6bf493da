"""scripts/s3-server stops by itself once the process that started it has exited: a test run
killed before its teardown (SIGKILL: no finally, no atexit) leaves no Ceph daemons behind."""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = """
import sys
sys.path.insert(0, {here!r})
from s3_server import S3Server
s3 = S3Server()
print(s3.dir, flush=True)
sys.stdin.read()  # until killed
"""


def daemon_pids(state_dir):
    pids = []
    run = os.path.join(state_dir, "run")
    for name in os.listdir(run) if os.path.isdir(run) else []:
        if name.endswith(".pid"):
            with open(os.path.join(run, name)) as f:
                pids.append(int(f.read().strip()))
    return pids


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_a_killed_owner_takes_its_server_down():
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(here=HERE)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        state_dir = child.stdout.readline().strip()
        assert state_dir and os.path.isdir(state_dir), state_dir
        pids = daemon_pids(state_dir)
        assert len(pids) == 3, pids  # mon, osd, radosgw
        assert all(alive(p) for p in pids)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (os.path.isdir(state_dir) or any(map(alive, pids))):
        time.sleep(0.2)
    assert not [p for p in pids if alive(p)], "daemons outlived their owner"
    assert not os.path.isdir(state_dir), "the server's state dir outlived its owner"
