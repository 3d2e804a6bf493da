// Ledger file layout (little-endian, docs/cache.md):
//   0 magic "SLLEDGR1" | 8 version u32 (1) | 12 zero u32 | 16 capacity u64 | 24 used u64 |
//   32 generation u64 | 40 masked CRC32C of bytes [0, 40) u32
#include "ledger.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sluice/base/bytes.h"
#include "sluice/base/crc32c.h"

namespace sluice::io::cache {
namespace {

constexpr char kMagic[8] = {'S', 'L', 'L', 'E', 'D', 'G', 'R', '1'};
constexpr size_t kLedgerBytes = 44;

bool Decode(const char* b, LedgerState* out) {
  if (std::memcmp(b, kMagic, 8) != 0 || DecodeFixed32(b + 8) != 1) return false;
  if (crc32c::Unmask(DecodeFixed32(b + 40)) != crc32c::Value(b, 40)) return false;
  out->capacity = DecodeFixed64(b + 16);
  out->used = DecodeFixed64(b + 24);
  out->generation = DecodeFixed64(b + 32);
  return true;
}

void Encode(const LedgerState& s, char* b) {
  std::memset(b, 0, kLedgerBytes);
  std::memcpy(b, kMagic, 8);
  EncodeFixed32(b + 8, 1);
  EncodeFixed64(b + 16, s.capacity);
  EncodeFixed64(b + 24, s.used);
  EncodeFixed64(b + 32, s.generation);
  EncodeFixed32(b + 40, crc32c::Mask(crc32c::Value(b, 40)));
}

}  // namespace

Result<std::unique_ptr<Ledger>> Ledger::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  return std::unique_ptr<Ledger>(new Ledger(path, fd));
}

Ledger::~Ledger() { ::close(fd_); }

Result<LedgerLock> Ledger::Lock() {
  LedgerLock lock(this, std::unique_lock<std::mutex>(mu_));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) return ErrnoStatus("lock", path_, errno);
  }
  char b[kLedgerBytes];
  ssize_t got = ::pread(fd_, b, kLedgerBytes, 0);
  lock.fresh_ = got != static_cast<ssize_t>(kLedgerBytes) || !Decode(b, &lock.state_);
  if (lock.fresh_) lock.state_ = LedgerState{};
  return lock;
}

LedgerLock::LedgerLock(LedgerLock&& other) noexcept
    : ledger_(std::exchange(other.ledger_, nullptr)),
      mu_(std::move(other.mu_)),
      state_(other.state_),
      fresh_(other.fresh_) {}

LedgerLock::~LedgerLock() {
  if (ledger_ != nullptr) ::flock(ledger_->fd_, LOCK_UN);
}

Status LedgerLock::Save() {
  char b[kLedgerBytes];
  Encode(state_, b);
  ssize_t w = ::pwrite(ledger_->fd_, b, kLedgerBytes, 0);
  if (w != static_cast<ssize_t>(kLedgerBytes)) {
    return ErrnoStatus("write", ledger_->path_, w < 0 ? errno : EIO);
  }
  fresh_ = false;
  return Status::OK();
}

}  // namespace sluice::io::cache
