#include "sluice/pipeline/tensor.h"

#include <bit>
#include <cstdlib>
#include <new>

namespace sluice::pipeline {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat32:
      return "float32";
    case DType::kString:
      return "string";
  }
  return "?";
}

Result<DType> ParseDType(std::string_view name) {
  for (DType d : {DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat16, DType::kFloat32,
                  DType::kString}) {
    if (DTypeName(d) == name) return d;
  }
  if (name == "bytes") return DType::kString;
  return InvalidArgument("unknown dtype '" + std::string(name) + "'");
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return 1;
    case DType::kFloat16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kString:
      return 0;
  }
  return 0;
}

// ---- Shape ----

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) {
    if (!PushBack(d)) break;
  }
}

bool Shape::PushBack(int64_t dim) {
  if (rank_ == kMaxRank) return false;
  dims_[rank_++] = dim;
  return true;
}

bool Shape::PushFront(int64_t dim) {
  if (rank_ == kMaxRank) return false;
  for (size_t i = rank_; i > 0; --i) dims_[i] = dims_[i - 1];
  dims_[0] = dim;
  ++rank_;
  return true;
}

Shape Shape::WithoutFirst() const {
  Shape s;
  for (size_t i = 1; i < rank_; ++i) s.PushBack(dims_[i]);
  return s;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (size_t i = 0; i < rank_; ++i) {
    if (dims_[i] < 0) return -1;
    n *= dims_[i];
  }
  return n;
}

bool Shape::fully_defined() const { return num_elements() >= 0; }

bool Shape::Matches(const Shape& concrete) const {
  if (rank_ != concrete.rank_) return false;
  for (size_t i = 0; i < rank_; ++i) {
    if (dims_[i] >= 0 && dims_[i] != concrete.dims_[i]) return false;
  }
  return true;
}

std::string Shape::ToString() const {
  std::string s = "[";
  for (size_t i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (size_t i = 0; i < rank_; ++i) {
    if (dims_[i] != o.dims_[i]) return false;
  }
  return true;
}

// ---- Buffer ----

namespace {
// Capacity classes: powers of two up to 64 KiB, then four steps per doubling (2^k times 1,
// 1.25, 1.5, 1.75). A batch buffer of 154 MB (256 float32 images of 3x224x224) gets 168 MB,
// not 256: retained free buffers count by capacity against the pool's limit, so a tight
// class keeps more of them (untouched capacity costs address space only).
constexpr unsigned kStepsPerDoubling = 4;
constexpr unsigned kFineFromLog2 = 16;  // classes below 64 KiB are powers of two

size_t ClassCapacity(uint8_t cls) {
  const unsigned k = cls / kStepsPerDoubling, step = cls % kStepsPerDoubling;
  return (size_t{1} << k) + step * ((size_t{1} << k) / kStepsPerDoubling);
}

uint8_t SizeClassFor(size_t bytes) {
  bytes = std::max<size_t>(bytes, kBufferAlignment);
  const unsigned k = std::bit_width(bytes) - 1;  // 2^k <= bytes < 2^(k+1)
  unsigned cls = k * kStepsPerDoubling;
  if (bytes == size_t{1} << k) return static_cast<uint8_t>(cls);
  if (k < kFineFromLog2) return static_cast<uint8_t>(cls + kStepsPerDoubling);
  const size_t step = (size_t{1} << k) / kStepsPerDoubling;
  cls += static_cast<unsigned>((bytes - (size_t{1} << k) + step - 1) / step);  // 1..4
  return static_cast<uint8_t>(cls);
}
}  // namespace

Buffer* Buffer::Create(size_t capacity, uint8_t size_class, std::weak_ptr<BufferPool> pool) {
  static_assert(sizeof(Buffer) <= kHeaderBytes, "Buffer header must fit one alignment unit");
  void* mem = std::aligned_alloc(kBufferAlignment, kHeaderBytes + capacity);
  if (mem == nullptr) std::abort();  // out of memory: nothing sensible to return
  return ::new (mem) Buffer(capacity, size_class, std::move(pool));
}

void Buffer::Destroy(Buffer* b) {
  b->~Buffer();
  std::free(b);
}

void Buffer::Release() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (std::shared_ptr<BufferPool> pool = pool_.lock()) {
    pool->Recycle(this);
  } else {
    Destroy(this);
  }
}

