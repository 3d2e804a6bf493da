// Random (version 4) UUIDs: table ids, checkpoint names, commit attempt ids, data file names.
#pragma once

#include <string>

namespace sluice::table {

// "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", lower-case hex, from std::random_device.
std::string NewUuid();

}  // namespace sluice::table
