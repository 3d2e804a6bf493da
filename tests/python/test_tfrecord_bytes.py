"""Cross-checks sluice's record framing against an independent Python implementation.

TFRecord bytes are built here with struct and a bitwise (pure Python) CRC32C, then compared
byte for byte with what sluice writes; gzip and zstd output must decompress (with Python's
gzip and the zstd command) to the same bytes; and sluice must read files built here.
Tools are found in $SLUICE_BUILD/bin (default ./build).
"""
import gzip
import os
import random
import shutil
import struct
import subprocess

import pytest

BUILD = os.environ.get("SLUICE_BUILD", "build")
TOOL = os.path.join(BUILD, "bin", "record_tool")


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(records) -> bytes:
    out = bytearray()
    for r in records:
        length = struct.pack("<Q", len(r))
        out += length + struct.pack("<I", masked_crc(length)) + r + struct.pack("<I", masked_crc(r))
    return bytes(out)


def blobs(records) -> bytes:
    return b"".join(struct.pack("<I", len(r)) + r for r in records)


def unblob(data: bytes):
    out, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<I", data, at)
        out.append(data[at + 4:at + 4 + n])
        at += 4 + n
    return out


def tool(*args, stdin=b"", check=True):
    proc = subprocess.run([TOOL, *map(str, args)], input=stdin, capture_output=True)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr.decode())
    return proc


@pytest.fixture(scope="module")
def records():
    rng = random.Random(7)
    rs = [b"", b"a", bytes(range(256)), b"x" * 3000]
    rs += [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300))) for _ in range(40)]
    return rs


@pytest.fixture(autouse=True)
def need_tool():
    if not os.path.exists(TOOL):
        pytest.skip(f"{TOOL} not built (set SLUICE_BUILD)")


def test_uncompressed_matches_python_byte_for_byte(tmp_path, records):
    out = tmp_path / "s.tfrecord"
    tool("write", "--codec", "none", out, stdin=blobs(records))
    assert out.read_bytes() == tfrecord(records)


def test_gzip_decompresses_to_the_same_bytes(tmp_path, records):
    out = tmp_path / "s.tfrecord.gz"
    tool("write", "--codec", "gzip", out, stdin=blobs(records))
    data = out.read_bytes()
    assert data[:2] == b"\x1f\x8b"
    assert gzip.decompress(data) == tfrecord(records)


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd command not installed")
@pytest.mark.parametrize("frame_bytes", [100, 1 << 20])
def test_zstd_decompresses_to_the_same_bytes(tmp_path, records, frame_bytes):
    out = tmp_path / "s.tfrecord.zst"
    tool("write", "--codec", "zstd", "--frame-bytes", frame_bytes, out, stdin=blobs(records))
    plain = subprocess.run(["zstd", "-dc", out], capture_output=True, check=True).stdout
    assert plain == tfrecord(records)


def test_reads_python_built_uncompressed_file(tmp_path, records):
    path = tmp_path / "py.tfrecord"
    path.write_bytes(tfrecord(records))
    assert unblob(tool("read", path).stdout) == records
    assert unblob(tool("get", path).stdout) == records  # index built from the foreign file


def test_reads_python_built_gzip_file(tmp_path, records):
    path = tmp_path / "py.tfrecord.gz"
    path.write_bytes(gzip.compress(tfrecord(records)))
    assert unblob(tool("read", path).stdout) == records
    assert unblob(tool("get", path).stdout) == records


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd command not installed")
def test_reads_zstd_command_output(tmp_path, records):
    plain = tmp_path / "py.tfrecord"
    plain.write_bytes(tfrecord(records))
    subprocess.run(["zstd", "-q", "-19", plain, "-o", tmp_path / "py.tfrecord.zst"], check=True)
    assert unblob(tool("read", tmp_path / "py.tfrecord.zst").stdout) == records
    assert unblob(tool("get", tmp_path / "py.tfrecord.zst").stdout) == records


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd command not installed")
def test_reads_streamed_zstd_without_content_size(tmp_path, records):
    # zstd reading stdin cannot know the content size, so its frame header omits it.
    packed = subprocess.run(["zstd", "-q", "-c"], input=tfrecord(records), capture_output=True,
                            check=True).stdout
    path = tmp_path / "stream.tfrecord.zst"
    path.write_bytes(packed)
    assert unblob(tool("read", path).stdout) == records
    assert unblob(tool("get", path).stdout) == records


def test_reads_multi_member_gzip_split_inside_a_record(tmp_path, records):
    data = tfrecord(records)
    cut = len(tfrecord(records[:3])) + 7  # inside record 3's header
    path = tmp_path / "members.tfrecord.gz"
    path.write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]))
    assert unblob(tool("read", path).stdout) == records
    assert unblob(tool("get", path).stdout) == records


def test_corrupt_record_strict_error_and_skip(tmp_path, records):
    data = bytearray(tfrecord(records))
    offset = len(tfrecord(records[:5]))
    data[offset + 13] ^= 0xFF  # first payload byte of record 5
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(bytes(data))
    strict = tool("read", path, check=False)
    assert strict.returncode != 0
    assert f"offset {offset}: payload CRC mismatch (record 5)" in strict.stderr.decode()
    skip = tool("read", path, "--skip")
    assert unblob(skip.stdout) == records[:5] + records[6:]
    assert f"skipped {offset} +" in skip.stderr.decode()


def test_torn_tail_tolerated(tmp_path, records):
    data = tfrecord(records)
    path = tmp_path / "torn.tfrecord"
    path.write_bytes(data[:-3])
    assert tool("read", path, check=False).returncode != 0
    torn = tool("read", path, "--tolerate-torn-tail")
    assert unblob(torn.stdout) == records[:-1]
    assert "torn tail" in torn.stderr.decode()
