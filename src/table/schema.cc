#include "schema.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "log_json.h"

namespace sluice::table {
namespace {

using Json = nlohmann::ordered_json;

Json SparkType(const format::FeatureSchema& f) {
  std::string element = f.type == format::FeatureType::kInt64   ? "long"
                        : f.type == format::FeatureType::kFloat ? "float"
                                                                : "binary";
  if (f.values_per_record == 1) return element;
  return Json{{"type", "array"}, {"elementType", element}, {"containsNull", false}};
}

std::optional<format::FeatureSchema> FromSparkType(const Json& type) {
  format::FeatureSchema f;
  const Json* element = &type;
  f.values_per_record = 1;
  if (type.is_object() && type.value("type", "") == "array" && type.contains("elementType")) {
    element = &type["elementType"];
    f.values_per_record = -1;
  }
  if (!element->is_string()) return std::nullopt;
  std::string name = element->get<std::string>();
  if (name == "long" || name == "integer" || name == "short" || name == "byte" ||
      name == "boolean") {
    f.type = format::FeatureType::kInt64;
  } else if (name == "float" || name == "double") {
    f.type = format::FeatureType::kFloat;
  } else if (name == "binary" || name == "string") {
    f.type = format::FeatureType::kBytes;
  } else {
    return std::nullopt;
  }
  return f;
}

}  // namespace

std::string SparkSchemaJson(const std::map<std::string, format::FeatureSchema>& features,
                            const std::vector<std::string>& partition_columns) {
  Json fields = Json::array();
  for (const auto& [name, f] : features) {
    fields.push_back(
        {{"name", name}, {"type", SparkType(f)}, {"nullable", true}, {"metadata", Json::object()}});
  }
  for (const std::string& column : partition_columns) {
    if (features.count(column)) continue;
    fields.push_back(
        {{"name", column}, {"type", "string"}, {"nullable", true}, {"metadata", Json::object()}});
  }
  return Json{{"type", "struct"}, {"fields", fields}}.dump();
}

std::string FeaturesJson(const std::map<std::string, format::FeatureSchema>& features) {
  Json out = Json::object();
  for (const auto& [name, f] : features) {
    out[name] = {{"type", std::string(format::FeatureTypeName(f.type))},
                 {"values_per_record", f.values_per_record}};
  }
  return out.dump();
}

std::map<std::string, format::FeatureSchema> FeaturesOf(const Metadata& metadata) {
  std::map<std::string, format::FeatureSchema> out;
  auto it = metadata.configuration.find(std::string(kFeaturesProperty));
  if (it != metadata.configuration.end()) {
    Json j = ParseLogJson(it->second);
    if (j.is_object()) {
      for (const auto& [name, value] : j.items()) {
        if (!value.is_object()) continue;
        format::FeatureSchema f;
        std::string type = value.value("type", "");
        for (auto t : {format::FeatureType::kBytes, format::FeatureType::kFloat,
                       format::FeatureType::kInt64}) {
          if (format::FeatureTypeName(t) == type) f.type = t;
        }
        f.values_per_record = value.value("values_per_record", int64_t{-1});
        out[name] = f;
      }
      return out;
    }
  }
  Json schema = ParseLogJson(metadata.schema_string);
  if (!schema.is_object() || !schema.contains("fields") || !schema["fields"].is_array()) {
    return out;
  }
  const auto& partitions = metadata.partition_columns;
  for (const Json& field : schema["fields"]) {
    if (!field.is_object() || !field.contains("name") || !field["name"].is_string()) continue;
    std::string name = field["name"].get<std::string>();
    if (std::find(partitions.begin(), partitions.end(), name) != partitions.end()) continue;
    if (auto f = FromSparkType(field.value("type", Json()))) out[name] = *f;
  }
  return out;
}

}  // namespace sluice::table
