// FilePredicate: a condition on file-level metadata (partition values), the unit sluice
// deletes and overwrites by. It never looks inside a shard: it selects whole files.
//
// Grammar (a small SQL subset, as delta-rs's `delete("source = 'x'")` users write it):
//   predicate := clause ( AND clause )*          (empty text: every file)
//   clause    := column ( = | != | <> ) literal
//              | column [NOT] IN ( literal [, literal]* )
//              | column IS [NOT] NULL
//   literal   := 'text' ('' inside for a quote) | a number, compared as its spelling
// Keywords are case-insensitive; columns are partition columns.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"
#include "sluice/table/actions.h"

namespace sluice::table {

struct FilePredicate {
  enum class Op { kEq, kNe, kIn, kNotIn, kIsNull, kIsNotNull };
  struct Clause {
    std::string column;
    Op op = Op::kEq;
    std::vector<std::string> values;  // one for kEq/kNe, several for kIn/kNotIn
    bool operator==(const Clause&) const = default;
  };
  std::vector<Clause> clauses;  // all must hold; none: every file matches

  // InvalidArgument naming the position and what was expected.
  static Result<FilePredicate> Parse(std::string_view text);
  // A predicate of equalities: column = value for each entry.
  static FilePredicate Equals(const std::map<std::string, std::string>& values);

  bool matches_all() const { return clauses.empty(); }
  // SQL semantics for null partitions: a null value fails =, !=, IN and NOT IN.
  bool Matches(const PartitionValues& values) const;
  // InvalidArgument when a clause names a column that is not a partition column.
  Status Validate(const std::vector<std::string>& partition_columns) const;
  // Canonical text (parses back to an equal predicate); "true" when it matches everything.
  std::string ToString() const;
  bool operator==(const FilePredicate&) const = default;
};

}  // namespace sluice::table
