// Format-layer throughput, measured by bench/format/run.py against peers in the same run.
//   format_bench read FILE [--mapped] [--buffer-bytes N]
//                                       read every record (every CRC checked); prints JSON.
//                                       Default: the reader's defaults (positional reads into
//                                       a reused buffer). --mapped: map an uncompressed file
//                                       (RecordReaderOptions::map_uncompressed); --buffer-bytes:
//                                       read_buffer_bytes
//   format_bench write FILE OUT CODEC   read the records of FILE, write them to OUT with CODEC
//   format_bench frame IN OUT BYTES     cut file IN into records of about BYTES (sizes vary
//                                       0.5x..1.5x, deterministic) and write them uncompressed
// The printed seconds are wall time inside the process (file open to close), for information:
// run.py times this tool and the peers (cat, zstd) alike, as whole processes on the same
// files, and compares.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "sluice/format/record_reader.h"
#include "sluice/format/record_writer.h"
#include "sluice/io/file_system.h"

namespace {

using Clock = std::chrono::steady_clock;
using sluice::ByteView;
namespace format = sluice::format;

int Fail(const sluice::Status& s) {
  std::fprintf(stderr, "format_bench: %s\n", s.ToString().c_str());
  return 1;
}

int Read(const std::string& path, const format::RecordReaderOptions& options) {
  auto* fs = sluice::io::LocalFileSystem();
  auto t0 = Clock::now();
  auto reader = format::RecordReader::Open(fs, path, options);
  if (!reader.ok()) return Fail(reader.status());
  uint64_t records = 0, payload = 0;
  ByteView rec;
  for (;;) {
    auto more = (*reader)->Next(&rec);
    if (!more.ok()) return Fail(more.status());
    if (!*more) break;
    ++records;
    payload += rec.size();
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  auto size = fs->Stat(path);
  std::printf(
      "{\"op\":\"read\",\"records\":%llu,\"payload_bytes\":%llu,\"file_bytes\":%llu,"
      "\"seconds\":%.6f}\n",
      static_cast<unsigned long long>(records), static_cast<unsigned long long>(payload),
      static_cast<unsigned long long>(size.ok() ? size->size : 0), secs);
  return 0;
}

int Write(const std::string& in, const std::string& out, const std::string& codec_name) {
  auto* fs = sluice::io::LocalFileSystem();
  auto codec = format::ParseCodec(codec_name);
  if (!codec.ok()) return Fail(codec.status());
  // Records stream from the reader straight into the writer: the process does what the peer
  // (zstd -3 FILE) does, read a file from the page cache and compress it, and nothing else
  // (gathering the records in memory first would add a copy and page faults to the timing).
  auto t0 = Clock::now();
  auto reader = format::RecordReader::Open(fs, in);
  if (!reader.ok()) return Fail(reader.status());
  format::RecordWriterOptions options;
  options.codec = *codec;
  auto writer = format::RecordWriter::Open(fs, out, options);
  if (!writer.ok()) return Fail(writer.status());
  ByteView rec;
  for (;;) {
    auto more = (*reader)->Next(&rec);
    if (!more.ok()) return Fail(more.status());
    if (!*more) break;
    auto st = (*writer)->Write(rec);
    if (!st.ok()) return Fail(st);
  }
  auto st = (*writer)->Close();
  if (!st.ok()) return Fail(st);
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "{\"op\":\"write\",\"records\":%llu,\"framed_bytes\":%llu,\"file_bytes\":%llu,"
      "\"seconds\":%.6f}\n",
      static_cast<unsigned long long>((*writer)->records_written()),
      static_cast<unsigned long long>((*writer)->framed_bytes()),
      static_cast<unsigned long long>((*writer)->file_bytes()), secs);
  return 0;
}

int Frame(const std::string& in, const std::string& out, size_t target) {
  auto* fs = sluice::io::LocalFileSystem();
  auto data = fs->ReadAll(in);
  if (!data.ok()) return Fail(data.status());
  format::RecordWriterOptions options;
  options.codec = format::Codec::kNone;
  auto writer = format::RecordWriter::Open(fs, out, options);
  if (!writer.ok()) return Fail(writer.status());
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t off = 0; off < data->size();) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift: sizes in [target/2, 3*target/2)
    size_t len = std::min(data->size() - off, target / 2 + x % (target + 1));
    auto st = (*writer)->Write(ByteView(*data).substr(off, len));
    if (!st.ok()) return Fail(st);
    off += len;
  }
  auto st = (*writer)->Close();
  if (!st.ok()) return Fail(st);
  std::printf("{\"op\":\"frame\",\"records\":%llu}\n",
              static_cast<unsigned long long>((*writer)->records_written()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string op = argc > 1 ? argv[1] : "";
  if (op == "read" && argc >= 3) {
    format::RecordReaderOptions options;
    bool ok = true;
    for (int i = 3; i < argc && ok; ++i) {
      std::string flag = argv[i];
      if (flag == "--mapped") {
        options.map_uncompressed = true;
      } else if (flag == "--buffer-bytes" && i + 1 < argc) {
        options.read_buffer_bytes = std::stoul(argv[++i]);
      } else {
        ok = false;
      }
    }
    if (ok) return Read(argv[2], options);
  }
  if (op == "write" && argc == 5) return Write(argv[2], argv[3], argv[4]);
  if (op == "frame" && argc == 5) return Frame(argv[2], argv[3], std::stoul(argv[4]));
  std::fprintf(stderr,
               "usage: format_bench read FILE [--mapped] [--buffer-bytes N] | write IN OUT CODEC | "
               "frame IN OUT BYTES\n");
  return 2;
}
