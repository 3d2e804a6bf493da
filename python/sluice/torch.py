"""sluice for PyTorch: batches as torch tensors, one rank's share, exact resume.

    loader = sluice.torch.TorchLoader(ds)        # ds: a sluice.Dataset ending in batch()
    for epoch in range(epochs):
        for batch in loader:                     # dict of torch tensors (zero-copy)
            ...
        # a completed pass moves the loader to the next epoch (or call set_epoch)
    ckpt["data"] = loader.state_dict()           # exact resume: load_state_dict(ckpt["data"])

It is a torch.utils.data.IterableDataset, so DataLoader(loader, batch_size=None,
num_workers=0) works too (sluice runs its own threads; worker processes would each read
everything).
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, Optional

import torch
import torch.utils.data

from . import _sluice
from .dataset import Dataset
from .distributed import rank_and_world_size


class TorchLoader(torch.utils.data.IterableDataset):
    """Iterates a sluice Dataset as dicts of torch tensors.

    rank / world_size: default torch.distributed when initialised, else RANK/WORLD_SIZE,
    SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE. A dataset without a
    shard stage gets one for this rank (after read and shuffle); one that has a shard stage
    is used as it is.
    pin_memory: copy batches into page-locked memory (only with CUDA; ignored with a warning
    otherwise, like DataLoader).
    epoch: the first epoch. Other keyword arguments are iterator options (threads, ...).
    Strings features (byte strings) are passed through as they are.
    """

    def __init__(self, dataset: Dataset, *, pin_memory: bool = False,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 epoch: int = 0, **iterator_options: Any):
        super().__init__()
        if not isinstance(dataset, Dataset):
            raise TypeError(f"TorchLoader needs a sluice.Dataset, got {type(dataset).__name__}")
        if rank is None or world_size is None:
            env_rank, env_world = rank_and_world_size()
            rank = env_rank if rank is None else rank
            world_size = env_world if world_size is None else world_size
        if world_size > 1:
            dataset = dataset.with_shard(rank, world_size)
        if pin_memory and not torch.cuda.is_available():
            warnings.warn("sluice.torch: pin_memory=True but CUDA is not available; "
                          "batches stay in pageable memory", stacklevel=2)
            pin_memory = False
        self.dataset = dataset
        self.rank, self.world_size = rank, world_size
        self.pin_memory = pin_memory
        self._options = iterator_options
        self._epoch = epoch
        self._pending: Optional[bytes] = None  # a loaded state, used by the next __iter__
        self._it: Optional[_sluice.Iterator] = None  # the current pass (None once complete)
        self._last: Optional[_sluice.Iterator] = None  # the latest pass (for report, stats)

    @property
    def epoch(self) -> int:
        """The epoch the current (or next) pass iterates."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Makes the next pass iterate `epoch` (from its start)."""
        self._close()
        self._epoch, self._pending = epoch, None

    def __len__(self) -> int:
        """Batches per rank per epoch."""
        return len(self.dataset)

    def __iter__(self):
        if torch.utils.data.get_worker_info() is not None:
            raise RuntimeError(
                "sluice.torch: use DataLoader(..., num_workers=0): sluice runs its own "
                "threads, and each worker process would read the whole dataset")
        self._close()
        state, self._pending = self._pending, None
        it = self.dataset.iterator(epoch=self._epoch, state=state, **self._options)
        self._it = self._last = it
        return self._generate(it)

    def _generate(self, it: _sluice.Iterator):
        for batch in it:
            yield self._to_torch(batch)
        if self._it is it:  # a full pass: the next one is the next epoch
            self._epoch += 1
            self._it = None

    def _to_torch(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        out = {}
        for name, value in batch.items():
            if isinstance(value, _sluice.Strings) or isinstance(value, bytes):
                out[name] = value
                continue
            t = torch.from_numpy(value)
            out[name] = t.pin_memory() if self.pin_memory else t
        return out

    def state_dict(self) -> Dict[str, Any]:
        """Where the loader is: {"epoch": int, "iterator": bytes or None}. Small; exact."""
        if self._it is not None and not self._it.closed:
            state = self._it.state()
        else:
            state = self._pending
        return {"epoch": self._epoch, "iterator": state}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """The next pass continues exactly where state_dict() was taken (also with another
        world size, except for buffer shuffle)."""
        self._close()
        self._epoch = int(state_dict["epoch"])
        self._pending = state_dict.get("iterator")

    def report(self) -> str:
        """The stall report of the latest pass ("" before the first)."""
        return self._last.report() if self._last is not None and not self._last.closed else ""

    def stats(self) -> Optional[dict]:
        """The pipeline stats of the latest pass (None before the first)."""
        return self._last.stats() if self._last is not None and not self._last.closed else None

    def _close(self) -> None:
        if self._last is not None:
            self._last.close()
        self._it = self._last = None


#: The same class under torch's name: DataLoader(IterableDataset(ds), batch_size=None).
IterableDataset = TorchLoader
