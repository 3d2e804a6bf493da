// What `sluice inspect` prints about a table beyond its shards (table.cc).
#pragma once

#include "sluice/table/table.h"

namespace sluice::cli {

// "table: version 12 of 14, committed 2026-...; protocol reader 1 / writer 2; partitioned by ..."
void PrintTableSummary(const table::Table& t);

}  // namespace sluice::cli
