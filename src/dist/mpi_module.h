// The MPI transport as a module loaded at run time. libmpi with its dependencies (Open RTE,
// Open PAL, hwloc, libevent, libudev) cost every process that links it a few ms in the
// dynamic loader, which every `sluice` command would pay although only those launched by
// mpirun or srun use MPI. So `src/dist/mpi/` is built as the module libsluice_mpi.so, the
// one part of sluice linked to libmpi, and OpenMpiTransport (sluice/dist/mpi_transport.h)
// opens it with dlopen when a job needs MPI.
//
// Where the module is: $SLUICE_MPI_MODULE when set (a path), else at a fixed place relative
// to the running executable (SLUICE_MPI_MODULE_FROM_EXE, set by CMake: the build tree and an
// installed tree have the same layout, bin/sluice and lib/sluice/libsluice_mpi.so).
#pragma once

#include <memory>
#include <string>

#include "sluice/base/status.h"
#include "sluice/dist/transport.h"

namespace sluice::dist {

// The module's one entry point, looked up by this name: it initialises MPI and stores the
// transport (or the error) in *out. The name carries the interface's version, so that a
// module built from other sources is refused as not having it rather than called.
inline constexpr const char* kMpiModuleEntry = "sluice_mpi_open_transport_v1";
using MpiModuleEntry = void (*)(Result<std::unique_ptr<Transport>>* out);

// The module's file as described above; `executable` is the running program's path
// (/proc/self/exe), `override_path` $SLUICE_MPI_MODULE (null or empty: unset).
std::string MpiModulePath(const std::string& executable, const char* override_path);

// Opens the module at `path` (dlopen, RTLD_GLOBAL: see mpi_module.cc) and returns its entry.
// On failure: FailedPrecondition naming the file, what went wrong and how to get the module.
Result<MpiModuleEntry> LoadMpiModule(const std::string& path);

}  // namespace sluice::dist
