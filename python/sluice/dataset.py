"""sluice.Dataset: an immutable description of an input pipeline.

Each method returns a new Dataset with one more stage (the stages and arguments of the C++
pipeline, docs/pipeline.md); nothing runs until `iterator()` (or `for batch in ds`). An
invalid stage raises at the call. A Dataset also remembers its recipe (the stages and their
arguments), which is how `cardinality()` is computed and how `sluice.torch` inserts a
`shard` stage for the rank it runs on.
"""

from __future__ import annotations

import inspect
import math
import os
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import _sluice
from . import table as _table
from .distributed import rank_and_world_size

#: cardinality() when the number of elements depends on the data (filter, bucket_by_length).
UNKNOWN = -1
#: cardinality() of a dataset that repeats forever.
INFINITE = -2

# A stage of the recipe: (method name, keyword arguments).
_Stage = tuple

# The defaults of read() and shuffle(): the C++ options' own (ReadOptions, ShuffleOptions).
_READ = _sluice.DEFAULTS["read"]
_SHUFFLE = _sluice.DEFAULTS["shuffle"]


class Dataset:
    """An immutable pipeline description. Build one with `sluice.read(...)` or
    `sluice.from_records(...)`, chain stages, then iterate."""

    __slots__ = ("_cpp", "_recipe", "_options")

    def __init__(self, cpp: Any, recipe: tuple, options: Optional[dict] = None):
        self._cpp = cpp
        self._recipe = recipe
        self._options = dict(options or {})

    # ---- stages (same names and arguments as the C++ Dataset) ----

    def shuffle(self, seed: int = _SHUFFLE["seed"], mode: str = _SHUFFLE["mode"], *,
                block_shards: int = _SHUFFLE["block_shards"],
                buffer_size: int = _SHUFFLE["buffer_size"],
                window_bytes: int = _SHUFFLE["window_bytes"],
                window_chunks: int = _SHUFFLE["window_chunks"],
                lanes: int = _SHUFFLE["lanes"]) -> "Dataset":
        """Sets the epoch's sample order. "chunks" (the default): chunks (~1 MiB runs of
        records that decode together) are permuted and records are permuted within windows of
        chunks, each chunk fetched and decoded once per window; the window fills half the
        iterator's memory budget unless `window_bytes` or `window_chunks` say otherwise (a
        dataset that fits is shuffled as a whole); `lanes` (default: from the dataset's size)
        lets W ranks read disjoint chunks when W divides it (docs/order.md). "global": a full
        per-record permutation (one read and, for compressed shards, one frame decode per
        record: uncompressed local data). "block": shards permuted, records permuted within
        windows of `block_shards` shards. "buffer": a tf.data-style shuffle buffer of
        `buffer_size` elements. Directly after read; the order is a pure function of (data,
        seed, epoch, window) and independent of threads and world size."""
        _check_int("shuffle", "seed", seed, 0, 2**64 - 1)
        _check_int("shuffle", "block_shards", block_shards, 1, 2**32 - 1)
        _check_int("shuffle", "buffer_size", buffer_size, 0, _MAX_SIZE)
        _check_int("shuffle", "window_bytes", window_bytes, 0, 2**64 - 1)
        _check_int("shuffle", "window_chunks", window_chunks, 0, 2**32 - 1)
        _check_int("shuffle", "lanes", lanes, 0, 2**32 - 1)
        return self._then("shuffle", seed=seed, mode=mode, block_shards=block_shards,
                          buffer_size=buffer_size, window_bytes=window_bytes,
                          window_chunks=window_chunks, lanes=lanes)

    def shard(self, rank: Optional[int] = None, world_size: Optional[int] = None, *,
              remainder: str = "drop") -> "Dataset":
        """This rank's slice of every epoch. rank / world_size default to the environment:
        torch.distributed when initialised, else RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS,
        OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, else (0, 1). remainder: "drop" (default;
        every rank yields floor(N / W) samples), "pad" (ceil, repeating the epoch's first
        samples) or "exact" (every sample exactly once across ranks; the first N % W ranks
        yield one more: evaluation, docs/order.md "Exactly once")."""
        if rank is None or world_size is None:
            env_rank, env_world = rank_and_world_size()
            rank = env_rank if rank is None else rank
            world_size = env_world if world_size is None else world_size
        return self._then("shard", rank=rank, world_size=world_size, remainder=remainder)

    def parse_example(self, features: Mapping[str, Any], *, on_error: Optional[str] = None,
                      parallelism: int = -1) -> "Dataset":
        """Parses tf.train.Example records into one tensor per feature. A spec is a dtype
        ("int64", "float32", "bytes", "uint8"), optionally with a shape ("float32[3]",
        "int64[-1]" for any count), or a tuple (dtype, shape[, optional])."""
        return self._then("parse_example", features=dict(features), on_error=on_error,
                          parallelism=parallelism)

    def map(self, fn: Union[Callable, str], *, name: str = "", parallelism: int = -1,
            ordered: bool = True, output: Optional[Mapping[str, Any]] = None,
            on_error: Optional[str] = None, with_seed: bool = False,
            chunk_elements: int = 32) -> "Dataset":
        """Applies `fn` to every element. A Python callable is the slow path: it runs holding
        the GIL, gets the element as a dict (numpy arrays, bytes for scalar strings, Strings)
        and returns a dict with every feature of `output` (default: the input's features;
        specs as in parse_example). with_seed=True calls fn(element, seed) with the sample's
        reproducible 64-bit seed. A string names a built-in C++ function ("identity")."""
        return self._then("map", fn=fn, name=name, parallelism=parallelism, ordered=ordered,
                          output=None if output is None else dict(output), on_error=on_error,
                          with_seed=with_seed, chunk_elements=chunk_elements)

    def decode_image(self, input: str, *ops: Any, layout: str = "NCHW", dtype: str = "float32",
                     output: str = "image", keep_input: bool = False, parallelism: int = -1,
                     on_error: Optional[str] = None, dct_scaling: bool = True,
                     into_batch: bool = True) -> "Dataset":
        """Decodes the JPEG/PNG bytes of feature `input` and applies `ops` (sluice.vision:
        RandomResizedCrop, Resize, CenterCrop, RandomHorizontalFlip, Normalize) in C++, on the
        pipeline's threads without the GIL. Writes feature `output`: dtype "uint8", "float16"
        or "float32", layout "NCHW" (3 x H x W) or "NHWC"; it replaces `input` unless
        keep_input. The last size-changing op must fix the size (a crop, or Resize((h, w))).
        Bad images follow on_error (default: the iterator's), naming shard and record.
        Under a batch each image is decoded straight into its slot of the batch buffer
        (into_batch=False: into its own array, which batch then copies; same results)."""
        specs = []
        for op in ops:
            if not hasattr(op, "spec"):
                raise TypeError(f"decode_image: {op!r} is not a sluice.vision op")
            specs.append(op.spec())
        return self._then("decode_image", input=input, ops=specs, layout=layout, dtype=dtype,
                          output=output, keep_input=keep_input, parallelism=parallelism,
                          on_error=on_error, dct_scaling=dct_scaling, into_batch=into_batch)

    def filter(self, predicate: Callable, *, name: str = "",
               on_error: Optional[str] = None) -> "Dataset":
        """Keeps the elements for which predicate(element) is true (a Python callable)."""
        return self._then("filter", predicate=predicate, name=name, on_error=on_error)

    def batch(self, batch_size: int, drop_remainder: bool = False) -> "Dataset":
        """Stacks `batch_size` elements (all of the same shape) into one array per feature.
        A batch_size beyond the data gives one batch of everything (none with
        drop_remainder), as in tf.data."""
        _check_int("batch", "batch_size", batch_size, 1, _MAX_SIZE)
        return self._then("batch", batch_size=batch_size, drop_remainder=drop_remainder)

    def padded_batch(self, batch_size: int, drop_remainder: bool = False, *,
                     pad_to_multiple_of: int = 1,
                     pad_values: Optional[Mapping[str, float]] = None,
                     masks: bool = True,
                     lengths: Optional[Mapping[str, int]] = None,
                     padding_side: str = "right") -> "Dataset":
        """Batches elements of different shapes, padding each feature to the longest in the
        batch (rounded up to pad_to_multiple_of) and adding "<name>_mask" features.
        lengths: fixed first-dimension lengths per feature (static shapes; a longer element
        raises InvalidArgumentError naming its record). padding_side: "right" (data first)
        or "left" (data ends at the last position; the first dimension only)."""
        _check_int("padded_batch", "batch_size", batch_size, 1, _MAX_SIZE)
        return self._then("padded_batch", batch_size=batch_size, drop_remainder=drop_remainder,
                          pad_to_multiple_of=pad_to_multiple_of,
                          pad_values=dict(pad_values or {}), masks=masks,
                          lengths=dict(lengths or {}), padding_side=padding_side)

    def bucket_by_length(self, length_feature: str, boundaries: Sequence[int],
                         batch_sizes: Sequence[int], *, drop_remainder: bool = False,
                         pad_to_multiple_of: int = 1,
                         pad_values: Optional[Mapping[str, float]] = None,
                         masks: bool = True,
                         lengths: Optional[Mapping[str, int]] = None,
                         padding_side: str = "right") -> "Dataset":
        """Groups elements by the length of `length_feature` into buckets
        (boundaries[i-1] <= length < boundaries[i]) and emits a padded batch of
        batch_sizes[i] when bucket i is full (padding options as padded_batch)."""
        return self._then("bucket_by_length", length_feature=length_feature,
                          boundaries=list(boundaries), batch_sizes=list(batch_sizes),
                          drop_remainder=drop_remainder, pad_to_multiple_of=pad_to_multiple_of,
                          pad_values=dict(pad_values or {}), masks=masks,
                          lengths=dict(lengths or {}), padding_side=padding_side)

    def tokenize(self, feature: str, model: Any, *, output: str = "tokens",
                 on_error: Optional[str] = None, replace_invalid_utf8: bool = False,
                 parallelism: int = -1) -> "Dataset":
        """Adds `output` (int32[-1]): the SentencePiece ids of the string feature `feature`.
        `model`: a path or a sluice.text.SentencePiece. Invalid UTF-8 is a record error under
        on_error (raise names the shard and record; skip / quarantine drop it), unless
        replace_invalid_utf8 (bad bytes become U+FFFD, as SentencePiece does)."""
        from .text import as_model
        return self._then("tokenize", feature=feature, model=as_model(model)._cpp, output=output,
                          on_error=on_error, replace_invalid_utf8=replace_invalid_utf8,
                          parallelism=parallelism)

    def pack(self, seq_len: int, eos_id: int = -1, *, feature: str = "tokens", pad_id: int = 0,
             continue_positions: bool = False, drop_remainder: bool = False) -> "Dataset":
        """Concatenates documents (the int feature `feature`, each followed by eos_id unless
        -1) into sequences of exactly seq_len: elements {tokens, segment_ids, position_ids},
        int32[seq_len]. Segment ids number the documents of a row from 1 (0 = padding, only in
        the last row); positions restart at each document. A document that does not fit
        continues in the next row. Saved states hold record positions, never tokens."""
        return self._then("pack", seq_len=seq_len, eos_id=eos_id, feature=feature,
                          pad_id=pad_id, continue_positions=continue_positions,
                          drop_remainder=drop_remainder)

    def prefetch(self, buffer_size: int = -1) -> "Dataset":
        """Computes up to `buffer_size` elements ahead in the background (-1: autotuned)."""
        return self._then("prefetch", buffer_size=buffer_size)

    def repeat(self, epochs: int = -1) -> "Dataset":
        """Runs the input `epochs` times (-1: forever), each epoch in its own order."""
        return self._then("repeat", epochs=epochs)

    def take(self, count: int) -> "Dataset":
        return self._then("take", count=count)

    def skip(self, count: int) -> "Dataset":
        return self._then("skip", count=count)

    # ---- running ----

    def with_options(self, **options: Any) -> "Dataset":
        """Default options of the iterators made from this dataset: threads (0 = one per
        core), memory_budget (bytes, default 1 GiB), autotune (True), on_error ("raise" |
        "skip" | "quarantine"), quarantine_path."""
        merged = dict(self._options)
        merged.update(options)
        _check_options(merged)
        return Dataset(self._cpp, self._recipe, merged)

    def iterator(self, epoch: int = 0, state: Optional[bytes] = None,
                 **options: Any) -> "_sluice.Iterator":
        """Starts the pipeline at `epoch`, or where `state` (from Iterator.state()) was: the
        state knows its epoch and wins over `epoch`. Options as in with_options()."""
        merged = dict(self._options)
        merged.update(options)
        _check_options(merged)
        return self._cpp.make_iterator(epoch=epoch, state=state, **merged)

    def __iter__(self):
        return self.iterator()

    # ---- what it is ----

    @property
    def schema(self) -> dict:
        """{feature name: "dtype[shape]"}; -1 marks a dimension that varies."""
        return self._cpp.schema

    @property
    def shard_records(self) -> list:
        """Records per shard of the data read."""
        return self._cpp.shard_records

    @property
    def num_chunks(self) -> int:
        """Chunks of the data read (runs of records decoded together: docs/order.md)."""
        return self._cpp.num_chunks

    @property
    def sharded(self) -> bool:
        return any(stage == "shard" for stage, _ in self._recipe)

    def cardinality(self) -> int:
        """Elements per iteration (per rank when sharded), UNKNOWN (-1) when it depends on
        the data (filter, bucket_by_length), INFINITE (-2) for repeat() forever."""
        n = sum(self.shard_records)
        for stage, kw in self._recipe[1:]:
            n = _cardinality_after(stage, kw, n)
            if n == UNKNOWN:
                return UNKNOWN
        return n

    def __len__(self) -> int:
        n = self.cardinality()
        if n < 0:
            raise TypeError("the length of this dataset is " +
                            ("unknown" if n == UNKNOWN else "infinite"))
        return n

    def __repr__(self) -> str:
        """sluice.Dataset(from_records(2 shards) -> shuffle(seed=3) -> batch(batch_size=8))"""
        parts = []
        for stage, kw in self._recipe:
            if stage == "from_records":
                parts.append(f"from_records({len(kw['shards'])} shards)")
                continue
            method = getattr(Dataset, stage, None) or globals().get(stage)
            if method is None:  # a source adapter: no user-facing method
                continue
            params = inspect.signature(method).parameters
            args = ", ".join(f"{k}={_short(v)}" for k, v in kw.items()
                             if k not in params or params[k].default is not v and
                             params[k].default != v)
            parts.append(f"{stage}({args})")
        return "sluice.Dataset(" + " -> ".join(parts) + ")"

    # ---- recipe ----

    def _then(self, stage: str, **kwargs: Any) -> "Dataset":
        if stage in ("shuffle", "shard") and self._recipe[-1][0] in _SOURCE_ADAPTERS:
            # Order stages belong to the source: put them before its adapter.
            recipe = self._recipe[:-1] + ((stage, kwargs),) + self._recipe[-1:]
            return _replay(recipe, self._options)
        cpp = getattr(self._cpp, stage)(**kwargs)
        return Dataset(cpp, self._recipe + ((stage, kwargs),), self._options)

    def with_shard(self, rank: int, world_size: int, remainder: str = "drop") -> "Dataset":
        """This dataset with a shard stage inserted where it belongs (after read and shuffle).
        Used by sluice.torch for pipelines built without one; a dataset that has a shard
        stage is returned unchanged."""
        if self.sharded:
            return self
        at = 1
        if len(self._recipe) > 1 and self._recipe[1][0] == "shuffle":
            at = 2
        recipe = (self._recipe[:at] +
                  (("shard", dict(rank=rank, world_size=world_size, remainder=remainder)),) +
                  self._recipe[at:])
        return _replay(recipe, self._options)


