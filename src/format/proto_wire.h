// A tiny protobuf wire-format reader and writer: varints, tags, fixed-width and
// length-delimited fields (https://protobuf.dev/programming-guides/encoding/).
//
// Why hand-written instead of libprotobuf: the Example codec wants zero-copy views into
// the record buffer (libprotobuf copies every bytes field into a std::string), no code
// generation step in the build, and a dependency surface of zero for the library. The
// subset needed by tf.train.Example is small enough to read and fuzz in one sitting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"

namespace sluice::format::wire {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,  // deprecated groups: skipped, never produced
  kEndGroup = 4,
  kFixed32 = 5,
};

inline constexpr size_t kMaxVarintBytes = 10;
// protobuf's default recursion limit; bounds the stack used to skip nested groups.
inline constexpr int kMaxGroupDepth = 100;

// A forward cursor over one serialized record. Nested messages are read in place by
// narrowing the readable range (PushLimit/PopLimit), so one reader and one error slot
// serve the whole record and nothing is allocated.
//
// Failure is sticky and cheap: a failed Read* returns false and records a static message
// plus the byte offset (from the start of the record) where the bad item began; status()
// turns it into DataLoss("offset N: message") once, at the top.
class WireReader {
 public:
  explicit WireReader(ByteView record)
      : begin_(record.data()),
        pos_(record.data()),
        limit_(record.data() + record.size()),
        key_at_(record.data()) {}

  // True when the current range (the record or the innermost pushed limit) is consumed.
  bool AtLimit() const { return pos_ == limit_; }
  // Offset of the cursor from the start of the record.
  uint64_t offset() const { return static_cast<uint64_t>(pos_ - begin_); }
  bool failed() const { return error_ != nullptr; }

  // Reads a field key. Rejects field number 0, keys above 32 bits and wire types 6 and 7.
  bool ReadTag(uint32_t* field, WireType* type) {
    key_at_ = pos_;
    // Fast path: keys of fields 1..15 are one byte.
    if (pos_ < limit_ && static_cast<uint8_t>(*pos_) < 0x80) {
      uint8_t key = static_cast<uint8_t>(*pos_);
      if ((key & 7) <= 5 && key >= 8) {
        ++pos_;
        *field = key >> 3;
        *type = static_cast<WireType>(key & 7);
        return true;
      }
    }
    return ReadTagSlow(field, type);
  }
  bool ReadVarint(uint64_t* value) {
    // Fast path: most varints (tags, lengths, small ints) are one byte.
    if (pos_ < limit_ && static_cast<uint8_t>(*pos_) < 0x80) {
      *value = static_cast<uint8_t>(*pos_++);
      return true;
    }
    return ReadVarintSlow(value);
  }
  bool ReadFixed32(uint32_t* value);
  bool ReadFixed64(uint64_t* value);
  // Reads a length prefix and returns the payload as a view into the record.
  bool ReadLengthDelimited(ByteView* payload) {
    const char* start = pos_;
    uint64_t length = 0;
    if (!ReadVarint(&length)) return false;
    if (length > static_cast<uint64_t>(limit_ - pos_)) {
      return FailAt(start, "length-delimited field runs past the end of its message");
    }
    *payload = ByteView(pos_, static_cast<size_t>(length));
    pos_ += length;
    return true;
  }
  // The same for a field whose key (of wire type `type`) was just read and must be
  // length-delimited; `wrong_type` is the failure message when it is not.
  bool ReadLengthDelimited(WireType type, const char* wrong_type, ByteView* payload) {
    if (type != WireType::kLengthDelimited) return FailAtKey(wrong_type);
    return ReadLengthDelimited(payload);
  }
  // Skips the value of a field whose key was just read (groups included, nested up to
  // kMaxGroupDepth). `field` is needed to match a group's end key.
  bool SkipField(uint32_t field, WireType type);

  // Reading a nested message in place: Enter(payload) makes `payload` (a view inside the
  // record, as returned by ReadLengthDelimited) the readable range; Leave restores the
  // cursor and range that were current at Enter, whether or not the payload was all read.
  struct Scope {
    const char* pos;
    const char* limit;
  };
  Scope Enter(ByteView payload) {
    Scope outer{pos_, limit_};
    pos_ = payload.data();
    limit_ = payload.data() + payload.size();
    return outer;
  }
  void Leave(Scope outer) {
    pos_ = outer.pos;
    limit_ = outer.limit;
  }

  // Records a failure at the cursor (or at `at`, a pointer into the record). The first
  // failure wins. Always returns false.
  bool Fail(const char* what) { return FailAt(pos_, what); }
  bool FailAt(const char* at, const char* what);
  // Records a failure at the start of the last key read (e.g. a known field whose wire type
  // is wrong).
  bool FailAtKey(const char* what) { return FailAt(key_at_, what); }
  // OK, or DataLoss naming the message type, the offset inside the record and what was
  // wrong: "tf.train.Example: offset 17: truncated varint".
  Status status(std::string_view message_name) const;

 private:
  bool ReadVarintSlow(uint64_t* value);
  bool ReadTagSlow(uint32_t* field, WireType* type);
  bool SkipGroup(uint32_t field, int depth);

  const char* begin_;
  const char* pos_;
  const char* limit_;
  const char* key_at_ = nullptr;  // start of the last key read
  const char* error_ = nullptr;   // static string; nullptr while healthy
  uint64_t error_offset_ = 0;
};

// Calls on_field(field, type) for each field key of the current range, in order; on_field
// reads or skips the field's value and returns false on failure, which stops the walk.
template <typename Fn>
bool ForEachField(WireReader* r, Fn&& on_field) {
  while (!r->AtLimit()) {
    uint32_t field = 0;
    WireType type = WireType::kVarint;
    if (!r->ReadTag(&field, &type) || !on_field(field, type)) return false;
  }
  return true;
}
// The same over the nested message `message`, read in place (Enter / Leave).
template <typename Fn>
bool ForEachField(WireReader* r, ByteView message, Fn&& on_field) {
  WireReader::Scope outer = r->Enter(message);
  if (!ForEachField(r, on_field)) return false;
  r->Leave(outer);
  return true;
}

// Writing. Appends to *out; the encodings are the canonical (shortest) ones that protobuf
// itself produces, so bytes match SerializeToString.
size_t VarintLength(uint64_t value);
void PutVarint(std::string* out, uint64_t value);
inline void PutTag(std::string* out, uint32_t field, WireType type) {
  PutVarint(out, (uint64_t{field} << 3) | static_cast<uint64_t>(type));
}
// Key + length + bytes.
void PutLengthDelimited(std::string* out, uint32_t field, ByteView payload);
// Key + length for a payload of `length` bytes that the caller appends next.
void PutLengthPrefix(std::string* out, uint32_t field, size_t length);

}  // namespace sluice::format::wire
