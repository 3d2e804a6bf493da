// What sluice can honour of a table's protocol (PROTOCOL.md, "Protocol Evolution",
// "Table Features"): the reader and writer versions and features it implements, and the
// checks that refuse the rest with a clear error.
#pragma once

#include <string>

#include "sluice/table/actions.h"

namespace sluice::table {

// Unimplemented naming the version or feature when sluice cannot read the table correctly
// (reader 2 = column mapping; reader 3 features other than v2Checkpoint and
// vacuumProtocolCheck, e.g. deletionVectors).
Status CheckCanRead(const Protocol& protocol, const std::string& table);

// Unimplemented when sluice cannot write the table without breaking a rule it does not
// implement (writer 3-6: CHECK constraints, change data feed, generated or identity columns,
// column mapping; writer 7 features beyond appendOnly, invariants, v2Checkpoint and
// vacuumProtocolCheck; column invariants in the schema).
Status CheckCanWrite(const Protocol& protocol, const Metadata& metadata, const std::string& table);

// delta.appendOnly = true: data may be added or rearranged, never removed.
bool IsAppendOnly(const Metadata& metadata);

}  // namespace sluice::table
