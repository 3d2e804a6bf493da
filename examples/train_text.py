#!/usr/bin/env python3
"""A tiny transformer language model on CPU, fed packed batches by sluice.

The data path of LM pretraining, end to end:
  1. a few MB of the Linux kernel documentation (Debian's linux-doc-6.1, *.rst.gz) become a
     plain-text corpus, one paragraph per document;
  2. `sluice convert text --paragraphs --tokenizer MODEL --token-cache` writes the token
     cache (Megatron layout, docs/text-format.md);
  3. sluice.read_token_cache(...).shuffle().shard().pack(seq_len, eos).batch(B) streams
     fixed-length rows with segment ids and position ids, so attention never crosses a
     document boundary and no compute goes to padding.
`--moe N` replaces each feed-forward layer with N experts and top-2 routing: the same data
path feeding a mixture-of-experts model.

    PYTHONPATH=build/python /usr/bin/python3 examples/train_text.py --steps 300 [--moe 4]
"""
import argparse
import glob
import gzip
import math
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import sluice

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = "/usr/share/doc/linux-doc-6.1/Documentation"
DEFAULT_MODEL = os.path.join(ROOT, "tests", "data", "text", "kernel_docs_unigram400.model")


def build_corpus(path, max_bytes):
    """Concatenates kernel .rst.gz files (sorted, so the corpus is reproducible)."""
    files = sorted(glob.glob(os.path.join(DOCS, "**", "*.rst.gz"), recursive=True))
    if not files:
        sys.exit(f"train_text: no {DOCS}/**/*.rst.gz (apt-get install linux-doc-6.1)")
    written = 0
    with open(path, "wb") as out:
        for f in files:
            data = gzip.open(f).read()
            out.write(data + b"\n\n")
            written += len(data) + 2
            if written >= max_bytes:
                break
    return written


def build_token_cache(workdir, model, corpus_bytes, sluice_bin):
    corpus = os.path.join(workdir, "corpus.txt")
    n = build_corpus(corpus, corpus_bytes)
    out = os.path.join(workdir, "cache")
    cmd = [sluice_bin, "convert", "text", corpus, out, "--paragraphs", "--tokenizer", model,
           "--token-cache", "--on-error", "skip"]
    t = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    print(f"token cache: {n / 1e6:.1f} MB of kernel docs in {time.time() - t:.1f} s "
          f"({' '.join(os.path.basename(c) if c == sluice_bin else c for c in cmd[:2])} ...)")
    return os.path.join(out, "tokens")


class Experts(nn.Module):
    """N feed-forward experts; each token goes to its top-2 (softmax-weighted)."""

    def __init__(self, dim, hidden, n):
        super().__init__()
        self.router = nn.Linear(dim, n, bias=False)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
            for _ in range(n))

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        weights, chosen = self.router(flat).softmax(-1).topk(2, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows, slot = (chosen == e).nonzero(as_tuple=True)
            if rows.numel():
                out.index_add_(0, rows, expert(flat[rows]) * weights[rows, slot, None])
        return out.view_as(x)


class Block(nn.Module):
    def __init__(self, dim, heads, moe):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ff = (Experts(dim, 2 * dim, moe) if moe else
                   nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)))

    def forward(self, x, mask):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.ff(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, seq_len, dim=64, layers=2, heads=4, moe=0):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, moe) for _ in range(layers))
        self.out = nn.Linear(dim, vocab)

    def forward(self, tokens, segments, positions):
        n = tokens.shape[1]
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        # Attend only within the same document (segment) of a packed row, causally.
        allowed = (segments[:, :, None] == segments[:, None, :]) & causal
        mask = (~allowed).repeat_interleave(self.heads, 0)
        x = self.tok(tokens) + self.pos(positions)
        for b in self.blocks:
            x = b(x, mask)
        return self.out(x)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--moe", type=int, default=0, help="experts per layer (0: dense)")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--tokenizer", default=DEFAULT_MODEL)
    p.add_argument("--corpus-mb", type=float, default=3.0)
    p.add_argument("--sluice", default=os.path.join(os.environ.get("SLUICE_BUILD", "build"),
                                                    "bin", "sluice"))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.moe == 1:
        p.error("--moe needs at least 2 experts (top-2 routing)")
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))

    sp = sluice.text.SentencePiece(args.tokenizer)
    with tempfile.TemporaryDirectory() as work:
        cache = build_token_cache(work, args.tokenizer, int(args.corpus_mb * 1e6), args.sluice)
        ds = (sluice.read_token_cache(cache).shuffle(seed=args.seed).shard()
              .pack(args.seq_len + 1, eos_id=sp.eos_id).batch(args.batch, drop_remainder=True)
              .repeat().prefetch(2))
        model = TinyLM(sp.vocab_size, args.seq_len + 1, moe=args.moe)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        kind = f"MoE ({args.moe} experts, top-2)" if args.moe else "dense"
        print(f"model: {kind}, {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M params")
        it, first, t = ds.iterator(), None, time.time()
        for step in range(1, args.steps + 1):
            b = next(it)
            tokens = torch.from_numpy(b["tokens"]).long()
            segments = torch.from_numpy(b["segment_ids"]).long()
            positions = torch.from_numpy(b["position_ids"]).long()
            logits = model(tokens[:, :-1], segments[:, :-1], positions[:, :-1])
            # Predict the next token only inside a document (and never from/into padding).
            same_doc = (segments[:, 1:] == segments[:, :-1]) & (segments[:, 1:] > 0)
            targets = tokens[:, 1:].masked_fill(~same_doc, -100)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                   ignore_index=-100)
            opt.zero_grad()
            loss.backward()
            opt.step()
            first = first if first is not None else loss.item()
            if step == 1 or step % 20 == 0 or step == args.steps:
                print(f"step {step:4d}  loss {loss.item():.3f}  "
                      f"({(time.time() - t) / step * 1000:.0f} ms/step)", flush=True)
            if not math.isfinite(loss.item()):
                sys.exit("train_text: loss is not finite")
        print(f"loss {first:.3f} -> {loss.item():.3f} over {args.steps} steps")
        print(it.report())


if __name__ == "__main__":
    main()
