// parse_example: serialized tf.train.Example records -> one tensor per wanted feature. A
// built-in map (same parallelism, ordering, error policy), using format::ExampleParser's
// fast path: only the wanted features are decoded, views instead of copies until the values
// land in the element's reused tensor buffers.
#include <cstring>

#include "nodes.h"
#include "sluice/format/example.h"

namespace sluice::pipeline {
namespace {

using format::FeatureType;
using format::FeatureView;

FeatureType WireTypeOf(DType d) {
  switch (d) {
    case DType::kInt64:
      return FeatureType::kInt64;
    case DType::kFloat32:
      return FeatureType::kFloat;
    default:
      return FeatureType::kBytes;  // string, uint8
  }
}

// The concrete shape of `count` values under the spec's shape (at most one -1).
Result<Shape> ShapeFor(const FeatureSpec& spec, uint64_t count) {
  Shape shape = spec.shape;
  int64_t known = 1;
  int unknown = -1;
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (shape[d] < 0) {
      unknown = static_cast<int>(d);
    } else {
      known *= shape[d];
    }
  }
  auto n = static_cast<int64_t>(count);
  if (unknown >= 0 && known > 0 && n % known == 0) {
    shape.set_dim(static_cast<size_t>(unknown), n / known);
    return shape;
  }
  if (unknown < 0 && n == known) return shape;
  return InvalidArgument("feature '" + spec.name + "' has " + std::to_string(count) +
                         " values; its spec shape " + spec.shape.ToString() + " does not fit");
}

Status Fill(const FeatureSpec& spec, const FeatureView& v, BufferPool* pool, Tensor* t) {
  bool missing = v.type == FeatureType::kNone;
  if (missing && !spec.optional) {
    return InvalidArgument("feature '" + spec.name + "' is missing (mark it optional to allow)");
  }
  if (!missing && v.type != WireTypeOf(spec.dtype)) {
    return InvalidArgument("feature '" + spec.name + "' is " +
                           std::string(format::FeatureTypeName(v.type)) +
                           " in the record; the spec wants " + std::string(DTypeName(spec.dtype)));
  }
  if (spec.dtype == DType::kUInt8) {  // one bytes value, exposed as its raw bytes
    if (v.bytes.size() > 1) {
      return InvalidArgument("feature '" + spec.name + "' has " + std::to_string(v.bytes.size()) +
                             " bytes values; dtype uint8 takes one");
    }
    ByteView b = v.bytes.empty() ? ByteView() : v.bytes[0];
    SLUICE_ASSIGN_OR_RETURN(Shape shape, ShapeFor(spec, b.size()));
    t->ResizeDense(DType::kUInt8, shape, pool);
    if (!b.empty()) std::memcpy(t->raw_data(), b.data(), b.size());
    return Status::OK();
  }
  uint64_t count = missing ? 0 : v.size();
  if (missing && spec.shape.fully_defined())
    count = static_cast<uint64_t>(spec.shape.num_elements());
  SLUICE_ASSIGN_OR_RETURN(Shape shape, ShapeFor(spec, count));
  if (spec.dtype == DType::kString) {
    size_t total = 0;
    for (ByteView b : v.bytes) total += b.size();
    t->ResizeStrings(shape, total, pool);
    uint64_t* off = t->mutable_offsets();
    uint64_t pos = 0;
    for (size_t i = 0; i < count; ++i) {
      off[i] = pos;
      ByteView b = i < v.bytes.size() ? v.bytes[i] : ByteView();
      if (!b.empty()) std::memcpy(t->mutable_values() + pos, b.data(), b.size());
      pos += b.size();
    }
    off[count] = pos;
    return Status::OK();
  }
  t->ResizeDense(spec.dtype, shape, pool);
  if (missing) {
    std::memset(t->raw_data(), 0, t->nbytes());
  } else if (spec.dtype == DType::kInt64) {
    std::memcpy(t->raw_data(), v.int64s.data(), t->nbytes());
  } else {
    std::memcpy(t->raw_data(), v.floats.data(), t->nbytes());
  }
  return Status::OK();
}

Status CheckSpecs(const Schema& input, const std::vector<FeatureSpec>& specs) {
  if (input.size() == 0 || input[0].dtype != DType::kString || input[0].shape.rank() != 0) {
    return InvalidArgument(
        "parse_example needs serialized records (a scalar string as first "
        "feature, what read produces); input is " +
        input.ToString());
  }
  if (specs.empty()) return InvalidArgument("parse_example: no features wanted");
  for (const FeatureSpec& f : specs) {
    int unknown = 0;
    for (size_t d = 0; d < f.shape.rank(); ++d) unknown += f.shape[d] < 0;
    if (unknown > 1) {
      return InvalidArgument("parse_example: feature '" + f.name + "' has shape " +
                             f.shape.ToString() + "; at most one dimension may vary");
    }
    if (f.dtype == DType::kInt32 || f.dtype == DType::kFloat16) {
      return InvalidArgument("parse_example: feature '" + f.name + "' dtype " +
                             std::string(DTypeName(f.dtype)) +
                             " (Examples hold int64, float32, bytes)");
    }
    if (f.dtype == DType::kUInt8 && f.shape.rank() != 1) {
      return InvalidArgument("parse_example: uint8 feature '" + f.name + "' needs shape [-1]");
    }
  }
  return Status::OK();
}

}  // namespace

Result<NodePtr> MakeParseExampleNode(NodePtr input, std::vector<FeatureSpec> features,
                                     const ParseExampleOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckSpecs(input->schema(), features));
  std::vector<std::string> names;
  Schema schema;
  for (const FeatureSpec& f : features) {
    names.push_back(f.name);
    schema.Add(FeatureInfo{f.name, f.dtype, f.shape});
  }
  auto parser = std::make_shared<const format::ExampleParser>(std::move(names));
  auto specs = std::make_shared<const std::vector<FeatureSpec>>(std::move(features));
  MapFn fn = [parser, specs](Element* e, const MapContext& ctx) -> Status {
    // Per thread, reused: no allocation per record. The record moves into `record` (whose
    // previous buffer the element gets back for its features), so the views stay valid while
    // the features are filled.
    thread_local std::vector<FeatureView> views;
    thread_local Tensor record;
    std::swap(record, e->tensors[0]);
    SLUICE_RETURN_IF_ERROR(parser->Parse(record.string(0), &views));
    e->tensors.resize(specs->size());
    for (size_t i = 0; i < specs->size(); ++i) {
      SLUICE_RETURN_IF_ERROR(Fill((*specs)[i], views[i], ctx.pool(), &e->tensors[i]));
    }
    return Status::OK();
  };
  MapOptions mo;
  mo.parallelism = options.parallelism;
  mo.on_error = options.on_error;
  mo.output_schema = std::move(schema);
  return MakeMapNode(std::move(input), std::move(fn), mo, "parse_example");
}

}  // namespace sluice::pipeline
