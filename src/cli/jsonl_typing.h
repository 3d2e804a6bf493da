// The feature types of `sluice convert jsonl`, decided from the whole input (docs/cli.md,
// "Typing"), as a user of pandas or Hugging Face datasets expects: a field's type holds every
// value of the input, not only those of its first lines.
//
// The rule, per field:
// 1. `--schema FIELD=TYPE` decides, whatever the input holds.
// 2. Otherwise the field's first occurrence decides between bytes and numbers (a line whose
//    value is of the other family is bad, as before).
// 3. A numeric field is int64 when every value is an integer (or a bool); float when some are
//    fractions and float32 holds every integer exactly (|n| <= 2^24, or low bits zero).
// 4. Otherwise no type of tf.train.Example holds every value (it has float32 and int64 only):
//    the conversion stops before writing anything, naming the field, the lines and the
//    `--schema` way out.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "sluice/base/status.h"
#include "sluice/format/example.h"

namespace sluice::cli {

// What the typing rule needs to know of each field, gathered line by line (a distributed job
// merges its tasks' in task order).
class FieldUses {
 public:
  // A value of `field` at `where` ("FILE:LINE"): its family (bytes, int64 or float) and, for
  // integers, whether float32 holds each exactly (`inexact`: the first that it does not).
  void Note(const std::string& field, format::FeatureType type, const std::string& where,
            const std::string& inexact = "");
  // Adds what a later part of the input (the next task) saw.
  void Merge(const FieldUses& later);

  // The types by the rule above; `declared` (--schema) win.
  Result<std::map<std::string, format::FeatureType>> Decide(
      const std::map<std::string, format::FeatureType>& declared) const;

  nlohmann::json ToJson() const;
  static FieldUses FromJson(const nlohmann::json& j);  // what ToJson wrote; else nothing

 private:
  struct Use {
    format::FeatureType first = format::FeatureType::kNone;  // the first occurrence's family
    std::string fraction_at;  // where the first fraction is ("": none)
    std::string inexact_at;   // where the first integer float32 does not hold exactly is
    std::string inexact;      // that integer
  };
  std::map<std::string, Use> uses_;
};

// `--schema` text: "FIELD=TYPE[,FIELD=TYPE...]", TYPE one of int64, float, bytes.
Result<std::map<std::string, format::FeatureType>> ParseSchemaFlag(const std::string& text);

}  // namespace sluice::cli
