// SchemaInference: the `features` section of dataset.json, inferred from the records.
#include <string>

#include "sluice/format/example_json.h"

namespace sluice::format {

Status SchemaInference::Add(const ExampleView& example) {
  std::map<std::string, Seen, std::less<>> one;
  for (const auto& [name, feature] : example.features()) {
    one.emplace(name, Seen{feature.type, static_cast<int64_t>(feature.size()), 1});
  }
  return Combine(one, 1);
}

Status SchemaInference::Merge(const SchemaInference& other) {
  return Combine(other.seen_, other.records_);
}

Status SchemaInference::Combine(const std::map<std::string, Seen, std::less<>>& incoming,
                                uint64_t records) {
  for (const auto& [name, in] : incoming) {  // check everything before changing anything
    auto it = seen_.find(name);
    if (it == seen_.end()) continue;
    FeatureType had = it->second.type;
    if (had != FeatureType::kNone && in.type != FeatureType::kNone && had != in.type) {
      return InvalidArgument("feature \"" + name + "\" is " + std::string(FeatureTypeName(had)) +
                             " in earlier records but " + std::string(FeatureTypeName(in.type)) +
                             (records == 1 ? " in record " + std::to_string(records_)
                                           : " in records " + std::to_string(records_) + ".." +
                                                 std::to_string(records_ + records - 1)));
    }
  }
  for (const auto& [name, in] : incoming) {
    auto [it, inserted] = seen_.emplace(name, in);
    if (inserted) continue;
    Seen& s = it->second;
    if (s.type == FeatureType::kNone) s.type = in.type;
    if (s.values_per_record != in.values_per_record) s.values_per_record = -1;
    s.records += in.records;
  }
  records_ += records;
  return Status::OK();
}

std::map<std::string, FeatureSchema> SchemaInference::schema() const {
  std::map<std::string, FeatureSchema> out;
  for (const auto& [name, s] : seen_) {
    // A feature missing from some records has a varying count (0 in those records).
    int64_t count = s.records == records_ ? s.values_per_record : -1;
    out.emplace(name, FeatureSchema{s.type, count});
  }
  return out;
}

}  // namespace sluice::format
