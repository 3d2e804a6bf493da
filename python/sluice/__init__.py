"""sluice: a C++ engine that keeps deep-learning training fed with data.

    import sluice
    ds = (sluice.read("data/train")
            .shuffle(seed=0)
            .shard()                      # rank / world size from the environment
            .parse_example({"image/encoded": "bytes", "image/class/label": "int64"})
            .batch(256, drop_remainder=True)
            .prefetch(4))
    it = ds.iterator(epoch=0)
    batch = next(it)                      # dict of numpy arrays (zero-copy), Strings for bytes
    state = it.state()                    # small bytes; ds.iterator(state=state) continues here
    print(it.report())                    # the stall report

Batches, errors, Ctrl-C and the torch integration are described in docs/python.md.
"""

import atexit as _atexit
import os as _os

from . import _sluice
from ._sluice import (
    AlreadyExistsError,
    CancelledError,
    DataLossError,
    Error,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    IoError,
    Iterator,
    NotFoundError,
    OutOfRangeError,
    ResourceExhaustedError,
    RecordWriter,
    ShardWriter,
    Strings,
    UnimplementedError,
    __version__,
    make_example,
)
from . import text
from .dataset import INFINITE, UNKNOWN, Dataset, from_records, read, read_token_cache
from .distributed import rank_and_world_size
from .writers import write_records
from .table import Table, TableWriter, write_table
from . import vision

# Pipeline threads that run Python maps need the GIL, which they can no longer take once the
# interpreter is finalizing: stop every pipeline before that.
_atexit.register(_sluice._close_all_iterators)
# A forked child (e.g. a DataLoader worker) has none of the parent's pipeline threads: its
# copies of the parent's iterators are abandoned, never joined.
_os.register_at_fork(after_in_child=_sluice._abandon_iterators_after_fork)

__all__ = [
    "AlreadyExistsError", "CancelledError", "DataLossError", "Dataset", "Error",
    "FailedPreconditionError", "INFINITE", "InternalError", "InvalidArgumentError", "IoError",
    "Iterator", "NotFoundError", "OutOfRangeError", "RecordWriter", "ResourceExhaustedError", "ShardWriter",
    "Strings", "Table", "TableWriter", "UNKNOWN", "UnimplementedError", "from_records",
    "make_example", "rank_and_world_size", "read", "read_token_cache", "text", "vision",
    "write_records", "write_table",
]
