"""The fault schedule of tests/tools/fault_proxy.py: which fault, if any, a request gets.

Pure (no I/O): a rule matches a request by method and path, may skip its first matches
(`after`), may fire a bounded number of times (`first`), and fires with probability `p`. The
draw for request number `seq` under rule `i` is a function of (seed, i, seq) only, so a run is
reproducible whatever the timing, given the same request order.

A rule is written `KIND[:key=value,key=value...]` on the command line (or as a JSON object with
the same keys on the control endpoint). Kinds:

  status    answer without asking the server: `code` (default 503) with `body` slowdown (S3's
            SlowDown XML error, the default), plain (text), or remote (a WebHDFS
            RemoteException JSON, class `exception`, default RetriableException)
  delay     wait `ms` before forwarding (slow first byte; several delay rules add up)
  reset     forward, send the head and part of the body, then reset the connection (RST)
  truncate  forward, send the head (Content-Length kept) and part of the body, then close
  stall     forward, send the head and part of the body, pause `ms`, then send the rest
  ambiguous forward, let the server answer in full (a PUT is stored), then reset the client
            connection without relaying anything: the client cannot tell whether it happened
  wrong_range
            forward; a 206 reply's Content-Range is rewritten `shift` bytes later (default 1;
            the body is relayed as is), so it names another range than the one asked for;
            other replies pass unchanged

`at` is where the body is cut or paused, as a fraction of Content-Length (default 0.5);
`at_bytes` gives it in bytes instead. At least one byte of a non-empty body is withheld by
reset/truncate; an empty body is cut before the head. Matching keys: `method` (GET, PUT, ...),
`path` (a regular expression searched in the path, query string included), `after`, `first`,
`p` (default 1).
"""
import json
import random
import re
from dataclasses import dataclass, field

KINDS = ("status", "delay", "reset", "truncate", "stall", "ambiguous", "wrong_range")
# The kinds that decide how the response is delivered; at most one applies to a request.
RESPONSE_KINDS = ("status", "reset", "truncate", "stall", "ambiguous", "wrong_range")
BODIES = ("slowdown", "plain", "remote")


@dataclass
class Rule:
    kind: str
    p: float = 1.0
    method: str = ""
    path: str = ""
    after: int = 0
    first: int = -1  # fire at most this many times; -1: unbounded
    ms: float = 0.0
    at: float = 0.5
    at_bytes: int = -1
    code: int = 503
    body: str = "slowdown"
    exception: str = "RetriableException"
    shift: int = 1
    matched: int = field(default=0, compare=False)
    fired: int = field(default=0, compare=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r} (one of {', '.join(KINDS)})")
        if self.body not in BODIES:
            raise ValueError(f"unknown body {self.body!r} (one of {', '.join(BODIES)})")
        if not 0.0 <= self.p <= 1.0 or not 0.0 <= self.at <= 1.0:
            raise ValueError("p and at are fractions in [0, 1]")
        if self.path:
            re.compile(self.path)

    def to_json(self):
        d = {k: getattr(self, k) for k in Rule.__dataclass_fields__}
        return d


_INT_KEYS = {"after", "first", "at_bytes", "code", "shift"}
_FLOAT_KEYS = {"p", "ms", "at"}


def parse_rule(text):
    """`KIND:key=value,...` -> Rule. Raises ValueError naming the bad part."""
    kind, _, rest = text.partition(":")
    kwargs = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in Rule.__dataclass_fields__ or key in ("kind", "matched", "fired"):
            raise ValueError(f"bad fault option {item!r} in {text!r}")
        kwargs[key] = int(value) if key in _INT_KEYS else float(value) if key in _FLOAT_KEYS \
            else value
    return Rule(kind=kind, **kwargs)


def rule_from_json(obj):
    if isinstance(obj, str):
        return parse_rule(obj)
    unknown = set(obj) - set(Rule.__dataclass_fields__) | ({"matched", "fired"} & set(obj))
    if unknown:
        raise ValueError(f"unknown fault keys {sorted(unknown)}")
    return Rule(**obj)


@dataclass
class Decision:
    delay_ms: float = 0.0
    rule: Rule = None  # the response fault, if any

    @property
    def kind(self):
        return self.rule.kind if self.rule else None


class Schedule:
    """Rules in order; decide() is called once per request, in arrival order."""

    def __init__(self, rules, seed=0):
        self.rules = list(rules)
        self.seed = seed

    def decide(self, seq, method, target):
        decision = Decision()
        for i, rule in enumerate(self.rules):
            if rule.method and rule.method.upper() != method.upper():
                continue
            if rule.path and not re.search(rule.path, target):
                continue
            rule.matched += 1
            if rule.matched <= rule.after or (0 <= rule.first <= rule.fired):
                continue
            if rule.kind in RESPONSE_KINDS and decision.rule is not None:
                continue
            if random.Random(f"{self.seed}/{i}/{seq}").random() >= rule.p:
                continue
            rule.fired += 1
            if rule.kind == "delay":
                decision.delay_ms += rule.ms
            else:
                decision.rule = rule
        return decision

    def to_json(self):
        return {"seed": self.seed, "rules": [r.to_json() for r in self.rules]}


def cut_point(rule, content_length):
    """Body bytes sent before a reset/truncate/stall acts (None: unknown length)."""
    if rule.at_bytes >= 0:
        cut = rule.at_bytes
    elif content_length is None:
        cut = 0
    else:
        cut = int(content_length * rule.at)
    if content_length is not None and rule.kind in ("reset", "truncate"):
        cut = min(cut, content_length - 1)  # -1 for an empty body: cut before the head
    return cut


def shifted_content_range(value, shift):
    """"bytes A-B/T" moved `shift` bytes later; None when `value` is not of that form."""
    m = re.fullmatch(r"\s*bytes (\d+)-(\d+)/(\d+|\*)\s*", value or "")
    if not m:
        return None
    first, last = int(m.group(1)) + shift, int(m.group(2)) + shift
    return f"bytes {first}-{last}/{m.group(3)}"


def status_body(rule, method, path):
    """(content type, body) of an injected error response."""
    if rule.body == "slowdown":
        code = "SlowDown" if rule.code == 503 else "InternalError"
        return "application/xml", (
            '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code>'
            "<Message>Please reduce your request rate. (injected by fault_proxy)</Message>"
            "<Resource>%s</Resource><RequestId>fault-proxy</RequestId></Error>" %
            (code, path.split("?")[0])).encode()
    if rule.body == "remote":
        return "application/json", json.dumps({"RemoteException": {
            "exception": rule.exception,
            "javaClassName": "org.apache.hadoop.ipc." + rule.exception,
            "message": f"injected by fault_proxy for {method} {path}"}}).encode()
    return "text/plain", f"{rule.code} injected by fault_proxy\n".encode()
