// A conversion's inputs cut into tasks (docs/dist.md, "Tasks"): whole files, byte ranges of
// large text files (each worker aligns its range to lines with io::LineAlignedRange, so every
// line belongs to exactly one task), or runs of small files such as images. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/dist/task.h"

namespace sluice::dist {

struct InputFile {
  std::string path;
  uint64_t bytes = 0;
};

// What a file task reads: a whole file, or the bytes [begin, end) of it.
struct FileRange {
  std::string path;
  uint64_t begin = 0, end = 0;
  bool whole = true;

  std::string Encode() const;  // a TaskSpec's input
  static Result<FileRange> Decode(std::string_view input);
};

// The default input bytes of one task: the job's bytes over 16 tasks per rank (so that a slow
// rank costs little and speculation has copies to make: docs/dist.md, "Speculation"), within
// 1 MiB (below it, per-task costs dominate) and 128 MiB (Spark's maxPartitionBytes).
uint64_t AutoTaskBytes(uint64_t total_bytes, int ranks);

// One task per file in order; with `splittable`, a file of more than `task_bytes` becomes
// ceil(bytes / task_bytes) ranges of equal size (give or take a byte). Task ids 0..n-1.
std::vector<TaskSpec> FileTasks(const std::vector<InputFile>& files, uint64_t task_bytes,
                                bool splittable);

// Consecutive items grouped into runs of at most `task_bytes` (a larger item alone):
// [first, last) index pairs in order.
std::vector<std::pair<size_t, size_t>> GroupItems(const std::vector<uint64_t>& bytes,
                                                  uint64_t task_bytes);

}  // namespace sluice::dist
