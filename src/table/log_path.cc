#include "log_path.h"

#include <cstdio>

namespace sluice::table {
namespace {

constexpr size_t kVersionDigits = 20;
constexpr size_t kPartDigits = 10;
constexpr size_t kUuidChars = 36;

// The number spelled by exactly `digits` decimal digits at the start of `s`, or -1.
int64_t FixedNumber(std::string_view s, size_t digits) {
  if (s.size() < digits) return -1;
  int64_t v = 0;
  for (size_t i = 0; i < digits; ++i) {
    char c = s[i];
    if (c < '0' || c > '9') return -1;
    if (v > (INT64_MAX - (c - '0')) / 10) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool IsUuid(std::string_view s) {
  if (s.size() != kUuidChars) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    char c = s[i];
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (dash ? c != '-' : !hex) return false;
  }
  return true;
}

// `rest` follows "<version>.checkpoint.".
void ParseCheckpoint(std::string_view rest, LogPath* p) {
  if (rest == "parquet") {
    p->kind = LogFileKind::kClassicCheckpoint;
    return;
  }
  // <part:10>.<parts:10>.parquet
  if (rest.size() == 2 * kPartDigits + 1 + 8 && rest[kPartDigits] == '.' &&
      rest.substr(2 * kPartDigits + 1) == ".parquet") {
    int64_t part = FixedNumber(rest, kPartDigits);
    int64_t parts = FixedNumber(rest.substr(kPartDigits + 1), kPartDigits);
    if (part >= 1 && parts >= 1 && part <= parts && parts <= INT32_MAX) {
      p->kind = LogFileKind::kMultiPartCheckpoint;
      p->part = static_cast<int32_t>(part);
      p->parts = static_cast<int32_t>(parts);
    }
    return;
  }
  // <uuid>.json | <uuid>.parquet
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos || !IsUuid(rest.substr(0, dot))) return;
  std::string_view ext = rest.substr(dot + 1);
  if (ext == "json" || ext == "parquet") {
    p->kind = LogFileKind::kUuidCheckpoint;
    p->json = ext == "json";
  }
}

}  // namespace

LogPath ParseLogPath(std::string_view name) {
  LogPath p;
  p.name = std::string(name);
  if (name == kLastCheckpointName) {
    p.kind = LogFileKind::kLastCheckpoint;
    return p;
  }
  int64_t version = FixedNumber(name, kVersionDigits);
  if (version < 0 || name.size() <= kVersionDigits || name[kVersionDigits] != '.') return p;
  std::string_view rest = name.substr(kVersionDigits + 1);
  if (rest == "json") {
    p.kind = LogFileKind::kCommit;
  } else if (rest == "crc") {
    p.kind = LogFileKind::kChecksum;
  } else if (rest.substr(0, 11) == "checkpoint.") {
    ParseCheckpoint(rest.substr(11), &p);
  } else if (rest.size() == kVersionDigits + 15 &&
             rest.substr(kVersionDigits) == ".compacted.json") {
    int64_t end = FixedNumber(rest, kVersionDigits);
    if (end > version) {
      p.kind = LogFileKind::kCompaction;
      p.end_version = end;
    }
  }
  if (p.kind != LogFileKind::kOther) p.version = version;
  return p;
}

std::string VersionPrefix(int64_t version) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(version));
  return buf;
}

std::string CommitFileName(int64_t version) { return VersionPrefix(version) + ".json"; }

std::string UuidCheckpointFileName(int64_t version, std::string_view uuid) {
  return VersionPrefix(version) + ".checkpoint." + std::string(uuid) + ".json";
}

}  // namespace sluice::table
