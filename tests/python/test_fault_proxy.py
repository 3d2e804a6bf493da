"""The fault-injecting proxy (tests/tools/fault_proxy.py) between http.client and a small
in-process server: each fault kind does what it claims, clean traffic passes unchanged, the
schedule is reproducible from its seed, and the counts tell how many fetches were made."""
import hashlib
import http.client
import http.server
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from fault_rules import (Rule, Schedule, cut_point, parse_rule,  # noqa: E402
                         shifted_content_range)
from tool_servers import FaultProxy  # noqa: E402

BLOB = bytes((i * 7 + i // 251) % 256 for i in range(300_000))


class Upstream(http.server.BaseHTTPRequestHandler):
    """GET /blob (Range supported), GET /chunked, PUT /echo (answers the body's sha256),
    GET /redirect (a Location naming this server). Counts requests it saw."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body are separate writes
    seen = []

    def log_message(self, *args):
        pass

    def send(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        Upstream.seen.append(("GET", self.path))
        if self.path == "/blob":
            rng = self.headers.get("Range")
            if rng:
                first, last = (int(x) for x in rng.split("=")[1].split("-"))
                self.send(206, BLOB[first:last + 1],
                          [("Content-Range", f"bytes {first}-{last}/{len(BLOB)}")])
            else:
                self.send(200, BLOB)
        elif self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, 100_000, 10_000):
                piece = BLOB[i:i + 10_000]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/redirect":
            port = self.server.server_address[1]
            self.send(307, b"", [("Location", f"http://127.0.0.1:{port}/blob?x=1")])
        else:
            self.send(404, b"no such thing")

    def do_PUT(self):
        Upstream.seen.append(("PUT", self.path))
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send(200, hashlib.sha256(body).hexdigest().encode())


@pytest.fixture(scope="module")
def upstream():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def shared(upstream):
    with FaultProxy([upstream], lifetime=300) as proxy:
        yield proxy


@pytest.fixture
def proxy(shared):
    """The module's proxy with no faults, counts cleared (one process for all tests: a
    Python start costs seconds on a loaded machine)."""
    shared.set_faults([], seed=0)
    shared.reset()
    return shared


def with_faults(proxy, *faults, seed=0):
    proxy.set_faults(faults, seed=seed)
    return proxy


def get(port, path, headers=None, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    return response, response.read()


def blob_response(proxy):
    """GET /blob through the proxy, up to its head, which announces the whole length."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.ports[0], timeout=30)
    conn.request("GET", "/blob")
    response = conn.getresponse()
    assert response.getheader("Content-Length") == str(len(BLOB))
    return response


def test_clean_traffic_passes_unchanged_and_is_counted_per_range(proxy):
    conn = http.client.HTTPConnection("127.0.0.1", proxy.ports[0], timeout=30)
    for first in (0, 1000, 299_000):
        conn.request("GET", "/blob", headers={"Range": f"bytes={first}-{first + 999}"})
        response = conn.getresponse()  # one kept-alive connection for all three
        assert response.status == 206
        assert response.read() == BLOB[first:first + 1000]
    response, body = get(proxy.ports[0], "/chunked")
    assert body == BLOB[:100_000]
    counts = proxy.counts(by="range")
    assert counts["total"] == 4
    assert counts["by_key"]["GET /blob bytes=1000-1999"] == 1
    assert proxy.counts()["by_key"] == {"GET /blob": 3, "GET /chunked": 1}


def test_status_storm_answers_slowdown_without_asking_the_server(proxy):
    with_faults(proxy, "status:first=3,path=^/blob")
    before = len(Upstream.seen)
    statuses = [get(proxy.ports[0], "/blob")[0].status for _ in range(4)]
    assert statuses == [503, 503, 503, 200]
    assert len(Upstream.seen) == before + 1  # the storm never reached the server
    with_faults(proxy, "status:code=500,body=plain", "status:body=remote")
    response, body = get(proxy.ports[0], "/blob")
    assert response.status == 500 and b"injected" in body
    with_faults(proxy, "status:body=remote,exception=StandbyException")
    response, body = get(proxy.ports[0], "/blob")
    assert response.status == 503 and b'"StandbyException"' in body
    assert proxy.counts()["faults"]["status"] == 5


def test_slowdown_body_is_s3_error_xml(proxy):
    with_faults(proxy, "status")
    response, body = get(proxy.ports[0], "/blob")
    assert response.status == 503
    assert response.getheader("Content-Type") == "application/xml"
    assert b"<Code>SlowDown</Code>" in body and b"<Resource>/blob</Resource>" in body


def test_reset_mid_body_resets_the_connection_after_part_of_the_body(proxy):
    with_faults(proxy, "reset:at=0.5")
    response = blob_response(proxy)
    got = bytearray()
    with pytest.raises((ConnectionResetError, http.client.IncompleteRead)):
        while True:
            piece = response.read1(65536)
            if not piece:
                raise http.client.IncompleteRead(bytes(got))
            got += piece
    assert 0 < len(got) <= len(BLOB) // 2
    assert bytes(got) == BLOB[:len(got)]  # what did arrive is not corrupt


def test_truncate_keeps_content_length_and_closes_early(proxy):
    with_faults(proxy, "truncate:at_bytes=1234")
    response = blob_response(proxy)
    with pytest.raises(http.client.IncompleteRead) as info:
        response.read()
    assert info.value.partial == BLOB[:1234]


def test_truncate_of_a_chunked_body_never_completes_it(proxy):
    with_faults(proxy, "truncate:at_bytes=25000")
    with pytest.raises(http.client.IncompleteRead):
        get(proxy.ports[0], "/chunked")


def test_stall_mid_body_trips_a_client_deadline_then_resumes(proxy):
    with_faults(proxy, "stall:ms=3000,at=0.25")
    conn = http.client.HTTPConnection("127.0.0.1", proxy.ports[0], timeout=0.5)
    conn.request("GET", "/blob")
    response = conn.getresponse()  # the head arrives at once
    with pytest.raises((socket.timeout, TimeoutError)):
        response.read()
    # A patient client gets the whole body once the stall is over.
    with_faults(proxy, "stall:ms=300,at=0.25")
    proxy.reset()
    response, body = get(proxy.ports[0], "/blob")
    assert body == BLOB
    assert [e["fault"] for e in proxy.log()] == ["stall"]


def test_slow_first_byte_trips_a_client_deadline_before_the_head(proxy):
    with_faults(proxy, "delay:ms=3000")
    with pytest.raises((socket.timeout, TimeoutError)):
        get(proxy.ports[0], "/blob", timeout=0.5)
    assert proxy.log()[0]["delay_ms"] == 3000


def test_heavy_tail_delays_only_the_drawn_fraction(proxy):
    with_faults(proxy, "delay:p=0.1,ms=1", seed=3)
    conn = http.client.HTTPConnection("127.0.0.1", proxy.ports[0], timeout=30)
    for _ in range(200):
        conn.request("GET", "/blob", headers={"Range": "bytes=0-9"})
        conn.getresponse().read()
    delayed = proxy.counts()["faults"].get("delay", 0)
    assert 5 <= delayed <= 40  # binomial(200, 0.1): outside this is < 1e-4 likely


def faults_seen(proxy, rules, seed, n=30):
    with_faults(proxy, *rules, seed=seed)
    proxy.reset()
    for _ in range(n):
        try:
            get(proxy.ports[0], "/blob", headers={"Range": "bytes=0-99"})
        except http.client.IncompleteRead:
            pass
    return [entry["fault"] for entry in proxy.log()]


def test_schedule_is_reproducible_from_its_seed(proxy):
    rules = ["status:p=0.3", "truncate:p=0.2"]
    first = faults_seen(proxy, rules, 11)
    assert first == faults_seen(proxy, rules, 11)
    assert first != faults_seen(proxy, rules, 12)
    assert {"status", "truncate", None} == set(first)
    # ... and it is the pure schedule's prediction.
    schedule = Schedule([parse_rule(r) for r in rules], seed=11)
    assert first == [schedule.decide(i, "GET", "/blob").kind for i in range(30)]


def test_upload_with_expect_continue_and_chunked_body_reaches_the_server(proxy):
    payload = BLOB[:70_000]
    sock = socket.create_connection(("127.0.0.1", proxy.ports[0]), timeout=30)
    sock.sendall(b"PUT /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue")
    for i in range(0, len(payload), 30_000):
        piece = payload[i:i + 30_000]
        sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
    sock.sendall(b"0\r\n\r\n")
    reply = b""
    while not reply.endswith(hashlib.sha256(payload).hexdigest().encode()):
        data = sock.recv(4096)
        assert data, reply
        reply += data
    assert reply.startswith(b"HTTP/1.1 200")
    sock.close()


def test_ambiguous_put_reaches_the_server_but_the_client_sees_only_a_reset(proxy):
    with_faults(proxy, "ambiguous:method=PUT,first=1")
    before = len(Upstream.seen)
    conn = http.client.HTTPConnection("127.0.0.1", proxy.ports[0], timeout=30)
    conn.request("PUT", "/echo", body=b"manifest")
    with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
        conn.getresponse()
    assert Upstream.seen[before:] == [("PUT", "/echo")]  # the server did act on it
    conn = http.client.HTTPConnection("127.0.0.1", proxy.ports[0], timeout=30)
    conn.request("PUT", "/echo", body=b"manifest")  # first=1: the repeat passes
    response = conn.getresponse()
    assert response.status == 200
    assert response.read() == hashlib.sha256(b"manifest").hexdigest().encode()
    assert proxy.counts()["faults"] == {"ambiguous": 1}
    assert [e["fault"] for e in proxy.log()] == ["ambiguous", None]


def test_wrong_range_names_another_range_and_leaves_other_replies_alone(proxy):
    with_faults(proxy, "wrong_range:shift=1000,first=1")
    response, body = get(proxy.ports[0], "/blob", headers={"Range": "bytes=100-199"})
    assert response.status == 206
    assert response.getheader("Content-Range") == f"bytes 1100-1199/{len(BLOB)}"
    assert body == BLOB[100:200]  # the body is relayed as the server sent it
    response, body = get(proxy.ports[0], "/blob", headers={"Range": "bytes=100-199"})
    assert response.getheader("Content-Range") == f"bytes 100-199/{len(BLOB)}"
    with_faults(proxy, "wrong_range")
    response, body = get(proxy.ports[0], "/blob")  # a 200 has no range to rewrite
    assert response.status == 200 and body == BLOB
    assert response.getheader("Content-Range") is None
    assert shifted_content_range("bytes 0-9/*", 1) == "bytes 1-10/*"
    assert shifted_content_range("junk", 1) is None


def test_location_naming_an_upstream_is_rewritten_to_the_proxy(proxy):
    response, _ = get(proxy.ports[0], "/redirect")
    assert response.getheader("Location") == f"http://127.0.0.1:{proxy.ports[0]}/blob?x=1"


def test_bad_fault_is_refused_with_400(proxy):
    with pytest.raises(Exception, match="400"):
        proxy.set_faults(["explode:p=1"])
    assert proxy.set_faults([{"kind": "status", "p": 0.5}])["rules"][0]["p"] == 0.5


def test_server_down_gives_bad_gateway_and_bad_flags_are_refused(upstream):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    with FaultProxy([f"127.0.0.1:{port}"]) as proxy:
        response, body = get(proxy.ports[0], "/blob")
        assert response.status == 502 and b"fault_proxy" in body
    with pytest.raises(RuntimeError, match="unknown fault kind"):
        FaultProxy([upstream], faults=["explode"])


def test_lifetime_bounds_the_process(upstream):
    proxy = FaultProxy([upstream], lifetime=1)
    try:
        assert proxy.proc.wait(60) == 0
    finally:
        proxy.stop()


def test_rules_pure_first_after_and_cut_points():
    schedule = Schedule([parse_rule("status:after=2,first=2,method=GET")], seed=1)
    kinds = [schedule.decide(i, "GET", "/x").kind for i in range(6)]
    assert kinds == [None, None, "status", "status", None, None]
    assert schedule.decide(7, "PUT", "/x").kind is None
    reset = Rule("reset", at=1.0)
    assert cut_point(reset, 100) == 99  # at least one byte withheld
    assert cut_point(reset, 0) == -1  # empty body: cut before the head
    assert cut_point(Rule("stall", at_bytes=5), 100) == 5
    delays = Schedule([Rule("delay", ms=5), Rule("delay", ms=7), Rule("truncate")])
    decision = delays.decide(0, "GET", "/")
    assert (decision.delay_ms, decision.kind) == (12, "truncate")
    with pytest.raises(ValueError, match="bad fault option"):
        parse_rule("status:colour=red")
    with pytest.raises(ValueError):
        parse_rule("status:p=2")
