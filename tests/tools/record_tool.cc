// record_tool: drives the record layer from the command line, for tests in other languages
// (tests/python/test_tfrecord_bytes.py) and quick measurements.
//
//   record_tool write [--codec none|gzip|zstd] [--frame-bytes N] [--no-index] OUT
//       reads records from stdin as u32-LE-length-prefixed blobs and writes a shard
//   record_tool read FILE [--skip] [--tolerate-torn-tail] [--count] [--no-crc] [--read-buffer N]
//       writes the records to stdout, u32-LE-length-prefixed (--count: prints only
//       "records bytes"); skipped ranges and warnings go to stderr
//   record_tool get FILE
//       like read, but through ShardReader::Read(i) for every i (index built if missing)
//   record_tool copy IN OUT [--codec C] [--frame-bytes N]
//       rewrites a shard with another codec
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "sluice/format/record_reader.h"
#include "sluice/format/record_writer.h"
#include "sluice/format/shard_index.h"

namespace {

using namespace sluice;
using namespace sluice::format;
using io::LocalFileSystem;

struct Args {
  std::vector<std::string> positional;
  Codec codec = Codec::kZstd;
  size_t frame_bytes = size_t{1} << 20;
  size_t read_buffer = size_t{1} << 20;
  bool index = true, skip = false, tolerate = false, count = false, crc = true;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "record_tool: %s\n", s.ToString().c_str());
  return 1;
}

bool ReadExactly(void* dst, size_t n) { return std::fread(dst, 1, n, stdin) == n; }

void Emit(ByteView record) {
  char len[4];
  EncodeFixed32(len, static_cast<uint32_t>(record.size()));
  std::fwrite(len, 1, 4, stdout);
  std::fwrite(record.data(), 1, record.size(), stdout);
}

RecordWriterOptions WriterOptions(const Args& a) {
  RecordWriterOptions o;
  o.codec = a.codec;
  o.zstd_frame_bytes = a.frame_bytes;
  o.write_index = a.index;
  return o;
}

int Write(const Args& a) {
  auto w = RecordWriter::Open(LocalFileSystem(), a.positional.at(1), WriterOptions(a));
  if (!w.ok()) return Fail(w.status());
  std::string record;
  char len[4];
  while (ReadExactly(len, 4)) {
    record.resize(DecodeFixed32(len));
    if (!ReadExactly(record.data(), record.size())) return Fail(InvalidArgument("short input"));
    if (Status s = (*w)->Write(record); !s.ok()) return Fail(s);
  }
  Status s = (*w)->Close();
  return s.ok() ? 0 : Fail(s);
}

int Read(const Args& a) {
  RecordReaderOptions o;
  if (a.skip) o.policy = CorruptionPolicy::kSkip;
  o.tolerate_torn_tail = a.tolerate;
  o.verify_crc = a.crc;
  o.read_buffer_bytes = a.read_buffer;
  auto r = RecordReader::Open(LocalFileSystem(), a.positional.at(1), o);
  if (!r.ok()) return Fail(r.status());
  ByteView record;
  uint64_t records = 0, bytes = 0;
  Status status;
  for (;;) {
    auto more = (*r)->Next(&record);
    if (!more.ok()) {
      status = more.status();
      break;
    }
    if (!*more) break;
    ++records;
    bytes += record.size();
    if (!a.count) Emit(record);
  }
  for (const auto& s : (*r)->skipped()) {
    std::fprintf(stderr, "skipped %s%llu +%llu: %s\n", s.in_compressed_file ? "file " : "",
                 static_cast<unsigned long long>(s.offset),
                 static_cast<unsigned long long>(s.length), s.reason.c_str());
  }
  for (const auto& w : (*r)->warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (a.count)
    std::printf("%llu %llu\n", static_cast<unsigned long long>(records),
                static_cast<unsigned long long>(bytes));
  return status.ok() ? 0 : Fail(status);
}

int Get(const Args& a) {
  auto r = ShardReader::Open(LocalFileSystem(), a.positional.at(1));
  if (!r.ok()) return Fail(r.status());
  std::string record;
  for (uint64_t i = 0; i < (*r)->num_records(); ++i) {
    if (Status s = (*r)->Read(i, &record); !s.ok()) return Fail(s);
    Emit(record);
  }
  return 0;
}

int Copy(const Args& a) {
  auto r = RecordReader::Open(LocalFileSystem(), a.positional.at(1));
  if (!r.ok()) return Fail(r.status());
  auto w = RecordWriter::Open(LocalFileSystem(), a.positional.at(2), WriterOptions(a));
  if (!w.ok()) return Fail(w.status());
  ByteView record;
  for (;;) {
    auto more = (*r)->Next(&record);
    if (!more.ok()) return Fail(more.status());
    if (!*more) break;
    if (Status s = (*w)->Write(record); !s.ok()) return Fail(s);
  }
  Status s = (*w)->Close();
  return s.ok() ? 0 : Fail(s);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--codec" && i + 1 < argc) {
      auto c = ParseCodec(argv[++i]);
      if (!c.ok()) return Fail(c.status());
      a.codec = *c;
    } else if (arg == "--frame-bytes" && i + 1 < argc) {
      a.frame_bytes = std::stoull(argv[++i]);
    } else if (arg == "--no-index") {
      a.index = false;
    } else if (arg == "--skip") {
      a.skip = true;
    } else if (arg == "--tolerate-torn-tail") {
      a.tolerate = true;
    } else if (arg == "--count") {
      a.count = true;
    } else if (arg == "--read-buffer" && i + 1 < argc) {
      a.read_buffer = std::stoull(argv[++i]);
    } else if (arg == "--no-crc") {
      a.crc = false;
    } else {
      a.positional.push_back(arg);
    }
  }
  const std::string cmd = a.positional.empty() ? "" : a.positional[0];
  if (cmd == "write" && a.positional.size() == 2) return Write(a);
  if (cmd == "read" && a.positional.size() == 2) return Read(a);
  if (cmd == "get" && a.positional.size() == 2) return Get(a);
  if (cmd == "copy" && a.positional.size() == 3) return Copy(a);
  std::fprintf(stderr,
               "usage: record_tool write [--codec C] [--frame-bytes N] [--no-index] OUT < blobs\n"
               "       record_tool read FILE [--skip] [--tolerate-torn-tail] [--count] [--no-crc] [--read-buffer N]\n"
               "       record_tool get FILE\n"
               "       record_tool copy IN OUT [--codec C] [--frame-bytes N]\n");
  return 2;
}
