// Peak memory of a globally shuffled epoch over indexed shard files, for
// tests/python/test_index_memory.py (RSS must not grow with the dataset) and for timing the
// shuffled read of small records before and after a change to the read path.
//
// Usage:
//   index_memory_tool write DIR RECORDS CODEC [ZSTD_FRAME_BYTES]
//       writes RECORDS records of 64 bytes into indexed shards of ~4 MB under DIR
//   index_memory_tool epoch DIR [THREADS]
//       read -> shuffle(global) -> batch(256) over DIR, one full epoch; prints one JSON line:
//       {"records": N, "batches": B, "open_seconds": O, "seconds": S, "ns_per_record": T,
//        "peak_rss_kib": K}   (seconds and ns_per_record include the open)
// Writing and reading run as separate processes so that the writer's buffers do not count in
// the reader's peak RSS (VmHWM of /proc/self/status).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "sluice/format/shard_writer.h"
#include "sluice/pipeline/dataset.h"

namespace {

using namespace sluice;
constexpr size_t kRecordBytes = 64;
constexpr size_t kBatch = 256;

int Fail(const Status& s) {
  std::fprintf(stderr, "index_memory_tool: %s\n", s.ToString().c_str());
  return 1;
}

// VmHWM (peak resident set) of this process in KiB, -1 when unknown.
long PeakRssKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

int Write(const std::string& dir, uint64_t records, const std::string& codec_name,
          size_t zstd_frame_bytes) {
  auto codec = format::ParseCodec(codec_name);
  if (!codec.ok()) return Fail(codec.status());
  format::ShardWriterOptions options;
  options.record.codec = *codec;
  options.record.zstd_frame_bytes = zstd_frame_bytes;
  options.target_shard_bytes = 4'000'000;
  auto writer = format::ShardWriter::Open(io::LocalFileSystem(), dir, options);
  if (!writer.ok()) return Fail(writer.status());
  std::string payload(kRecordBytes, '\0');
  for (uint64_t i = 0; i < records; ++i) {
    for (size_t k = 0; k < kRecordBytes; ++k) payload[k] = static_cast<char>((i * 131 + k) % 251);
    Status s = (*writer)->Write(payload);
    if (!s.ok()) return Fail(s);
  }
  Status s = (*writer)->Close();
  return s.ok() ? 0 : Fail(s);
}

int Epoch(const std::string& dir, uint32_t threads) {
  auto t0 = std::chrono::steady_clock::now();
  pipeline::ReadOptions read;
  read.paths = {dir};
  auto ds = pipeline::Dataset::Read(read);
  if (!ds.ok()) return Fail(ds.status());
  double open_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  pipeline::PipelineOptions options;
  options.threads = threads;
  auto it = ds->Shuffle({pipeline::ShuffleMode::kGlobal, 1}).Batch(kBatch).MakeIterator(options);
  if (!it.ok()) return Fail(it.status());
  pipeline::Element batch;
  uint64_t records = 0, batches = 0;
  for (;;) {
    auto more = (*it)->Next(&batch);
    if (!more.ok()) return Fail(more.status());
    if (!*more) break;
    records += static_cast<uint64_t>(batch.tensors[0].shape()[0]);
    ++batches;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "{\"records\": %llu, \"batches\": %llu, \"open_seconds\": %.3f, \"seconds\": %.3f, "
      "\"ns_per_record\": %.1f, \"peak_rss_kib\": %ld}\n",
      static_cast<unsigned long long>(records), static_cast<unsigned long long>(batches),
      open_seconds, seconds, records ? seconds * 1e9 / static_cast<double>(records) : 0.0,
      PeakRssKiB());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string op = argc > 1 ? argv[1] : "";
  if (op == "write" && (argc == 5 || argc == 6)) {
    size_t frame = argc == 6 ? std::stoull(argv[5]) : size_t{1} << 20;
    return Write(argv[2], std::stoull(argv[3]), argv[4], frame);
  }
  if (op == "epoch" && (argc == 3 || argc == 4)) {
    return Epoch(argv[2], argc == 4 ? static_cast<uint32_t>(std::stoul(argv[3])) : 2);
  }
  std::fprintf(stderr,
               "usage: %s write DIR RECORDS CODEC [ZSTD_FRAME_BYTES]\n"
               "       %s epoch DIR [THREADS]\n",
               argv[0], argv[0]);
  return 2;
}
