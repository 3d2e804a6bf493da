#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "cli/common.h"
#include "sluice/base/bytes.h"

namespace sluice::cli {

ProgressBar::ProgressBar(std::string label, uint64_t total, Unit unit)
    : label_(std::move(label)),
      total_(total),
      unit_(unit),
      enabled_(::isatty(STDERR_FILENO) == 1) {}

void ProgressBar::Update(uint64_t done, uint64_t bytes) {
  done_ = done;
  bytes_ = bytes;
  double now = clock_.seconds();
  if (!enabled_ || (drawn_ && now - last_draw_ < 0.1 && done != total_)) return;
  last_draw_ = now;
  Draw();
}

void ProgressBar::Draw() {
  constexpr int kWidth = 30;
  double secs = clock_.seconds();
  double rate = secs > 0 ? static_cast<double>(bytes_) / secs : 0;
  auto show = [&](uint64_t n) {
    return unit_ == Unit::kBytes ? FormatByteSize(n) : std::to_string(n);
  };
  std::string line = "\r" + label_ + " ";
  if (total_ > 0) {
    int filled = static_cast<int>(kWidth * static_cast<double>(std::min(done_, total_)) /
                                  static_cast<double>(total_));
    line += "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] ";
    line += show(done_) + "/" + show(total_);
  } else {
    line += show(done_);
  }
  line += "  " + FormatByteSize(static_cast<uint64_t>(rate)) + "/s\x1b[K";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::Clear() {
  if (!drawn_) return;
  std::fputs("\r\x1b[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

void PrintSummary(const ConvertSummary& s) {
  double rate = s.seconds > 0 ? static_cast<double>(s.records) / s.seconds : 0;
  std::printf("records:   %llu\n", static_cast<unsigned long long>(s.records));
  std::printf("skipped:   %llu\n", static_cast<unsigned long long>(s.skipped));
  std::printf("shards:    %llu\n", static_cast<unsigned long long>(s.shards));
  std::printf("bytes in:  %s (%llu)\n", FormatByteSize(s.bytes_in).c_str(),
              static_cast<unsigned long long>(s.bytes_in));
  std::printf("bytes out: %s (%llu)\n", FormatByteSize(s.bytes_out).c_str(),
              static_cast<unsigned long long>(s.bytes_out));
  std::printf("seconds:   %.2f\n", s.seconds);
  std::printf("records/s: %.0f\n", rate);
  if (!s.table.empty()) std::printf("table:     %s\n", s.table.c_str());
  for (const auto& note : s.notes) std::printf("note: %s\n", note.c_str());
  std::fflush(stdout);
  if (s.skipped > 0) {
    Warn(std::to_string(s.skipped) + " input(s) skipped (reported above); the output holds the " +
         std::to_string(s.records) + " others");
  }
}

}  // namespace sluice::cli
