"""Cross-checks sluice's hand-written tf.train.Example codec against Python protobuf.

Both directions: protobuf serializes -> build/bin/example_tool decodes -> same values; the
tool encodes from the JSON form -> protobuf parses -> same values, and the bytes equal
SerializeToString(deterministic=True). The .proto (TensorFlow's field numbers) is compiled
with protoc at test time. Run: SLUICE_BUILD=build /usr/bin/python3 -m pytest tests/python
"""
import base64
import importlib
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SLUICE_BUILD", ROOT / "build"))
TOOL = BUILD / "bin" / "example_tool"


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    if shutil.which("protoc") is None:
        pytest.fail("protoc not found (Debian package protobuf-compiler)")
    out = tmp_path_factory.mktemp("proto")
    proto_dir = Path(__file__).parent / "proto"
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={out}",
                    "tf_example.proto"], check=True)
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module("tf_example_pb2")
    finally:
        sys.path.remove(str(out))


@pytest.fixture(scope="module")
def tool():
    assert TOOL.exists(), f"{TOOL} not built (cmake --build {BUILD} --target example_tool)"
    return TOOL


def run_tool(tool, *args):
    return subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True)


def decode(tool, tmp_path, data, sequence=False):
    path = tmp_path / "record.bin"
    path.write_bytes(data)
    r = run_tool(tool, "decode", *(["--sequence"] if sequence else []), path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def encode(tool, tmp_path, spec, sequence=False):
    src, out = tmp_path / "spec.json", tmp_path / "out.bin"
    src.write_text(json.dumps(spec))
    r = run_tool(tool, "encode", *(["--sequence"] if sequence else []), src, out)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


def f32(x):
    """The float32 bit pattern of x (NaN payloads aside), for exact comparison."""
    return struct.pack("<f", x) if not math.isnan(x) else b"nan"


def json_float(x):
    return "NaN" if math.isnan(x) else "Infinity" if x == math.inf else \
        "-Infinity" if x == -math.inf else x


def assert_feature_equal(feature, js):
    """feature: a protobuf Feature; js: its JSON form from example_tool."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        assert js == {}
    elif kind == "bytes_list":
        assert [base64.b64decode(v) for v in js["bytes"]] == list(feature.bytes_list.value)
    elif kind == "float_list":
        got = [float(v) if not isinstance(v, str) else float(v.replace("Infinity", "inf"))
               for v in js["float"]]
        assert [f32(v) for v in got] == [f32(v) for v in feature.float_list.value]
    else:
        assert js["int64"] == list(feature.int64_list.value)


def feature_to_json(feature):
    kind = feature.WhichOneof("kind")
    if kind == "bytes_list":
        return {"bytes": [base64.b64encode(v).decode() for v in feature.bytes_list.value]}
    if kind == "float_list":
        return {"float": [json_float(v) for v in feature.float_list.value]}
    return {"int64": list(feature.int64_list.value)}


SPECIAL_FLOATS = [0.0, -0.0, 1.5, 1e-45, 3.4028234663852886e38, math.inf, -math.inf, math.nan]
SPECIAL_INTS = [0, 1, -1, 127, 128, -(2**63), 2**63 - 1, 2**31, -(2**31)]


def random_feature(rng, feature, allow_none=True):
    kind = rng.choice(["bytes", "float", "int64", "none"] if allow_none else
                      ["bytes", "float", "int64"])
    n = rng.choice([0, 1, 2, 5, 300])
    if kind == "bytes":
        feature.bytes_list.value.extend(
            bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 7, 200]))) for _ in range(n))
        feature.bytes_list.SetInParent()
    elif kind == "float":
        feature.float_list.value.extend(
            rng.choice(SPECIAL_FLOATS + [rng.uniform(-1e6, 1e6)]) for _ in range(n))
        feature.float_list.SetInParent()
    elif kind == "int64":
        feature.int64_list.value.extend(
            rng.choice(SPECIAL_INTS + [rng.randrange(-(2**63), 2**63)]) for _ in range(n))
        feature.int64_list.SetInParent()


NAMES = ["image/encoded", "label", "", "a", "text", "caf\u00e9", "\u65e5\u672c", "x" * 200, "z"]


def random_example(pb, rng, allow_none=True):
    ex = pb.Example()
    for name in rng.sample(NAMES, rng.randrange(0, len(NAMES))):
        random_feature(rng, ex.features.feature[name], allow_none)
    return ex


def random_sequence(pb, rng, allow_none=True):
    seq = pb.SequenceExample()
    for name in rng.sample(NAMES, rng.randrange(0, 4)):
        random_feature(rng, seq.context.feature[name], allow_none)
    for name in rng.sample(NAMES, rng.randrange(0, 4)):
        steps = seq.feature_lists.feature_list[name]
        for _ in range(rng.randrange(1, 6)):
            random_feature(rng, steps.feature.add(), allow_none)
    return seq


@pytest.mark.parametrize("seed", range(25))
def test_protobuf_to_sluice_example(pb, tool, tmp_path, seed):
    rng = random.Random(seed)
    ex = random_example(pb, rng)
    for data in (ex.SerializeToString(deterministic=True), ex.SerializeToString()):
        js = decode(tool, tmp_path, data)
        assert sorted(js) == sorted(ex.features.feature)
        for name, feature in ex.features.feature.items():
            assert_feature_equal(feature, js[name])


@pytest.mark.parametrize("seed", range(15))
def test_protobuf_to_sluice_sequence_example(pb, tool, tmp_path, seed):
    rng = random.Random(1000 + seed)
    seq = random_sequence(pb, rng)
    js = decode(tool, tmp_path, seq.SerializeToString(deterministic=True), sequence=True)
    assert sorted(js["context"]) == sorted(seq.context.feature)
    for name, feature in seq.context.feature.items():
        assert_feature_equal(feature, js["context"][name])
    assert sorted(js["feature_lists"]) == sorted(seq.feature_lists.feature_list)
    for name, steps in seq.feature_lists.feature_list.items():
        assert len(js["feature_lists"][name]) == len(steps.feature)
        for feature, step in zip(steps.feature, js["feature_lists"][name]):
            assert_feature_equal(feature, step)


@pytest.mark.parametrize("seed", range(25))
def test_sluice_to_protobuf_example_bytes_equal(pb, tool, tmp_path, seed):
    rng = random.Random(2000 + seed)
    want = random_example(pb, rng, allow_none=False)  # builders cannot express "no kind"
    spec = {name: feature_to_json(f) for name, f in want.features.feature.items()}
    data = encode(tool, tmp_path, spec)
    got = pb.Example()
    got.ParseFromString(data)
    assert sorted(got.features.feature) == sorted(want.features.feature)
    for name, feature in want.features.feature.items():
        assert_feature_equal(got.features.feature[name], feature_to_json(feature))
    expected = want.SerializeToString(deterministic=True) if want.features.feature else b""
    assert data == expected


@pytest.mark.parametrize("seed", range(15))
def test_sluice_to_protobuf_sequence_example_bytes_equal(pb, tool, tmp_path, seed):
    rng = random.Random(3000 + seed)
    want = random_sequence(pb, rng, allow_none=False)
    spec = {
        "context": {n: feature_to_json(f) for n, f in want.context.feature.items()},
        "feature_lists": {n: [feature_to_json(f) for f in steps.feature]
                          for n, steps in want.feature_lists.feature_list.items()},
    }
    data = encode(tool, tmp_path, spec, sequence=True)
    got = pb.SequenceExample()
    got.ParseFromString(data)
    for name, feature in want.context.feature.items():
        assert_feature_equal(got.context.feature[name], feature_to_json(feature))
    for name, steps in want.feature_lists.feature_list.items():
        got_steps = got.feature_lists.feature_list[name].feature
        assert len(got_steps) == len(steps.feature)
        for g, w in zip(got_steps, steps.feature):
            assert_feature_equal(g, feature_to_json(w))
    # The builder omits context / feature_lists while empty; protobuf omits unset ones.
    expected = pb.SequenceExample()
    if want.context.feature:
        expected.context.CopyFrom(want.context)
    if want.feature_lists.feature_list:
        expected.feature_lists.CopyFrom(want.feature_lists)
    assert data == expected.SerializeToString(deterministic=True)


def test_imagenet_like_example_round_trips(pb, tool, tmp_path):
    rng = random.Random(7)
    ex = pb.Example()
    f = ex.features.feature
    f["image/encoded"].bytes_list.value.append(bytes(rng.getrandbits(8) for _ in range(110_000)))
    f["image/class/label"].int64_list.value.append(417)
    f["image/filename"].bytes_list.value.append(b"n02085620_1.JPEG")
    js = decode(tool, tmp_path, ex.SerializeToString(deterministic=True))
    assert base64.b64decode(js["image/encoded"]["bytes"][0]) == f["image/encoded"].bytes_list.value[0]
    assert encode(tool, tmp_path, js) == ex.SerializeToString(deterministic=True)


def test_truncations_rejected_like_protobuf(pb, tool, tmp_path):
    """Every strict prefix of a record fails in both parsers (Example has one top-level
    field and every nested message is length-prefixed); sluice reports DataLoss."""
    ex = pb.Example()
    ex.features.feature["label"].int64_list.value.extend([-5, 300])
    ex.features.feature["text"].bytes_list.value.append(b"hello")
    ex.features.feature["w"].float_list.value.append(0.25)
    data = ex.SerializeToString(deterministic=True)
    path = tmp_path / "cut.bin"
    for n in range(1, len(data)):
        with pytest.raises(Exception):
            pb.Example().ParseFromString(data[:n])
        path.write_bytes(data[:n])
        r = run_tool(tool, "decode", path)
        assert r.returncode == 1 and "DataLoss" in r.stderr and "offset" in r.stderr, (n, r.stderr)


def test_duplicate_keys_last_wins_like_protobuf(pb, tool, tmp_path):
    a, b = pb.Features(), pb.Features()
    a.feature["k"].int64_list.value.extend([1, 2])
    a.feature["j"].bytes_list.value.append(b"keep")
    b.feature["k"].float_list.value.append(3.0)
    data = b"\x0a" + bytes([len(a.SerializeToString() + b.SerializeToString())]) + \
        a.SerializeToString() + b.SerializeToString()
    want = pb.Example()
    want.ParseFromString(data)
    js = decode(tool, tmp_path, data)
    assert sorted(js) == ["j", "k"]
    for name, feature in want.features.feature.items():
        assert_feature_equal(feature, js[name])
