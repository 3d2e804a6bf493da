"""The peer side of bench/text: python3-sentencepiece encoding the same lines as sluice.

Writes JSON with tokens/s for encode(list, num_threads=1), encode(list, num_threads=2) and a
per-line loop, plus the token count and id sum that text_bench checks against its own.
Usage: /usr/bin/python3 spm_python.py MODEL CORPUS OUT.json
"""

import json
import sys
import time

import sentencepiece as spm


def split_lines(data):
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main():
    model, corpus, out = sys.argv[1:4]
    sp = spm.SentencePieceProcessor(model_file=model)
    with open(corpus, "rb") as f:
        lines = split_lines(f.read())
    ids, t1 = timed(lambda: sp.encode(lines, num_threads=1))
    _, t2 = timed(lambda: sp.encode(lines, num_threads=2))
    _, t_loop = timed(lambda: [sp.encode(line) for line in lines])
    tokens = sum(len(x) for x in ids)
    result = {
        "lines": len(lines),
        "tokens": tokens,
        "id_sum": sum(sum(x) for x in ids),
        "tokens_per_s": {"batch_1_thread": tokens / t1, "batch_2_threads": tokens / t2,
                         "loop": tokens / t_loop},
        "sentencepiece_version": spm.__version__,
    }
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
