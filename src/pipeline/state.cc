#include "state.h"

#include "sluice/base/crc32c.h"

namespace sluice::pipeline {
namespace {

constexpr char kMagic[4] = {'S', 'L', 'S', 'T'};
constexpr uint8_t kVersion = 2;  // 1: no kind 2 (bytes) entries

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool GetVarint(ByteView* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    uint8_t b = static_cast<uint8_t>((*in)[0]);
    in->remove_prefix(1);
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = result;
      return true;
    }
  }
  return false;
}

std::string Key(std::string_view prefix, std::string_view key) {
  std::string k(prefix);
  k += '/';
  k += key;
  return k;
}

Status Corrupt(std::string_view what) {
  return InvalidArgument("iterator state: " + std::string(what));
}

}  // namespace

void StateWriter::PutU64(std::string_view prefix, std::string_view key, uint64_t value) {
  entries_[Key(prefix, key)] = Value{Kind::kU64, {value}, {}};
}

void StateWriter::PutU64s(std::string_view prefix, std::string_view key,
                          std::vector<uint64_t> values) {
  entries_[Key(prefix, key)] = Value{Kind::kList, std::move(values), {}};
}

void StateWriter::PutString(std::string_view prefix, std::string_view key, std::string value) {
  entries_[Key(prefix, key)] = Value{Kind::kBytes, {}, std::move(value)};
}

void StateWriter::Erase(std::string_view prefix, std::string_view key) {
  entries_.erase(Key(prefix, key));
}

std::string StateWriter::Finish() const {
  std::string out(kMagic, sizeof(kMagic));
  out.push_back(static_cast<char>(kVersion));
  PutVarint(&out, entries_.size());
  for (const auto& [key, value] : entries_) {
    PutVarint(&out, key.size());
    out += key;
    out.push_back(static_cast<char>(value.kind));
    if (value.kind == Kind::kBytes) {
      PutVarint(&out, value.bytes.size());
      out += value.bytes;
      continue;
    }
    if (value.kind == Kind::kList) PutVarint(&out, value.values.size());
    for (uint64_t v : value.values) PutVarint(&out, v);
  }
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out)));
  return out;
}

Result<StateReader> StateReader::Parse(ByteView blob) {
  if (blob.size() < sizeof(kMagic) + 1 + 4 || blob.substr(0, 4) != ByteView(kMagic, 4)) {
    return Corrupt("not a sluice iterator state (bad magic)");
  }
  uint32_t stored = crc32c::Unmask(DecodeFixed32(blob.data() + blob.size() - 4));
  ByteView body = blob.substr(0, blob.size() - 4);
  if (crc32c::Value(body) != stored) return Corrupt("CRC mismatch (damaged state)");
  const uint8_t version = static_cast<uint8_t>(body[4]);
  if (version < 1 || version > kVersion) {
    return Corrupt("unsupported version " + std::to_string(version) +
                   " (this sluice reads versions 1 to " + std::to_string(kVersion) + ")");
  }
  body.remove_prefix(5);
  StateReader r;
  r.version_ = version;
  uint64_t n = 0;
  if (!GetVarint(&body, &n)) return Corrupt("truncated entry count");
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t key_len = 0;
    if (!GetVarint(&body, &key_len) || key_len + 1 > body.size()) return Corrupt("truncated key");
    std::string key(body.substr(0, key_len));
    body.remove_prefix(key_len);
    Value value;
    const uint8_t kind = static_cast<uint8_t>(body[0]);
    if (kind > (version >= 2 ? 2 : 1)) return Corrupt("unknown kind of " + key);
    value.kind = static_cast<Kind>(kind);
    body.remove_prefix(1);
    if (value.kind == Kind::kBytes) {
      uint64_t len = 0;
      if (!GetVarint(&body, &len) || len > body.size()) return Corrupt("bad length of " + key);
      value.bytes = std::string(body.substr(0, len));
      body.remove_prefix(len);
      r.entries_[std::move(key)] = std::move(value);
      continue;
    }
    uint64_t count = 1;
    if (value.kind == Kind::kList && (!GetVarint(&body, &count) || count > body.size())) {
      return Corrupt("bad list length of " + key);
    }
    value.values.resize(count);
    for (uint64_t& v : value.values) {
      if (!GetVarint(&body, &v)) return Corrupt("truncated value of " + key);
    }
    r.entries_[std::move(key)] = std::move(value);
  }
  if (!body.empty()) return Corrupt("trailing bytes");
  return r;
}

bool StateReader::Has(std::string_view prefix, std::string_view key) const {
  return entries_.count(Key(prefix, key)) > 0;
}

Result<const StateReader::Value*> StateReader::Find(std::string_view prefix, std::string_view key,
                                                    Kind kind) const {
  auto it = entries_.find(Key(prefix, key));
  if (it == entries_.end()) {
    return NotFound("iterator state has no '" + Key(prefix, key) +
                    "' (saved from a different pipeline?)");
  }
  if (it->second.kind != kind) return Corrupt("'" + it->first + "' is of another kind");
  return &it->second;
}

Result<uint64_t> StateReader::GetU64(std::string_view prefix, std::string_view key) const {
  SLUICE_ASSIGN_OR_RETURN(const Value* v, Find(prefix, key, Kind::kU64));
  return v->values[0];
}

Result<std::vector<uint64_t>> StateReader::GetU64s(std::string_view prefix,
                                                   std::string_view key) const {
  SLUICE_ASSIGN_OR_RETURN(const Value* v, Find(prefix, key, Kind::kList));
  return v->values;
}

Result<std::string> StateReader::GetString(std::string_view prefix, std::string_view key) const {
  SLUICE_ASSIGN_OR_RETURN(const Value* v, Find(prefix, key, Kind::kBytes));
  return v->bytes;
}

uint64_t StateReader::GetU64Or(std::string_view prefix, std::string_view key,
                               uint64_t fallback) const {
  Result<uint64_t> v = GetU64(prefix, key);
  return v.ok() ? *v : fallback;
}

StateWriter StateReader::ToWriter() const {
  StateWriter w;
  for (const auto& [key, value] : entries_) w.entries_[key] = value;
  return w;
}

}  // namespace sluice::pipeline
