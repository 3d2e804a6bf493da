// Where the text tests find their committed models (tests/data/text/README.md).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sluice::text::testing {

// tests/data/text/<name>, from SLUICE_SOURCE_DIR (set by ctest) or this file's location.
inline std::string TextTestData(const std::string& name) {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  std::filesystem::path dir = root != nullptr
                                  ? std::filesystem::path(root) / "tests"
                                  : std::filesystem::path(__FILE__).parent_path().parent_path();
  return (dir / "data" / "text" / name).string();
}

inline const char kUnigramModel[] = "kernel_docs_unigram400.model";
inline const char kByteFallbackModel[] = "kernel_docs_bpe500_bytes.model";

}  // namespace sluice::text::testing
