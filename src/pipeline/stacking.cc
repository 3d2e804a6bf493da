#include "stacking.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "slot_planner.h"

namespace sluice::pipeline {
namespace {

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow: infinity
  if (exp <= 0) {                                               // subnormal or zero
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    if ((mant >> (shift - 1)) & 1u) ++half;  // round half up
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  if (mant & 0x1000u) ++half;  // round half up (carry into the exponent is correct)
  return static_cast<uint16_t>(half);
}

// Writes `count` copies of `value` converted to `dtype`.
void Fill(char* dst, size_t count, DType dtype, double value) {
  auto fill = [&](auto v) {
    using T = decltype(v);
    T* p = reinterpret_cast<T*>(dst);
    std::fill(p, p + count, v);
  };
  switch (dtype) {
    case DType::kUInt8:
      return fill(static_cast<uint8_t>(value));
    case DType::kInt32:
      return fill(static_cast<int32_t>(value));
    case DType::kInt64:
      return fill(static_cast<int64_t>(value));
    case DType::kFloat16:
      return fill(FloatToHalf(static_cast<float>(value)));
    case DType::kFloat32:
      return fill(static_cast<float>(value));
    case DType::kString:
      return;
  }
}

Status Mismatch(const StackContext& sc, size_t feature, const Element& a, const Element& b,
                const std::string& what) {
  return InvalidArgument(sc.stage + ": feature '" + (*sc.schema)[feature].name + "' " + what +
                         ": " + sc.ctx->DescribeRecord(a.id) + " vs " +
                         sc.ctx->DescribeRecord(b.id));
}

Status CheckFeature(const StackContext& sc, const std::vector<Element>& elems, size_t n, size_t f,
                    bool same_shape) {
  const Tensor& t0 = elems[0].tensors[f];
  for (size_t i = 1; i < n; ++i) {
    const Tensor& t = elems[i].tensors[f];
    if (t.dtype() != t0.dtype()) return Mismatch(sc, f, elems[0], elems[i], "changes dtype");
    if (same_shape && t.shape() != t0.shape()) {
      return Mismatch(sc, f, elems[0], elems[i],
                      "has shapes " + t0.shape().ToString() + " and " + t.shape().ToString() +
                          " (use padded_batch for varying shapes)");
    }
    if (!same_shape && t.shape().rank() != t0.shape().rank()) {
      return Mismatch(sc, f, elems[0], elems[i], "changes rank");
    }
  }
  return Status::OK();
}

Result<Shape> BatchedShape(const StackContext& sc, size_t f, Shape inner, size_t n) {
  if (!inner.PushFront(static_cast<int64_t>(n))) {
    return InvalidArgument(sc.stage + ": feature '" + (*sc.schema)[f].name +
                           "' would exceed rank " + std::to_string(kMaxRank));
  }
  return inner;
}

// Plain stacking of feature f (all shapes equal).
Status StackFeature(const StackContext& sc, const std::vector<Element>& elems, size_t n, size_t f,
                    Tensor* out) {
  SLUICE_RETURN_IF_ERROR(CheckFeature(sc, elems, n, f, /*same_shape=*/true));
  const Tensor& t0 = elems[0].tensors[f];
  SLUICE_ASSIGN_OR_RETURN(Shape shape, BatchedShape(sc, f, t0.shape(), n));
  if (!t0.is_string()) {
    out->ResizeDense(t0.dtype(), shape, sc.pool);
    size_t sz = t0.nbytes();
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(out->raw_data() + i * sz, elems[i].tensors[f].raw_data(), sz);
    }
    return Status::OK();
  }
  size_t m = static_cast<size_t>(t0.num_elements());
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += elems[i].tensors[f].nbytes();
  out->ResizeStrings(shape, total, sc.pool);
  uint64_t* off = out->mutable_offsets();
  uint64_t base = 0;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = elems[i].tensors[f];
    for (size_t j = 0; j < m; ++j) off[i * m + j] = base + t.offsets()[j];
    std::memcpy(out->mutable_values() + base, t.values(), t.nbytes());
    base += t.nbytes();
  }
  off[n * m] = total;
  return Status::OK();
}

