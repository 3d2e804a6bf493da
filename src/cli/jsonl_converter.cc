// JsonlConverter (jsonl_converter.h): parsing a line, typing its fields, building its
// Example.
#include "cli/jsonl_converter.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "sluice/base/utf8.h"
#include "sluice/format/example_json.h"
#include "sluice/text/utf8.h"

namespace sluice::cli {
namespace {

using Json = nlohmann::json;
using format::FeatureType;
using jsonl::FieldValues;
using jsonl::LeftOut;
using jsonl::Number;

// Json::parse, except that it also notes the first integer literal of a top-level field
// that int64 cannot hold: nlohmann-json keeps such a literal as a uint64 (above 2^63 - 1) or,
// beyond 2^64, as a double, so its exact value (or sign) would be lost without a word.
class LineParser : public nlohmann::detail::json_sax_dom_parser<Json> {
 public:
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;
  explicit LineParser(Json* root) : Base(*root, /*allow_exceptions=*/true) {}

  bool start_object(std::size_t n) {
    ++depth_;
    return Base::start_object(n);
  }
  bool end_object() {
    --depth_;
    return Base::end_object();
  }
  bool key(std::string& k) {
    if (depth_ == 1) field_ = k;
    return Base::key(k);
  }
  bool number_unsigned(uint64_t v) {
    if (v > uint64_t{INT64_MAX}) Note(std::to_string(v));
    return Base::number_unsigned(v);
  }
  bool number_float(double v, const std::string& text) {
    if (text.find_first_of(".eE") == std::string::npos) Note(text);  // an integer literal
    return Base::number_float(v, text);
  }

  // InvalidArgument naming the field and the literal, if there was one.
  Status TooLarge() const {
    if (literal_.empty()) return Status::OK();
    return InvalidArgument("field \"" + too_large_field_ + "\": integer " + literal_ +
                           " is beyond the int64 range (-2^63 .. 2^63-1) and no feature type "
                           "holds it exactly; write it as a string to keep it");
  }

 private:
  void Note(const std::string& literal) {
    if (depth_ == 1 && literal_.empty()) {
      literal_ = literal;
      too_large_field_ = field_;
    }
  }

  int depth_ = 0;  // of objects; 1 inside the line's object
  std::string field_;
  std::string literal_;
  std::string too_large_field_;
};

// Converts a scalar; nullopt when the JSON kind has no feature form.
std::optional<FieldValues> Scalar(const Json& v) {
  FieldValues f;
  if (v.is_string()) {
    f.type = FeatureType::kBytes;
    f.bytes.push_back(v.get<std::string>());
  } else if (v.is_boolean() || v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) return std::nullopt;
    f.type = FeatureType::kInt64;
    f.numbers.push_back({true, v.is_boolean() ? (v.get<bool>() ? 1 : 0) : v.get<int64_t>(), 0});
  } else if (v.is_number_float()) {
    f.type = FeatureType::kFloat;
    f.numbers.push_back({false, 0, v.get<double>()});
  } else {
    return std::nullopt;
  }
  return f;
}

// Arrays of one scalar family; numbers widen to float when any element is a float.
std::optional<FieldValues> Values(const Json& v) {
  if (!v.is_array()) return Scalar(v);
  FieldValues all;
  for (const Json& element : v) {
    auto one = Scalar(element);
    if (!one) return std::nullopt;
    bool same_family = all.type == FeatureType::kNone ||
                       (all.type == FeatureType::kBytes) == (one->type == FeatureType::kBytes);
    if (!same_family) return std::nullopt;
    if (all.type != FeatureType::kFloat) all.type = one->type;
    for (auto& b : one->bytes) all.bytes.push_back(std::move(b));
    all.numbers.insert(all.numbers.end(), one->numbers.begin(), one->numbers.end());
  }
  return all;
}

// The values as float32, or why one cannot be stored faithfully (format::IntegerToFloat32;
// `round_integers`: integers round to the nearest float32 instead, as --schema F=float asks).
Result<std::vector<float>> Floats(const std::vector<Number>& numbers, bool round_integers) {
  std::vector<float> out;
  out.reserve(numbers.size());
  for (const Number& n : numbers) {
    if (n.integer && round_integers) {
      out.push_back(static_cast<float>(n.exact));
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(
        float f, n.integer ? format::IntegerToFloat32(n.exact) : format::NumberToFloat32(n.value));
    out.push_back(f);
  }
  return out;
}

// The first integer of `f` that float32 does not hold exactly, in decimal; "" when none.
std::string InexactInteger(const FieldValues& f) {
  for (const Number& n : f.numbers) {
    if (n.integer && !format::IntegerToFloat32(n.exact).ok()) return std::to_string(n.exact);
  }
  return "";
}

// `line` as a JSON object whose text field is a string, or why the line is bad.
Status ParseLine(std::string_view line, const std::string& text_field, Json* object) {
  LineParser parser(object);
  try {
    Json::sax_parse(line, &parser);
  } catch (const Json::exception& e) {
    return InvalidArgument("invalid JSON: " + EscapeBytes(e.what(), 300));
  }
  if (!object->is_object()) return InvalidArgument("not a JSON object");
  SLUICE_RETURN_IF_ERROR(parser.TooLarge());
  auto text = object->find(text_field);
  if (text == object->end()) return InvalidArgument("no \"" + text_field + "\" field");
  if (!text->is_string()) return InvalidArgument("\"" + text_field + "\" is not a string");
  return Status::OK();
}

std::vector<int64_t> Int64s(const std::vector<Number>& numbers) {
  std::vector<int64_t> out;
  out.reserve(numbers.size());
  for (const Number& n : numbers) out.push_back(n.exact);
  return out;
}

std::string KindOf(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_object()) return "object";
  return "array of mixed or nested values";
}

}  // namespace

