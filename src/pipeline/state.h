// Saved iterator state: a small key -> value blob. Each stage writes its keys under its own
// prefix ("3.take/count"), so a stage restores from its keys whatever the order of restore.
// Layout (docs/pipeline.md, "State format"): "SLST", u8 version, varint entry count, entries
// (varint key length, key, u8 kind, value: 0 varint | 1 varint count + varints | 2 varint
// length + bytes), then the masked CRC32C of everything before it (u32 LE). Version 2 added
// kind 2; version 1 states (no kind 2) are read too.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"

namespace sluice::pipeline {

class StateWriter {
 public:
  void PutU64(std::string_view prefix, std::string_view key, uint64_t value);
  void PutU64s(std::string_view prefix, std::string_view key, std::vector<uint64_t> values);
  void PutString(std::string_view prefix, std::string_view key, std::string value);
  void Erase(std::string_view prefix, std::string_view key);  // tools and tests editing states
  std::string Finish() const;

 private:
  friend class StateReader;
  enum class Kind : uint8_t { kU64 = 0, kList = 1, kBytes = 2 };
  struct Value {
    Kind kind = Kind::kU64;
    std::vector<uint64_t> values;
    std::string bytes;
  };
  std::map<std::string, Value> entries_;
};

class StateReader {
 public:
  // Errors are InvalidArgument ("not a sluice iterator state", CRC mismatch, truncation).
  static Result<StateReader> Parse(ByteView blob);

  bool Has(std::string_view prefix, std::string_view key) const;
  // NotFound / InvalidArgument naming the key when absent or of the other kind.
  Result<uint64_t> GetU64(std::string_view prefix, std::string_view key) const;
  Result<std::vector<uint64_t>> GetU64s(std::string_view prefix, std::string_view key) const;
  uint64_t GetU64Or(std::string_view prefix, std::string_view key, uint64_t fallback) const;
  Result<std::string> GetString(std::string_view prefix, std::string_view key) const;
  uint8_t version() const { return version_; }
  // A writer holding the same entries (tools and tests that edit a state).
  StateWriter ToWriter() const;

 private:
  using Value = StateWriter::Value;
  using Kind = StateWriter::Kind;
  Result<const Value*> Find(std::string_view prefix, std::string_view key, Kind kind) const;
  std::map<std::string, Value, std::less<>> entries_;
  uint8_t version_ = 0;
};

}  // namespace sluice::pipeline
