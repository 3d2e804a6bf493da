"""End-to-end tests of the `sluice` command (run with /usr/bin/python3 -m pytest).

The binary is $SLUICE_BUILD/bin/sluice (default ./build). Records are cross-checked with
code written here from the format description: TFRecord framing with a bitwise CRC32C, and
tf.train.Example through Python protobuf (tests/python/proto/tf_example.proto).
"""
import base64
import gzip
import importlib
import io
import json
import os
import re
import struct
import subprocess
import sys

import pytest
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
SLUICE = os.path.join(BUILD, "bin", "sluice")
SHARD_NAME = re.compile(r"^data-([0-9a-f]{12})-(\d{5})\.tfrecord(\.zst|\.gz)?$")


def sluice(*args, check=None):
    """Runs sluice; check=N asserts the exit code."""
    if not os.path.exists(SLUICE):
        pytest.fail(f"{SLUICE} not built (set SLUICE_BUILD or run make build)")
    r = subprocess.run([SLUICE, *map(str, args)], capture_output=True, text=True, timeout=300)
    if check is not None:
        assert r.returncode == check, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r


def summary(stdout):
    """The 'key: value' summary lines of a convert command, as ints where possible."""
    out = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep and key in ("records", "skipped", "shards"):
            out[key] = int(value)
    return out


# --- TFRecord framing, written from docs/format.md -------------------------------------

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def frame(payload):
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked_crc(length)) + payload + struct.pack(
        "<I", masked_crc(payload))


def record_spans(data):
    """(offset, payload) of each record of an uncompressed TFRecord file."""
    spans, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        spans.append((pos, data[pos + 12:pos + 12 + n]))
        pos += 12 + n + 4
    return spans


@pytest.fixture(scope="session")
def example_pb2(tmp_path_factory):
    """tf.train.Example classes compiled from tests/python/proto with protoc."""
    out = tmp_path_factory.mktemp("proto")
    proto_dir = os.path.join(ROOT, "tests", "python", "proto")
    subprocess.run(["protoc", f"-I{proto_dir}", f"--python_out={out}", "tf_example.proto"],
                   check=True)
    sys.path.insert(0, str(out))
    return importlib.import_module("tf_example_pb2")


def inspect_json(path, n=100000):
    r = sluice("inspect", path, "--json", "--records", n, check=0)
    return [json.loads(line) for line in r.stdout.splitlines()]


def b64(feature):
    return [base64.b64decode(v) for v in feature["bytes"]]


# --- image folder ----------------------------------------------------------------------

def save_image(path, size, seed, fmt):
    im = Image.new("RGB", size)
    im.putdata([((x * 7 + seed) % 256, (y * 5 + seed * 3) % 256, (x * y + seed) % 256)
                for y in range(size[1]) for x in range(size[0])])
    im.save(path, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))


