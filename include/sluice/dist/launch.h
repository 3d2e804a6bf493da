// How this process was launched: under mpirun/srun (then the job's ranks talk over MPI) or
// alone (one rank, no MPI). Read from the environment the launchers set; pure, so tested
// with fake environments (docs/dist.md, "Launching").
#pragma once

#include <functional>
#include <string>

#include "sluice/base/status.h"

namespace sluice::dist {

enum class Launcher {
  kNone,    // a plain process: one rank, MPI is not initialised
  kMpirun,  // OpenMPI's mpirun (OMPI_COMM_WORLD_SIZE)
  kSrun,    // Slurm's srun with PMIx (PMIX_RANK under a job step)
};

// `getenv` returns a variable's value or nullptr. An srun step of several tasks without
// PMIx (srun --mpi=none or pmi2: Debian's OpenMPI cannot use them) is an error saying to use
// `srun --mpi=pmix`, rather than N processes each converting everything alone.
Result<Launcher> DetectLauncher(const std::function<const char*(const char*)>& getenv);
std::string_view LauncherName(Launcher launcher);

}  // namespace sluice::dist
