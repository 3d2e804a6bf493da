// Tensors of pipeline elements: dense arrays (dtype + shape) and byte strings, stored in
// reusable, refcounted, 64-byte-aligned buffers.
//
// Why refcounted buffers: a batch's tensors are handed to numpy / torch without a copy, so
// the batch buffer must stay alive for as long as any array views it, long after the
// pipeline moved on. Why a pool: steady state must allocate nothing per sample; a buffer
// whose last reference drops goes back to its pool and serves the next batch.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"

namespace sluice::pipeline {

enum class DType : uint8_t { kUInt8, kInt32, kInt64, kFloat16, kFloat32, kString };

std::string_view DTypeName(DType dtype);  // "uint8", "int32", ..., "string"
Result<DType> ParseDType(std::string_view name);
// Bytes per value; 0 for kString (variable).
size_t DTypeSize(DType dtype);

inline constexpr size_t kMaxRank = 6;

// A tensor shape of rank <= kMaxRank, stored inline (no heap). In schemas a dimension of -1
// means "varies from element to element".
class Shape {
 public:
  Shape() = default;  // a scalar
  Shape(std::initializer_list<int64_t> dims);

  size_t rank() const { return rank_; }
  int64_t dim(size_t i) const { return dims_[i]; }
  int64_t operator[](size_t i) const { return dims_[i]; }
  void set_dim(size_t i, int64_t v) { dims_[i] = v; }
  // Returns false (and leaves the shape unchanged) when the rank would exceed kMaxRank.
  bool PushFront(int64_t dim);
  bool PushBack(int64_t dim);
  Shape WithoutFirst() const;
  // Product of the dimensions (1 for a scalar); -1 if a dimension is unknown.
  int64_t num_elements() const;
  bool fully_defined() const;
  // Whether a concrete shape fits this (schema) shape: same rank, equal where known.
  bool Matches(const Shape& concrete) const;
  std::string ToString() const;  // "[256, 3]", "[]" for a scalar, "[-1]"

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  uint8_t rank_ = 0;
  std::array<int64_t, kMaxRank> dims_{};
};

inline constexpr size_t kBufferAlignment = 64;

class BufferPool;
class BufferRef;
BufferRef AllocateBuffer(size_t bytes);

// A block of 64-byte-aligned bytes with an intrusive reference count. Created only by
// AllocateBuffer / BufferPool::Allocate and held through BufferRef.
class Buffer {
 public:
  char* data() { return reinterpret_cast<char*>(this) + kHeaderBytes; }
  const char* data() const { return reinterpret_cast<const char*>(this) + kHeaderBytes; }
  size_t capacity() const { return capacity_; }
  uint32_t ref_count() const { return refs_.load(std::memory_order_acquire); }

 private:
  friend class BufferRef;
  friend class BufferPool;
  friend BufferRef AllocateBuffer(size_t bytes);
  static constexpr size_t kHeaderBytes = 64;  // data starts one alignment unit after this

  Buffer(size_t capacity, uint8_t size_class, std::weak_ptr<BufferPool> pool)
      : capacity_(capacity), size_class_(size_class), pool_(std::move(pool)) {}
  static Buffer* Create(size_t capacity, uint8_t size_class, std::weak_ptr<BufferPool> pool);
  static void Destroy(Buffer* b);
  void Release();

  std::atomic<uint32_t> refs_{1};
  size_t capacity_;
  uint8_t size_class_;
  // The pool it returns to; expired pools are fine: the buffer then frees itself.
  std::weak_ptr<BufferPool> pool_;
};

// A shared handle to a Buffer (like intrusive_ptr). Copies share the bytes.
class BufferRef {
 public:
  BufferRef() = default;
  BufferRef(const BufferRef& o) : b_(o.b_) {
    if (b_) b_->refs_.fetch_add(1, std::memory_order_relaxed);
  }
  BufferRef(BufferRef&& o) noexcept : b_(o.b_) { o.b_ = nullptr; }
  BufferRef& operator=(BufferRef o) noexcept {
    std::swap(b_, o.b_);
    return *this;
  }
  ~BufferRef() { reset(); }

  void reset() {
    if (b_) b_->Release();
    b_ = nullptr;
  }
  explicit operator bool() const { return b_ != nullptr; }
  Buffer* get() const { return b_; }
  char* data() const { return b_ ? b_->data() : nullptr; }
  size_t capacity() const { return b_ ? b_->capacity() : 0; }
  // True when this is the only handle, so the bytes may be overwritten in place.
  bool unique() const { return b_ && b_->ref_count() == 1; }