@pytest.fixture
def image_folder(tmp_path):
    """3 classes of JPEG/PNG images, plus a truncated JPEG, a text file named .jpg and an
    ignored README. Returns (root, good relative paths, bad relative paths)."""
    root = tmp_path / "images"
    good = []
    for c, name in enumerate(["cat", "dog", "zebra"]):
        (root / name).mkdir(parents=True)
        for i in range(9):
            fmt, ext = ("PNG", "png") if i % 4 == 3 else ("JPEG", "jpg")
            rel = f"{name}/img{i:02d}.{ext}"
            save_image(root / rel, (40 + 8 * i, 30 + 4 * c), seed=c * 100 + i, fmt=fmt)
            good.append(rel)
    whole = (root / "dog/img00.jpg").read_bytes()
    (root / "dog/truncated.jpg").write_bytes(whole[:len(whole) // 2])
    (root / "cat/notes.jpg").write_text("not an image at all\n")
    (root / "zebra/README.txt").write_text("ignored: no image extension\n")
    return root, sorted(good), ["cat/notes.jpg", "dog/truncated.jpg"]


def test_convert_images_skips_bad_files_and_labels_by_sorted_class(image_folder, tmp_path):
    root, good, bad = image_folder
    out = tmp_path / "shards"
    r = sluice("convert", "images", root, out, "--threads", 2, check=0)
    for rel in bad:
        assert re.search(rf"skipped {re.escape(str(root / rel))}: \S", r.stderr), r.stderr
    assert "warning" in r.stderr
    assert summary(r.stdout) == {"records": len(good), "skipped": 2, "shards": 1}
    classes_file = json.loads((out / "dataset.json").read_text())["metadata"]["classes_file"]
    assert re.fullmatch(r"classes-[0-9a-f]{12}\.txt", classes_file)
    assert (out / classes_file).read_text() == "cat\ndog\nzebra\n"

    records = inspect_json(out)
    assert [b64(e["image/filename"])[0].decode() for e in records] == good
    for e in records:
        rel = b64(e["image/filename"])[0].decode()
        assert e["image/class/label"]["int64"] == [["cat", "dog", "zebra"].index(rel.split("/")[0])]
        assert b64(e["image/encoded"]) == [(root / rel).read_bytes()]
        assert b64(e["image/format"]) == [b"png" if rel.endswith(".png") else b"jpeg"]
        with Image.open(root / rel) as im:
            assert (e["image/width"]["int64"], e["image/height"]["int64"]) == ([im.width],
                                                                              [im.height])


def test_convert_images_output_identical_for_any_thread_count(image_folder, tmp_path):
    """Byte-identical shards, indexes and class list in the same order; only the run id in
    the file names (and the manifest's "run") differs between runs."""
    root, _, _ = image_folder
    outputs = []
    for threads in (1, 2, 5):
        out = tmp_path / f"t{threads}"
        sluice("convert", "images", root, out, "--threads", threads, "--shard-size", "20KB",
               check=0)
        manifest = json.loads((out / "dataset.json").read_text())
        run = manifest.pop("run")
        files = [s["path"] for s in manifest["shards"]] + [s["index"] for s in manifest["shards"]]
        files.append(manifest["metadata"]["classes_file"])
        assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".sluice-lock")) == \
            sorted(files + ["dataset.json"])
        outputs.append((json.dumps(manifest).replace(run, "RUN"),
                        [(out / f).read_bytes() for f in files]))
    assert len(outputs[0][1]) > 3  # several shards, their indexes, the class list
    assert outputs[0] == outputs[1] == outputs[2]


def test_convert_images_oversized_sof_does_not_drop_the_good_jpegs_after_it(tmp_path):
    """A JPEG whose SOF claims 65535x65535 (beyond libjpeg's limit) among 20 valid ones: on
    one thread, the valid JPEGs after it used to fail "two SOI markers" and were dropped."""
    root = tmp_path / "images"
    (root / "cls").mkdir(parents=True)
    for i in range(20):
        save_image(root / "cls" / f"img{i:02d}.jpg", (24 + i, 16), seed=i, fmt="JPEG")
    data = bytearray((root / "cls" / "img05.jpg").read_bytes())
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 9] = struct.pack(">HH", 65535, 65535)  # height, width
    bad = root / "cls" / "img05b.jpg"  # sorts between img05 and img06
    bad.write_bytes(bytes(data))
    for verify in ((), ("--no-verify-images",)):
        out = tmp_path / f"out{len(verify)}"
        r = sluice("convert", "images", root, out, "--threads", 1, *verify, check=0)
        assert re.search(rf"skipped {re.escape(str(bad))}: \S", r.stderr), r.stderr
        assert "SOI" not in r.stderr, r.stderr
        assert summary(r.stdout) == {"records": 20, "skipped": 1, "shards": 1}, r.stdout
        assert len(inspect_json(out)) == 20


def test_convert_images_refuses_to_overwrite_a_dataset(image_folder, tmp_path):
    root, _, _ = image_folder
    sluice("convert", "images", root, tmp_path / "out", check=0)
    r = sluice("convert", "images", root, tmp_path / "out", check=1)
    assert "dataset.json exists" in r.stderr and "--overwrite" in r.stderr


