// Token ids of many documents, and the integer types sluice stores ids in.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <vector>

namespace sluice::text {

// The element types a document's ids may come in: int32 (the tokenizer), uint16 / uint32
// (the token cache, zero copy) and int64 (the `tokens` feature of pre-tokenized shards).
// Batching functions accept spans of any of them and always produce int32.
template <typename T>
concept TokenId = std::same_as<T, int32_t> || std::same_as<T, int64_t> ||
    std::same_as<T, uint16_t> || std::same_as<T, uint32_t>;

// Many documents' ids in one flat buffer plus offsets: document i is
// ids[offsets[i], offsets[i + 1]). The layout of the token cache, and what batch
// tokenization returns, so that N documents cost two allocations instead of N.
// Clear() keeps capacity, so a reused RaggedIds stops allocating in steady state.
struct RaggedIds {
  std::vector<int32_t> ids;
  std::vector<uint64_t> offsets{0};  // always starts with 0; size() + 1 entries

  size_t size() const { return offsets.size() - 1; }
  bool empty() const { return size() == 0; }
  uint64_t total_ids() const { return offsets.back(); }
  std::span<const int32_t> operator[](size_t i) const {
    return std::span<const int32_t>(ids).subspan(offsets[i], offsets[i + 1] - offsets[i]);
  }
  void Append(std::span<const int32_t> doc) {
    ids.insert(ids.end(), doc.begin(), doc.end());
    offsets.push_back(ids.size());
  }
  void Clear() {
    ids.clear();
    offsets.assign(1, 0);
  }
  // One span per document, for the batching functions (which take spans of spans).
  std::vector<std::span<const int32_t>> Spans() const {
    std::vector<std::span<const int32_t>> out;
    out.reserve(size());
    for (size_t i = 0; i < size(); ++i) out.push_back((*this)[i]);
    return out;
  }
};

// Real tokens versus slots of a padded or packed batch, summed over as many batches as one
// likes. waste() is the fraction of slots that hold padding: the compute a model spends on
// nothing.
struct TokenCounts {
  uint64_t real = 0;   // slots holding a document's token
  uint64_t total = 0;  // all slots (rows x columns)
  double waste() const { return total == 0 ? 0.0 : 1.0 - static_cast<double>(real) / total; }
  TokenCounts& operator+=(const TokenCounts& o) {
    real += o.real;
    total += o.total;
    return *this;
  }
};

}  // namespace sluice::text
