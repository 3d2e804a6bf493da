"""sluice's tokenizer gives SentencePiece's own ids, line for line.

Drives build/bin/text_tool (tests/tools/text_tool.cc) and compares its output with
python3-sentencepiece's encode and with spm_encode on the same lines: awkward lines
(invalid UTF-8, empty, very long) and real text from the Linux kernel documentation.
Run: SLUICE_BUILD=build /usr/bin/python3 -m pytest -q tests/python/test_text_spm.py
"""

import glob
import gzip
import os
import struct
import subprocess

import numpy as np
import pytest
import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build")))
TOOL = os.path.join(BUILD, "bin", "text_tool")
MODELS = [
    os.path.join(ROOT, "tests", "data", "text", "kernel_docs_unigram400.model"),
    os.path.join(ROOT, "tests", "data", "text", "kernel_docs_bpe500_bytes.model"),
]
KERNEL_DOCS = "/usr/share/doc/linux-doc-6.1/Documentation"


def run_tool(*args):
    assert os.path.exists(TOOL), f"{TOOL} not built (cmake --build {BUILD} --target text_tool)"
    proc = subprocess.run([TOOL, *args], capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout


def split_lines(data):
    """Lines as getline reads them: '\n'-separated, a final '\n' ends the last line."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def parse_ids(output):
    return [[int(t) for t in line.split()] for line in split_lines(output)]


def awkward_lines():
    lines = [
        b"",
        b" ",
        b"hello world",
        b"ab\xffcd",
        b"\xc3",
        b"\xed\xa0\x80surrogate",
        b"\xc0\xafoverlong",
        b"\xf4\x90\x80\x80 above U+10FFFF",
        b"truncated \xe2\x82",
        b"caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80",
        b"tab\there\r",
        b"  leading and trailing  ",
        b"\xef\xbf\xbd literal replacement character",
        b"",
        b"x" * 100_000,
        b" ".join(b"word%d" % i for i in range(20_000)),
    ]
    return lines


def kernel_doc_lines(max_files=40):
    files = sorted(glob.glob(os.path.join(KERNEL_DOCS, "**", "*.rst.gz"), recursive=True))
    if not files:
        pytest.skip("linux-doc-6.1 is not installed")
    step = max(1, len(files) // max_files)
    lines = []
    for path in files[::step][:max_files]:
        with gzip.open(path, "rb") as f:
            lines.extend(split_lines(f.read()))
    return lines


@pytest.fixture(scope="module", params=["awkward", "kernel_docs"])
def corpus(request, tmp_path_factory):
    lines = awkward_lines() if request.param == "awkward" else kernel_doc_lines()
    path = tmp_path_factory.mktemp("text") / f"{request.param}.txt"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return str(path), lines


@pytest.mark.parametrize("model", MODELS, ids=os.path.basename)
def test_ids_equal_python_sentencepiece(model, corpus):
    path, lines = corpus
    sp = spm.SentencePieceProcessor(model_file=model)
    expected = [sp.encode(line) for line in lines]
    for threads in ("1", "2"):
        got = parse_ids(run_tool("encode", model, path, threads))
        assert len(got) == len(expected)
        for i, (g, e) in enumerate(zip(got, expected)):
            assert g == e, f"line {i + 1} ({lines[i][:60]!r}), threads={threads}"


@pytest.mark.parametrize("model", MODELS, ids=os.path.basename)
def test_ids_equal_spm_encode(model, corpus):
    path, lines = corpus
    with open(path, "rb") as f:
        proc = subprocess.run(["spm_encode", f"--model={model}", "--output_format=id"],
                              stdin=f, capture_output=True, check=True)
    expected = parse_ids(proc.stdout)
    got = parse_ids(run_tool("encode", model, path, "2"))
    assert got == expected


def test_invalid_utf8_lines_match_python_decoder(corpus):
    path, lines = corpus
    expected = []
    for i, line in enumerate(lines):
        try:
            line.decode("utf-8", errors="strict")
        except UnicodeDecodeError as e:
            expected.append((i + 1, e.start))
    got = [tuple(int(x) for x in l.split()) for l in split_lines(run_tool("utf8", path))]
    assert got == expected
    if "awkward" in path:
        assert len(expected) == 6


def test_token_cache_is_megatron_layout(tmp_path):
    """The cache files parse with the Megatron-LM layout described in docs/text-format.md."""
    lines = kernel_doc_lines(max_files=5) + awkward_lines()
    text = tmp_path / "docs.txt"
    text.write_bytes(b"".join(line + b"\n" for line in lines))
    prefix = str(tmp_path / "cache")
    run_tool("cache", MODELS[0], str(text), prefix)

    idx = open(prefix + ".idx", "rb").read()
    assert idx[:9] == b"MMIDIDX\x00\x00"
    version, dtype_code, n, n_bounds = struct.unpack_from("<QBQQ", idx, 9)
    assert (version, dtype_code) == (1, 8)  # uint16 for a 400-piece vocabulary
    assert n == len(lines) and n_bounds == n + 1
    lengths = np.frombuffer(idx, dtype="<i4", count=n, offset=34)
    pointers = np.frombuffer(idx, dtype="<i8", count=n, offset=34 + 4 * n)
    bounds = np.frombuffer(idx, dtype="<i8", count=n + 1, offset=34 + 12 * n)
    assert len(idx) == 34 + 12 * n + 8 * (n + 1)
    assert list(bounds) == list(range(n + 1))
    ids = np.fromfile(prefix + ".bin", dtype="<u2")
    sp = spm.SentencePieceProcessor(model_file=MODELS[0])
    for i, line in enumerate(lines):
        start = pointers[i] // 2
        assert ids[start:start + lengths[i]].tolist() == sp.encode(line), f"document {i}"
