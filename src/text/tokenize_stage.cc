// tokenize: a map stage around Tokenizer::Encode. Invalid UTF-8 becomes a record error, so
// the pipeline's on_error policy decides, and its message names the record (shard, index).
#include <cstdio>
#include <cstring>
#include <memory>

#include "sluice/text/stages.h"
#include "sluice/text/utf8.h"

namespace sluice::text {
namespace {

using pipeline::DType;
using pipeline::Element;
using pipeline::MapContext;
using pipeline::Schema;
using pipeline::Shape;
using pipeline::Tensor;

struct TokenizePlan {
  size_t input = 0;   // tensor index of the text feature
  size_t output = 0;  // tensor index of the ids
  Schema schema;      // output schema
};

Result<TokenizePlan> PlanTokenize(const Schema& in, const TokenizeOptions& options) {
  TokenizePlan plan;
  SLUICE_ASSIGN_OR_RETURN(plan.input, in.Index(options.feature));
  const pipeline::FeatureInfo& f = in[plan.input];
  if (f.dtype != DType::kString || f.shape.num_elements() != 1) {
    return InvalidArgument("tokenize: feature '" + options.feature +
                           "' must hold one string (bytes) value, it is " +
                           std::string(pipeline::DTypeName(f.dtype)) + f.shape.ToString());
  }
  pipeline::FeatureInfo ids{options.output, DType::kInt32, Shape{-1}};
  std::vector<pipeline::FeatureInfo> features = in.features();
  int existing = in.Find(options.output);
  if (existing >= 0) {
    plan.output = static_cast<size_t>(existing);
    features[plan.output] = ids;
  } else {
    plan.output = features.size();
    features.push_back(ids);
  }
  plan.schema = Schema(std::move(features));
  return plan;
}

Status TokenizeElement(const Tokenizer& tokenizer, const TokenizePlan& plan,
                       const TokenizeOptions& options, Element* e, const MapContext& ctx) {
  const Tensor& in = e->tensors[plan.input];
  ByteView text = in.string(0);
  std::string_view view(reinterpret_cast<const char*>(text.data()), text.size());
  if (!options.replace_invalid_utf8) {
    if (std::optional<size_t> bad = FindInvalidUtf8(view)) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(view[*bad]));
      return DataLoss("feature '" + options.feature + "': invalid UTF-8 (byte " + byte +
                      " at offset " + std::to_string(*bad) + " of the text)");
    }
  }
  thread_local std::vector<int32_t> ids;  // per pool thread: no allocation in steady state
  SLUICE_RETURN_IF_ERROR(tokenizer.Encode(view, &ids));
  if (e->tensors.size() < plan.schema.size()) e->tensors.resize(plan.schema.size());
  Tensor& out = e->tensors[plan.output];
  out.ResizeDense(DType::kInt32, Shape{static_cast<int64_t>(ids.size())}, ctx.pool());
  if (!ids.empty()) std::memcpy(out.raw_data(), ids.data(), ids.size() * sizeof(int32_t));
  return Status::OK();
}

}  // namespace

pipeline::Dataset Tokenize(const pipeline::Dataset& input,
                           std::shared_ptr<const Tokenizer> tokenizer,
                           const TokenizeOptions& options) {
  Result<TokenizePlan> plan = PlanTokenize(input.schema(), options);
  if (!tokenizer) plan = InvalidArgument("tokenize: no tokenizer");
  if (!plan.ok()) {
    return input.Append([&](auto) -> Result<std::shared_ptr<const pipeline::DatasetNode>> {
      return plan.status();
    });
  }
  auto shared = std::make_shared<const TokenizePlan>(std::move(plan).value());
  pipeline::MapOptions mo;
  mo.name = "tokenize";
  mo.parallelism = options.parallelism;
  mo.output_schema = shared->schema;
  mo.on_error = options.on_error;
  return input.Map(
      [tokenizer, shared, options](Element* e, const MapContext& ctx) {
        return TokenizeElement(*tokenizer, *shared, options, e, ctx);
      },
      mo);
}

}  // namespace sluice::text
