#include "sluice/io/cache/node.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace sluice::io::cache {
namespace {

// A non-negative decimal number, or `fallback`.
uint32_t Number(const char* text, uint32_t fallback) {
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < 0 || v > INT32_MAX) return fallback;
  return static_cast<uint32_t>(v);
}

std::string Hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

uint32_t SlurmTasksOnNode(const std::string& list, uint32_t node) {
  // Entries "N" or "N(xR)", comma separated.
  size_t pos = 0;
  uint32_t seen = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    std::string entry =
        list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? list.size() : comma + 1;
    uint32_t repeat = 1;
    size_t paren = entry.find("(x");
    if (paren != std::string::npos) {
      if (entry.back() != ')') return 0;
      repeat = Number(entry.substr(paren + 2, entry.size() - paren - 3).c_str(), 0);
      entry = entry.substr(0, paren);
    }
    uint32_t tasks = Number(entry.c_str(), 0);
    if (tasks == 0 || repeat == 0) return 0;
    if (node < seen + repeat) return tasks;
    seen += repeat;
  }
  return 0;
}

NodeIdentity NodeFromEnvironment(const std::function<const char*(const char*)>& getenv) {
  NodeIdentity n;
  n.host = Hostname();
  auto has = [&](const char* name) { return getenv(name) != nullptr && *getenv(name) != '\0'; };
  if (has("SLUICE_NODE_RANK")) {
    n.source = "explicit";
    n.node_rank = Number(getenv("SLUICE_NODE_RANK"), 0);
    n.nodes = Number(getenv("SLUICE_NODES"), n.node_rank + 1);
    n.local_rank = Number(getenv("SLUICE_LOCAL_RANK"), 0);
    n.local_world_size = Number(getenv("SLUICE_LOCAL_WORLD_SIZE"), 1);
  } else if (has("LOCAL_RANK") && has("LOCAL_WORLD_SIZE")) {
    n.source = "torchrun";
    n.local_rank = Number(getenv("LOCAL_RANK"), 0);
    n.local_world_size = Number(getenv("LOCAL_WORLD_SIZE"), 1);
    uint32_t world = Number(getenv("WORLD_SIZE"), n.local_world_size);
    n.node_rank =
        Number(getenv("GROUP_RANK"), Number(getenv("RANK"), 0) / std::max(1u, n.local_world_size));
    n.nodes = std::max(n.node_rank + 1, world / std::max(1u, n.local_world_size));
  } else if (has("SLURM_LOCALID") && has("SLURM_NODEID")) {
    n.source = "slurm";
    n.local_rank = Number(getenv("SLURM_LOCALID"), 0);
    n.node_rank = Number(getenv("SLURM_NODEID"), 0);
    n.nodes = Number(getenv("SLURM_NNODES"), n.node_rank + 1);
    uint32_t per_node = Number(getenv("SLURM_NTASKS_PER_NODE"), 0);
    if (per_node == 0 && has("SLURM_TASKS_PER_NODE")) {
      per_node = SlurmTasksOnNode(getenv("SLURM_TASKS_PER_NODE"), n.node_rank);
    }
    n.local_world_size = per_node > 0 ? per_node : n.local_rank + 1;
  } else if (has("OMPI_COMM_WORLD_LOCAL_RANK") && has("OMPI_COMM_WORLD_LOCAL_SIZE")) {
    n.source = "openmpi";
    n.local_rank = Number(getenv("OMPI_COMM_WORLD_LOCAL_RANK"), 0);
    n.local_world_size = Number(getenv("OMPI_COMM_WORLD_LOCAL_SIZE"), 1);
    uint32_t rank = Number(getenv("OMPI_COMM_WORLD_RANK"), 0);
    uint32_t world = Number(getenv("OMPI_COMM_WORLD_SIZE"), n.local_world_size);
    n.node_rank = rank / std::max(1u, n.local_world_size);
    n.nodes = std::max(n.node_rank + 1, world / std::max(1u, n.local_world_size));
  } else {
    n.source = "single";
  }
  if (n.local_world_size == 0) n.local_world_size = 1;
  if (n.local_rank >= n.local_world_size) n.local_world_size = n.local_rank + 1;
  if (n.nodes <= n.node_rank) n.nodes = n.node_rank + 1;
  return n;
}

}  // namespace sluice::io::cache
