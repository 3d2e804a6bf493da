// JsonlConverter: one tf.train.Example per JSON line (`sluice convert jsonl`,
// convert_jsonl.cc).
//
// Typing (docs/cli.md): string -> bytes, integer -> int64, float -> float, bool -> int64
// 0/1, arrays of numbers -> int64 or float lists, arrays of strings -> bytes lists. Nested
// objects, null and mixed arrays are left out with a note. Every record of the dataset parses
// the same way: the feature types are decided from the whole input (jsonl_typing.h) and
// seeded before the lines are converted; a field no seed names keeps the type of its first
// occurrence. Integers are accepted into a float feature when float32 holds them exactly (a
// float declared by --schema rounds them); anything else of another type, and any value the
// feature's type cannot store faithfully (an integer beyond int64, an integer float32 would
// round, a float beyond float32's range), makes the line bad.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cli/jsonl_typing.h"
#include "sluice/base/status.h"
#include "sluice/format/example.h"

namespace sluice::cli {

namespace jsonl {  // the converter's parts

// One JSON number: integers keep their exact value (a double would round those past 2^53).
struct Number {
  bool integer = false;
  int64_t exact = 0;  // when integer
  double value = 0;   // when not
};

// One JSON value as feature values, before the type check against earlier lines.
struct FieldValues {
  format::FeatureType type =
      format::FeatureType::kNone;  // kNone: an empty array (no values, no type)
  std::vector<std::string> bytes;
  std::vector<Number> numbers;  // kInt64 and kFloat
};

// A field left out of some records, for the summary.
struct LeftOut {
  std::string kind;  // "object", "null", "mixed array"
  uint64_t lines = 0;
  uint64_t first_line = 0;
};

}  // namespace jsonl

class JsonlConverter {
 public:
  // `omit_text`: the text field is not added to the Example (it is tokenized instead).
  // `declared`: the types --schema gives (a declared float rounds integers to float32).
  JsonlConverter(std::string text_field, bool omit_text,
                 std::map<std::string, format::FeatureType> declared = {})
      : text_field_(std::move(text_field)),
        omit_text_(omit_text),
        declared_(std::move(declared)),
        types_(declared_) {}

  // Names the input the next lines come from, in the notes of FieldUses ("FILE:LINE").
  void set_source(std::string source) { source_ = std::move(source); }

  // Builds the Example of one line and returns its text field. An error is why the line is
  // skipped; the feature types learned from a skipped line are forgotten.
  Status Convert(std::string_view line, uint64_t line_number, format::ExampleBuilder* example,
                 std::string* text);
  // Notes the line's fields in uses() only (a first pass over the input, for the types); a
  // line Convert would refuse for its JSON or text field is passed over.
  void Survey(std::string_view line, uint64_t line_number);
  // The fields of every line surveyed or converted so far.
  const FieldUses& uses() const { return uses_; }
  std::vector<std::string> Notes() const;

  // The feature types fixed so far; seeding them makes this converter go on where one that
  // read the earlier lines left off (a distributed job's task: docs/dist.md).
  const std::map<std::string, format::FeatureType>& types() const { return types_; }
  void Seed(std::map<std::string, format::FeatureType> types) {
    types_ = std::move(types);
    for (const auto& [name, type] : declared_) types_[name] = type;
  }

 private:
  // A field's values in the feature type its first occurrence fixed.
  struct Feature {
    format::FeatureType type = format::FeatureType::kNone;
    std::vector<std::string> bytes;
    std::vector<int64_t> int64s;
    std::vector<float> floats;
  };
  // The values as that type, or why this line cannot give them: another type, or a value
  // the type cannot store faithfully.
  Result<Feature> Typed(const std::string& name, jsonl::FieldValues f) const;
  void Add(const std::string& name, Feature* f, format::ExampleBuilder* example) const;
  void NoteUse(const std::string& name, const jsonl::FieldValues& f, uint64_t line_number);

  const std::string text_field_;
  const bool omit_text_;
  const std::map<std::string, format::FeatureType> declared_;
  std::string source_;
  FieldUses uses_;
  // Seeded, else fixed by each feature's first occurrence.
  std::map<std::string, format::FeatureType> types_;
  std::map<std::string, jsonl::LeftOut> left_out_;
};

}  // namespace sluice::cli
