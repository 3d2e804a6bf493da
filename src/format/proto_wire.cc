#include "format/proto_wire.h"

#include <string>

namespace sluice::format::wire {

bool WireReader::ReadVarintSlow(uint64_t* value) {
  const char* start = pos_;
  uint64_t result = 0;
  for (size_t i = 0; i < kMaxVarintBytes; ++i) {
    if (pos_ == limit_) return FailAt(start, "truncated varint");
    uint8_t byte = static_cast<uint8_t>(*pos_++);
    // Bits past 64 in the tenth byte are dropped, as protobuf does.
    result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if (byte < 0x80) {
      *value = result;
      return true;
    }
  }
  return FailAt(start, "varint longer than 10 bytes");
}

bool WireReader::ReadTagSlow(uint32_t* field, WireType* type) {
  const char* start = pos_;
  uint64_t key = 0;
  if (!ReadVarint(&key)) return false;
  if (key > UINT32_MAX) return FailAt(start, "field key exceeds 32 bits");
  uint32_t wire_type = static_cast<uint32_t>(key & 7);
  if (wire_type > 5) return FailAt(start, "invalid wire type 6 or 7");
  *field = static_cast<uint32_t>(key >> 3);
  if (*field == 0) return FailAt(start, "field number 0");
  *type = static_cast<WireType>(wire_type);
  return true;
}

bool WireReader::ReadFixed32(uint32_t* value) {
  if (limit_ - pos_ < 4) return Fail("truncated fixed32");
  *value = DecodeFixed32(pos_);
  pos_ += 4;
  return true;
}

bool WireReader::ReadFixed64(uint64_t* value) {
  if (limit_ - pos_ < 8) return Fail("truncated fixed64");
  *value = DecodeFixed64(pos_);
  pos_ += 8;
  return true;
}

bool WireReader::SkipField(uint32_t field, WireType type) {
  uint64_t scratch64 = 0;
  uint32_t scratch32 = 0;
  ByteView payload;
  switch (type) {
    case WireType::kVarint:
      return ReadVarint(&scratch64);
    case WireType::kFixed64:
      return ReadFixed64(&scratch64);
    case WireType::kLengthDelimited:
      return ReadLengthDelimited(&payload);
    case WireType::kStartGroup:
      return SkipGroup(field, 1);
    case WireType::kEndGroup:
      return FailAtKey("end-group key without a matching start-group");
    case WireType::kFixed32:
      return ReadFixed32(&scratch32);
  }
  return Fail("invalid wire type");
}

// Skips up to and including the end-group key of `field`; nested groups recurse.
bool WireReader::SkipGroup(uint32_t field, int depth) {
  if (depth > kMaxGroupDepth) return FailAtKey("groups nested too deeply");
  while (true) {
    if (AtLimit()) return Fail("group not closed before the end of its message");
    uint32_t inner = 0;
    WireType type = WireType::kVarint;
    const char* key_at = pos_;
    if (!ReadTag(&inner, &type)) return false;
    if (type == WireType::kEndGroup) {
      if (inner != field) return FailAt(key_at, "end-group key does not match its group");
      return true;
    }
    bool ok = type == WireType::kStartGroup ? SkipGroup(inner, depth + 1) : SkipField(inner, type);
    if (!ok) return false;
  }
}

bool WireReader::FailAt(const char* at, const char* what) {
  if (error_ == nullptr) {  // the first failure wins
    error_ = what;
    error_offset_ = static_cast<uint64_t>(at - begin_);
  }
  return false;
}

Status WireReader::status(std::string_view message_name) const {
  if (error_ == nullptr) return Status::OK();
  return DataLoss(std::string(message_name) + ": offset " + std::to_string(error_offset_) + ": " +
                  error_);
}

size_t VarintLength(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

void PutVarint(std::string* out, uint64_t value) {
  char buf[kMaxVarintBytes];
  size_t n = 0;
  while (value >= 0x80) {
    buf[n++] = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  buf[n++] = static_cast<char>(value);
  out->append(buf, n);
}

void PutLengthPrefix(std::string* out, uint32_t field, size_t length) {
  PutTag(out, field, WireType::kLengthDelimited);
  PutVarint(out, length);
}

void PutLengthDelimited(std::string* out, uint32_t field, ByteView payload) {
  PutLengthPrefix(out, field, payload.size());
  out->append(payload.data(), payload.size());
}

}  // namespace sluice::format::wire
