// Copying ids of any stored type into the int32 buffers of padded and packed batches.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

#include "sluice/text/token_ids.h"

namespace sluice::text::internal {

// Copies `in` to out[0, in.size()). Returns false (having copied an unspecified prefix)
// when an id is negative or above INT32_MAX, which no vocabulary produces.
template <TokenId T>
bool CopyIds(std::span<const T> in, int32_t* out) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    for (size_t k = 0; k < in.size(); ++k) out[k] = in[k];
    return true;
  } else {
    bool ok = true;
    for (size_t k = 0; k < in.size(); ++k) {
      const T id = in[k];
      if constexpr (std::is_signed_v<T>) ok &= id >= 0;
      if constexpr (sizeof(T) >= 4 && !std::is_same_v<T, int32_t>) {
        ok &= id <= static_cast<T>(std::numeric_limits<int32_t>::max());
      }
      out[k] = static_cast<int32_t>(id);
    }
    return ok;
  }
}

}  // namespace sluice::text::internal
