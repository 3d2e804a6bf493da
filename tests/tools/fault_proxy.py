#!/usr/bin/python3
"""A fault-injecting HTTP/1.1 proxy for tests: sits between a client and servers on 127.0.0.1,
forwards requests, and injects faults by a seeded schedule (tests/tools/fault_rules.py):
503 storms, resets and truncations mid-body, slow first bytes, stalls, ambiguous requests
(the server acts, the client sees a reset), 206 replies naming another range. It counts requests per
method and path so tests can assert how many fetches a reader made. See docs/fault-proxy.md.

  fault_proxy.py --upstream 127.0.0.1:9000 [--upstream 127.0.0.1:9001 ...] [--seed N]
                 [--fault KIND:key=value,...]... [--lifetime SECONDS]

Prints one JSON line, {"ports": [...], "control": PORT}, once it listens: ports[i] forwards to
the i-th upstream (a `Location` header naming an upstream is rewritten to its proxy port, so
WebHDFS redirects to datanodes stay behind the proxy). The control port answers
GET /counts[?by=path|range|query], GET /log, GET /faults, PUT /faults (a JSON list of rules,
objects or strings; replaces the schedule), POST /reset (clears counts and the log, and
numbers requests from 0 again),
POST /shutdown. The proxy exits by itself after --lifetime seconds (default 600).
"""
import argparse
import asyncio
import collections
import json
import os
import socket
import struct
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_rules import (Schedule, cut_point, parse_rule, rule_from_json,  # noqa: E402
                         shifted_content_range, status_body)

HEAD_LIMIT = 64 * 1024
PIECE = 256 * 1024
LOG_LIMIT = 200_000


class BadRequest(Exception):
    pass


