"""sluice.text.SentencePiece.encode from Python against python3-sentencepiece, same lines,
same model, same process, ids checked equal.

    /usr/bin/python3 bench/text/python_encode.py MODEL CORPUS [--reps 3]

(bench/text/run.sh calls it with the kernel-docs corpus and its trained 8k model.) Each row
is the best of --reps runs; the ratio is against python3-sentencepiece's encode(lines) with
one thread, the baseline of the text issue's goal (>= 1.8x with 2 threads).
"""
import argparse
import os
import sys
import time

import numpy as np
import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build")),
                                "python"))
import sluice  # noqa: E402


def best(fn, reps):
    wall, result = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        result = fn()
        wall = min(wall, time.perf_counter() - t0)
    return wall, result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("corpus")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    with open(args.corpus, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    ref = spm.SentencePieceProcessor(model_file=args.model)
    sp = sluice.text.SentencePiece(args.model)

    rows = []
    t_ref1, want = best(lambda: ref.encode(lines, num_threads=1), args.reps)
    tokens = sum(len(x) for x in want)
    rows.append(("python3-sentencepiece encode(lines)", 1, t_ref1))
    t_ref2, _ = best(lambda: ref.encode(lines, num_threads=2), args.reps)
    rows.append(("python3-sentencepiece encode(lines)", 2, t_ref2))
    for threads in (1, 2):
        t, got = best(lambda: sp.encode(lines, threads=threads), args.reps)
        assert len(got) == len(want) and all(
            np.array_equal(a, b) for a, b in zip(got, want)), "ids differ (list)"
        rows.append(("sluice encode(lines) -> list of arrays", threads, t))
        t, (values, offsets) = best(lambda: sp.encode(lines, threads=threads, ragged=True),
                                    args.reps)
        assert np.array_equal(np.diff(offsets), [len(x) for x in want]), "lengths differ"
        assert np.array_equal(values, np.fromiter((t for x in want for t in x), np.int32,
                                                  count=tokens)), "ids differ (ragged)"
        rows.append(("sluice encode(lines, ragged=True) -> (values, offsets)", threads, t))

    print(f"{len(lines):,} lines, {tokens:,} tokens, model {os.path.basename(args.model)}; "
          f"best of {args.reps}; ids identical")
    print("| engine | threads | tokens/s | vs python3-sentencepiece, 1 thread |")
    print("|---|---|---|---|")
    for name, threads, t in rows:
        print(f"| {name} | {threads} | {tokens / t / 1e6:.2f} M | {t_ref1 / t:.2f}x |")
    print(f"command: /usr/bin/python3 bench/text/python_encode.py {args.model} {args.corpus} "
          f"--reps {args.reps}")


if __name__ == "__main__":
    main()
