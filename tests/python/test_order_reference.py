"""Re-implements the orders of docs/order.md alone, in pure Python (global, block, none and
the chunk order with its lanes and windows, plus the snapshot identity of shard files), and
checks that build/bin/order_tool (the C++ GlobalOrder and ShardSource) produces the same
orders and fingerprints: the doc is a complete specification, and saved orders stay portable.
Run: SLUICE_BUILD=build /usr/bin/python3 -m pytest tests/python/test_order_reference.py
"""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
TOOL = BUILD / "bin" / "order_tool"

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
TAGS = {"global": 0x676C6F62616C0001, "shards": 0x7368617264730002,
        "window": 0x77696E646F770003, "snapshot": 0x736E617073680004,
        "chunks": 0x6368756E6B730005, "lanewindow": 0x6C616E6577690006,
        "identity": 0x6964656E74690007}


def mix64(x):
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def combine_key(key, value):
    return mix64((key + GOLDEN + mix64(value ^ 0x2545F4914F6CDD1D)) & MASK)


def epoch_key(tag, seed, epoch):
    return combine_key(combine_key(TAGS[tag], seed), epoch)


class Permutation:
    def __init__(self, n, key):
        self.n, self.state = n, key
        if n <= 16:
            table = list(range(n))
            for i in range(n, 1, -1):
                j = (self._next() * i) >> 64
                table[i - 1], table[j] = table[j], table[i - 1]
            self.table = table
            return
        bits = (n - 1).bit_length()
        left_bits = bits // 2
        self.right_bits = bits - left_bits
        self.left_mask, self.right_mask = (1 << left_bits) - 1, (1 << self.right_bits) - 1
        self.keys = [self._next() for _ in range(8 if bits > 16 else 12)]

    def _next(self):
        self.state = (self.state + GOLDEN) & MASK
        return mix64(self.state)

    def _pass(self, x):
        left, right = x >> self.right_bits, x & self.right_mask
        for i, k in enumerate(self.keys):
            if i % 2 == 0:
                right ^= mix64(left ^ k) & self.right_mask
            else:
                left ^= mix64(right ^ k) & self.left_mask
        return (left << self.right_bits) | right

    def apply(self, x):
        if self.n <= 16:
            return self.table[x]
        x = self._pass(x)
        while x >= self.n:
            x = self._pass(x)
        return x


def last_at_or_before(starts, first, last, value):
    return max(i for i in range(first, last) if starts[i] <= value)


def reference_order(mode, seed, epoch, block, counts):
    n = sum(counts)
    id_starts = [sum(counts[:i]) for i in range(len(counts))]
    if mode in ("none", "buffer"):
        return list(range(n))
    if mode == "global":
        perm = Permutation(n, epoch_key("global", seed, epoch))
        return [perm.apply(p) for p in range(n)]
    block = max(block, 1)
    shards = Permutation(len(counts), epoch_key("shards", seed, epoch))
    slot_shard = [shards.apply(j) for j in range(len(counts))]
    slot_starts = [0]
    for shard in slot_shard:
        slot_starts.append(slot_starts[-1] + counts[shard])
    window_key = epoch_key("window", seed, epoch)
    order = []
    for p in range(n):
        window = last_at_or_before(slot_starts, 0, len(counts), p) // block
        first, last = window * block, min(window * block + block, len(counts))
        begin = slot_starts[first]
        inside = Permutation(slot_starts[last] - begin, combine_key(window_key, window))
        shuffled = begin + inside.apply(p - begin)
        j = last_at_or_before(slot_starts, first, last, shuffled)
        order.append(id_starts[slot_shard[j]] + shuffled - slot_starts[j])
    return order


def fingerprint(counts):
    f = combine_key(TAGS["snapshot"], len(counts))
    for c in counts:
        f = combine_key(f, c)
    return f


CASES = [
    ("global", 0, 0, 4, [10, 20, 30]),
    ("global", 1234, 5, 4, [7]),                    # table
    ("global", 99, 1, 4, [1000, 0, 3]),             # 12-round Feistel
    ("global", 5, 2, 4, [40000, 30000]),            # 8-round Feistel (> 2^16)
    ("block", 1234, 5, 2, [10, 20, 30]),
    ("block", 8, 3, 3, [0, 50, 1, 0, 77, 12, 9, 300, 4, 0, 20]),
    ("block", 8, 3, 0, [5, 6, 7]),                  # block_shards 0 means 1
    ("none", 3, 3, 4, [3, 0, 2]),
    ("buffer", 3, 3, 4, [4]),
]


@pytest.mark.parametrize("mode,seed,epoch,block,counts", CASES)
def test_cpp_order_differs_from_documented_order(mode, seed, epoch, block, counts):
    if not TOOL.exists():
        pytest.fail(f"{TOOL} not built (cmake --build build --target order_tool)")
    args = [str(TOOL), mode, str(seed), str(epoch), str(block)] + [str(c) for c in counts]
    lines = subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()
    assert int(lines[0]) == fingerprint(counts)
    assert [int(x) for x in lines[1:]] == reference_order(mode, seed, epoch, block, counts)


