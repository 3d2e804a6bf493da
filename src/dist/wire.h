// The byte layout of the coordinator's messages: fixed little-endian integers and
// length-prefixed strings, read back with bounds checks (a malformed message is an error,
// never an overread).
#pragma once

#include <string>
#include <string_view>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"

namespace sluice::dist {

class WireWriter {
 public:
  WireWriter& U64(uint64_t v) {
    PutFixed64(&out_, v);
    return *this;
  }
  WireWriter& Bytes(std::string_view s) {
    U64(s.size());
    out_.append(s);
    return *this;
  }
  WireWriter& Error(const Status& s) {
    U64(static_cast<uint64_t>(s.code()));
    return Bytes(s.message());
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view in) : in_(in) {}
  bool U64(uint64_t* v) {
    if (in_.size() - pos_ < 8 || pos_ > in_.size()) return false;
    *v = DecodeFixed64(in_.data() + pos_);
    pos_ += 8;
    return true;
  }
  bool Bytes(std::string* s) {
    uint64_t n = 0;
    if (!U64(&n) || n > in_.size() - pos_) return false;
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool Error(Status* s) {
    uint64_t code = 0;
    std::string message;
    if (!U64(&code) || !Bytes(&message) || code > static_cast<uint64_t>(StatusCode::kInternal)) {
      return false;
    }
    *s = code == 0 ? Status::OK() : Status(static_cast<StatusCode>(code), std::move(message));
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace sluice::dist
