// FieldUses (jsonl_typing.h): typing JSON fields from the whole input.
#include "cli/jsonl_typing.h"

namespace sluice::cli {
namespace {

using format::FeatureType;
using Json = nlohmann::json;

bool IsNumber(FeatureType t) { return t == FeatureType::kInt64 || t == FeatureType::kFloat; }

Status NoTypeHoldsEvery(const std::string& field, const std::string& fraction_at,
                        const std::string& inexact_at, const std::string& inexact) {
  return InvalidArgument(
      "field \"" + field + "\" mixes integers and fractions (the first fraction on " + fraction_at +
      "), and float32, tf.train.Example's only type for fractions, does not hold " +
      "the integer " + inexact + " on " + inexact_at +
      " exactly: no feature type holds every value, so nothing was written. Choose the type: "
      "--schema " +
      field + "=float (such integers rounded to float32), --schema " + field +
      "=int64 (lines with fractions reported and skipped), or write the values as strings");
}

}  // namespace

void FieldUses::Note(const std::string& field, FeatureType type, const std::string& where,
                     const std::string& inexact) {
  if (type == FeatureType::kNone) return;
  Use& u = uses_[field];
  if (u.first == FeatureType::kNone) u.first = type;
  if (type == FeatureType::kFloat && u.fraction_at.empty()) u.fraction_at = where;
  if (!inexact.empty() && u.inexact_at.empty()) {
    u.inexact_at = where;
    u.inexact = inexact;
  }
}

void FieldUses::Merge(const FieldUses& later) {
  for (const auto& [field, l] : later.uses_) {
    Use& u = uses_[field];
    if (u.first == FeatureType::kNone) u.first = l.first;
    if (u.fraction_at.empty()) u.fraction_at = l.fraction_at;
    if (u.inexact_at.empty()) {
      u.inexact_at = l.inexact_at;
      u.inexact = l.inexact;
    }
  }
}

Result<std::map<std::string, FeatureType>> FieldUses::Decide(
    const std::map<std::string, FeatureType>& declared) const {
  std::map<std::string, FeatureType> types = declared;
  for (const auto& [field, u] : uses_) {
    if (declared.count(field) != 0) continue;
    if (!IsNumber(u.first)) {
      types[field] = u.first;
    } else if (u.fraction_at.empty()) {
      types[field] = FeatureType::kInt64;
    } else if (u.inexact_at.empty()) {
      types[field] = FeatureType::kFloat;
    } else {
      return NoTypeHoldsEvery(field, u.fraction_at, u.inexact_at, u.inexact);
    }
  }
  return types;
}

Json FieldUses::ToJson() const {
  Json j = Json::object();
  for (const auto& [field, u] : uses_) {
    j[field] = {static_cast<int>(u.first), u.fraction_at, u.inexact_at, u.inexact};
  }
  return j;
}

FieldUses FieldUses::FromJson(const Json& j) {
  FieldUses out;
  if (!j.is_object()) return out;
  for (const auto& [field, v] : j.items()) {
    if (!v.is_array() || v.size() != 4 || !v[0].is_number_integer()) continue;
    Use& u = out.uses_[field];
    u.first = static_cast<FeatureType>(v[0].get<int>());
    std::string* fields[] = {&u.fraction_at, &u.inexact_at, &u.inexact};
    for (size_t i = 0; i < 3; ++i) {
      if (v[i + 1].is_string()) *fields[i] = v[i + 1].get<std::string>();
    }
  }
  return out;
}

Result<std::map<std::string, FeatureType>> ParseSchemaFlag(const std::string& text) {
  std::map<std::string, FeatureType> types;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) continue;
    size_t eq = item.rfind('=');
    std::string type = eq == std::string::npos ? "" : item.substr(eq + 1);
    FeatureType t = type == "int64"   ? FeatureType::kInt64
                    : type == "float" ? FeatureType::kFloat
                    : type == "bytes" ? FeatureType::kBytes
                                      : FeatureType::kNone;
    if (eq == 0 || t == FeatureType::kNone) {
      return InvalidArgument("--schema: \"" + item +
                             "\" is not FIELD=TYPE with TYPE int64, float or bytes");
    }
    types[item.substr(0, eq)] = t;
  }
  return types;
}

}  // namespace sluice::cli
