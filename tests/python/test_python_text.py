"""sluice.text and the text stages from Python: encode equals python3-sentencepiece, tokenize
errors under on_error, pack rows and exact resume, padded_batch masks, bucket_by_length, and
token caches read with global shuffle, shard and resume.
Run: SLUICE_BUILD=build /usr/bin/python3 -m pytest -q tests/python/test_python_text.py
"""
import os
import subprocess

import numpy as np
import pytest
import sentencepiece as spm

import sluice

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
MODEL = os.path.join(ROOT, "tests", "data", "text", "kernel_docs_unigram400.model")
TEXTS = [f"document {i}: " + " the scheduler handles interrupts" * (i % 7) for i in range(50)]


@pytest.fixture(scope="module")
def ref():
    return spm.SentencePieceProcessor(model_file=MODEL)


def test_encode_equals_sentencepiece_for_any_thread_count(ref):
    sp = sluice.text.SentencePiece(MODEL)
    texts = TEXTS + ["", "ünïcödé", b"bad \xff bytes"]
    want = [ref.encode(t) for t in texts]  # bytes as bytes: SentencePiece's own handling
    for threads in (1, 2, 0):
        got = sp.encode(texts, threads=threads)
        assert all(a.dtype == np.int32 for a in got)
        assert [a.tolist() for a in got] == want
    assert sp.encode("one text").tolist() == ref.encode("one text")
    assert sp.vocab_size == ref.get_piece_size() and sp.eos_id == ref.eos_id()


def test_encode_ragged_equals_list_and_keeps_generator_texts_alive(ref):
    sp = sluice.text.SentencePiece(MODEL)
    texts = TEXTS + ["", "ünïcödé", b"bad \xff bytes", ""]
    want = [ref.encode(t) for t in texts]
    for threads in (1, 2):
        values, offsets = sp.encode(texts, threads=threads, ragged=True)
        assert values.dtype == np.int32 and offsets.dtype == np.int64
        assert len(offsets) == len(texts) + 1 and offsets[0] == 0
        assert [values[offsets[i]:offsets[i + 1]].tolist() for i in range(len(texts))] == want
    # A generator of temporaries: each text must stay alive while C++ reads it unlocked.
    gen = (("line %d " % i) * (i % 13) for i in range(3000))
    values, offsets = sp.encode(gen, threads=2, ragged=True)
    again = [ref.encode(("line %d " % i) * (i % 13)) for i in range(3000)]
    assert np.diff(offsets).tolist() == [len(x) for x in again]
    assert values.tolist() == [t for x in again for t in x]
    single_values, single_offsets = sp.encode("one text", ragged=True)
    assert single_values.tolist() == ref.encode("one text") and single_offsets.tolist() == [
        0, len(single_values)]


def test_encode_views_share_one_buffer_and_outlive_it():
    sp = sluice.text.SentencePiece(MODEL)
    arrays = sp.encode(TEXTS, threads=2)
    assert all(not a.flags.owndata and a.base is arrays[0].base for a in arrays)
    want = [a.tolist() for a in arrays]
    del sp
    import gc
    gc.collect()
    assert [a.tolist() for a in arrays] == want


def test_encode_refuses_non_text_and_lone_surrogates():
    sp = sluice.text.SentencePiece(MODEL)
    with pytest.raises(sluice.InvalidArgumentError, match="str or bytes, got"):
        sp.encode(["ok", 3])
    with pytest.raises(UnicodeEncodeError):
        sp.encode(["ok", "bad \udc80 surrogate"])


def test_tokenize_stage_equals_encode(ref):
    ds = sluice.from_records(TEXTS).tokenize("record", MODEL)
    assert ds.schema["tokens"] == "int32[-1]"
    got = [e["tokens"].tolist() for e in ds.iterator(threads=2)]
    assert got == [ref.encode(t) for t in TEXTS]


def test_tokenize_bad_utf8_raise_names_record_skip_drops():
    records = [b"fine", b"bad \xff", b"fine again"]
    ds = sluice.from_records(records).tokenize("record", MODEL)
    with pytest.raises(sluice.DataLossError, match=r"record 1 .*invalid UTF-8"):
        list(ds.iterator(threads=1))
    kept = list(sluice.from_records(records).tokenize("record", MODEL, on_error="skip"))
    assert len(kept) == 2


def test_pack_rows_and_exact_resume(ref):
    ds = (sluice.from_records(TEXTS).shuffle(seed=1).tokenize("record", MODEL)
          .pack(16, eos_id=ref.eos_id()).batch(2))
    rows = [b for b in ds.iterator(threads=2)]
    assert rows[0]["tokens"].shape == (2, 16)
    flat = np.concatenate([r["tokens"].ravel() for r in rows])
    seg = np.concatenate([r["segment_ids"].ravel() for r in rows])
    assert (seg > 0).mean() > 0.95
    for k in (1, len(rows) // 2):
        it = ds.iterator(threads=2)
        for _ in range(k):
            next(it)
        state = it.state()
        assert len(state) < 512
        rest = [b["tokens"] for b in ds.iterator(state=state, threads=2)]
        assert np.array_equal(np.concatenate([r.ravel() for r in rest]),
                              flat[k * 32:])


def test_padded_batch_returns_attention_mask_and_bucketing():
    ds = sluice.from_records(TEXTS).tokenize("record", MODEL)
    b = next(iter(ds.padded_batch(4, pad_to_multiple_of=8)))
    assert b["tokens"].shape[1] % 8 == 0
    lengths = b["tokens_mask"].sum(axis=1)
    assert lengths.max() <= b["tokens"].shape[1] and lengths.min() > 0
    buckets = list(ds.bucket_by_length("tokens", [8, 32], [8, 4, 2]))
    assert sum(len(x["tokens"]) for x in buckets) == len(TEXTS)


@pytest.fixture()
def cache(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("\n".join(TEXTS) + "\n")
    subprocess.run([os.path.join(BUILD, "bin", "sluice"), "convert", "text", str(src),
                    str(tmp_path / "c"), "--tokenizer", MODEL, "--token-cache"], check=True,
                   capture_output=True)
    return str(tmp_path / "c" / "tokens")


def test_read_token_cache_shuffle_shard_resume(cache, ref):
    plain = [d["tokens"].tolist() for d in sluice.read_token_cache(cache)]
    assert plain == [ref.encode(t) for t in TEXTS]
    ds = sluice.read_token_cache(cache).shuffle(seed=5)
    order = [d["tokens"].tolist() for d in ds]
    assert order != plain and sorted(order) == sorted(plain)
    seen = []
    for rank in range(2):
        shard = sluice.read_token_cache(cache).shuffle(seed=5).shard(rank, 2)
        it = shard.iterator(threads=1)
        head = [next(it)["tokens"].tolist() for _ in range(3)]
        rest = [d["tokens"].tolist() for d in shard.iterator(state=it.state(), threads=1)]
        seen += head + rest
    assert sorted(seen) == sorted(plain)
    packed = sluice.read_token_cache(cache).pack(32, eos_id=ref.eos_id())
    assert next(iter(packed))["tokens"].shape == (32,)
