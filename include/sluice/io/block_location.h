// Where a file's bytes live: the locality a distributed job uses to run a task near its data
// (docs/hdfs.md, "Locality for distributed jobs").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::io {

// One block of a file and the machines holding its replicas.
struct BlockLocation {
  uint64_t offset = 0;  // of the block in the file
  uint64_t length = 0;
  std::vector<std::string> hosts;  // host names, one per replica ("dn3.example.com")
  std::vector<std::string> names;  // the same machines' transfer addresses ("10.0.0.3:9866")
  bool corrupt = false;
};

// Block locations of any file sluice can read, in file order: HDFS answers with its
// datanodes (GETFILEBLOCKLOCATIONS); other file systems give one block covering the whole
// file with no hosts (no locality is known). An empty file has no blocks.
Result<std::vector<BlockLocation>> FileBlockLocations(std::string_view uri);

}  // namespace sluice::io
