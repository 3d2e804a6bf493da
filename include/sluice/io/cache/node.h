// Which node this process runs on and which of the node's ranks it is: what the cache needs
// to share one directory between the ranks of a node and to plan for all of them
// (docs/cache.md, "Across nodes").
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>

namespace sluice::io::cache {

struct NodeIdentity {
  std::string host;
  uint32_t node_rank = 0;         // this node among the job's nodes
  uint32_t nodes = 1;             // nodes in the job (1 when unknown)
  uint32_t local_rank = 0;        // this process among the node's ranks
  uint32_t local_world_size = 1;  // ranks on this node
  std::string source;             // "torchrun", "slurm", "openmpi", "explicit" or "single"

  // The job's global ranks that run on this node, given this process's global rank:
  // [rank - local_rank, rank - local_rank + local_world_size). torchrun, Slurm's default
  // block distribution and mpirun --map-by node:... aside, Open MPI's default by-slot mapping
  // all number ranks node by node.
  uint32_t FirstLocalRank(uint32_t rank) const {
    return rank >= local_rank ? rank - local_rank : 0;
  }
};

// From the environment, first match wins:
//   SLUICE_NODE_RANK [+ SLUICE_NODES, SLUICE_LOCAL_RANK, SLUICE_LOCAL_WORLD_SIZE]  "explicit"
//   LOCAL_RANK + LOCAL_WORLD_SIZE [+ GROUP_RANK, WORLD_SIZE] (torchrun)            "torchrun"
//   SLURM_LOCALID + SLURM_NODEID [+ SLURM_NNODES, SLURM_NTASKS_PER_NODE or
//     SLURM_TASKS_PER_NODE's entry for this node]                                   "slurm"
//   OMPI_COMM_WORLD_LOCAL_RANK + OMPI_COMM_WORLD_LOCAL_SIZE (the node is
//     OMPI_COMM_WORLD_RANK / LOCAL_SIZE)                                             "openmpi"
//   otherwise one rank on this host                                                 "single"
// `getenv` is injectable for tests.
NodeIdentity NodeFromEnvironment(const std::function<const char*(const char*)>& getenv =
                                     [](const char* name) { return std::getenv(name); });

// Slurm's compressed tasks-per-node list ("4(x2),3" = 4, 4, 3): the entry of node `node`;
// 0 when it cannot be parsed. Exposed for tests.
uint32_t SlurmTasksOnNode(const std::string& tasks_per_node, uint32_t node);

}  // namespace sluice::io::cache
