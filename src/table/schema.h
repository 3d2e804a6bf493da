// The records' feature schema in a table's metaData: as a Spark StructType in schemaString
// (what Delta readers expect: int64 -> long, float -> float, bytes -> binary, lists ->
// array), and exactly as sluice's manifest spells it in configuration["sluice.features"].
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sluice/format/manifest.h"
#include "sluice/table/actions.h"

namespace sluice::table {

inline constexpr std::string_view kFeaturesProperty = "sluice.features";

std::string SparkSchemaJson(const std::map<std::string, format::FeatureSchema>& features,
                            const std::vector<std::string>& partition_columns);
std::string FeaturesJson(const std::map<std::string, format::FeatureSchema>& features);
// From sluice.features when present, else approximated from schemaString (partition
// columns excluded); empty when neither says anything.
std::map<std::string, format::FeatureSchema> FeaturesOf(const Metadata& metadata);

}  // namespace sluice::table
