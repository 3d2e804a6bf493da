"""The peer side of bench/text: python3-sentencepiece encoding the same lines as sluice.

Writes JSON with tokens per wall-second and per CPU-second (best of 2) for
encode(list, num_threads=1), encode(list, num_threads=2) and a per-line loop, plus the
token count and id sum that text_bench checks against its own.
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


def timed(fn, reps):
    """Best wall and best process-CPU seconds (all threads) of `reps` runs, and the result."""
    wall = cpu = float("inf")
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return result, wall, cpu


def main():
    model, corpus, out = sys.argv[1:4]
    sp = spm.SentencePieceProcessor(model_file=model)
    with open(corpus, "rb") as f:
        lines = split_lines(f.read())
    ids, w1, c1 = timed(lambda: sp.encode(lines, num_threads=1), 2)
    _, w2, c2 = timed(lambda: sp.encode(lines, num_threads=2), 2)
    _, w_loop, c_loop = timed(lambda: [sp.encode(line) for line in lines], 1)
    tokens = sum(len(x) for x in ids)
    result = {
        "lines": len(lines),
        "tokens": tokens,
        "id_sum": sum(sum(x) for x in ids),
        "tokens_per_s": {"batch_1_thread": tokens / w1, "batch_2_threads": tokens / w2,
                         "loop": tokens / w_loop},
        "tokens_per_cpu_s": {"batch_1_thread": tokens / c1, "batch_2_threads": tokens / c2,
                             "loop": tokens / c_loop},
        "sentencepiece_version": spm.__version__,
    }
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