def read(paths: Union[str, Iterable[str]], *, verify_crc: bool = _READ["verify_crc"],
         parallelism: int = _READ["parallelism"], chunk_records: int = _READ["chunk_records"],
         on_error: Optional[str] = None, map_uncompressed: bool = _READ["map_uncompressed"],
         version: Optional[int] = None, timestamp: Any = None, cache: Optional[bool] = None,
         cache_dir: Optional[Union[str, os.PathLike]] = None,
         cache_bytes: Optional[Union[int, str]] = None, chunk_bytes: int = _READ["chunk_bytes"],
         keep_decoded_chunks: bool = _READ["keep_decoded_chunks"]) -> Dataset:
    """Reads shards: a directory holding dataset.json, a glob, a shard file, a table
    (docs/table.md: its directory, or "DIR@v12"), or a list of them (read in the order
    given). parallelism: read tasks in flight (0 = autotuned). chunk_records: records per
    read task (0 = 1024, fewer for records over 4 KiB: at most 4 MiB per task, at least 64).
    on_error: the read stage's policy (default: the iterator's). Unless it is "raise", a
    damaged shard or index does not fail here: the iterator's policy decides when it starts
    (raise fails there; skip / quarantine read the shard's intact records). map_uncompressed:
    index an uncompressed shard that has no .idx through a memory map rather than positional
    reads (a shard truncated meanwhile then kills the process with SIGBUS). version /
    timestamp (an int of ms, a datetime or an ISO string): the version of the tables read;
    by default the latest at this call, fixed for the Dataset's life.

    The node-local cache (docs/cache.md) keeps the chunks read in cache_dir (default
    $XDG_CACHE_HOME/sluice or ~/.cache/sluice), shared by the machine's processes, up to
    cache_bytes (an int or a size such as "200GB"; default: the directory's capacity, or half
    its free disk). It is on by default for remote paths (s3://, hdfs://) and for local ones
    when cache_dir is given; cache=False turns it off, cache=True on.

    chunk_bytes: decoded bytes per chunk, the unit the default shuffle permutes, fetches and
    decodes (docs/order.md; a zstd frame larger than it is one chunk).

    keep_decoded_chunks: when all of the dataset's decoded chunks fit in an iterator's
    decoded-chunk cache (half its memory budget), they are kept when the iterator ends and
    the next iterator of this dataset (the next epoch, a restore, a shuffle() or shard() of
    it) starts with them: a compressed dataset that fits in memory is decoded once, not once
    per epoch (docs/pipeline.md, "Decoded chunks kept between epochs"). Between iterators
    they are held by the dataset, outside any memory budget; False drops them."""
    paths = [str(paths)] if isinstance(paths, (str, os.PathLike)) else [str(p) for p in paths]
    pinned = [_table.resolve_read(p, version, timestamp) for p in paths]
    if (version is not None or timestamp is not None) and all(p is None for p in pinned):
        raise _sluice.InvalidArgumentError(
            "read: a table version or timestamp was given, but no path is a table")
    paths = [p if t is None else t for p, t in zip(paths, pinned)]
    cache_dir = None if cache_dir is None else str(cache_dir)
    return _source("read", paths=paths, verify_crc=verify_crc, parallelism=parallelism,
                   chunk_records=chunk_records, on_error=on_error,
                   map_uncompressed=map_uncompressed, cache=cache, cache_dir=cache_dir,
                   cache_bytes=cache_bytes, chunk_bytes=chunk_bytes,
                   keep_decoded_chunks=keep_decoded_chunks)


