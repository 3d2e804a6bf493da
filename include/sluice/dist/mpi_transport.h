// The Transport of a real job: MPI_COMM_WORLD of OpenMPI (launched by mpirun or srun
// --mpi=pmix). It lives in the module libsluice_mpi.so (src/dist/mpi/), the only part of
// sluice linked to libmpi, which OpenMpiTransport loads at run time (src/dist/mpi_module.h):
// no process loads libmpi unless it runs a job under MPI.
#pragma once

#include <memory>

#include "sluice/dist/transport.h"

namespace sluice::dist {

// Loads the MPI module (found beside the running program, or at $SLUICE_MPI_MODULE),
// initialises MPI (MPI_THREAD_FUNNELED: only the calling thread talks MPI) and returns
// MPI_COMM_WORLD's transport; MPI is finalised when it is destroyed. Call once per process.
// A module that cannot be loaded is a FailedPrecondition naming its file and how to get it.
// Ranks come from the communicator, never from SLURM_PROCID (0 in every rank of an mpirun
// inside salloc).
Result<std::unique_ptr<Transport>> OpenMpiTransport();

}  // namespace sluice::dist
