// JSON parsing of what a table's log holds, bounded: a log file comes from any writer (or a
// damaged disk), and nlohmann's serializer, copies and comparisons recurse once per level of
// nesting, so a line of 70,000 nested arrays would overflow the reader's stack. Every JSON
// text of the log (action lines, stats, schemaString, sluice.features, _last_checkpoint) is
// parsed through ParseLogJson (docs/table.md, "Reading any Delta log").
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace sluice::table {

// Deepest nesting of arrays and objects accepted: serde_json's default recursion limit
// (delta-rs, delta-kernel-rs), far above any action of the protocol (under 10 levels) and far
// below what the recursion in the JSON library needs from a thread's stack.
inline constexpr int kMaxLogJsonDepth = 128;
// Longest line of a log file: one action. A commit of many files is many lines; a schema of
// thousands of columns is a few MiB.
inline constexpr size_t kMaxLogLineBytes = size_t{64} << 20;

// Whether `text` nests arrays and objects deeper than `max_depth`, found without parsing
// (brackets inside strings do not count). Exact for valid JSON, and for the valid prefix the
// parser reads of invalid JSON before it stops.
bool JsonNestsDeeperThan(std::string_view text, int max_depth);

// `text` parsed; a discarded value (is_discarded()) when it is not JSON or nests deeper than
// kMaxLogJsonDepth (*too_deep, when given, then tells which).
nlohmann::ordered_json ParseLogJson(std::string_view text, bool* too_deep = nullptr);

}  // namespace sluice::table
