// Saved iterator state: a small key -> value blob. Each stage writes its keys under its own
// prefix ("3.take/count"), so a stage restores from its keys whatever the order of restore.
// Layout (docs/pipeline.md, "State format"): "SLST", u8 version, varint entry count, entries
// (varint key length, key, u8 kind, value: varint | varint count + varints), then the masked
// CRC32C of everything before it (u32 LE).
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
  std::string Finish() const;

 private:
  friend class StateReader;
  struct Value {
    bool list = false;
    std::vector<uint64_t> values;
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
  // A writer holding the same entries (tools and tests that edit a state).
  StateWriter ToWriter() const;

 private:
  struct Value {
    bool list = false;
    std::vector<uint64_t> values;
  };
  std::map<std::string, Value, std::less<>> entries_;
};

}  // namespace sluice::pipeline
