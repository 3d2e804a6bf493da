// The JSON form of Examples (docs/example.md, "JSON form"). Written by hand rather than
// through nlohmann-json so floats print in their shortest round-trip form (nlohmann widens
// them to double: 0.1f would print as 0.10000000149011612) and bytes stream straight into
// base64 without an intermediate document; reading uses nlohmann-json.
#include "sluice/format/example_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "format/base64.h"
#include "format/utf8.h"

namespace sluice::format {
namespace {

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    auto u = static_cast<uint8_t>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out->append(buf);
    } else if (u >= 0x80) {
      size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        out->append("\xef\xbf\xbd");  // U+FFFD REPLACEMENT CHARACTER
        ++i;
      } else {
        out->append(s.substr(i, n));
        i += n;
      }
      continue;
    } else {
      out->push_back(c);
    }
    ++i;
  }
  out->push_back('"');
}

void AppendFloat(std::string* out, float f) {
  if (std::isnan(f)) {
    out->append("\"NaN\"");
  } else if (std::isinf(f)) {
    out->append(f > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else if (f == 0 && std::signbit(f)) {
    out->append("-0.0");  // "-0" would read back as the integer 0 in most JSON parsers
  } else {
    char buf[32];
    auto result = std::to_chars(buf, buf + sizeof buf, f);  // shortest round-trip form
    out->append(buf, result.ptr);
  }
}

void AppendFeature(std::string* out, const FeatureView& f) {
  if (f.type == FeatureType::kNone) {
    out->append("{}");
    return;
  }
  out->append("{\"");
  out->append(FeatureTypeName(f.type));
  out->append("\":[");
  for (size_t i = 0; i < f.size(); ++i) {
    if (i > 0) out->push_back(',');
    if (f.type == FeatureType::kBytes) {
      out->push_back('"');
      AppendBase64(out, f.bytes[i]);
      out->push_back('"');
    } else if (f.type == FeatureType::kFloat) {
      AppendFloat(out, f.floats[i]);
    } else {
      out->append(std::to_string(f.int64s[i]));
    }
  }
  out->append("]}");
}

// Appends {"name": <value>, ...} for a name-ordered map, formatting values with `fn`.
template <typename Map, typename Fn>
void AppendObject(std::string* out, const Map& map, Fn&& fn) {
  out->push_back('{');
  bool first = true;
  for (const auto& [name, value] : map) {
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(out, name);
    out->push_back(':');
    fn(out, value);
  }
  out->push_back('}');
}

void AppendFeatureList(std::string* out, const std::vector<FeatureView>& steps) {
  out->push_back('[');
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendFeature(out, steps[i]);
  }
  out->push_back(']');
}

}  // namespace

std::string ExampleToJson(const ExampleView& example) {
  std::string out;
  AppendObject(&out, example.features(), AppendFeature);
  return out;
}

std::string SequenceExampleToJson(const SequenceExampleView& example) {
  std::string out = "{\"context\":";
  AppendObject(&out, example.context().features(), AppendFeature);
  out.append(",\"feature_lists\":");
  AppendObject(&out, example.feature_lists(), AppendFeatureList);
  out.push_back('}');
  return out;
}

namespace {

using Json = nlohmann::json;

Status Bad(const std::string& name, std::string_view what) {
  return InvalidArgument("example JSON: feature \"" + std::string(name) +
                         "\": " + std::string(what));
}

Result<float> FloatFromJson(const Json& v, const std::string& name) {
  if (v.is_number()) {
    Result<float> f = InvalidArgument("");
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) {
      f = InvalidArgument("integer " + std::to_string(v.get<uint64_t>()) +
                          " cannot be stored exactly as float32");
    } else if (v.is_number_integer()) {
      f = IntegerToFloat32(v.get<int64_t>());
    } else {
      f = NumberToFloat32(v.get<double>());
    }
    if (!f.ok()) return Bad(name, f.status().message());
    return f;
  }
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<float>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<float>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<float>::infinity();
  }
  return Bad(name, "float values are numbers, \"NaN\", \"Infinity\" or \"-Infinity\"");
}

Result<int64_t> Int64FromJson(const Json& v, const std::string& name) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(u);
    }
  } else if (v.is_number_integer()) {
    return v.get<int64_t>();
  }
  return Bad(name, "int64 values are integers in the int64 range");
}

