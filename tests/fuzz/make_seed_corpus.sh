#!/usr/bin/env bash
# Regenerates the seed corpora under tests/fuzz/corpus/ (never tests/fuzz/regressions/) from
# small shards written by record_tool (usage: tests/fuzz/make_seed_corpus.sh [BUILD_DIR]).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
tool="$build/bin/record_tool"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Five records of 0..40 bytes as u32-LE-length-prefixed blobs.
/usr/bin/python3 - "$tmp/blobs" <<'PY'
import struct, sys
with open(sys.argv[1], "wb") as f:
    for i, n in enumerate([0, 1, 7, 40, 13]):
        f.write(struct.pack("<I", n) + bytes((i * 31 + k) & 0xFF for k in range(n)))
PY
"$tool" write --codec none "$tmp/s.tfrecord" < "$tmp/blobs"
"$tool" write --codec gzip "$tmp/s.tfrecord.gz" < "$tmp/blobs"
"$tool" write --codec zstd --frame-bytes 40 "$tmp/s.tfrecord.zst" < "$tmp/blobs"

rr="$root/tests/fuzz/corpus/record_reader_fuzz"
zf="$root/tests/fuzz/corpus/zstd_frame_reader_fuzz"
rm -rf "$rr" "$zf"
mkdir -p "$rr" "$zf"
{ printf '\x00'; cat "$tmp/s.tfrecord"; } > "$rr/none"
{ printf '\x04'; cat "$tmp/s.tfrecord"; } > "$rr/none_small_buffer"
{ printf '\x10'; head -c -3 "$tmp/s.tfrecord"; } > "$rr/none_torn_tail"
{ printf '\x02'; cat "$tmp/s.tfrecord.gz"; } > "$rr/gzip"
{ printf '\x01'; cat "$tmp/s.tfrecord.zst"; } > "$rr/zstd"
{ printf '\x05'; cat "$tmp/s.tfrecord.zst"; } > "$rr/zstd_small_buffer"
with_index() {  # u16 LE shard size, shard, index
  /usr/bin/python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<H", int(sys.argv[1])))' \
    "$(stat -c %s "$1")"
  cat "$1" "$1.idx"
}
with_index "$tmp/s.tfrecord.zst" > "$zf/zstd_with_index"
with_index "$tmp/s.tfrecord" > "$zf/none_with_index"
with_index "$tmp/s.tfrecord.gz" > "$zf/gzip_with_index"
echo "seed corpora written to $rr and $zf"
