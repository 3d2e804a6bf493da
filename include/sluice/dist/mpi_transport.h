// The Transport of a real job: MPI_COMM_WORLD of OpenMPI (launched by mpirun or srun
// --mpi=pmix). Lives in the separate library sluice_mpi (src/dist/mpi/), linked only into
// the programs that run distributed jobs (the `sluice` command), so that the core library
// and the Python module never load libmpi.
#pragma once

#include <memory>

#include "sluice/dist/transport.h"

namespace sluice::dist {

// Initialises MPI (MPI_THREAD_FUNNELED: only the calling thread talks MPI) and returns
// MPI_COMM_WORLD's transport; MPI is finalised when it is destroyed. Call once per process.
// Ranks come from the communicator, never from SLURM_PROCID (0 in every rank of an mpirun
// inside salloc).
Result<std::unique_ptr<Transport>> OpenMpiTransport();

}  // namespace sluice::dist
