"""Rank and world size from the environment (torchrun, Slurm, Open MPI) and from
torch.distributed, as Dataset.shard() and sluice.torch use them."""
import pytest

import sluice
from sluice_fixtures import ID_FEATURES, id_records, ids_of, parse_id

ALL_VARS = ["RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE"]


@pytest.fixture
def env(monkeypatch):
    for var in ALL_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_no_environment_means_a_single_process(env):
    assert sluice.rank_and_world_size() == (0, 1)


@pytest.mark.parametrize("rank_var,world_var", [
    ("RANK", "WORLD_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
])
def test_each_launcher_is_detected(env, rank_var, world_var):
    env.setenv(rank_var, "2")
    env.setenv(world_var, "4")
    assert sluice.rank_and_world_size() == (2, 4)


def test_torchrun_variables_win_over_slurm_and_mpi(env):
    env.setenv("SLURM_PROCID", "5")
    env.setenv("SLURM_NTASKS", "8")
    env.setenv("OMPI_COMM_WORLD_RANK", "6")
    env.setenv("OMPI_COMM_WORLD_SIZE", "8")
    assert sluice.rank_and_world_size() == (5, 8)
    env.setenv("RANK", "1")
    env.setenv("WORLD_SIZE", "2")
    assert sluice.rank_and_world_size() == (1, 2)


def test_half_a_pair_is_ignored(env):
    env.setenv("RANK", "3")  # no WORLD_SIZE
    env.setenv("SLURM_PROCID", "1")
    env.setenv("SLURM_NTASKS", "2")
    assert sluice.rank_and_world_size() == (1, 2)


@pytest.mark.parametrize("rank,world", [("4", "4"), ("-1", "2"), ("one", "2"), ("0", "0")])
def test_invalid_values_are_refused(env, rank, world):
    env.setenv("RANK", rank)
    env.setenv("WORLD_SIZE", world)
    with pytest.raises(sluice.InvalidArgumentError, match="RANK="):
        sluice.rank_and_world_size()


def test_shard_without_arguments_uses_the_environment(env):
    base = sluice.from_records(id_records([30, 31])).shuffle(seed=4)
    got = []
    for r in range(3):
        env.setenv("SLURM_PROCID", str(r))
        env.setenv("SLURM_NTASKS", "3")
        ds = base.shard().map(parse_id, output=ID_FEATURES)
        assert "shard(rank=%d, world_size=3)" % r in repr(ds)
        got.append(ids_of(ds))
    explicit = [ids_of(base.shard(r, 3).map(parse_id, output=ID_FEATURES)) for r in range(3)]
    assert got == explicit
    env.setenv("SLURM_PROCID", "0")
    assert "shard(rank=0, world_size=2)" in repr(base.shard(world_size=2))


def test_torch_distributed_wins_when_initialised(env, tmp_path):
    import torch.distributed as dist

    env.setenv("RANK", "1")
    env.setenv("WORLD_SIZE", "2")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/rendezvous", rank=0,
                            world_size=1)
    try:
        assert sluice.rank_and_world_size() == (0, 1)
    finally:
        dist.destroy_process_group()
    assert sluice.rank_and_world_size() == (1, 2)