def test_convert_images_missing_input_fails(tmp_path):
    r = sluice("convert", "images", tmp_path / "nowhere", tmp_path / "out", check=1)
    assert "nowhere" in r.stderr
    assert not (tmp_path / "out" / "dataset.json").exists()


# --- JSON lines ------------------------------------------------------------------------

JSONL_LINES = [
    '{"text": "hello world", "id": 7, "score": 0.5, "ok": true, "ids": [1, 2, 3],'
    ' "probs": [0.25, 1], "tags": ["a", "b"], "meta": {"x": 1}, "none": null}',
    '{"text": "second", "id": -3, "score": 2, "ok": false, "ids": [], "probs": [1.5],'
    ' "tags": ["c"]}',
    '{"text": "broken", "id": ',
    '{"text": "caf\\u00e9 \\u2603", "id": 9000000000, "score": -1.25, "ok": true, "ids": [4],'
    ' "probs": [0.5, 0.5], "tags": []}',
    '{"title": "no text field", "id": 1}',
    '',
    '{"text": "last", "id": 0, "score": 1e-3, "ok": false, "ids": [5, 6], "probs": [0.0],'
    ' "tags": ["z"]}',
]


def test_convert_jsonl_reports_bad_lines_and_types_fields(tmp_path):
    src = tmp_path / "data.jsonl"
    src.write_text("\n".join(JSONL_LINES) + "\n")
    out = tmp_path / "out"
    r = sluice("convert", "jsonl", src, out, check=0)
    assert re.search(rf"{re.escape(str(src))}:3: invalid JSON", r.stderr), r.stderr
    assert re.search(rf"{re.escape(str(src))}:5: no \"text\" field", r.stderr), r.stderr
    assert summary(r.stdout) == {"records": 4, "skipped": 2, "shards": 1}
    assert 'field "meta" (object) not converted in 1 line(s), first on line 1' in r.stdout
    assert 'field "none" (null)' in r.stdout

    rec = inspect_json(out)
    assert [b64(e["text"])[0].decode() for e in rec] == ["hello world", "second",
                                                          "caf\u00e9 \u2603", "last"]
    assert [e["id"]["int64"] for e in rec] == [[7], [-3], [9000000000], [0]]
    assert [e["score"]["float"] for e in rec] == [[0.5], [2.0], [-1.25], [0.001]]
    assert [e["ok"]["int64"] for e in rec] == [[1], [0], [1], [0]]
    assert [e.get("ids", {}).get("int64", []) for e in rec] == [[1, 2, 3], [], [4], [5, 6]]
    assert [e["probs"]["float"] for e in rec] == [[0.25, 1.0], [1.5], [0.5, 0.5], [0.0]]
    assert [b64(e.get("tags", {"bytes": []})) for e in rec] == [[b"a", b"b"], [b"c"], [], [b"z"]]
    assert all("meta" not in e and "none" not in e for e in rec)

    manifest = json.loads((out / "dataset.json").read_text())
    assert manifest["features"]["text"] == {"type": "bytes", "values_per_record": 1}
    assert manifest["features"]["score"] == {"type": "float", "values_per_record": 1}
    assert manifest["features"]["ids"] == {"type": "int64", "values_per_record": -1}


def test_convert_jsonl_type_clash_skips_the_line(tmp_path):
    src = tmp_path / "data.jsonl"
    src.write_text('{"text": "a", "n": 1}\n{"text": "b", "n": "one"}\n{"text": "c", "n": 2}\n')
    r = sluice("convert", "jsonl", src, tmp_path / "out", check=0)
    assert re.search(r":2: field \"n\" is bytes here but int64", r.stderr), r.stderr
    assert summary(r.stdout)["records"] == 2


def files_of(directory):
    """The files of `directory` but the writer lock's entry (which every run advances)."""
    if not directory.exists():
        return []
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith(".sluice-lock"))