def chunk_order(seed, epoch, lanes, lane_window, shards):
    """docs/order.md, "Chunks mode". shards: per shard, its chunks' record counts."""
    starts, n = [], 0
    for chunks in shards:
        for m in chunks:
            if m:
                starts.append(n)
                n += m
    c = len(starts)
    starts.append(n)
    lanes, k = max(lanes, 1), max(lane_window, 1)
    perm = Permutation(c, epoch_key("chunks", seed, epoch))
    slot_chunk = [perm.apply(j) for j in range(c)]
    slot_starts = [0]
    for ch in slot_chunk:
        slot_starts.append(slot_starts[-1] + starts[ch + 1] - starts[ch])
    base, extra = divmod(n, lanes)
    wkey = epoch_key("lanewindow", seed, epoch)

    def slot_of(t):
        return last_at_or_before(slot_starts, 0, c, t)

    order = []
    for p in range(n):
        lane, q = p % lanes, p // lanes
        begin = lane * base + min(lane, extra)
        end = begin + base + (1 if lane < extra else 0)
        lane_first, lane_end = slot_of(begin), slot_of(end - 1) + 1
        w = (slot_of(begin + q) - lane_first) // k
        first_slot = lane_first + w * k
        end_slot = min(first_slot + k, lane_end)
        first = max(slot_starts[first_slot], begin) - begin
        last = min(slot_starts[end_slot], end) - begin
        inside = Permutation(last - first, combine_key(combine_key(wkey, lane), w))
        t = begin + first + inside.apply(q - first)
        j = slot_of(t)
        order.append(starts[slot_chunk[j]] + t - slot_starts[j])
    return order


CHUNK_CASES = [
    (0, 0, 1, 1, [[5, 5], [3]]),                 # one lane, one chunk per window
    (7, 2, 1, 100, [[10, 20, 30]]),              # one window: a permutation of everything
    (7, 2, 4, 2, [[10, 20, 30], [], [1, 2, 3, 4, 5, 6, 7, 8, 9]]),
    (42, 1, 3, 1, [[17] * 12, [0], [40, 1]]),    # lanes cut chunks; empty shard
    (9, 5, 48, 3, [[8] * 40, [5] * 30]),         # more lanes than records per lane window
    (3, 0, 5, 2, [[2]]),                         # more lanes than records
]


@pytest.mark.parametrize("seed,epoch,lanes,lane_window,shards", CHUNK_CASES)
def test_cpp_chunk_order_differs_from_documented_order(seed, epoch, lanes, lane_window, shards):
    if not TOOL.exists():
        pytest.fail(f"{TOOL} not built (cmake --build build --target order_tool)")
    args = [str(TOOL), "chunks", str(seed), str(epoch), str(lanes), str(lane_window)]
    args += [",".join(str(m) for m in chunks) or "0" for chunks in shards]
    lines = subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()
    counts = [sum(chunks) for chunks in shards]
    assert int(lines[0]) == fingerprint(counts)
    expect = chunk_order(seed, epoch, lanes, lane_window, shards)
    assert sorted(expect) == list(range(sum(counts)))
    assert [int(x) for x in lines[1:]] == expect


def hash_bytes(key, data):
    h = combine_key(key, len(data))
    for i in range(0, len(data), 8):
        h = combine_key(h, int.from_bytes(data[i:i + 8].ljust(8, b"\0"), "little"))
    return h


def snapshot_fingerprint(shards):
    """docs/order.md, "Snapshot identity": shards = [(name, bytes, index_checksum, records)]."""
    f = combine_key(TAGS["identity"], len(shards))
    for name, size, checksum, records in shards:
        f = hash_bytes(f, name.encode())
        f = combine_key(combine_key(combine_key(f, size), checksum), records)
    return f


def unmask(masked):
    rot = (masked - 0xA282EAD8) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def test_cpp_snapshot_identity_differs_from_documented_identity(tmp_path):
    if not TOOL.exists():
        pytest.fail(f"{TOOL} not built (cmake --build build --target order_tool)")
    import sluice
    paths, expect = [], []
    for i, (codec, n) in enumerate([("zstd", 30), ("none", 7), ("gzip", 12)]):
        path = tmp_path / f"part-{i}.tfrecord"
        sluice.write_records(str(path), (b"r%d-%d" % (i, j) for j in range(n)), codec=codec)
        index = (tmp_path / f"part-{i}.tfrecord.idx").read_bytes()
        checksum = unmask(int.from_bytes(index[-4:], "little"))
        expect.append((path.name, path.stat().st_size, checksum, n))
        paths.append(str(path))
    out = subprocess.run([str(TOOL), "identity"] + paths, check=True, capture_output=True,
                         text=True).stdout
    assert int(out) == snapshot_fingerprint(expect)