 private:
  friend class BufferPool;
  friend BufferRef AllocateBuffer(size_t bytes);
  explicit BufferRef(Buffer* b) : b_(b) {}
  Buffer* b_ = nullptr;
};

// Recycles buffers by size class (powers of two up to 64 KiB, then four classes per
// doubling). Thread-safe.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // `retain_bytes`: most bytes kept in free lists; beyond it released buffers are freed.
  static std::shared_ptr<BufferPool> Create(size_t retain_bytes = size_t{256} << 20);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes` (capacity: its size class, >= 64 and < 1.25 x bytes above
  // 64 KiB).
  BufferRef Allocate(size_t bytes);
  size_t retained_bytes() const;
  uint64_t allocations() const { return allocations_.load(std::memory_order_relaxed); }

 private:
  friend class Buffer;
  explicit BufferPool(size_t retain_bytes) : retain_limit_(retain_bytes) {}
  // Takes ownership of a buffer whose count dropped to zero.
  void Recycle(Buffer* b);

  static constexpr size_t kClasses = 256;  // every uint8_t class
  const size_t retain_limit_;
  mutable std::mutex mu_;
  std::array<std::vector<Buffer*>, kClasses> free_;  // guarded by mu_
  size_t retained_ = 0;                              // guarded by mu_
  std::atomic<uint64_t> allocations_{0};             // fresh (non-recycled) allocations
};

// An unpooled buffer (freed when its last reference drops).
BufferRef AllocateBuffer(size_t bytes);

// A dense array or an array of byte strings.
//   dense:  buffer = values, row-major, num_elements * DTypeSize bytes.
//   string: buffer = (num_elements + 1) uint64 offsets, then the concatenated values;
//           string i is values[offsets[i], offsets[i+1]). This is the layout the Python
//           layer exposes (an offsets array and a values array over one buffer).
// Resize* reuse the current buffer when this tensor holds its only reference and it is big
// enough, so an element reused across Next() calls allocates nothing in steady state.
class Tensor {
 public:
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t num_elements() const { return shape_.num_elements(); }
  bool is_string() const { return dtype_ == DType::kString; }

  // `pool` may be null (unpooled allocation).
  void ResizeDense(DType dtype, const Shape& shape, BufferPool* pool);
  void ResizeStrings(const Shape& shape, size_t value_bytes, BufferPool* pool);
  // A scalar string tensor holding `value`.
  void SetScalarString(ByteView value, BufferPool* pool);
  // A dense tensor over bytes [offset, offset + nbytes) of a shared buffer: a slot of a batch
  // buffer that a map writes in place (docs/pipeline.md, "Map into slot"). `offset` must keep
  // the dtype's alignment. Writes through the view write the shared buffer; a later Resize*
  // leaves the view (the buffer is reused only if this tensor holds its only reference).
  void ViewDense(DType dtype, const Shape& shape, BufferRef buffer, size_t offset);
  // Drops the reference to the buffer (e.g. to stop sharing it).
  void Reset();

  // Dense access.
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(raw_data());
  }
  char* raw_data() { return view_offset_ ? buf_.data() + view_offset_ : buf_.data(); }
  const char* raw_data() const { return view_offset_ ? buf_.data() + view_offset_ : buf_.data(); }
  // Where a dense view's values start inside buffer() (0 unless made by ViewDense).
  size_t view_offset() const { return view_offset_; }
  // Dense: bytes of the values. String: bytes of the concatenated values.
  size_t nbytes() const { return nbytes_; }
  // Bytes of the buffer in use (offsets included), what memory accounting counts.
  size_t used_bytes() const { return values_offset_ + nbytes_; }

  // String access.
  const uint64_t* offsets() const { return reinterpret_cast<const uint64_t*>(buf_.data()); }
  uint64_t* mutable_offsets() { return reinterpret_cast<uint64_t*>(buf_.data()); }
  const char* values() const { return buf_.data() + values_offset_; }
  char* mutable_values() { return buf_.data() + values_offset_; }
  ByteView string(int64_t i) const {
    const uint64_t* off = offsets();
    return ByteView(values() + off[i], off[i + 1] - off[i]);
  }
  // Where the values start inside buffer() (0 for dense tensors).
  size_t values_offset() const { return values_offset_; }

  // The storage; copying it keeps the bytes alive (zero-copy hand-off to numpy).
  const BufferRef& buffer() const { return buf_; }

 private:
  void Reserve(size_t bytes, BufferPool* pool);

  DType dtype_ = DType::kUInt8;
  Shape shape_;
  BufferRef buf_;
  size_t nbytes_ = 0;
  size_t values_offset_ = 0;
  size_t view_offset_ = 0;  // dense views only
};

}  // namespace sluice::pipeline
