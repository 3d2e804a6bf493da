#include "sluice/dist/input_split.h"

#include <algorithm>

#include "dist/wire.h"

namespace sluice::dist {

std::string FileRange::Encode() const {
  return WireWriter().Bytes(path).U64(begin).U64(end).U64(whole ? 1 : 0).Take();
}

Result<FileRange> FileRange::Decode(std::string_view input) {
  FileRange r;
  uint64_t whole = 0;
  WireReader in(input);
  if (!in.Bytes(&r.path) || !in.U64(&r.begin) || !in.U64(&r.end) || !in.U64(&whole) || !in.done() ||
      r.begin > r.end) {
    return Internal("malformed file task");
  }
  r.whole = whole != 0;
  return r;
}

uint64_t AutoTaskBytes(uint64_t total_bytes, int ranks) {
  constexpr uint64_t kMin = uint64_t{1} << 20, kMax = uint64_t{128} << 20;
  const uint64_t tasks = uint64_t{16} * static_cast<uint64_t>(std::max(ranks, 1));
  return std::clamp((total_bytes + tasks - 1) / tasks, kMin, kMax);
}

std::vector<TaskSpec> FileTasks(const std::vector<InputFile>& files, uint64_t task_bytes,
                                bool splittable) {
  std::vector<TaskSpec> tasks;
  auto add = [&](const FileRange& range) {
    TaskSpec t;
    t.id = tasks.size();
    t.bytes = range.end - range.begin;
    t.input = range.Encode();
    tasks.push_back(std::move(t));
  };
  task_bytes = std::max<uint64_t>(task_bytes, 1);
  for (const InputFile& f : files) {
    const uint64_t pieces =
        splittable ? std::max<uint64_t>(1, (f.bytes + task_bytes - 1) / task_bytes) : 1;
    if (pieces == 1) {
      add({f.path, 0, f.bytes, true});
      continue;
    }
    for (uint64_t i = 0; i < pieces; ++i) {
      // Equal pieces: i * bytes / pieces, in 128-bit arithmetic (bytes * pieces may overflow).
      auto at = [&](uint64_t k) {
        return static_cast<uint64_t>(static_cast<unsigned __int128>(f.bytes) * k / pieces);
      };
      add({f.path, at(i), at(i + 1), false});
    }
  }
  return tasks;
}

std::vector<std::pair<size_t, size_t>> GroupItems(const std::vector<uint64_t>& bytes,
                                                  uint64_t task_bytes) {
  std::vector<std::pair<size_t, size_t>> runs;
  size_t first = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i > first && sum + bytes[i] > task_bytes) {
      runs.emplace_back(first, i);
      first = i;
      sum = 0;
    }
    sum += bytes[i];
  }
  if (first < bytes.size()) runs.emplace_back(first, bytes.size());
  return runs;
}

}  // namespace sluice::dist