class Message:
    """A parsed request or response head (headers keep their order and case)."""

    def __init__(self, first_line, headers):
        self.first_line = first_line
        self.headers = headers

    def get(self, name, default=None):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def remove(self, name):
        self.headers = [(k, v) for k, v in self.headers if k.lower() != name.lower()]

    def set(self, name, value):
        self.remove(name)
        self.headers.append((name, value))

    def encode(self):
        lines = [self.first_line] + [f"{k}: {v}" for k, v in self.headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def read_head(reader):
    """The next message head, or None at a clean end of stream."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise BadRequest("stream ended inside a message head")
    except asyncio.LimitOverrunError:
        raise BadRequest("message head too large")
    lines = raw.decode("latin-1").split("\r\n")[:-2]
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise BadRequest(f"bad header line {line!r}")
        headers.append((name.strip(), value.strip()))
    return Message(lines[0], headers)


async def read_chunked(reader):
    """Decodes a chunked body (trailers dropped)."""
    out = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";")[0].strip(), 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readexactly(2)


class Proxy:
    def __init__(self, upstreams, schedule):
        self.upstreams = upstreams  # [(host, port)]
        self.ports = []
        self.schedule = schedule
        self.seq = 0
        self.counts = collections.Counter()
        self.faults = collections.Counter()
        self.log = []
        self.stop = asyncio.Event()

    # --- bookkeeping -----------------------------------------------------------------------
    def record(self, request, upstream_index, decision):
        method, target, _ = request.first_line.split(" ", 2)
        path, _, query = target.partition("?")
        entry = {"seq": self.seq, "method": method, "path": urllib.parse.unquote(path),
                 "query": query, "range": request.get("Range", ""), "upstream": upstream_index,
                 "fault": decision.kind, "delay_ms": decision.delay_ms, "status": None}
        self.seq += 1
        self.counts[(method, entry["path"], entry["range"], query)] += 1
        if decision.kind:
            self.faults[decision.kind] += 1
        if decision.delay_ms:
            self.faults["delay"] += 1
        if len(self.log) < LOG_LIMIT:
            self.log.append(entry)
        return entry

    def counts_by(self, by):
        out = collections.Counter()
        for (method, path, rng, query), n in self.counts.items():
            key = f"{method} {path}"
            if by == "range":
                key += f" {rng}"
            elif by == "query":
                key += f"?{query}"
            out[key] += n
        return {"total": sum(self.counts.values()), "by_key": dict(out),
                "faults": dict(self.faults)}

    def rewrite_location(self, response):
        location = response.get("Location")
        if not location:
            return
        url = urllib.parse.urlsplit(location)
        for i, (host, port) in enumerate(self.upstreams):
            if url.scheme == "http" and url.port == port and url.hostname in (host, "localhost"):
                response.set("Location", url._replace(netloc=f"127.0.0.1:{self.ports[i]}").geturl())
                return

    # --- forwarding ------------------------------------------------------------------------
    async def serve_client(self, reader, writer, index):
        upstream = None
        try:
            while not self.stop.is_set():
                request = await read_head(reader)
                if request is None:
                    break
                body = await self.read_request_body(request, reader, writer)
                keep_open, upstream = await self.exchange(request, body, writer, upstream, index)
                if not keep_open:
                    break
        except (BadRequest, ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            for w in (writer, upstream[1] if upstream else None):
                if w is not None:
                    w.close()

    async def read_request_body(self, request, reader, writer):
        if request.get("Expect", "").lower() == "100-continue":
            # Answer the expectation here, then forward the request without it: the body is
            # buffered whole before the upstream sees the request.
            request.remove("Expect")
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        if request.get("Transfer-Encoding", "").lower() == "chunked":
            body = await read_chunked(reader)
            request.remove("Transfer-Encoding")
            request.set("Content-Length", str(len(body)))
            return body
        return await reader.readexactly(int(request.get("Content-Length", "0")))

    async def exchange(self, request, body, writer, upstream, index):
        """One request/response. Returns (keep the client connection, upstream connection)."""
        method, target, version = request.first_line.split(" ", 2)
        decision = self.schedule.decide(self.seq, method, target)
        entry = self.record(request, index, decision)
        client_keep = version == "HTTP/1.1" and request.get("Connection", "").lower() != "close"
        if decision.delay_ms:
            await asyncio.sleep(decision.delay_ms / 1000.0)
        rule = decision.rule
        if rule is not None and rule.kind == "status":
            entry["status"] = rule.code
            await self.send_injected_status(rule, method, target, writer)
            return client_keep, upstream
        try:
            upstream, response = await self.forward(request, body, upstream, index)
        except OSError as e:  # the server is down or hung up: answer as a gateway would
            entry["status"] = 502
            message = f"502 fault_proxy: upstream {self.upstreams[index]}: {e}\n".encode()
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
                         b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" %
                         (len(message), message))
            await writer.drain()
            return False, None
        status = int(response.first_line.split(" ", 2)[1])
        entry["status"] = status
        self.rewrite_location(response)
        length = self.body_length(method, status, response)
        if rule is not None and rule.kind == "ambiguous":
            # The server has acted on the request (a PUT is stored): read its whole answer,
            # then reset the client connection without relaying any of it.
            async for _ in self.body_pieces(length, upstream[0]):
                pass
            self.abort(writer)
            return False, self.drop(upstream)
        if rule is not None and rule.kind == "wrong_range" and status == 206:
            shifted = shifted_content_range(response.get("Content-Range"), rule.shift)
            if shifted is not None:
                entry["content_range"] = shifted
                response.set("Content-Range", shifted)
        if rule is not None and rule.kind in ("reset", "truncate") and length == 0:
            self.abort(writer)  # nothing to cut from an empty body: drop it before the head
            return False, self.drop(upstream)
        writer.write(response.encode())
        done = await self.relay_body(response, length, upstream[0], writer, rule)
        upstream_keep = response.get("Connection", "").lower() != "close" and length != -1
        if not done:
            return False, self.drop(upstream)
        if not upstream_keep:
            upstream = self.drop(upstream)
        return client_keep and length != -1, upstream

    async def forward(self, request, body, upstream, index):
        """Sends the request upstream and reads the response head; reconnects once when a kept
        connection turns out closed."""
        for attempt in (0, 1):
            if upstream is None:
                host, port = self.upstreams[index]
                upstream = await asyncio.open_connection(host, port, limit=HEAD_LIMIT)
            try:
                upstream[1].write(request.encode() + body)
                await upstream[1].drain()
                response = await read_head(upstream[0])
                while response is not None and response.first_line.split(" ")[1].startswith("1"):
                    response = await read_head(upstream[0])  # interim 1xx: not relayed
                if response is not None:
                    return upstream, response
            except (ConnectionError, BadRequest):
                upstream = self.drop(upstream)
                if attempt == 1:
                    raise
            upstream = self.drop(upstream)
        raise ConnectionError("upstream closed the connection")

    @staticmethod
    def body_length(method, status, response):
        """Bytes of body to relay: a count, None for chunked, -1 for 'until the server closes'."""
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return 0
        if response.get("Transfer-Encoding", "").lower() == "chunked":
            return None
        length = response.get("Content-Length")
        return int(length) if length is not None else -1

    async def relay_body(self, response, length, ureader, writer, rule):
        """Copies the body, acting out a reset/truncate/stall rule. False when the client
        connection was cut."""
        cut = cut_point(rule, None if length in (None, -1) else length) if rule else None
        sent = 0
        async for piece in self.body_pieces(length, ureader):
            if cut is not None and sent <= cut < sent + len(piece):
                writer.write(piece[:cut - sent])
                await writer.drain()
                if rule.kind == "reset":
                    self.abort(writer)
                    return False
                if rule.kind == "truncate":
                    writer.close()
                    return False
                await asyncio.sleep(rule.ms / 1000.0)  # stall, then go on
                piece, sent, cut = piece[cut - sent:], cut, None
            writer.write(piece)
            await writer.drain()
            sent += len(piece)
        return True

    async def body_pieces(self, length, ureader):
        if length is None:  # chunked: relay the raw framing
            while True:
                size_line = await ureader.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0].strip(), 16)
                yield size_line
                if size == 0:
                    while True:
                        line = await ureader.readuntil(b"\r\n")
                        yield line
                        if line == b"\r\n":
                            return
                yield await ureader.readexactly(size + 2)
        elif length == -1:
            while piece := await ureader.read(PIECE):
                yield piece
        else:
            left = length
            while left > 0:
                piece = await ureader.read(min(left, PIECE))
                if not piece:
                    raise ConnectionError("upstream ended the body early")
                left -= len(piece)
                yield piece

    async def send_injected_status(self, rule, method, target, writer):
        content_type, body = status_body(rule, method, target)
        head = (f"HTTP/1.1 {rule.code} Injected\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\n")
        if rule.code == 503:
            head += "Retry-After: 1\r\n"
        writer.write(head.encode() + b"\r\n" + (b"" if method == "HEAD" else body))
        await writer.drain()

    @staticmethod
    def abort(writer):
        """Closes with a TCP reset (SO_LINGER 0), as a crashed or overloaded server would."""
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    @staticmethod
    def drop(upstream):
        if upstream is not None:
            upstream[1].close()
        return None

    # --- control endpoint ------------------------------------------------------------------
    async def serve_control(self, reader, writer):
        try:
            while True:
                request = await read_head(reader)
                if request is None:
                    break
                body = await reader.readexactly(int(request.get("Content-Length", "0")))
                code, payload = self.control(request, body)
                data = json.dumps(payload).encode()
                writer.write(f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
                await writer.drain()
        except (BadRequest, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def control(self, request, body):
        method, target, _ = request.first_line.split(" ", 2)
        url = urllib.parse.urlsplit(target)
        params = dict(urllib.parse.parse_qsl(url.query))
        if method == "GET" and url.path == "/counts":
            return 200, self.counts_by(params.get("by", "path"))
        if method == "GET" and url.path == "/log":
            return 200, self.log
        if method == "GET" and url.path == "/faults":
            return 200, self.schedule.to_json()
        if method == "PUT" and url.path == "/faults":
            try:
                rules = [rule_from_json(r) for r in json.loads(body or b"[]")]
            except (ValueError, TypeError) as e:
                return 400, {"error": str(e)}
            self.schedule = Schedule(rules, int(params.get("seed", self.schedule.seed)))
            return 200, self.schedule.to_json()
        if method == "POST" and url.path == "/reset":
            self.counts.clear()
            self.faults.clear()
            self.log.clear()
            self.seq = 0
            return 200, {"ok": True}
        if method == "POST" and url.path == "/shutdown":
            self.stop.set()
            return 200, {"ok": True}
        return 404, {"error": f"no control endpoint {method} {url.path}"}


def parse_hostport(text):
    host, _, port = text.rpartition(":")
    if host not in ("127.0.0.1", "localhost"):
        raise argparse.ArgumentTypeError(f"upstream {text!r} is not on 127.0.0.1")
    return "127.0.0.1", int(port)


def fault_argument(text):
    try:
        return parse_rule(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


async def main(args):
    proxy = Proxy(args.upstream, Schedule(args.fault, args.seed))
    servers = []
    for i in range(len(args.upstream)):
        server = await asyncio.start_server(
            lambda r, w, i=i: proxy.serve_client(r, w, i), "127.0.0.1", 0, limit=HEAD_LIMIT)
        servers.append(server)
        proxy.ports.append(server.sockets[0].getsockname()[1])
    control = await asyncio.start_server(proxy.serve_control, "127.0.0.1", args.control_port,
                                         limit=HEAD_LIMIT)
    servers.append(control)
    print(json.dumps({"ports": proxy.ports, "control": control.sockets[0].getsockname()[1]}),
          flush=True)
    try:
        await asyncio.wait_for(proxy.stop.wait(), args.lifetime)
    except asyncio.TimeoutError:
        print("fault_proxy: lifetime over, exiting", file=sys.stderr)
    for server in servers:
        server.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", type=parse_hostport, action="append", required=True)
    parser.add_argument("--fault", type=fault_argument, action="append", default=[])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lifetime", type=float, default=600.0)
    parser.add_argument("--control-port", type=int, default=0)
    asyncio.run(main(parser.parse_args()))
