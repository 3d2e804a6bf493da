// Fuzzes the parsing of a table's log on arbitrary bytes: a commit file's lines
// (ParseActions), their replay (ApplyCommit) and the bounded JSON of everything else the log
// holds (stats, _last_checkpoint). None may crash or recurse without bound (any depth of
// nesting, issue 35); and
//   - an empty or whitespace-only file is never applied as a version;
//   - what ParseLogJson accepts prints (a recursive walk) without overflowing the stack.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sluice/table/actions.h"
#include "table/checkpoint.h"
#include "table/log_json.h"
#include "table/table_state.h"

namespace {

using namespace sluice::table;  // NOLINT

void Check(bool ok) {
  if (!ok) std::abort();
}

void FuzzCommit(std::string_view text) {
  auto parsed = ParseActions(text, "t/_delta_log/00000000000000000000.json (version 0)");
  if (!parsed.ok()) return;
  for (const Action& a : parsed->actions) {
    if (const auto* add = std::get_if<AddFile>(&a)) (void)add->num_records();
  }
  TableState state;
  sluice::Status applied =
      ApplyCommit(&state, 0, *parsed, 0, "t/_delta_log/00000000000000000000.json");
  if (parsed->lines == 0) Check(!applied.ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  FuzzCommit(input);
  (void)ParseLastCheckpoint(input);
  auto json = ParseLogJson(input);
  if (!json.is_discarded()) (void)json.dump();
  return 0;
}
