"""Which rank of how many this process is, for Dataset.shard() and sluice.torch."""

from __future__ import annotations

import os
import sys
from typing import Mapping, Optional, Tuple

from . import _sluice

# (rank variable, world size variable), in the order they are looked at.
ENV_VARIABLES = (
    ("RANK", "WORLD_SIZE"),                                  # torchrun, torch.distributed
    ("SLURM_PROCID", "SLURM_NTASKS"),                        # srun
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),        # Open MPI's mpirun
)


def rank_and_world_size(environ: Optional[Mapping[str, str]] = None) -> Tuple[int, int]:
    """(rank, world_size): from torch.distributed when it is initialised (torch is never
    imported for this), else from the first pair of ENV_VARIABLES that is set, else (0, 1).
    Raises InvalidArgumentError for values that are not a valid rank of a world."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    env = os.environ if environ is None else environ
    for rank_var, world_var in ENV_VARIABLES:
        if rank_var in env and world_var in env:
            return _parse(env, rank_var, world_var)
    return 0, 1


def _parse(env: Mapping[str, str], rank_var: str, world_var: str) -> Tuple[int, int]:
    try:
        rank, world = int(env[rank_var]), int(env[world_var])
    except ValueError:
        rank, world = -1, 0
    if world < 1 or not 0 <= rank < world:
        raise _sluice.InvalidArgumentError(
            f"{rank_var}={env[rank_var]!r} and {world_var}={env[world_var]!r} are not a rank "
            f"and a world size (need 0 <= rank < world size)")
    return rank, world
