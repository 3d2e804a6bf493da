#include "sluice/table/timestamp.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace sluice::table {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::string FormatTimestamp(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  int64_t millis = ms - static_cast<int64_t>(secs) * 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return buf;
}

Result<int64_t> ParseTimestamp(std::string_view text) {
  const std::string t(text);
  if (AllDigits(t) && t.size() <= 18) return static_cast<int64_t>(std::stoll(t));
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, n = 0;
  double s = 0;
  const Status bad = InvalidArgument("timestamp '" + t +
                                     "': expected YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|+HH:MM] or "
                                     "milliseconds since the epoch");
  if (std::sscanf(t.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10) return bad;
  std::string_view rest = text.substr(10);
  if (!rest.empty() && (rest[0] == 'T' || rest[0] == ' ')) {
    int m = 0;
    std::string r(rest.substr(1));
    if (std::sscanf(r.c_str(), "%2d:%2d%n", &h, &mi, &m) != 2) return bad;
    rest = rest.substr(1 + m);
    if (!rest.empty() && rest[0] == ':') {
      std::string sec(rest.substr(1));
      if (std::sscanf(sec.c_str(), "%lf%n", &s, &m) != 1) return bad;
      rest = rest.substr(1 + m);
    }
  }
  int64_t offset_min = 0;
  if (rest == "Z" || rest.empty()) {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int oh = 0, om = 0;
    std::string o(rest.substr(1));
    if (std::sscanf(o.c_str(), "%2d:%2d", &oh, &om) != 2) return bad;
    offset_min = (rest[0] == '+' ? 1 : -1) * (oh * 60 + om);
  } else {
    return bad;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s < 0 || s >= 61) return bad;
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  int64_t ms =
      ((days * 24 + h) * 60 + mi - offset_min) * 60000 + static_cast<int64_t>(s * 1000 + 0.5);
  return ms;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace sluice::table