BufferRef AllocateBuffer(size_t bytes) {
  uint8_t cls = SizeClassFor(bytes);
  return BufferRef(Buffer::Create(ClassCapacity(cls), cls, std::weak_ptr<BufferPool>()));
}

// ---- BufferPool ----

std::shared_ptr<BufferPool> BufferPool::Create(size_t retain_bytes) {
  return std::shared_ptr<BufferPool>(new BufferPool(retain_bytes));
}

BufferPool::~BufferPool() {
  for (auto& list : free_) {
    for (Buffer* b : list) Buffer::Destroy(b);
  }
}

BufferRef BufferPool::Allocate(size_t bytes) {
  uint8_t cls = SizeClassFor(bytes);
  {
    std::lock_guard<std::mutex> l(mu_);
    auto& list = free_[cls];
    if (!list.empty()) {
      Buffer* b = list.back();
      list.pop_back();
      retained_ -= b->capacity();
      b->refs_.store(1, std::memory_order_relaxed);
      return BufferRef(b);
    }
  }
  allocations_.fetch_add(1, std::memory_order_relaxed);
  return BufferRef(Buffer::Create(ClassCapacity(cls), cls, weak_from_this()));
}

void BufferPool::Recycle(Buffer* b) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (retained_ + b->capacity() <= retain_limit_) {
      retained_ += b->capacity();
      free_[b->size_class_].push_back(b);
      return;
    }
  }
  Buffer::Destroy(b);
}

size_t BufferPool::retained_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return retained_;
}

// ---- Tensor ----

void Tensor::Reserve(size_t bytes, BufferPool* pool) {
  if (buf_.unique() && buf_.capacity() >= bytes) return;
  buf_ = pool ? pool->Allocate(bytes) : AllocateBuffer(bytes);
}

void Tensor::ResizeDense(DType dtype, const Shape& shape, BufferPool* pool) {
  dtype_ = dtype;
  shape_ = shape;
  values_offset_ = 0;
  view_offset_ = 0;
  nbytes_ = static_cast<size_t>(std::max<int64_t>(shape.num_elements(), 0)) * DTypeSize(dtype);
  Reserve(nbytes_, pool);
}

void Tensor::ViewDense(DType dtype, const Shape& shape, BufferRef buffer, size_t offset) {
  dtype_ = dtype;
  shape_ = shape;
  values_offset_ = 0;
  view_offset_ = offset;
  nbytes_ = static_cast<size_t>(std::max<int64_t>(shape.num_elements(), 0)) * DTypeSize(dtype);
  buf_ = std::move(buffer);
}

void Tensor::ResizeStrings(const Shape& shape, size_t value_bytes, BufferPool* pool) {
  dtype_ = DType::kString;
  shape_ = shape;
  size_t n = static_cast<size_t>(std::max<int64_t>(shape.num_elements(), 0));
  values_offset_ = (n + 1) * sizeof(uint64_t);
  view_offset_ = 0;
  nbytes_ = value_bytes;
  Reserve(values_offset_ + value_bytes, pool);
}

void Tensor::SetScalarString(ByteView value, BufferPool* pool) {
  ResizeStrings(Shape(), value.size(), pool);
  uint64_t* off = mutable_offsets();
  off[0] = 0;
  off[1] = value.size();
  if (!value.empty()) std::memcpy(mutable_values(), value.data(), value.size());
}

void Tensor::Reset() {
  buf_.reset();
  nbytes_ = 0;
  values_offset_ = 0;
  view_offset_ = 0;
  shape_ = Shape();
}

}  // namespace sluice::pipeline
