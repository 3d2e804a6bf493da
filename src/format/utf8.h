// UTF-8 validation for the JSON form of Examples (feature names are bytes on the wire).
// The implementation is shared with the text path and lives in base (sluice/base/utf8.h).
#pragma once

#include "sluice/base/utf8.h"

namespace sluice::format {

using ::sluice::IsValidUtf8;
using ::sluice::Utf8SequenceLength;

}  // namespace sluice::format
