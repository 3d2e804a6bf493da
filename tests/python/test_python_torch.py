"""sluice.torch: batches as torch tensors (zero-copy), one rank's share of each epoch,
state_dict() / load_state_dict() exact resume, len(), and DataLoader(batch_size=None)."""
import pytest
import torch
import torch.utils.data

import sluice
import sluice.torch
from sluice_fixtures import ID_FEATURES, id_records, parse_id

RANK_VARS = ["RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
             "OMPI_COMM_WORLD_SIZE"]


@pytest.fixture(autouse=True)
def single_process(monkeypatch):
    for var in RANK_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def dataset(batch=6):
    """73 records; features id, vec and tag (the record's bytes)."""
    return (sluice.from_records(id_records([40, 33]))
            .shuffle(seed=8)
            .map(lambda e: dict(parse_id(e), tag=e["record"]),
                 output=dict(ID_FEATURES, tag="bytes"))
            .batch(batch)
            .prefetch(2))


def ids(batches):
    return [int(i) for b in batches for i in b["id"]]


def test_batches_are_torch_tensors_sharing_sluice_memory():
    loader = sluice.torch.TorchLoader(dataset())
    batch = next(iter(loader))
    assert isinstance(batch["id"], torch.Tensor) and batch["id"].dtype == torch.int64
    assert batch["vec"].shape == (6, 3) and batch["vec"].dtype == torch.float32
    assert isinstance(batch["tag"], sluice.Strings)  # byte strings pass through
    assert batch["tag"][0] == str(int(batch["id"][0])).encode()
    raw = next(iter(dataset()))  # the same first batch as numpy
    assert torch.equal(batch["vec"], torch.from_numpy(raw["vec"]))


def test_tensors_are_views_of_the_batch_buffer():
    loader = sluice.torch.TorchLoader(dataset())
    it = iter(loader)
    batch = next(it)
    owner = loader._last  # the sluice iterator of this pass
    assert owner is not None
    # The numpy array torch.from_numpy wrapped is gone, but its buffer lives on in the tensor.
    t = batch["vec"]
    expected = t.clone()
    del it, batch
    loader.set_epoch(5)  # closes the pass's iterator
    for _ in range(3):
        list(sluice.torch.TorchLoader(dataset()))
    assert torch.equal(t, expected)


def test_len_is_batches_per_rank_per_epoch():
    assert len(sluice.torch.TorchLoader(dataset())) == 13  # ceil(73 / 6)
    assert len(sluice.torch.TorchLoader(dataset(), rank=1, world_size=2)) == 6  # ceil(36 / 6)
    loader = sluice.torch.TorchLoader(dataset(), rank=0, world_size=3)
    assert len(list(loader)) == len(loader) == 4  # 24 samples


def test_full_passes_advance_the_epoch():
    loader = sluice.torch.TorchLoader(dataset())
    first, second = ids(loader), ids(loader)
    assert loader.epoch == 2
    assert sorted(first) == sorted(second) == list(range(73)) and first != second
    loader.set_epoch(0)
    assert ids(loader) == first


def test_state_dict_round_trip_resumes_exactly():
    loader = sluice.torch.TorchLoader(dataset())
    list(loader)  # epoch 0 done
    it = iter(loader)
    head = ids([next(it) for _ in range(4)])
    sd = loader.state_dict()
    assert sd["epoch"] == 1 and isinstance(sd["iterator"], bytes)
    tail = ids(it)

    resumed = sluice.torch.TorchLoader(dataset())
    resumed.load_state_dict(sd)
    assert resumed.state_dict() == sd
    assert ids(resumed) == tail
    assert resumed.epoch == 2
    assert sorted(head + tail) == list(range(73))
    assert ids(resumed) == ids(sluice.torch.TorchLoader(dataset(), epoch=2))


def test_state_dict_between_epochs_starts_the_next_epoch():
    loader = sluice.torch.TorchLoader(dataset())
    list(loader)
    sd = loader.state_dict()
    assert sd == {"epoch": 1, "iterator": None}
    other = sluice.torch.TorchLoader(dataset())
    other.load_state_dict(sd)
    assert ids(other) == ids(loader)


def test_ranks_from_the_environment_split_each_epoch(single_process):
    seen = []
    for rank in range(2):
        single_process.setenv("RANK", str(rank))
        single_process.setenv("WORLD_SIZE", "2")
        loader = sluice.torch.TorchLoader(dataset())
        assert (loader.rank, loader.world_size) == (rank, 2)
        assert "shard(rank=%d, world_size=2)" % rank in repr(loader.dataset)
        seen.append(ids(loader))
    assert len(seen[0]) == len(seen[1]) == 36
    assert not set(seen[0]) & set(seen[1])


def test_a_dataset_with_a_shard_stage_is_used_as_it_is(single_process):
    single_process.setenv("RANK", "1")
    single_process.setenv("WORLD_SIZE", "4")
    ds = sluice.from_records(id_records([40])).shard(0, 2).map(parse_id, output=ID_FEATURES)
    loader = sluice.torch.TorchLoader(ds.batch(5))
    assert loader.dataset is not None and len(loader) == 4
    assert ids(loader) == list(range(0, 40, 2))


def test_works_inside_a_torch_dataloader():
    loader = sluice.torch.IterableDataset(dataset())
    dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=0)
    got = list(dl)
    assert len(got) == len(dl) == 13
    assert isinstance(got[0]["vec"], torch.Tensor)
    assert ids(got) == ids(sluice.torch.TorchLoader(dataset()))


def test_worker_processes_are_refused():
    dl = torch.utils.data.DataLoader(sluice.torch.TorchLoader(dataset()), batch_size=None,
                                     num_workers=1)
    with pytest.raises(RuntimeError, match="num_workers=0"):
        next(iter(dl))


def test_pin_memory_without_cuda_warns_and_continues():
    if torch.cuda.is_available():
        pytest.skip("CUDA present: pinning works")
    with pytest.warns(UserWarning, match="pin_memory"):
        loader = sluice.torch.TorchLoader(dataset(), pin_memory=True)
    assert len(ids(loader)) == 73


def test_report_and_stats_of_the_latest_pass():
    loader = sluice.torch.TorchLoader(dataset())
    assert loader.report() == "" and loader.stats() is None
    list(loader)
    assert "trainer waited" in loader.report()
    assert loader.stats()["elements"] == 13


def test_non_datasets_are_refused():
    with pytest.raises(TypeError, match="sluice.Dataset"):
        sluice.torch.TorchLoader([1, 2, 3])
