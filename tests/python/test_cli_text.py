"""`sluice convert text|jsonl --tokenizer`: ids equal python3-sentencepiece's encode, --keep-text,
bad UTF-8 reported with its line number under --on-error, --max-tokens policies, and the
--token-cache files readable with numpy per docs/text-format.md ("Token cache").
Run: SLUICE_BUILD=build /usr/bin/python3 -m pytest -q tests/python/test_cli_text.py
"""
import json
import os
import struct

import numpy as np
import pytest
import sentencepiece as spm

import sluice
from test_cli import sluice as run, summary

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "tests", "data", "text", "kernel_docs_unigram400.model")
LINES = ["The kernel schedules tasks.", "", "Interrupts are handled quickly", "ünïcödé text ok",
         "last line of the corpus"]


@pytest.fixture(scope="module")
def sp():
    return spm.SentencePieceProcessor(model_file=MODEL)


def read_tokens(out, extra=None):
    """(tokens, extra features) of every record of the shards in `out`, via sluice.read."""
    features = {"tokens": "int64[-1]"}
    features.update(extra or {})
    rows = list(sluice.read(out).parse_example(features).iterator(threads=1))
    return [r["tokens"].tolist() for r in rows], rows


def features(out):
    """Feature names in the dataset.json of `out`."""
    return set(json.load(open(os.path.join(out, "dataset.json")))["features"])


def read_cache(prefix):
    """docs/text-format.md: .idx header (magic, u64 version, u8 dtype, u64 count, u64
    boundaries), int32 lengths, int64 byte offsets; .bin ids."""
    idx = open(prefix + ".idx", "rb").read()
    assert idx[:9] == b"MMIDIDX\x00\x00"
    version, dtype, count, _ = struct.unpack_from("<QBQQ", idx, 9)
    assert version == 1
    lengths = np.frombuffer(idx, np.int32, count, 34)
    offsets = np.frombuffer(idx, np.int64, count, 34 + 4 * count)
    ids = np.fromfile(prefix + ".bin", {8: np.uint16, 4: np.int32}[dtype])
    width = ids.itemsize
    return [ids[o // width:o // width + n].tolist() for o, n in zip(offsets, lengths)]


def test_convert_text_ids_equal_sentencepiece(tmp_path, sp):
    src = tmp_path / "a.txt"
    src.write_text("\n".join(LINES) + "\n")
    r = run("convert", "text", src, tmp_path / "out", "--tokenizer", MODEL, check=0)
    assert summary(r.stdout)["records"] == len(LINES)
    tokens, _ = read_tokens(str(tmp_path / "out"))
    assert tokens == [sp.encode(line) for line in LINES]
    assert "text" not in features(tmp_path / "out")


def test_convert_text_paragraphs_and_keep_text(tmp_path, sp):
    src = tmp_path / "a.txt"
    src.write_text("first para\nstill first\n\n\nsecond para\n")
    run("convert", "text", src, tmp_path / "out", "--tokenizer", MODEL, "--paragraphs",
        "--keep-text", check=0)
    tokens, rows = read_tokens(str(tmp_path / "out"), {"text": "bytes"})
    paras = ["first para\nstill first", "second para"]
    assert tokens == [sp.encode(p) for p in paras]
    assert [bytes(r["text"]).decode() for r in rows] == paras


def test_convert_text_bad_utf8_raise_names_line_skip_continues(tmp_path, sp):
    src = tmp_path / "a.txt"
    src.write_bytes(b"good line\nsecond\nbad \xff byte\nafter\n")
    r = run("convert", "text", src, tmp_path / "out", "--tokenizer", MODEL, check=1)
    assert "line 3" in r.stderr and "invalid UTF-8" in r.stderr and "offset 21" in r.stderr
    assert not (tmp_path / "out" / "dataset.json").exists()
    r = run("convert", "text", src, tmp_path / "out2", "--tokenizer", MODEL, "--on-error", "skip",
            check=0)
    assert "a.txt:3: invalid UTF-8" in r.stderr
    assert summary(r.stdout)["skipped"] == 1
    tokens, _ = read_tokens(str(tmp_path / "out2"))
    assert tokens == [sp.encode(t) for t in ["good line", "second", "after"]]


def test_convert_jsonl_tokenizer_keeps_other_fields(tmp_path, sp):
    src = tmp_path / "a.jsonl"
    docs = [{"text": "hello kernel", "id": 1}, {"text": "memory management", "id": 2}]
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))
    run("convert", "jsonl", src, tmp_path / "out", "--tokenizer", MODEL, check=0)
    tokens, rows = read_tokens(str(tmp_path / "out"), {"id": "int64"})
    assert tokens == [sp.encode(d["text"]) for d in docs]
    assert [int(r["id"]) for r in rows] == [1, 2]
    assert "text" not in features(tmp_path / "out")
    run("convert", "jsonl", src, tmp_path / "kept", "--tokenizer", MODEL, "--keep-text", check=0)
    _, rows = read_tokens(str(tmp_path / "kept"), {"text": "bytes"})
    assert [bytes(r["text"]).decode() for r in rows] == [d["text"] for d in docs]


def test_convert_jsonl_bad_utf8_line_number(tmp_path):
    src = tmp_path / "a.jsonl"
    src.write_bytes(b'{"text": "ok"}\n{"text": "bad \xfe"}\n')
    r = run("convert", "jsonl", src, tmp_path / "out", "--tokenizer", MODEL, check=1)
    assert "line 2" in r.stderr and "invalid UTF-8" in r.stderr


def test_max_tokens_raise_truncate_split(tmp_path, sp):
    src = tmp_path / "a.txt"
    long_line = "the kernel documentation describes interrupts and scheduling in detail"
    src.write_text("short\n" + long_line + "\n")
    ids = sp.encode(long_line)
    assert len(ids) > 5
    r = run("convert", "text", src, tmp_path / "r", "--tokenizer", MODEL, "--max-tokens", 5,
            "--long", "raise", check=1)
    assert "line 2" in r.stderr and "--max-tokens 5" in r.stderr
    run("convert", "text", src, tmp_path / "t", "--tokenizer", MODEL, "--max-tokens", 5, check=0)
    assert read_tokens(str(tmp_path / "t"))[0] == [sp.encode("short"), ids[:5]]
    run("convert", "text", src, tmp_path / "s", "--tokenizer", MODEL, "--max-tokens", 5,
        "--long", "split", check=0)
    assert read_tokens(str(tmp_path / "s"))[0] == [sp.encode("short")] + [
        ids[i:i + 5] for i in range(0, len(ids), 5)]


def test_token_cache_readable_with_numpy(tmp_path, sp):
    src = tmp_path / "a.txt"
    src.write_text("\n".join(LINES) + "\n")
    r = run("convert", "text", src, tmp_path / "out", "--tokenizer", MODEL, "--token-cache",
            check=0)
    assert "tokens.{bin,idx}" in r.stdout
    assert not (tmp_path / "out" / "dataset.json").exists()
    assert read_cache(str(tmp_path / "out" / "tokens")) == [sp.encode(line) for line in LINES]
    # and as a dataset
    docs = [d["tokens"].tolist() for d in sluice.read_token_cache(tmp_path / "out" / "tokens")]
    assert docs == [sp.encode(line) for line in LINES]