def from_records(records: Sequence[Any], *, chunk_bytes: int = _READ["chunk_bytes"]) -> Dataset:
    """Records held in memory: a list of bytes (one shard) or a list of lists (shards).
    `chunk_bytes`: records of a shard form chunks of up to this many bytes, as shard files
    do (the unit of shuffle(mode="chunks"); small values make small datasets window-shuffled
    like large ones)."""
    records = list(records)
    if records and not isinstance(records[0], (bytes, bytearray, memoryview, str)):
        shards = [[bytes(r) for r in shard] for shard in records]
    else:
        shards = [[bytes(r, "utf-8") if isinstance(r, str) else bytes(r) for r in records]]
    return _source("from_records", shards=shards, chunk_bytes=chunk_bytes)


def read_token_cache(prefix: Union[str, os.PathLike], *, output: str = "tokens") -> Dataset:
    """A token cache (<prefix>.bin + <prefix>.idx, docs/text-format.md) as a dataset: one
    element {output: int32[n]} per document. shuffle() and shard() apply to the documents
    (global order, exact resume) as for shards."""
    prefix = str(prefix)
    width = _sluice._token_cache_width(prefix)
    return _source("read_token_cache", prefix=prefix)._then("decode_token_cache", width=width,
                                                            output=output)


# Stages that turn a source's records into elements and stay right after it (and after its
# shuffle / shard stages).
_SOURCE_ADAPTERS = ("decode_token_cache",)


