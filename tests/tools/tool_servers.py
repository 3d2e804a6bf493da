"""Starts and drives the test servers of tests/tools/ from Python tests and benchmarks:
the fault-injecting proxy (fault_proxy.py) and the WebHDFS server (webhdfs_server.py).

    with WebHdfsServer(block_size=1 << 20) as hdfs, \\
         FaultProxy([hdfs.namenode_addr] + hdfs.datanode_addrs,
                    faults=["reset:p=0.2"], seed=7) as proxy:
        url = f"hdfs://127.0.0.1:{proxy.ports[0]}/data"
        ...
        proxy.counts(by="range")   # {"total": n, "by_key": {"GET /x bytes=0-9": 1}, ...}

Each server is a child process on 127.0.0.1 with a bounded lifetime; leaving the `with`
block stops it (by its pid only) and waits for it.
"""
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import urllib.request

TOOLS = os.path.dirname(os.path.abspath(__file__))


class ServerProcess:
    """A tool that prints one JSON line when it listens."""

    def __init__(self, script, args, start_timeout=30.0):
        # stderr goes to a file, never a pipe nobody drains.
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, os.path.join(TOOLS, script)] + args,
                                     stdout=subprocess.PIPE, stderr=self.stderr)
        deadline = time.monotonic() + start_timeout
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not ready:
                self.stop()
                raise TimeoutError(f"{script} did not start within {start_timeout} s")
            byte = os.read(self.proc.stdout.fileno(), 1)  # unbuffered: select() sees the rest
            if not byte:
                self.stop()
                err = self.stderr_text()
                raise RuntimeError(f"{script} exited before listening: {err}")
            line += byte
        self.info = json.loads(line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()

    def stderr_text(self):
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class WebHdfsServer(ServerProcess):
    def __init__(self, datanodes=3, replication=3, block_size=128 << 20, hostnames=None,
                 root=None, deny_users=(), legacy_block_locations=False, lifetime=600):
        args = ["--datanodes", str(datanodes), "--replication", str(replication),
                "--block-size", str(block_size), "--lifetime", str(lifetime)]
        if hostnames:
            args += ["--hostnames", ",".join(hostnames)]
        if root:
            args += ["--root", str(root)]
        for user in deny_users:
            args += ["--deny-user", user]
        if legacy_block_locations:
            args.append("--legacy-block-locations")
        super().__init__("webhdfs_server.py", args)
        self.namenode_port = self.info["namenode"]
        self.datanode_ports = self.info["datanodes"]
        self.root = self.info["root"]

    @property
    def namenode_addr(self):
        return f"127.0.0.1:{self.namenode_port}"

    @property
    def datanode_addrs(self):
        return [f"127.0.0.1:{p}" for p in self.datanode_ports]

    def url(self, path="/"):
        return f"hdfs://127.0.0.1:{self.namenode_port}{path}"


class FaultProxy(ServerProcess):
    def __init__(self, upstreams, faults=(), seed=0, lifetime=600):
        args = ["--seed", str(seed), "--lifetime", str(lifetime)]
        for upstream in upstreams:
            args += ["--upstream", upstream]
        for fault in faults:
            args += ["--fault", fault]
        super().__init__("fault_proxy.py", args)
        self.ports = self.info["ports"]
        self.control_port = self.info["control"]

    def _call(self, method, path, payload=None):
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.control_port}{path}",
                                         data=data, method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def counts(self, by="path"):
        return self._call("GET", f"/counts?by={by}")

    def log(self):
        return self._call("GET", "/log")

    def set_faults(self, faults, seed=None):
        query = "" if seed is None else f"?seed={seed}"
        return self._call("PUT", "/faults" + query, list(faults))

    def reset(self):
        return self._call("POST", "/reset")

    def stop(self):
        if self.proc.poll() is None and hasattr(self, "control_port"):
            try:
                self._call("POST", "/shutdown")
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        super().stop()
