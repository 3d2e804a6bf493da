#!/usr/bin/python3
"""A small WebHDFS server for tests, written from the WebHDFS REST API document (hadoop-hdfs
WebHDFS.md) because no Hadoop is packaged for our machines: sluice's WebHDFS client has been
run only against this server, not against a real cluster. See docs/hdfs.md.

  webhdfs_server.py [--root DIR] [--datanodes 3] [--hostnames a,b,c] [--replication 3]
                    [--block-size BYTES] [--deny-user NAME]... [--legacy-block-locations]
                    [--lifetime SECONDS]

One NameNode port and one port per datanode, all on 127.0.0.1. The NameNode answers
GETFILESTATUS, LISTSTATUS, GETFILEBLOCKLOCATIONS (and the older GET_BLOCK_LOCATIONS),
GETHOMEDIRECTORY, MKDIRS, RENAME (with `renameoptions`), DELETE, and redirects OPEN, CREATE
and APPEND (307, or a JSON Location with `noredirect=true`) to a datanode, which moves the
bytes. Errors are RemoteException JSON with
HDFS's status codes. Files live in DIR (default: a fresh temporary directory, removed at exit).
Prints one JSON line, {"namenode": PORT, "datanodes": [PORT...], "root": DIR}, once it
listens; exits after --lifetime seconds (default 600) or on SIGTERM/SIGINT.
"""
import argparse
import http.server
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webhdfs_namespace import DEFAULT_USER, Namespace, RemoteError  # noqa: E402

PREFIX = "/webhdfs/v1"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body are separate writes
    # Set per server: the namespace, this server's role, the NameNode port.
    namespace = None
    role = "namenode"
    namenode_port = 0
    datanode_ports = []
    legacy = False  # --legacy-block-locations: a NameNode without GETFILEBLOCKLOCATIONS

    def log_message(self, *args):
        pass

    # --- plumbing --------------------------------------------------------------------------
    def parse(self):
        url = urllib.parse.urlsplit(self.path)
        if not url.path.startswith(PREFIX):
            raise RemoteError("IllegalArgumentException", f"not a WebHDFS URL: {url.path}")
        path = urllib.parse.unquote(url.path[len(PREFIX):]) or "/"
        params = {k.lower(): v for k, v in urllib.parse.parse_qsl(url.query, True)}
        return Namespace.normalize(path), params

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def reply(self, status, payload=None, content_type="application/json", headers=()):
        data = payload if isinstance(payload, bytes) else \
            b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        if content_type and (data or content_type != "application/json"):
            self.send_header("Content-Type", content_type)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def dispatch(self, method):
        try:
            body = self.body()  # always consume the body, so the connection stays usable
            path, params = self.parse()
            op = params.get("op", "").upper()
            user = params.get("user.name", DEFAULT_USER)
            handler = getattr(self, f"{self.role}_{method}_{op}", None)
            if handler is None:
                raise RemoteError("IllegalArgumentException",
                                  f"Invalid value for webhdfs parameter \"op\": No enum constant "
                                  f"{method.upper()}OpParam.Op.{op}")
            handler(path, params, user, body)
        except RemoteError as e:
            self.reply(e.status, e.json)
        except ValueError as e:
            self.reply(400, RemoteError("IllegalArgumentException", str(e)).json)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self):
        self.dispatch("get")

    def do_PUT(self):
        self.dispatch("put")

    def do_POST(self):
        self.dispatch("post")

    def do_DELETE(self):
        self.dispatch("delete")

    # --- NameNode --------------------------------------------------------------------------
    def redirect(self, path, params, datanode, extra):
        query = {k: v for k, v in params.items() if k != "noredirect"}
        query.update(extra)
        query["namenoderpcaddress"] = f"127.0.0.1:{self.namenode_port}"
        location = (f"http://127.0.0.1:{self.datanode_ports[datanode]}{PREFIX}"
                    f"{urllib.parse.quote(path)}?{urllib.parse.urlencode(query)}")
        if params.get("noredirect", "false").lower() == "true":
            self.reply(200, {"Location": location})
        else:
            self.reply(307, headers=[("Location", location)], content_type="")

    def namenode_get_OPEN(self, path, params, user, body):
        offset = int(params.get("offset", "0"))
        self.redirect(path, params, self.namespace.datanode_for_read(path, offset),
                      {"offset": str(offset)})

    def namenode_put_CREATE(self, path, params, user, body):
        self.redirect(path, params, self.namespace.datanode_for_write(path), {})

    def namenode_post_APPEND(self, path, params, user, body):
        self.redirect(path, params, self.namespace.datanode_for_write(path), {})

    def namenode_get_GETFILESTATUS(self, path, params, user, body):
        self.reply(200, self.namespace.get_file_status(path))

    def namenode_get_LISTSTATUS(self, path, params, user, body):
        self.reply(200, self.namespace.list_status(path))

    def namenode_get_GETHOMEDIRECTORY(self, path, params, user, body):
        self.reply(200, self.namespace.home_directory(user))

    def namenode_get_GETFILEBLOCKLOCATIONS(self, path, params, user, body):
        if self.legacy:
            raise RemoteError("IllegalArgumentException", "Invalid value for webhdfs parameter "
                              "\"op\": No enum constant org.apache.hadoop.hdfs.web.resources."
                              "GetOpParam.Op.GETFILEBLOCKLOCATIONS")
        length = params.get("length")
        self.reply(200, self.namespace.block_locations(
            path, int(params.get("offset", "0")), None if length is None else int(length)))

    def namenode_get_GET_BLOCK_LOCATIONS(self, path, params, user, body):
        length = params.get("length")
        self.reply(200, self.namespace.located_blocks(
            path, int(params.get("offset", "0")), None if length is None else int(length)))

    def namenode_put_MKDIRS(self, path, params, user, body):
        self.reply(200, self.namespace.mkdirs(path, user))

    def namenode_put_RENAME(self, path, params, user, body):
        destination = params.get("destination")
        if not destination:
            raise RemoteError("IllegalArgumentException", "Required param destination for "
                              "op: RENAME is null or empty")
        options = params.get("renameoptions")
        options = None if options is None else {o.strip().upper() for o in options.split(",")}
        result = self.namespace.rename(path, Namespace.normalize(destination), options, user)
        if result is None:
            self.reply(200, content_type="application/octet-stream")
        else:
            self.reply(200, result)

    def namenode_delete_DELETE(self, path, params, user, body):
        recursive = params.get("recursive", "false").lower() == "true"
        self.reply(200, self.namespace.delete(path, recursive, user))

    # --- datanodes -------------------------------------------------------------------------
    def require_namenode(self, params):
        if "namenoderpcaddress" not in params:
            raise RemoteError("IllegalArgumentException", "namenoderpcaddress is not specified.")

    def datanode_get_OPEN(self, path, params, user, body):
        self.require_namenode(params)
        length = params.get("length")
        data = self.namespace.read(path, int(params.get("offset", "0")),
                                   None if length is None else int(length))
        self.reply(200, data, "application/octet-stream")

    def datanode_put_CREATE(self, path, params, user, body):
        self.require_namenode(params)
        overwrite = params.get("overwrite", "false").lower() == "true"
        self.namespace.create(path, body, overwrite, user)
        self.reply(201, content_type="", headers=[
            ("Location", f"hdfs://127.0.0.1:{self.namenode_port}{urllib.parse.quote(path)}")])

    def datanode_post_APPEND(self, path, params, user, body):
        self.require_namenode(params)
        self.namespace.append(path, body, user)
        self.reply(200, content_type="")


class QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # clients (and the fault proxy) hang up mid-request on purpose


def serve(handler_class):
    server = QuietServer(("127.0.0.1", 0), handler_class)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(args):
    root = args.root or tempfile.mkdtemp(prefix="sluice-webhdfs-")
    hostnames = args.hostnames.split(",") if args.hostnames else \
        [f"datanode-{i}" for i in range(args.datanodes)]
    if len(hostnames) != args.datanodes:
        sys.exit("webhdfs_server: --hostnames needs one name per datanode")
    namespace = Namespace(root, [], args.replication, args.block_size, args.deny_user)
    base = type("Base", (Handler,), {"namespace": namespace,
                                     "legacy": args.legacy_block_locations})
    datanodes = [serve(type(f"Datanode{i}", (base,), {"role": "datanode"}))
                 for i in range(args.datanodes)]
    ports = [d.server_address[1] for d in datanodes]
    namespace.datanodes = [(h, f"127.0.0.1:{p}") for h, p in zip(hostnames, ports)]
    namespace.replication = min(args.replication, len(ports))
    namenode = serve(type("NameNode", (base,), {"role": "namenode"}))
    base.namenode_port = namenode.server_address[1]
    base.datanode_ports = ports
    print(json.dumps({"namenode": base.namenode_port, "datanodes": ports, "root": root}),
          flush=True)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    if not done.wait(args.lifetime):
        print("webhdfs_server: lifetime over, exiting", file=sys.stderr)
    for server in [namenode] + datanodes:
        server.shutdown()
    if not args.root:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root")
    parser.add_argument("--datanodes", type=int, default=3)
    parser.add_argument("--hostnames")
    parser.add_argument("--replication", type=int, default=3)
    parser.add_argument("--block-size", type=int, default=128 * 1024 * 1024)
    parser.add_argument("--deny-user", action="append", default=[])
    parser.add_argument("--legacy-block-locations", action="store_true",
                        help="answer GETFILEBLOCKLOCATIONS as a NameNode without it does")
    parser.add_argument("--lifetime", type=float, default=600.0)
    main(parser.parse_args())
