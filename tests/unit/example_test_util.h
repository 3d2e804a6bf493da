// Helpers for Example codec tests: hand-assembled protobuf wire bytes, so tests can build
// encodings the builders never produce (unpacked lists, unknown fields, groups, garbage).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "format/proto_wire.h"

namespace sluice::format::testing {

using wire::WireType;

inline std::string Hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}
inline std::string Key(uint32_t field, WireType type) {
  std::string s;
  wire::PutTag(&s, field, type);
  return s;
}
inline std::string Varint(uint64_t v) {
  std::string s;
  wire::PutVarint(&s, v);
  return s;
}
// A length-delimited field.
inline std::string Field(uint32_t field, std::string_view payload) {
  std::string s;
  wire::PutLengthDelimited(&s, field, payload);
  return s;
}
inline std::string VarintField(uint32_t field, uint64_t v) {
  return Key(field, WireType::kVarint) + Varint(v);
}
inline std::string Fixed32Field(uint32_t field, uint32_t v) {
  std::string s = Key(field, WireType::kFixed32);
  PutFixed32(&s, v);
  return s;
}
// Map entry {key, value} inside Features / FeatureLists (map field 1).
inline std::string Entry(std::string_view key, std::string_view value) {
  return Field(1, Field(1, key) + Field(2, value));
}
// Example{features: Features{entries}}.
inline std::string ExampleOf(std::string_view entries) { return Field(1, entries); }
// Feature{int64_list: Int64List{list}} and friends; `list` is the raw list message.
inline std::string BytesFeature(std::string_view list) { return Field(1, list); }
inline std::string FloatFeature(std::string_view list) { return Field(2, list); }
inline std::string Int64Feature(std::string_view list) { return Field(3, list); }
// One unknown field of every wire type, a nested group included.
inline std::string UnknownFields() {
  return VarintField(90, 12345) + Key(91, WireType::kFixed64) + std::string(8, 'x') +
         Field(92, "unknown payload") + Key(93, WireType::kStartGroup) + VarintField(1, 1) +
         Key(94, WireType::kStartGroup) + Key(94, WireType::kEndGroup) +
         Key(93, WireType::kEndGroup) + Fixed32Field(95, 7);
}

}  // namespace sluice::format::testing