def _source(stage: str, **kwargs: Any) -> Dataset:
    cpp = getattr(_sluice._Dataset, stage)(**kwargs)
    return Dataset(cpp, ((stage, kwargs),))


def _replay(recipe: tuple, options: dict) -> Dataset:
    ds = _source(recipe[0][0], **recipe[0][1])
    for stage, kw in recipe[1:]:
        ds = ds._then(stage, **kw)
    return Dataset(ds._cpp, ds._recipe, options)


_OPTIONS = {"threads", "memory_budget", "autotune", "on_error", "quarantine_path"}
# The most elements a size argument (batch_size, buffer_size) may name.
_MAX_SIZE = 2**63 - 1
# PipelineOptions: threads at most kMaxPipelineThreads; a memory budget of at least a byte.
_OPTION_RANGES = {"threads": (0, 1024), "memory_budget": (1, 2**64 - 1)}


def _check_int(stage: str, name: str, value: Any, lo: int, hi: int) -> None:
    """An InvalidArgumentError naming the stage when `value` is not an integer in [lo, hi]
    (rather than pybind11's TypeError, or a C++ failure on an absurd value)."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        bound = "2**63-1" if hi == _MAX_SIZE else str(hi)
        raise _sluice.InvalidArgumentError(
            f"{stage}: {name} must be an integer in [{lo}, {bound}], got {value!r}")


def _check_options(options: dict) -> None:
    unknown = set(options) - _OPTIONS
    if unknown:
        raise _sluice.InvalidArgumentError(
            f"unknown iterator option(s) {sorted(unknown)}; known: {sorted(_OPTIONS)}")
    for name, (lo, hi) in _OPTION_RANGES.items():
        if name in options:
            _check_int("iterator", name, options[name], lo, hi)


def _cardinality_after(stage: str, kw: dict, n: int) -> int:
    if stage in ("filter", "bucket_by_length", "pack"):
        return UNKNOWN
    if stage == "repeat":
        if n == INFINITE or n == 0:
            return n
        return INFINITE if kw["epochs"] < 0 else n * kw["epochs"]
    if n == INFINITE:
        return kw["count"] if stage == "take" else n
    if stage == "shard":
        w = kw["world_size"]
        if kw["remainder"] == "exact":
            return max(0, n - kw["rank"] + w - 1) // w
        return n // w if kw["remainder"] == "drop" else math.ceil(n / w)
    if stage in ("batch", "padded_batch"):
        b = kw["batch_size"]
        return n // b if kw["drop_remainder"] else math.ceil(n / b)
    if stage == "take":
        return min(n, kw["count"])
    if stage == "skip":
        return max(0, n - kw["count"])
    return n  # shuffle, parse_example, map, prefetch: one element out per element in


def _short(v: Any) -> str:
    if callable(v):
        return getattr(v, "__name__", type(v).__name__)
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."
