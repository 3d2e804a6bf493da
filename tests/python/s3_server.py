"""A real S3 server (Ceph RGW via scripts/s3-server) for the Python tests and benchmarks.

    with S3Server() as s3:          # or the `s3_server` session fixture
        s3.env                      # AWS_ENDPOINT_URL, keys, region: for subprocesses
        s3.client()                 # boto3 client (Debian's boto3 1.26 needs endpoint_url)
        s3.bucket("name")           # creates it (idempotent), returns the name

Starting takes a few seconds; the server's state is a temp dir removed on stop, and only
the daemons started for it are killed (by their pid files). It also stops by itself once
the process that started it has exited, so a test run killed before its teardown leaves no
daemons behind.
"""
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "s3-server")


class S3Server:
    def __init__(self):
        # The server stops itself once this process has exited (a killed test run included).
        env = dict(os.environ, SLUICE_S3_OWNER_PID=str(os.getpid()))
        r = subprocess.run([SCRIPT, "start"], capture_output=True, text=True, timeout=900,
                           env=env)
        if r.returncode != 0:
            raise RuntimeError(f"scripts/s3-server start failed:\n{r.stderr}")
        self.dir = r.stdout.strip().splitlines()[-1]
        self.env = {}
        with open(os.path.join(self.dir, "env")) as f:
            for line in f:
                key, _, value = line.strip().removeprefix("export ").partition("=")
                if key:
                    self.env[key] = value
        self.endpoint = self.env["AWS_ENDPOINT_URL"]

    def stop(self):
        if self.dir:
            subprocess.run([SCRIPT, "stop", self.dir], capture_output=True, timeout=120)
            self.dir = None

    def daemon_cpu_seconds(self):
        """User + system CPU seconds the server's daemons (mon, osd, rgw) have used so far."""
        total = 0
        run = os.path.join(self.dir, "run")
        for name in os.listdir(run):
            if not name.endswith(".pid"):
                continue
            try:
                with open(os.path.join(run, name)) as f:
                    pid = int(f.read().strip())
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, ValueError):
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
        return total / os.sysconf("SC_CLK_TCK")

    def client(self, **overrides):
        import boto3
        keys = dict(aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
                    aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"])
        keys.update(overrides)
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", **keys)

    def bucket(self, name):
        client = self.client()
        try:
            client.create_bucket(Bucket=name)
        except client.exceptions.BucketAlreadyOwnedByYou:
            pass
        return name

    def environ(self, **changes):
        """os.environ with this server's settings (AWS_* of the caller removed first), then
        `changes` (a value of None removes the variable)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(self.env)
        env["HOME"] = env.get("SLUICE_S3_TEST_HOME", self.dir)  # no ~/.aws of the user
        for k, v in changes.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def read_ids_and_names(path, env, **read_options):
    """(id, name) of every record of a jsonl-converted dataset, read in-process by sluice with
    the environment `env` (S3 settings are resolved per call, so this one applies) and
    `read_options` for sluice.read (e.g. cache=False: straight from the server)."""
    import sluice
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        ds = sluice.read(path, **read_options).parse_example({"id": "int64", "name": "bytes"})
        return [(int(e["id"]), bytes(e["name"])) for e in ds]
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="session")
def s3_server():
    server = S3Server()
    try:
        yield server
    finally:
        server.stop()
