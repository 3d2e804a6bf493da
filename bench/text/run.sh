#!/usr/bin/env bash
# bench/text: sluice's text path against python3-sentencepiece on the Linux kernel docs.
#  1. decompresses the reST files of linux-doc-6.1 (~24 MB) into a temp dir, one corpus file;
#  2. trains an 8k unigram SentencePiece model on it with spm_train (sampled sentences);
#  3. measures python3-sentencepiece's encode on the corpus lines (bench/text/spm_python.py);
#  4. runs build/bin/text_bench: sluice tokenization (1 and 2 threads) against those numbers,
#     padding waste (naive, dynamic, bucketing, packing) and token cache read speed;
#  5. runs build/bin/text_pipeline_bench: the same through pipelines (tokenize stage rate,
#     waste of padded_batch / bucket_by_length / pack output over the token cache);
#  6. runs bench/text/python_encode.py: sluice's encode from Python (list of arrays and
#     ragged (values, offsets)) against python3-sentencepiece in the same process.
# Usage: bench/text/run.sh [BUILD_DIR]     (default: build; needs target text_bench)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
PY=/usr/bin/python3
DOCS=/usr/share/doc/linux-doc-6.1/Documentation
SENTENCES="${SLUICE_BENCH_SENTENCES:-200000}"  # spm_train sample: keeps training < 2 min

[ -d "$DOCS" ] || { echo "run.sh: $DOCS missing (apt-get install linux-doc-6.1)" >&2; exit 1; }
[ -x "$BUILD/bin/text_bench" ] || cmake --build "$BUILD" --target text_bench
[ -x "$BUILD/bin/text_pipeline_bench" ] || cmake --build "$BUILD" --target text_pipeline_bench

WORK="$(mktemp -d /tmp/sluice_text_bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

echo "== corpus: decompressing $DOCS/**/*.rst.gz" >&2
find "$DOCS" -name '*.rst.gz' -print0 | sort -z | xargs -0 zcat > "$WORK/corpus.txt"

echo "== model: spm_train 8k unigram on $SENTENCES sampled lines" >&2
start=$(date +%s)
spm_train --input="$WORK/corpus.txt" --model_prefix="$WORK/kernel_docs_8k" --vocab_size=8000 \
  --model_type=unigram --input_sentence_size="$SENTENCES" --shuffle_input_sentence=true \
  --num_threads=2 --minloglevel=2 > "$WORK/spm_train.log" 2>&1
echo "   trained in $(( $(date +%s) - start )) s" >&2

echo "== peer: python3-sentencepiece" >&2
"$PY" "$ROOT/bench/text/spm_python.py" "$WORK/kernel_docs_8k.model" "$WORK/corpus.txt" \
  "$WORK/python.json"

echo "== sluice" >&2
"$BUILD/bin/text_bench" "$WORK/corpus.txt" "$WORK/kernel_docs_8k.model" "$WORK" "$WORK/python.json"

echo "== sluice pipelines (tokenize stage; padded_batch / bucket_by_length / pack output)" >&2
"$BUILD/bin/text_pipeline_bench" "$WORK/corpus.txt" "$WORK/kernel_docs_8k.model" "$WORK" \
  "$WORK/python.json"

echo "== Python: sluice.text.SentencePiece.encode vs python3-sentencepiece" >&2
SLUICE_BUILD="$BUILD" "$PY" "$ROOT/bench/text/python_encode.py" "$WORK/kernel_docs_8k.model" \
  "$WORK/corpus.txt"
echo
echo "Reproduce: bench/text/run.sh $BUILD   (machine: $(nproc) cores, $(uname -m))"