// Maps flat index q of the padded block `padded` to the flat index of an element of shape
// `shape` whose dim 0 starts at `lead` (left padding), or -1 when q falls into padding.
int64_t Unpad(uint64_t q, const Shape& padded, const Shape& shape, int64_t lead) {
  int64_t flat = 0;
  int64_t stride = 1;
  for (size_t d = padded.rank(); d-- > 0;) {
    int64_t idx = static_cast<int64_t>(q % static_cast<uint64_t>(padded[d]));
    q /= static_cast<uint64_t>(padded[d]);
    if (d == 0) idx -= lead;
    if (idx < 0 || idx >= shape[d]) return -1;
    flat += idx * stride;
    stride *= shape[d];
  }
  return flat;
}

// Copies element `t` into its padded block at `dst`, dim 0 starting at `lead`.
void PadDense(const Tensor& t, const Shape& padded, int64_t lead, char* dst) {
  size_t vs = DTypeSize(t.dtype());
  const Shape& s = t.shape();
  if (s.rank() == 0 || s.num_elements() == 0) return;
  if (s.rank() == 1) {
    std::memcpy(dst + static_cast<size_t>(lead) * vs, t.raw_data(), t.nbytes());
    return;
  }
  size_t row = static_cast<size_t>(s[s.rank() - 1]) * vs;
  size_t rows = static_cast<size_t>(s.num_elements()) / static_cast<size_t>(s[s.rank() - 1]);
  size_t padded_row = static_cast<size_t>(padded[padded.rank() - 1]) * vs;
  // Row r of the element (index over its leading dims) lands at the same leading index of the
  // padded block (dim 0 shifted by `lead`).
  for (size_t r = 0; r < rows; ++r) {
    size_t rem = r, dst_row = 0, stride = 1;
    for (size_t d = s.rank() - 1; d-- > 0;) {
      size_t idx = rem % static_cast<size_t>(s[d]);
      rem /= static_cast<size_t>(s[d]);
      if (d == 0) idx += static_cast<size_t>(lead);
      dst_row += idx * stride;
      stride *= static_cast<size_t>(padded[d]);
    }
    std::memcpy(dst + dst_row * padded_row, t.raw_data() + r * row, row);
  }
}

// Where dim 0 of an element of shape `s` starts in a block padded to `padded`.
int64_t Lead(const PaddingPlan& plan, const Shape& s, const Shape& padded) {
  return plan.left && s.rank() > 0 ? padded[0] - s[0] : 0;
}

void PadStrings(const PaddingPlan& plan, const std::vector<Element>& elems, size_t n, size_t f,
                const Shape& padded, Tensor* out) {
  uint64_t per = static_cast<uint64_t>(padded.num_elements());
  uint64_t* off = out->mutable_offsets();
  char* values = out->mutable_values();
  uint64_t pos = 0;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = elems[i].tensors[f];
    const int64_t lead = Lead(plan, t.shape(), padded);
    for (uint64_t q = 0; q < per; ++q) {
      off[i * per + q] = pos;
      int64_t src = Unpad(q, padded, t.shape(), lead);
      if (src < 0) continue;
      ByteView v = t.string(src);
      std::memcpy(values + pos, v.data(), v.size());
      pos += v.size();
    }
  }
  off[n * per] = pos;
}

