// Status and Result<T>: sluice's error model. Library code never throws across its
// boundary; it returns a Status (or a Result<T> carrying a value or a Status).
// End of data is not an error: readers report it through their return values.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace sluice {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller asked for something malformed
  kNotFound,           // a file, feature or key does not exist
  kAlreadyExists,
  kDataLoss,           // corrupt or truncated data: names file and byte offset
  kOutOfRange,         // a read past the end of a file or index
  kIoError,            // the operating system refused (permissions, disk full, ...)
  kResourceExhausted,  // a cap (record length, pixel count, memory budget) was hit
  kFailedPrecondition,
  kCancelled,
  kUnimplemented,
  kInternal,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "DataLoss: shard.tfrecord:1024: payload CRC mismatch"
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context` + ": ".
  Status WithContext(std::string_view context) const;

  bool operator==(const Status& other) const {
    return code_ == other.code_ && message_ == other.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status InvalidArgument(std::string message);
Status NotFound(std::string message);
Status AlreadyExists(std::string message);
Status DataLoss(std::string message);
Status OutOfRange(std::string message);
Status IoError(std::string message);
Status ResourceExhausted(std::string message);
Status FailedPrecondition(std::string message);
Status Cancelled(std::string message);
Status Unimplemented(std::string message);
Status Internal(std::string message);
// IoError from errno, naming the operation and path: "open data/x.tfrecord: No such file..."
// ENOENT maps to NotFound.
Status ErrnoStatus(std::string_view operation, std::string_view path, int err);

// A value or an error. Accessing value() of an error Result is a programming error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::OK() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace sluice

#define SLUICE_CONCAT_INNER(a, b) a##b
#define SLUICE_CONCAT(a, b) SLUICE_CONCAT_INNER(a, b)

#define SLUICE_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::sluice::Status _sluice_st = (expr);     \
    if (!_sluice_st.ok()) return _sluice_st;  \
  } while (0)

#define SLUICE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

// SLUICE_ASSIGN_OR_RETURN(auto file, fs->OpenForRead(path));
#define SLUICE_ASSIGN_OR_RETURN(lhs, expr) \
  SLUICE_ASSIGN_OR_RETURN_IMPL(SLUICE_CONCAT(_sluice_result_, __LINE__), lhs, expr)
