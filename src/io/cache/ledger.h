// The ledger: the capacity accounting that every process using one cache directory shares
// (docs/cache.md, "Ledger"). A 44-byte file holding the capacity, the bytes of published
// chunk files and a generation number, changed only under an exclusive flock(2). Every
// publish and delete of a chunk file happens under that lock, by whichever process does it,
// so `used` is the directory's exact total, never an estimate; a crash between a delete and
// the ledger update can only leave `used` too high (never over capacity), and the scan at
// start recomputes it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "sluice/base/status.h"

namespace sluice::io::cache {

struct LedgerState {
  uint64_t capacity = 0;    // bytes the published chunk files may take
  uint64_t used = 0;        // bytes they take now
  uint64_t generation = 0;  // bumped by `clear`: in-memory indexes of older generations are void
};

class Ledger;

// Holds the ledger's lock (in-process mutex, then the file's flock) while it lives.
class LedgerLock {
 public:
  LedgerLock(LedgerLock&& other) noexcept;
  LedgerLock& operator=(LedgerLock&&) = delete;
  ~LedgerLock();
  LedgerState& state() { return state_; }
  // True when the file was empty or damaged (its state is zero): rebuild it by a scan.
  bool fresh() const { return fresh_; }
  Status Save();

 private:
  friend class Ledger;
  LedgerLock(Ledger* ledger, std::unique_lock<std::mutex> mu)
      : ledger_(ledger), mu_(std::move(mu)) {}
  Ledger* ledger_;
  std::unique_lock<std::mutex> mu_;
  LedgerState state_;
  bool fresh_ = false;
};

class Ledger {
 public:
  static Result<std::unique_ptr<Ledger>> Open(const std::string& path);
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;
  // Blocks until this thread holds the lock across threads and processes.
  Result<LedgerLock> Lock();
  const std::string& path() const { return path_; }

 private:
  friend class LedgerLock;
  Ledger(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
  std::mutex mu_;  // flock(2) does not exclude threads sharing one descriptor
};

}  // namespace sluice::io::cache
