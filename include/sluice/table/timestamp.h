// Commit timestamps as users write and read them: ISO 8601 in UTC, milliseconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/base/status.h"

namespace sluice::table {

// "2026-12-01T10:20:30.123Z"
std::string FormatTimestamp(int64_t ms_since_epoch);

// Milliseconds since the epoch from "2026-12-01", "2026-12-01T10:20:30", "...30.123",
// "...Z" or "...+02:00" (no offset means UTC), or from a plain integer of milliseconds.
// InvalidArgument otherwise.
Result<int64_t> ParseTimestamp(std::string_view text);

// The current time, ms since the Unix epoch.
int64_t NowMs();

}  // namespace sluice::table