Status StackPaddedFeature(const StackContext& sc, const PaddingPlan& plan,
                          const std::vector<Element>& elems, size_t n, size_t f, Element* out) {
  SLUICE_RETURN_IF_ERROR(CheckFeature(sc, elems, n, f, /*same_shape=*/false));
  const Tensor& t0 = elems[0].tensors[f];
  Shape padded = t0.shape();
  for (size_t i = 1; i < n; ++i) {
    for (size_t d = 0; d < padded.rank(); ++d) {
      padded.set_dim(d, std::max(padded[d], elems[i].tensors[f].shape()[d]));
    }
  }
  const int64_t fixed = plan.length[f];
  if (fixed >= 0) {
    for (size_t i = 0; i < n; ++i) {
      const int64_t len = elems[i].tensors[f].shape()[0];
      if (len > fixed) {
        return InvalidArgument(
            sc.stage + ": feature '" + (*sc.schema)[f].name + "' has length " +
            std::to_string(len) + ", more than its fixed length " + std::to_string(fixed) +
            " (truncate it before batching): " + sc.ctx->DescribeRecord(elems[i].id));
      }
    }
  }
  for (size_t d = 0; d < padded.rank(); ++d) {
    int64_t m = static_cast<int64_t>(plan.multiple);
    padded.set_dim(d, d == 0 && fixed >= 0 ? fixed : (padded[d] + m - 1) / m * m);
  }
  SLUICE_ASSIGN_OR_RETURN(Shape shape, BatchedShape(sc, f, padded, n));
  Tensor& o = out->tensors[f];
  if (t0.is_string()) {
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) total += elems[i].tensors[f].nbytes();
    o.ResizeStrings(shape, total, sc.pool);
    PadStrings(plan, elems, n, f, padded, &o);
  } else {
    o.ResizeDense(t0.dtype(), shape, sc.pool);
    size_t per = static_cast<size_t>(padded.num_elements());
    Fill(o.raw_data(), n * per, t0.dtype(), plan.pad_value[f]);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = elems[i].tensors[f];
      PadDense(t, padded, Lead(plan, t.shape(), padded),
               o.raw_data() + i * per * DTypeSize(t0.dtype()));
    }
  }
  if (plan.mask_index[f] >= 0) {
    Tensor& mask = out->tensors[static_cast<size_t>(plan.mask_index[f])];
    int64_t len = padded.rank() ? padded[0] : 1;
    mask.ResizeDense(DType::kUInt8, Shape{static_cast<int64_t>(n), len}, sc.pool);
    for (size_t i = 0; i < n; ++i) {
      const Shape& s = elems[i].tensors[f].shape();
      int64_t valid = s.rank() ? s[0] : 1;
      uint8_t* row = mask.data<uint8_t>() + i * static_cast<size_t>(len);
      std::fill(row, row + len, uint8_t{0});
      if (plan.left) {
        std::fill(row + (len - valid), row + len, uint8_t{1});
      } else {
        std::fill(row, row + valid, uint8_t{1});
      }
    }
  }
  return Status::OK();
}

Status CheckArity(const StackContext& sc, const std::vector<Element>& elems, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (elems[i].tensors.size() != sc.schema->size()) {
      return InvalidArgument(sc.stage + ": element has " + std::to_string(elems[i].tensors.size()) +
                             " tensors, the schema " + std::to_string(sc.schema->size()) + " (" +
                             sc.schema->ToString() + "): " + sc.ctx->DescribeRecord(elems[i].id));
    }
  }
  return Status::OK();
}

}  // namespace

Schema BatchSchema(const Schema& input, int64_t batch_dim) {
  Schema out;
  for (FeatureInfo f : input.features()) {
    f.shape.PushFront(batch_dim);
    out.Add(std::move(f));
  }
  return out;
}

Result<PaddingPlan> PlanPadding(const Schema& input, const PaddingOptions& options,
                                int64_t batch_dim, Schema* output) {
  if (options.pad_to_multiple_of == 0) return InvalidArgument("pad_to_multiple_of must be >= 1");
  for (const auto& [name, value] : options.pad_values) {
    if (input.Find(name) < 0) {
      return InvalidArgument("pad_values names unknown feature '" + name +
                             "' (features: " + input.ToString() + ")");
    }
  }
  for (const auto& [name, length] : options.lengths) {
    const int index = input.Find(name);
    if (index < 0) {
      return InvalidArgument("lengths names unknown feature '" + name +
                             "' (features: " + input.ToString() + ")");
    }
    if (input[static_cast<size_t>(index)].shape.rank() == 0) {
      return InvalidArgument("lengths names scalar feature '" + name + "' (nothing to pad)");
    }
    if (length < 1) {
      return InvalidArgument("lengths: feature '" + name + "' needs a length >= 1, got " +
                             std::to_string(length));
    }
  }
  PaddingPlan plan;
  plan.multiple = options.pad_to_multiple_of;
  plan.left = options.side == PaddingOptions::Side::kLeft;
  *output = Schema();
  std::vector<FeatureInfo> masks;
  for (const FeatureInfo& f : input.features()) {
    bool padded = f.shape.rank() >= 1;
    bool mask = options.masks && padded && f.shape[0] < 0;
    auto pv = options.pad_values.find(f.name);
    plan.padded.push_back(padded);
    plan.pad_value.push_back(pv == options.pad_values.end() ? 0.0 : pv->second);
    auto fixed = options.lengths.find(f.name);
    plan.length.push_back(fixed == options.lengths.end() ? -1 : fixed->second);
    plan.mask_index.push_back(mask ? static_cast<int>(input.size() + masks.size()) : -1);
    FeatureInfo out = f;
    if (padded && (plan.multiple != 1 || !f.shape.fully_defined())) {
      for (size_t d = 0; d < out.shape.rank(); ++d) out.shape.set_dim(d, -1);
    }
    if (plan.length.back() >= 0) out.shape.set_dim(0, plan.length.back());
    out.shape.PushFront(batch_dim);
    output->Add(std::move(out));
    if (mask) {
      masks.push_back(
          FeatureInfo{f.name + "_mask", DType::kUInt8, Shape{batch_dim, plan.length.back()}});
    }
  }
  for (FeatureInfo& m : masks) output->Add(std::move(m));
  return plan;
}