def test_convert_strict_fails_at_the_first_skip_and_publishes_nothing(tmp_path, image_folder):
    """--strict: the input that would be skipped fails the run (exit 1) naming it; the run's
    files are gone and a dataset already in OUT is untouched. Without it: skipped, exit 0."""
    src = tmp_path / "data.jsonl"
    src.write_text('{"text": "a", "x": 0.5}\n{"text": "b", "x": 1e40}\n'
                   '{"text": "c", "x": "bad"}\n{"text": "d", "x": 2}\n')
    out = tmp_path / "out"
    r = sluice("convert", "jsonl", src, out, check=0)  # the default: skip with a warning
    assert summary(r.stdout)["skipped"] == 2 and "warning" in r.stderr
    before = {name: (out / name).read_bytes() for name in files_of(out)}
    fresh = tmp_path / "fresh"
    for target, extra in ((out, ("--overwrite",)), (fresh, ())):
        r = sluice("convert", "jsonl", src, target, "--strict", *extra, check=1)
        assert (f"sluice: error: {src}:2: field \"x\" (float): 1e+40 is beyond float32's "
                f"range") in r.stderr, r.stderr
        assert "--strict" in r.stderr and "nothing was published" in r.stderr
        assert "skipped" not in r.stderr.replace("a skipped input", "")
    assert {name: (out / name).read_bytes() for name in files_of(out)} == before
    assert files_of(fresh) == []

    root, _, bad = image_folder
    images_out = tmp_path / "images_out"
    r = sluice("convert", "images", root, images_out, "--strict", "--threads", 2, check=1)
    assert f"sluice: error: {root / bad[0]}: " in r.stderr, r.stderr  # the first in order
    assert "nothing was published" in r.stderr
    assert files_of(images_out) == []
    for rel in bad:
        os.remove(root / rel)
    r = sluice("convert", "images", root, images_out, "--strict", check=0)
    assert summary(r.stdout)["skipped"] == 0


def test_convert_text_strict_is_on_error_raise(tmp_path):
    model = os.path.join(ROOT, "tests", "data", "text", "kernel_docs_unigram400.model")
    src = tmp_path / "t.txt"
    src.write_bytes(b"good line\nbad \xff line\nlast\n")
    out = tmp_path / "out"
    r = sluice("convert", "text", src, out, "--tokenizer", model, "--on-error", "skip", check=0)
    assert summary(r.stdout)["skipped"] == 1
    r = sluice("convert", "text", src, tmp_path / "strict", "--tokenizer", model, "--on-error",
               "skip", "--strict", check=1)
    assert f"sluice: error: {src}: offset 14: line 2: invalid UTF-8" in r.stderr, r.stderr
    assert not (tmp_path / "strict" / "dataset.json").exists()


def test_small_shard_size_rolls_into_named_indexed_shards(tmp_path):
    src = tmp_path / "data.jsonl"
    src.write_text("".join(json.dumps({"text": f"line {i} " + "x" * (150 + i % 50), "i": i}) +
                           "\n" for i in range(600)))
    out = tmp_path / "out"
    r = sluice("convert", "jsonl", src, out, "--shard-size", "8KB", check=0)
    names = sorted(p.name for p in out.iterdir())
    shards = [n for n in names if SHARD_NAME.match(n)]
    assert len(shards) >= 3 and summary(r.stdout)["shards"] == len(shards)
    manifest = json.loads((out / "dataset.json").read_text())
    assert {SHARD_NAME.match(n).group(1) for n in shards} == {manifest["run"]}
    assert [int(SHARD_NAME.match(n).group(2)) for n in shards] == list(range(len(shards)))
    assert sorted(names) == sorted(shards + [s + ".idx" for s in shards] + ["dataset.json",
                                                                          ".sluice-lock.2"])

    assert [s["path"] for s in manifest["shards"]] == shards
    assert sum(s["records"] for s in manifest["shards"]) == manifest["total_records"] == 600
    for s in manifest["shards"]:
        assert s["file_bytes"] == (out / s["path"]).stat().st_size
        assert s["index"] == s["path"] + ".idx"
    assert [e["i"]["int64"][0] for e in inspect_json(out)] == list(range(600))


# --- verify ----------------------------------------------------------------------------

