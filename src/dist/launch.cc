#include "sluice/dist/launch.h"

#include <cstdlib>

namespace sluice::dist {

Result<Launcher> DetectLauncher(const std::function<const char*(const char*)>& getenv) {
  auto set = [&](const char* name) {
    const char* v = getenv(name);
    return v != nullptr && *v != '\0';
  };
  if (set("OMPI_COMM_WORLD_SIZE")) return Launcher::kMpirun;
  // srun --mpi=pmix sets PMIX_RANK in every task (no OMPI_COMM_WORLD_*); so does mpirun.
  if (set("PMIX_RANK")) return set("SLURM_STEP_ID") ? Launcher::kSrun : Launcher::kMpirun;
  if (set("SLURM_STEP_ID") && set("SLURM_NTASKS") && std::atoi(getenv("SLURM_NTASKS")) > 1) {
    return FailedPrecondition(
        "launched by srun with " + std::string(getenv("SLURM_NTASKS")) +
        " tasks but without PMIx: run `srun --mpi=pmix ...` (or set MpiDefault=pmix in "
        "slurm.conf) so that the tasks form one MPI job");
  }
  return Launcher::kNone;
}

std::string_view LauncherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kMpirun:
      return "mpirun";
    case Launcher::kSrun:
      return "srun";
    case Launcher::kNone:
      break;
  }
  return "none";
}

}  // namespace sluice::dist
