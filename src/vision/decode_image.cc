// decode_image as a map stage: schema rewrite at build time, one ImageTransform shared by all
// worker threads (it is immutable), and one DecodeScratch per thread (thread_local: the pool's
// threads live as long as the pipeline, so the scratch is freed with it).
#include "sluice/vision/decode_image.h"

#include <memory>
#include <utility>

namespace sluice::vision {
namespace {

using pipeline::Element;
using pipeline::FeatureInfo;
using pipeline::MapContext;
using pipeline::Schema;
using pipeline::Shape;
using pipeline::Tensor;

// Where the stage reads and writes, resolved once against the input schema.
struct Slots {
  size_t input = 0;
  size_t output = 0;        // index in the output schema
  bool replaces = true;     // output takes input's place (else it is appended)
  bool input_bytes = true;  // scalar string; else a uint8 vector
};

ByteView EncodedBytes(const Tensor& t, bool is_string) {
  if (is_string) return t.string(0);
  return ByteView(t.raw_data(), t.nbytes());
}

Status CheckInput(const FeatureInfo& f, Slots* slots) {
  if (f.dtype == pipeline::DType::kString && f.shape.rank() == 0) {
    slots->input_bytes = true;
    return Status::OK();
  }
  if (f.dtype == pipeline::DType::kUInt8 && f.shape.rank() == 1) {
    slots->input_bytes = false;
    return Status::OK();
  }
  return InvalidArgument("decode_image: feature '" + f.name + "' is " +
                         std::string(pipeline::DTypeName(f.dtype)) + f.shape.ToString() +
                         "; encoded images must be a scalar string (bytes) or uint8[-1]");
}

Result<Schema> OutputSchema(const Schema& in, const DecodeImageOptions& o, const ImageTransform& t,
                            Slots* slots) {
  SLUICE_ASSIGN_OR_RETURN(slots->input, in.Index(o.input));
  SLUICE_RETURN_IF_ERROR(CheckInput(in[slots->input], slots));
  int clash = in.Find(o.output);
  slots->replaces = !o.keep_input;
  if (clash >= 0 && !(slots->replaces && static_cast<size_t>(clash) == slots->input)) {
    return InvalidArgument("decode_image: output feature '" + o.output + "' already exists in " +
                           in.ToString());
  }
  std::array<uint32_t, 3> s = t.output_shape();
  FeatureInfo out{o.output, o.output_spec.dtype, Shape{s[0], s[1], s[2]}};
  std::vector<FeatureInfo> features = in.features();
  if (slots->replaces) {
    features[slots->input] = std::move(out);
    slots->output = slots->input;
  } else {
    features.push_back(std::move(out));
    slots->output = features.size() - 1;
  }
  return Schema(std::move(features));
}

pipeline::MapFn DecodeFn(std::shared_ptr<const ImageTransform> t, Slots slots, Shape output_shape) {
  pipeline::DType dtype = t->output().dtype;
  return [t = std::move(t), slots, output_shape, dtype](Element* e,
                                                        const MapContext& ctx) -> Status {
    thread_local DecodeScratch scratch;
    // Polled every few decoded rows: the iterator's destruction, and Ctrl-C on the consumer's
    // thread (which decodes too when it helps), stop a long decode within ~50 ms.
    scratch.set_interrupt(DecodeInterrupt{
        [](const void* c) { return static_cast<const MapContext*>(c)->CheckInterrupt(); }, &ctx});
    SampleRng rng = ctx.rng();
    // The output is the element's slot in the batch buffer when a batch follows
    // (MapOptions::slot_feature), else a tensor of its own.
    auto place = [&](Tensor* out) {
      if (!ctx.TakeSlot(out)) out->ResizeDense(dtype, output_shape, ctx.pool());
      return out->raw_data();
    };
    if (slots.replaces) {
      // The encoded bytes are read while the output is written: keep them in their own tensor.
      Tensor encoded = std::move(e->tensors[slots.input]);
      char* out = place(&e->tensors[slots.output]);
      return t->Apply(EncodedBytes(encoded, slots.input_bytes), rng, out, &scratch);
    }
    e->tensors.resize(slots.output + 1);
    char* out = place(&e->tensors[slots.output]);
    return t->Apply(EncodedBytes(e->tensors[slots.input], slots.input_bytes), rng, out, &scratch);
  };
}

}  // namespace

Result<pipeline::Dataset> DecodeImage(const pipeline::Dataset& input, DecodeImageOptions options) {
  SLUICE_RETURN_IF_ERROR(input.status());
  Result<ImageTransform> made =
      ImageTransform::Make(options.ops, options.output_spec, options.transform);
  if (!made.ok()) return made.status().WithContext("decode_image");
  auto transform = std::make_shared<const ImageTransform>(std::move(*made));
  Slots slots;
  SLUICE_ASSIGN_OR_RETURN(Schema schema, OutputSchema(input.schema(), options, *transform, &slots));
  Shape shape = schema[slots.output].shape;
  pipeline::MapOptions mo;
  mo.name = "decode_image";
  mo.parallelism = options.parallelism;
  mo.output_schema = std::move(schema);
  mo.on_error = options.on_error;
  mo.chunk_elements = options.chunk_elements;
  if (options.into_batch) mo.slot_feature = options.output;
  pipeline::Dataset out = input.Map(DecodeFn(std::move(transform), slots, shape), mo);
  SLUICE_RETURN_IF_ERROR(out.status());
  return out;
}

}  // namespace sluice::vision
