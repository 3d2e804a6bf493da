// Fuzzes the Example codec on arbitrary bytes: ExampleView, SequenceExampleView,
// ExampleParser and the JSON form must never crash or read out of bounds, and must agree:
//   - ExampleParser accepts whatever ExampleView accepts, with the same values;
//   - a record ExampleView accepts re-encodes (builder) into bytes that parse to the same
//     values, and, when its names are valid UTF-8, the JSON form reads back to the same JSON.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "format/utf8.h"
#include "sluice/format/example.h"
#include "sluice/format/example_json.h"

namespace {

using namespace sluice;          // NOLINT
using namespace sluice::format;  // NOLINT

void Check(bool ok) {
  if (!ok) std::abort();
}

bool SameValues(const FeatureView& a, const FeatureView& b) {
  if (a.type != b.type || a.bytes != b.bytes || a.int64s != b.int64s) return false;
  if (a.floats.size() != b.floats.size()) return false;
  for (size_t i = 0; i < a.floats.size(); ++i) {
    if (std::bit_cast<uint32_t>(a.floats[i]) != std::bit_cast<uint32_t>(b.floats[i])) {
      return false;
    }
  }
  return true;
}

// Rebuilds `view` with ExampleBuilder; false when it holds a kind-less feature, which
// the builder cannot express.
bool Rebuild(const ExampleView& view, ExampleBuilder* b, bool* utf8_names) {
  *utf8_names = true;
  for (const auto& [name, f] : view.features()) {
    *utf8_names = *utf8_names && IsValidUtf8(name);
    switch (f.type) {
      case FeatureType::kBytes:
        b->AddBytes(name, std::vector<std::string>(f.bytes.begin(), f.bytes.end()));
        break;
      case FeatureType::kFloat:
        b->AddFloats(name, f.floats);
        break;
      case FeatureType::kInt64:
        b->AddInt64s(name, f.int64s);
        break;
      case FeatureType::kNone:
        return false;
    }
  }
  return true;
}

void CheckExample(ByteView data) {
  ExampleView view;
  bool view_ok = view.Parse(data).ok();
  std::string json = ExampleToJson(view);  // valid (empty) after a failure too
  if (!view_ok) return;

  std::vector<std::string> names;
  for (const auto& [name, f] : view.features()) names.push_back(name);
  names.push_back("\x01not-present");
  ExampleParser parser(names);
  std::vector<FeatureView> out;
  Check(parser.Parse(data, &out).ok());
  for (size_t i = 0; i + 1 < names.size(); ++i) Check(SameValues(out[i], *view.Find(names[i])));
  Check(out.back().type == FeatureType::kNone);

  ExampleBuilder builder;
  bool utf8_names = false;
  if (!Rebuild(view, &builder, &utf8_names)) return;
  std::string canonical = builder.Serialize();
  ExampleView again;
  Check(again.Parse(canonical).ok());
  Check(again.features().size() == view.features().size());
  for (const auto& [name, f] : view.features()) Check(SameValues(f, *again.Find(name)));
  if (!utf8_names) return;  // the JSON form replaces invalid UTF-8 in names: lossy
  ExampleBuilder from_json;
  Check(ExampleFromJson(json, &from_json).ok());
  // The JSON form keeps every value but NaN payloads, so compare JSON, not bytes.
  std::string rebuilt = from_json.Serialize();
  Check(again.Parse(rebuilt).ok());
  Check(ExampleToJson(again) == json);
}

void CheckSequenceExample(ByteView data) {
  SequenceExampleView view;
  if (!view.Parse(data).ok()) return;
  std::string json = SequenceExampleToJson(view);
  Check(!json.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteView bytes(reinterpret_cast<const char*>(data), size);
  CheckExample(bytes);
  CheckSequenceExample(bytes);
  SchemaInference inference;
  ExampleView view;
  if (view.Parse(bytes).ok()) Check(inference.Add(view).ok());
  return 0;
}