def test_verify_clean_then_flipped_byte_names_file_and_offset(tmp_path):
    src = tmp_path / "data.jsonl"
    src.write_text("".join(json.dumps({"text": f"record {i} " + "y" * 300}) + "\n"
                           for i in range(40)))
    out = tmp_path / "out"
    sluice("convert", "jsonl", src, out, "--codec", "none", check=0)
    r = sluice("verify", out, check=0)
    assert "no faults" in r.stdout

    shard = next(p for p in out.iterdir() if p.name.endswith(".tfrecord"))
    data = bytearray(shard.read_bytes())
    spans = record_spans(bytes(data))
    damaged_offset, payload = spans[17]
    data[damaged_offset + 12 + len(payload) // 2] ^= 0x01  # inside record 17's payload
    shard.write_bytes(bytes(data))

    r = sluice("verify", out, check=1)
    faults = re.findall(r"^(.+):(\d+): (.+)$", r.stdout, re.M)
    assert faults, r.stdout
    assert all(f[0] == str(shard) for f in faults), r.stdout
    assert int(faults[0][1]) == damaged_offset, r.stdout
    assert "39 records" in r.stdout  # the 39 intact records were still read


def test_verify_reports_a_wrong_index(tmp_path):
    src = tmp_path / "data.jsonl"
    src.write_text("".join(json.dumps({"text": f"r{i}"}) + "\n" for i in range(10)))
    out = tmp_path / "out"
    sluice("convert", "jsonl", src, out, "--codec", "none", check=0)
    index = next(p for p in out.iterdir() if p.name.endswith(".idx"))
    index.write_bytes(b"garbage, not an index")
    r = sluice("verify", out, check=1)
    assert str(index) in r.stdout


def test_verify_reports_an_index_of_another_shard(tmp_path):
    # Two shards with as many records each, but records of other lengths: each index is
    # well formed, and only comparing its entries with the records found catches the swap.
    src = tmp_path / "data.jsonl"
    src.write_text("".join(json.dumps({"text": f"r{i} " + "z" * (i % 5) * 40}) + "\n"
                           for i in range(400)))
    out = tmp_path / "out"
    sluice("convert", "jsonl", src, out, "--codec", "none", "--shard-size", "8KB", check=0)
    shards = sorted(p for p in out.iterdir() if p.name.endswith(".tfrecord"))
    assert len(shards) >= 3
    a, b = shards[0], shards[1]
    ia, ib = a.with_name(a.name + ".idx"), b.with_name(b.name + ".idx")
    ia_bytes = ia.read_bytes()
    ia.write_bytes(ib.read_bytes())
    ib.write_bytes(ia_bytes)
    r = sluice("verify", out, check=1)
    assert str(a) in r.stdout or str(ia) in r.stdout, r.stdout


def test_verify_names_the_index_entries_that_point_at_other_records(tmp_path):
    # A's index says B's places: records 1 and 2 swapped (B's lengths), the first and last
    # records and the file size the same, so the index opens and only the entry-by-entry
    # comparison (after the digests of the places differ) names the two wrong entries.
    texts = ["a1", "b" * 30, "c" * 10, "d4"]
    for name, order in (("a", texts), ("b", [texts[0], texts[2], texts[1], texts[3]])):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"text": t}) + "\n" for t in order))
        sluice("convert", "jsonl", tmp_path / f"{name}.jsonl", tmp_path / name,
               "--codec", "none", check=0)
    index_a = next((tmp_path / "a").glob("*.idx"))
    index_a.write_bytes(next((tmp_path / "b").glob("*.idx")).read_bytes())
    shard_a = str(index_a)[:-len(".idx")]
    r = sluice("verify", tmp_path / "a", check=1)
    spans = record_spans(open(shard_a, "rb").read())
    b_spans = record_spans(open(next((tmp_path / "b").glob("*.tfrecord")), "rb").read())
    assert re.findall(r"^(.+):(\d+): index entry (\d) points at another record than record \3$",
                      r.stdout, re.M) == [(shard_a, str(b_spans[1][0]), "1"),
                                          (shard_a, str(b_spans[2][0]), "2")], r.stdout
    assert spans[0] == b_spans[0] and spans[3][0] == b_spans[3][0]
    assert "2 fault(s)" in r.stdout


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_verify_lists_faults_of_many_shards_in_shard_order(tmp_path, codec):
    src = tmp_path / "data.jsonl"
    src.write_text("".join(json.dumps({"text": f"record {i} " + "q" * 200}) + "\n"
                           for i in range(600)))
    out = tmp_path / "out"
    sluice("convert", "jsonl", src, out, "--codec", codec, "--shard-size", "16KB", check=0)
    shards = sorted(p for p in out.iterdir() if ".tfrecord" in p.name
                    and not p.name.endswith(".idx"))
    assert len(shards) >= 6
    damaged = [shards[1], shards[4], shards[-1]]
    for shard in damaged:
        data = bytearray(shard.read_bytes())
        data[len(data) // 2] ^= 0x40
        shard.write_bytes(bytes(data))
    r = sluice("verify", out, check=1)
    named = [line.split(":")[0] for line in r.stdout.splitlines() if ":" in line
             and line.split(":")[0].endswith((".tfrecord", ".zst"))]
    firsts = list(dict.fromkeys(named))
    assert firsts == [str(s) for s in damaged], r.stdout


def one_shard_dataset(tmp_path, lengths):
    """A dataset of one uncompressed shard holding a record per length; its shard path."""
    src = tmp_path / "data.jsonl"
    src.write_text("".join(json.dumps({"text": f"r{i} " + "w" * n}) + "\n"
                           for i, n in enumerate(lengths)))
    out = tmp_path / "out"
    sluice("convert", "jsonl", src, out, "--codec", "none", check=0)
    return out, next(p for p in out.iterdir() if p.name.endswith(".tfrecord"))


def test_verify_finds_a_flipped_byte_in_the_second_half_of_a_split_shard(tmp_path):
    # One shard on several threads: verify splits it at a record boundary from the index.
    # The damage in the second piece is named by the same file:offset as a sequential read.
    out, shard = one_shard_dataset(tmp_path, [300 + i % 7 for i in range(2000)])
    data = bytearray(shard.read_bytes())
    spans = record_spans(bytes(data))
    offset, payload = spans[1700]
    data[offset + 12 + len(payload) // 2] ^= 0x10
    shard.write_bytes(bytes(data))
    r = sluice("verify", out, check=1)
    assert re.findall(r"^(.+):(\d+): (.+)$", r.stdout, re.M) == [
        (str(shard), str(offset), f"payload CRC mismatch ({len(payload) + 16} bytes skipped)")
    ], r.stdout
    assert "1999 records: 1 fault(s)" in r.stdout


def test_verify_names_a_truncated_shard(tmp_path):
    out, shard = one_shard_dataset(tmp_path, [300] * 500)
    size = shard.stat().st_size
    last, payload = record_spans(shard.read_bytes())[-1]
    os.truncate(shard, size - 100)
    r = sluice("verify", out, check=1)
    remain = size - 100 - last
    assert f"{shard}:{last}: truncated record: length {len(payload)} needs " \
           f"{len(payload) + 16} bytes, {remain} remain ({remain} bytes skipped)" in r.stdout
    assert f"manifest says {size} bytes, the file has {size - 100}" in r.stdout
    assert "499 records: 2 fault(s)" in r.stdout


def test_verify_checks_records_longer_than_its_read_buffer(tmp_path):
    out, shard = one_shard_dataset(tmp_path, [10, 700_000, 20, 900_000, 30])
    r = sluice("verify", out, check=0)
    assert "5 records: no faults" in r.stdout
    data = bytearray(shard.read_bytes())
    offset, payload = record_spans(bytes(data))[3]
    data[offset + 12 + 800_000] ^= 0x01
    shard.write_bytes(bytes(data))
    r = sluice("verify", out, check=1)
    assert f"{shard}:{offset}: payload CRC mismatch" in r.stdout, r.stdout
    assert "4 records: 1 fault(s)" in r.stdout


# --- index and inspect of foreign TFRecord files ---------------------------------------

def foreign_examples(example_pb2):
    examples = []
    for i in range(25):
        e = example_pb2.Example()
        e.features.feature["label"].int64_list.value.append(i)
        e.features.feature["blob"].bytes_list.value.append(bytes(range(i % 256)) * 3)
        e.features.feature["w"].float_list.value.extend([i / 4, -1.5])
        examples.append(e)
    return examples


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_index_foreign_tfrecord_then_inspect(tmp_path, example_pb2, codec):
    examples = foreign_examples(example_pb2)
    data = b"".join(frame(e.SerializeToString()) for e in examples)
    path = tmp_path / ("foreign.tfrecord" + (".gz" if codec == "gzip" else ""))
    path.write_bytes(gzip.compress(data) if codec == "gzip" else data)

    r = sluice("index", path, check=0)
    assert "25 records" in r.stdout
    assert (codec == "gzip") == ("gzip allows no random access" in r.stdout)
    assert os.path.exists(str(path) + ".idx")

    r = sluice("inspect", path, check=0)
    assert re.search(rf"{codec}\s+25\s+\d+\s+yes", r.stdout), r.stdout
    assert re.search(r"blob\s+bytes", r.stdout) and re.search(r"w\s+float\s+2 per", r.stdout)
    got = inspect_json(path)
    assert len(got) == 25
    for e, g in zip(examples, got):
        f = e.features.feature
        assert g["label"]["int64"] == list(f["label"].int64_list.value)
        assert b64(g["blob"]) == list(f["blob"].bytes_list.value)
        assert g["w"]["float"] == pytest.approx(list(f["w"].float_list.value))
    sluice("verify", path, check=0)


def test_index_of_corrupt_file_fails_and_writes_nothing(tmp_path):
    data = bytearray(frame(b"one") + frame(b"two"))
    data[-2] ^= 0xFF
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(bytes(data))
    r = sluice("index", path, check=1)
    assert "bad.tfrecord" in r.stderr
    assert not os.path.exists(str(path) + ".idx")


def test_inspect_overview_of_a_dataset(image_folder, tmp_path):
    root, good, _ = image_folder
    out = tmp_path / "shards"
    sluice("convert", "images", root, out, "--shard-size", "30KB", check=0)
    r = sluice("inspect", out, check=0)
    assert re.search(rf"{len(good)} records", r.stdout)
    assert "features (from dataset.json)" in r.stdout
    assert re.search(r"image/class/label\s+int64\s+1 per record", r.stdout)
    assert "source: images" in r.stdout
    manifest = json.loads((out / "dataset.json").read_text())
    for s in manifest["shards"]:
        assert re.search(rf"{re.escape(s['path'])}\s+zstd\s+{s['records']}\s", r.stdout)
    # a glob over the same shards finds the same records
    glob_records = inspect_json(str(out / "data-*"))
    assert len(glob_records) == len(good)


def test_inspect_missing_path_is_an_error(tmp_path):
    r = sluice("inspect", tmp_path / "missing", check=1)
    assert "missing" in r.stderr


# --- command line ----------------------------------------------------------------------

# Each command with something its help must show: main.cc adds a command's options only when
# the command line names it, so this also checks that each one gets them.
HELP_SHOWS = {(): "verify", ("convert",): "images", ("convert", "images"): "--threads",
              ("convert", "jsonl"): "--text-field", ("convert", "text"): "--paragraphs",
              ("inspect",): "--records", ("verify",): "PATH", ("index",): "--recover",
              ("stats",): "--key", ("dedup",): "--feature", ("clean",): "--break-lock",
              ("cache",): "warm", ("reshard",): "--seed", ("table",): "vacuum"}


@pytest.mark.parametrize("command", sorted(HELP_SHOWS))
def test_help_for_every_command(command):
    r = sluice(*command, "--help", check=0)
    assert "Usage" in r.stdout or "usage" in r.stdout.lower()
    assert HELP_SHOWS[command] in r.stdout, r.stdout


def test_bad_command_line_exits_2():
    sluice("verify", check=2)
    sluice("convert", "images", "a", "b", "--codec", "lz4", check=2)
    sluice("no-such-command", check=2)