Status StackBatch(const StackContext& sc, const std::vector<Element>& elems, size_t n,
                  Element* out) {
  SLUICE_RETURN_IF_ERROR(CheckArity(sc, elems, n));
  out->tensors.resize(sc.schema->size());
  for (size_t f = 0; f < sc.schema->size(); ++f) {
    if (sc.slots != nullptr && f == sc.slots->feature() &&
        sc.slots->Adopt(elems, n, &out->tensors[f])) {
      continue;
    }
    SLUICE_RETURN_IF_ERROR(StackFeature(sc, elems, n, f, &out->tensors[f]));
  }
  out->id = elems[n - 1].id;
  out->mark = elems[n - 1].mark;
  return Status::OK();
}

void StringRunStacker::Add(const ElementRun& run) {
  if (run.count == 0) return;
  if (run.bytes != nullptr) {  // packed: one copy for the run
    const uint64_t shift = values_.size() - run.begin;
    values_.append(run.bytes + run.begin, run.ends[run.count - 1] - run.begin);
    for (size_t i = 0; i < run.count; ++i) ends_.push_back(run.ends[i] + shift);
  } else {
    for (size_t i = 0; i < run.count; ++i) {
      const Tensor& t = run.first[i].tensors[0];  // the read stage's schema: one scalar string
      assert(run.first[i].tensors.size() == 1 && t.is_string() && t.shape().rank() == 0);
      values_.append(t.values(), t.nbytes());
      ends_.push_back(values_.size());
    }
  }
  last_id_ = run.first[run.count - 1].id;
  last_mark_ = run.first[run.count - 1].mark;
}

void StringRunStacker::Finish(const StackContext& sc, Element* out) {
  const size_t n = ends_.size();
  out->tensors.resize(1);
  Tensor& t = out->tensors[0];
  t.ResizeStrings(Shape({static_cast<int64_t>(n)}), values_.size(), sc.pool);
  uint64_t* off = t.mutable_offsets();
  off[0] = 0;
  std::memcpy(off + 1, ends_.data(), n * sizeof(uint64_t));
  if (!values_.empty()) std::memcpy(t.mutable_values(), values_.data(), values_.size());
  out->id = last_id_;
  out->mark = last_mark_;
}

Status StackPadded(const StackContext& sc, const PaddingPlan& plan,
                   const std::vector<Element>& elems, size_t n, Element* out) {
  SLUICE_RETURN_IF_ERROR(CheckArity(sc, elems, n));
  size_t masks = 0;
  for (int m : plan.mask_index) masks += m >= 0;
  out->tensors.resize(sc.schema->size() + masks);
  for (size_t f = 0; f < sc.schema->size(); ++f) {
    if (plan.padded[f]) {
      SLUICE_RETURN_IF_ERROR(StackPaddedFeature(sc, plan, elems, n, f, out));
    } else {
      SLUICE_RETURN_IF_ERROR(StackFeature(sc, elems, n, f, &out->tensors[f]));
    }
  }
  out->id = elems[n - 1].id;
  out->mark = elems[n - 1].mark;
  return Status::OK();
}

}  // namespace sluice::pipeline
