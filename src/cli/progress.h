// Progress and the end-of-run summary of the long-running commands.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::cli {

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// A one-line progress bar on stderr, drawn only when stderr is a terminal (so logs and
// pipes get no carriage-return noise). Redraws at most 10 times a second.
// Threading: call from one thread.
class ProgressBar {
 public:
  enum class Unit { kItems, kBytes };  // how `done` and `total` are shown
  // `total` units to process; 0 when unknown (then only counts are shown).
  ProgressBar(std::string label, uint64_t total, Unit unit = Unit::kItems);
  ~ProgressBar() { Clear(); }

  void Update(uint64_t done, uint64_t bytes);
  // Erases the bar so that a message can be printed; the next Update redraws it.
  void Clear();

 private:
  void Draw();

  const std::string label_;
  const uint64_t total_;
  const Unit unit_;
  const bool enabled_;
  uint64_t done_ = 0, bytes_ = 0;
  bool drawn_ = false;
  Stopwatch clock_;
  double last_draw_ = -1;
};

// What a conversion did, printed as "key: value" lines on stdout (easy to read, easy to
// grep in scripts).
struct ConvertSummary {
  uint64_t records = 0;  // records written
  uint64_t skipped = 0;  // inputs reported and left out
  uint64_t shards = 0;
  uint64_t bytes_in = 0;   // input bytes read
  uint64_t bytes_out = 0;  // shard file bytes written
  double seconds = 0;
  std::string table;               // into a table: "committed version 3 of OUT"
  std::vector<std::string> notes;  // printed after the numbers, one "note:" line each
};
// Prints the summary to stdout and, when inputs were skipped, a warning line to stderr.
void PrintSummary(const ConvertSummary& summary);

}  // namespace sluice::cli
