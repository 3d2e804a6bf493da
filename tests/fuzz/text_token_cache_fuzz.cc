// Fuzzes TokenCacheReader on arbitrary .idx/.bin pairs: Open must either fail cleanly or
// validate an index under which every document span lies inside the .bin, so that reading
// all of them (and VerifyIds) never touches memory outside the file.
// Input: u32 LE length of the .idx bytes, the .idx bytes, then the .bin bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/io/file_system.h"
#include "sluice/text/token_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;  // NOLINT
  if (size < 4) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t idx_len = std::min<size_t>(DecodeFixed32(in.data()), size - 4);
  auto fs = io::NewMemoryFileSystem();
  if (!fs->WriteAll("/c.idx", in.substr(4, idx_len)).ok()) std::abort();
  if (!fs->WriteAll("/c.bin", in.substr(4 + idx_len)).ok()) std::abort();
  auto reader = text::TokenCacheReader::Open(fs.get(), "/c");
  if (!reader.ok()) return 0;
  const text::TokenCacheReader& r = **reader;
  uint64_t tokens = 0, sum = 0;
  std::vector<int32_t> copy;
  for (uint64_t i = 0; i < r.size(); ++i) {
    r.Visit(i, [&](auto ids) {
      for (auto id : ids) sum += id;  // ASan flags any byte outside the mapping
      tokens += ids.size();
    });
    r.CopyDocument(i, &copy);
    if (copy.size() != r.length(i)) std::abort();
  }
  if (tokens != r.total_tokens()) std::abort();
  (void)r.VerifyIds(sum % 70000 + 1);
  return 0;
}
