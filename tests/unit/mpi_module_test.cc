// Where the MPI module is looked for and what a missing or wrong module says
// (src/dist/mpi_module.h). Loading the real module and running jobs through it is
// tests/python/test_lazy_libraries.py's and test_dist.py's part (under mpirun).
#include "dist/mpi_module.h"

#include <gtest/gtest.h>

namespace sluice::dist {
namespace {

TEST(MpiModule, IsFoundRelativeToTheRunningProgram) {
  EXPECT_EQ(MpiModulePath("/opt/sluice/bin/sluice", nullptr),
            "/opt/sluice/bin/../lib/sluice/libsluice_mpi.so");
  EXPECT_EQ(MpiModulePath("/opt/sluice/bin/sluice", ""),
            "/opt/sluice/bin/../lib/sluice/libsluice_mpi.so");
}

TEST(MpiModule, EnvironmentOverrideWins) {
  EXPECT_EQ(MpiModulePath("/opt/sluice/bin/sluice", "/elsewhere/libsluice_mpi.so"),
            "/elsewhere/libsluice_mpi.so");
}

TEST(MpiModule, WithoutTheProgramsPathTheLoaderSearches) {
  EXPECT_EQ(MpiModulePath("", nullptr), "libsluice_mpi.so");
}

TEST(MpiModule, MissingModuleNamesItAndHowToGetIt) {
  Result<MpiModuleEntry> r = LoadMpiModule("/nonexistent/lib/sluice/libsluice_mpi.so");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  const std::string m = r.status().message();
  EXPECT_NE(m.find("/nonexistent/lib/sluice/libsluice_mpi.so could not be loaded: "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("SLUICE_MPI_MODULE"), std::string::npos) << m;
  EXPECT_NE(m.find("apt-get install libopenmpi3"), std::string::npos) << m;
}

TEST(MpiModule, LibraryWithoutTheEntryPointIsRefused) {
  Result<MpiModuleEntry> r = LoadMpiModule("libz.so.1");  // loads, but is no MPI module
  ASSERT_FALSE(r.ok());
  const std::string m = r.status().message();
  EXPECT_NE(m.find(kMpiModuleEntry), std::string::npos) << m;
  EXPECT_NE(m.find("not an MPI module of this version of sluice"), std::string::npos) << m;
}

}  // namespace
}  // namespace sluice::dist
