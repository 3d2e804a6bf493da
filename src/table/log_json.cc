#include "log_json.h"

namespace sluice::table {

bool JsonNestsDeeperThan(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, a quote included
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

nlohmann::ordered_json ParseLogJson(std::string_view text, bool* too_deep) {
  const bool deep = JsonNestsDeeperThan(text, kMaxLogJsonDepth);
  if (too_deep != nullptr) *too_deep = deep;
  if (deep) return nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded);
  return nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace sluice::table
