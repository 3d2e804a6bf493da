// OpenIndexFile (retained_index.h): remote index files read whole and served from memory.
#include "format/retained_index.h"

#include <atomic>

namespace sluice::format {
namespace {

std::atomic<uint64_t> retained_bytes{0};
std::atomic<uint64_t> retained_budget{uint64_t{64} << 20};

// Takes `bytes` of the budget; false (nothing taken) when they do not fit.
bool Reserve(uint64_t bytes) {
  const uint64_t budget = retained_budget.load();
  uint64_t held = retained_bytes.load();
  do {
    if (held > budget || bytes > budget - held) return false;
  } while (!retained_bytes.compare_exchange_weak(held, held + bytes));
  return true;
}

class RetainedIndexFile final : public io::RandomAccessFile {
 public:
  RetainedIndexFile(std::string path, std::string bytes, uint64_t reserved)
      : path_(std::move(path)), bytes_(std::move(bytes)), reserved_(reserved) {}
  ~RetainedIndexFile() override { retained_bytes -= reserved_; }
  const std::string& path() const override { return path_; }
  uint64_t size() const override { return bytes_.size(); }
  Result<ByteView> Read(uint64_t offset, size_t n, char*) const override {
    if (offset >= bytes_.size()) return ByteView();
    return ByteView(bytes_).substr(offset, n);
  }

 private:
  const std::string path_;
  const std::string bytes_;
  const uint64_t reserved_;
};

}  // namespace

Result<std::unique_ptr<io::RandomAccessFile>> OpenIndexFile(io::FileSystem* fs,
                                                            const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file, fs->OpenForRead(path));
  const uint64_t size = file->size();
  if (!fs->is_remote() || size > kMaxRetainedIndexFileBytes || !Reserve(size)) {
    return file;
  }
  std::string bytes(size, '\0');
  Result<ByteView> got = file->Read(0, size, bytes.data());
  if (!got.ok() || got->size() != size) {
    retained_bytes -= size;
    if (!got.ok()) return got.status();
    return file;  // shorter than its size: the lazy reads report the file that shrank
  }
  if (got->data() != bytes.data()) bytes.assign(got->data(), got->size());
  return std::unique_ptr<io::RandomAccessFile>(
      std::make_unique<RetainedIndexFile>(file->path(), std::move(bytes), size));
}

uint64_t RetainedIndexBytes() { return retained_bytes.load(); }

uint64_t SetRetainedIndexBudget(uint64_t bytes) { return retained_budget.exchange(bytes); }

}  // namespace sluice::format