Status JsonlConverter::Convert(std::string_view line, uint64_t line_number,
                               format::ExampleBuilder* example, std::string* text_out) {
  Json object;
  SLUICE_RETURN_IF_ERROR(ParseLine(line, text_field_, &object));
  std::map<std::string, Feature> fields;
  std::vector<std::pair<std::string, std::string>> skipped;  // (field, kind)
  *text_out = object[text_field_].get<std::string>();
  std::vector<std::pair<std::string, FieldValues>> values;
  for (const auto& [name, value] : object.items()) {
    if (omit_text_ && name == text_field_) continue;
    auto f = Values(value);
    if (!f) {
      skipped.emplace_back(name, KindOf(value));
      continue;
    }
    if (f->type == FeatureType::kNone) continue;  // []: no values; absent reads the same
    NoteUse(name, *f, line_number);  // before typing: a job's later round retypes from them
    values.emplace_back(name, std::move(*f));
  }
  for (auto& [name, f] : values) {
    SLUICE_ASSIGN_OR_RETURN(Feature feature, Typed(name, std::move(f)));
    fields.emplace(name, std::move(feature));
  }
  example->Clear();
  for (auto& [name, f] : fields) {
    types_.emplace(name, f.type);  // keeps an existing (possibly wider) type
    Add(name, &f, example);
  }
  for (const auto& [name, kind] : skipped) {
    LeftOut& l = left_out_[name];
    if (l.lines++ == 0) {
      l.first_line = line_number;
      l.kind = kind;
    }
  }
  return Status::OK();
}

void JsonlConverter::Survey(std::string_view line, uint64_t line_number) {
  Json object;
  if (!ParseLine(line, text_field_, &object).ok()) return;
  for (const auto& [name, value] : object.items()) {
    if (omit_text_ && name == text_field_) continue;
    if (auto f = Values(value)) NoteUse(name, *f, line_number);
  }
}

void JsonlConverter::NoteUse(const std::string& name, const FieldValues& f, uint64_t line_number) {
  uses_.Note(name, f.type, source_ + ":" + std::to_string(line_number),
             f.type == FeatureType::kBytes ? "" : InexactInteger(f));
}

Result<JsonlConverter::Feature> JsonlConverter::Typed(const std::string& name,
                                                      FieldValues f) const {
  Feature out;
  auto known = types_.find(name);
  out.type = known == types_.end() ? f.type : known->second;
  const bool widens = out.type == FeatureType::kFloat && f.type == FeatureType::kInt64;
  if (out.type != f.type && !widens) {
    return InvalidArgument("field \"" + name + "\" is " + std::string(FeatureTypeName(f.type)) +
                           " here but " + std::string(FeatureTypeName(out.type)) +
                           (declared_.count(name) != 0 ? " by --schema" : " in earlier lines"));
  }
  switch (out.type) {
    case FeatureType::kBytes:
      out.bytes = std::move(f.bytes);
      break;
    case FeatureType::kInt64:
      out.int64s = Int64s(f.numbers);
      break;
    case FeatureType::kFloat: {
      auto floats = Floats(f.numbers, declared_.count(name) != 0);
      if (!floats.ok()) {
        return InvalidArgument("field \"" + name + "\" (float): " + floats.status().message());
      }
      out.floats = std::move(*floats);
      break;
    }
    case FeatureType::kNone:
      break;
  }
  return out;
}

void JsonlConverter::Add(const std::string& name, Feature* f,
                         format::ExampleBuilder* example) const {
  switch (f->type) {
    case FeatureType::kBytes:
      example->AddBytes(name, std::move(f->bytes));
      break;
    case FeatureType::kInt64:
      example->AddInt64s(name, std::move(f->int64s));
      break;
    case FeatureType::kFloat:
      example->AddFloats(name, std::move(f->floats));
      break;
    case FeatureType::kNone:
      break;
  }
}

std::vector<std::string> JsonlConverter::Notes() const {
  std::vector<std::string> notes;
  for (const auto& [name, l] : left_out_) {
    notes.push_back("field \"" + name + "\" (" + l.kind + ") not converted in " +
                    std::to_string(l.lines) + " line(s), first on line " +
                    std::to_string(l.first_line));
  }
  return notes;
}

}  // namespace sluice::cli
