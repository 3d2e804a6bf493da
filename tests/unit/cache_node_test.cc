// Node identity from the environments of torchrun, Slurm, Open MPI, and explicit settings.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sluice/io/cache/node.h"

namespace sluice::io::cache {
namespace {

NodeIdentity From(std::map<std::string, std::string> env) {
  return NodeFromEnvironment([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(NodeIdentity, TorchrunGivesNodeAndLocalRanks) {
  NodeIdentity n = From({{"LOCAL_RANK", "3"},
                         {"LOCAL_WORLD_SIZE", "8"},
                         {"GROUP_RANK", "1"},
                         {"RANK", "11"},
                         {"WORLD_SIZE", "16"}});
  EXPECT_EQ(n.source, "torchrun");
  EXPECT_EQ(n.node_rank, 1u);
  EXPECT_EQ(n.nodes, 2u);
  EXPECT_EQ(n.local_rank, 3u);
  EXPECT_EQ(n.local_world_size, 8u);
  EXPECT_EQ(n.FirstLocalRank(11), 8u);
}

TEST(NodeIdentity, SlurmReadsTheCompressedTasksPerNodeList) {
  NodeIdentity n = From({{"SLURM_LOCALID", "2"},
                         {"SLURM_NODEID", "2"},
                         {"SLURM_NNODES", "3"},
                         {"SLURM_TASKS_PER_NODE", "4(x2),3"}});
  EXPECT_EQ(n.source, "slurm");
  EXPECT_EQ(n.node_rank, 2u);
  EXPECT_EQ(n.nodes, 3u);
  EXPECT_EQ(n.local_world_size, 3u);
  EXPECT_EQ(SlurmTasksOnNode("4(x2),3", 0), 4u);
  EXPECT_EQ(SlurmTasksOnNode("4(x2),3", 1), 4u);
  EXPECT_EQ(SlurmTasksOnNode("4(x2),3", 3), 0u);
  EXPECT_EQ(SlurmTasksOnNode("4(x2", 0), 0u);
  EXPECT_EQ(SlurmTasksOnNode("", 0), 0u);
}

TEST(NodeIdentity, OpenMpiNodeComesFromTheRank) {
  NodeIdentity n = From({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                         {"OMPI_COMM_WORLD_RANK", "5"},
                         {"OMPI_COMM_WORLD_SIZE", "8"}});
  EXPECT_EQ(n.source, "openmpi");
  EXPECT_EQ(n.node_rank, 2u);
  EXPECT_EQ(n.nodes, 4u);
}

TEST(NodeIdentity, ExplicitSettingsWinAndGarbageFallsBack) {
  NodeIdentity n = From({{"SLUICE_NODE_RANK", "1"},
                         {"SLUICE_NODES", "2"},
                         {"SLUICE_LOCAL_RANK", "1"},
                         {"SLUICE_LOCAL_WORLD_SIZE", "2"},
                         {"LOCAL_RANK", "0"},
                         {"LOCAL_WORLD_SIZE", "8"}});
  EXPECT_EQ(n.source, "explicit");
  EXPECT_EQ(n.local_world_size, 2u);
  NodeIdentity bad = From({{"LOCAL_RANK", "x"}, {"LOCAL_WORLD_SIZE", "-2"}});
  EXPECT_EQ(bad.local_rank, 0u);
  EXPECT_EQ(bad.local_world_size, 1u);
  NodeIdentity none = From({});
  EXPECT_EQ(none.source, "single");
  EXPECT_EQ(none.local_world_size, 1u);
  EXPECT_FALSE(none.host.empty());
}

}  // namespace
}  // namespace sluice::io::cache
