#include "dist/mpi_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

#include "base/shared_library.h"
#include "sluice/dist/mpi_transport.h"

#ifndef SLUICE_MPI_MODULE_FROM_EXE
#define SLUICE_MPI_MODULE_FROM_EXE "../lib/sluice/libsluice_mpi.so"
#endif

namespace sluice::dist {
namespace {

constexpr const char* kModuleHint =
    "the MPI module is built with the `sluice` command, into lib/sluice/libsluice_mpi.so "
    "beside its bin/ (`cmake --install` installs both), or SLUICE_MPI_MODULE names it; it "
    "needs OpenMPI (Debian: apt-get install libopenmpi3)";

// The running program's path; empty if /proc is not there.
std::string ExecutablePath() {
  std::string path(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size());
  if (n <= 0 || static_cast<size_t>(n) >= path.size()) return "";
  path.resize(static_cast<size_t>(n));
  return path;
}

}  // namespace

std::string MpiModulePath(const std::string& executable, const char* override_path) {
  if (override_path != nullptr && override_path[0] != '\0') return override_path;
  const size_t slash = executable.rfind('/');
  // Without the program's directory, a bare name: dlopen then searches the library path.
  if (slash == std::string::npos) return "libsluice_mpi.so";
  return executable.substr(0, slash + 1) + SLUICE_MPI_MODULE_FROM_EXE;
}

Result<MpiModuleEntry> LoadMpiModule(const std::string& path) {
  // RTLD_GLOBAL: Open MPI loads its own components (mca_pml_ob1.so, ...) with dlopen later,
  // and some of them use libmpi's symbols without listing libmpi as a dependency, so libmpi
  // must be in the global scope (mpi4py loads it the same way).
  SLUICE_ASSIGN_OR_RETURN(SharedLibrary module,
                          SharedLibrary::Open(path, RTLD_NOW | RTLD_GLOBAL, kModuleHint));
  MpiModuleEntry entry = nullptr;
  Status missing;
  module.Resolve(&entry, kMpiModuleEntry, "not an MPI module of this version of sluice", &missing);
  if (!missing.ok()) return missing;
  return entry;
}

Result<std::unique_ptr<Transport>> OpenMpiTransport() {
  SLUICE_ASSIGN_OR_RETURN(
      MpiModuleEntry entry,
      LoadMpiModule(MpiModulePath(ExecutablePath(), std::getenv("SLUICE_MPI_MODULE"))));
  Result<std::unique_ptr<Transport>> transport = Internal("the MPI module returned nothing");
  entry(&transport);
  return transport;
}

}  // namespace sluice::dist
