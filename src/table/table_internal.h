// Shared by the files that implement Table: the commit path every write takes, and the plans
// of the operations.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "commit.h"
#include "sluice/table/table.h"
#include "table_state.h"

namespace sluice::table {

// metaData.format.provider of the tables sluice creates: their data files are TFRecord shards.
inline constexpr std::string_view kSluiceFormatProvider = "tfrecord";

// Fills a transaction planned against a state (version -1: the table does not exist yet and
// the commit will create it; the plan never adds protocol or metaData for that).
using PlanFn = std::function<Status(const TableState&, Transaction*)>;

// Loads the latest state (none when `may_create` and the table is absent), plans, commits,
// checkpoints when due, and leaves the latest state in *final_state. A create that loses the
// race to another creator plans again against the table that won. A plan with no actions on
// an existing table commits nothing. `held`: a state of this table the caller already has
// (a Table's snapshot); the latest is then reached by reading only the commits after it.
Result<CommitResult> CommitToTable(LogStore* store, const std::string& root,
                                   const CommitOptions& options, const PlanFn& plan,
                                   bool may_create, TableState* final_state,
                                   const TableState* held = nullptr);

PlanFn AppendPlan(std::vector<DataFile> files, const CommitOptions& options,
                  const std::string& root);

// The operationParameters value of a list of strings, JSON-encoded as Spark writes it.
std::string JsonStringList(const std::vector<std::string>& values);

}  // namespace sluice::table