// Decodes one feature object {"<kind>": [...]} and hands its values to
// sink->AddBytes / AddFloats / AddInt64s(name, values).
template <typename Sink>
Status FeatureFromJson(const Json& f, const std::string& name, Sink* sink) {
  if (!f.is_object() || f.size() != 1 || !f.begin().value().is_array()) {
    return Bad(name, "expected {\"bytes\"|\"float\"|\"int64\": [values]}");
  }
  const std::string& kind = f.begin().key();
  const Json& values = f.begin().value();
  if (kind == "bytes") {
    std::vector<std::string> out(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i].is_string() ||
          !DecodeBase64(values[i].get_ref<const std::string&>(), &out[i])) {
        return Bad(name, "bytes values are base64 strings");
      }
    }
    sink->AddBytes(name, std::move(out));
  } else if (kind == "float") {
    std::vector<float> out;
    for (const Json& v : values) {
      SLUICE_ASSIGN_OR_RETURN(float x, FloatFromJson(v, name));
      out.push_back(x);
    }
    sink->AddFloats(name, std::move(out));
  } else if (kind == "int64") {
    std::vector<int64_t> out;
    for (const Json& v : values) {
      SLUICE_ASSIGN_OR_RETURN(int64_t x, Int64FromJson(v, name));
      out.push_back(x);
    }
    sink->AddInt64s(name, std::move(out));
  } else {
    return Bad(name, "unknown kind \"" + kind + "\"");
  }
  return Status::OK();
}

Result<Json> ParseObject(std::string_view text) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgument("example JSON: not a JSON object");
  }
  return doc;
}

// Adapts FeatureFromJson's sink calls to time steps of a SequenceExampleBuilder.
struct StepSink {
  SequenceExampleBuilder* builder;
  void AddBytes(std::string_view n, std::vector<std::string> v) {
    builder->AddStepBytes(n, std::move(v));
  }
  void AddFloats(std::string_view n, std::vector<float> v) {
    builder->AddStepFloats(n, std::move(v));
  }
  void AddInt64s(std::string_view n, std::vector<int64_t> v) {
    builder->AddStepInt64s(n, std::move(v));
  }
};

Status FeaturesFromJson(const Json& features, ExampleBuilder* builder) {
  if (!features.is_object()) return InvalidArgument("example JSON: features are not an object");
  for (const auto& [name, f] : features.items()) {
    SLUICE_RETURN_IF_ERROR(FeatureFromJson(f, name, builder));
  }
  return Status::OK();
}

}  // namespace

Result<float> IntegerToFloat32(int64_t value) {
  const float f = static_cast<float>(value);
  // 2^63 (INT64_MAX rounded up) is outside int64: compare before converting back.
  const bool exact = f < 0x1p63f && f >= -0x1p63f && static_cast<int64_t>(f) == value;
  if (exact) return f;
  char became[48];
  std::snprintf(became, sizeof became, "%.0f", static_cast<double>(f));
  return InvalidArgument("integer " + std::to_string(value) +
                         " cannot be stored exactly as float32 (float features hold integers "
                         "exactly up to 2^24 = 16777216; it would become " +
                         std::string(became) + ")");
}

Result<float> NumberToFloat32(double value) {
  const float f = static_cast<float>(value);
  char buf[32];
  const std::string text(buf, std::to_chars(buf, buf + sizeof buf, value).ptr);  // shortest form
  if (std::isinf(f) && std::isfinite(value)) {
    return InvalidArgument(text +
                           " is beyond float32's range (+-3.4e38): it would become infinite");
  }
  if (f == 0 && value != 0) {
    return InvalidArgument(text + " is too small for float32: it would become 0");
  }
  return f;
}

Status ExampleFromJson(std::string_view json, ExampleBuilder* builder) {
  SLUICE_ASSIGN_OR_RETURN(Json doc, ParseObject(json));
  return FeaturesFromJson(doc, builder);
}

Status SequenceExampleFromJson(std::string_view json, SequenceExampleBuilder* builder) {
  SLUICE_ASSIGN_OR_RETURN(Json doc, ParseObject(json));
  for (const auto& [key, value] : doc.items()) {
    if (key == "context") {
      SLUICE_RETURN_IF_ERROR(FeaturesFromJson(value, &builder->context()));
    } else if (key != "feature_lists") {
      return InvalidArgument("example JSON: unknown SequenceExample field \"" + key + "\"");
    }
  }
  auto lists = doc.find("feature_lists");
  if (lists == doc.end()) return Status::OK();
  if (!lists->is_object()) return InvalidArgument("example JSON: feature_lists is not an object");
  StepSink steps_sink{builder};
  for (const auto& [name, steps] : lists->items()) {
    if (!steps.is_array()) return Bad(name, "a feature list is an array of features");
    for (const Json& step : steps) {
      SLUICE_RETURN_IF_ERROR(FeatureFromJson(step, name, &steps_sink));
    }
  }
  return Status::OK();
}

}  // namespace sluice::format
