"""Writing a sluice table from a Dask collection: one task per partition, one commit
(docs/dist.md, "From Dask").

    import dask.bag as db
    import sluice.dask
    bag = db.read_text("crawl/*.jsonl").map(json.loads).map(lambda d: {"text": d["text"]})
    with distributed.Client(...):
        sluice.dask.to_table(bag, "s3://bucket/corpus", txn=("crawl-ingest", 7))

Each partition's task writes its records as shards into the table's directory (names no
other task, retry or job uses) and returns their descriptions; the client commits all of
them once, after every partition succeeded. Nothing is visible to readers before that
commit; shards of failed or retried attempts stay unreferenced until `Table.vacuum`.

Records are dicts of features (serialized as tf.train.Example by `sluice.make_example`;
their feature schema is checked across partitions and becomes the table's schema) or
serialized records (bytes, written as they are). Like delta-rs's `write_deltalake` and
dask-deltatable's `to_deltalake(path, ddf)`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import uuid
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from . import _sluice
from .features import RecordChecker, Schema, check_schema, conflict_message, merge_schema
from .table import DEFAULT_TARGET_FILE_SIZE, TxnId, _features, _partition


class PartitionError(_sluice.Error):
    """A partition could not be written (its task raised, or its input failed). `partition`
    is its index; the message names it and the cause. Nothing was committed."""

    def __init__(self, partition: int, message: str):
        super().__init__(message)
        self.partition = partition

    def __reduce__(self):  # crosses process boundaries (dask workers -> client)
        return (PartitionError, (self.partition, self.args[0]))


class WriteResult(NamedTuple):
    version: int        # the version committed (for a duplicate txn or no data: the current one)
    records: int        # records committed
    files: int          # shards committed
    partitions: int     # partitions of the collection
    duplicate: bool     # the txn was committed before: nothing was written or committed


@dataclasses.dataclass(frozen=True)
class _Options:
    root: str
    partition: Optional[Dict[str, Any]]
    codec: str
    target_file_size: int
    features: Optional[Schema]  # records must have exactly these (None: inferred)
    columns: Tuple[str, ...]    # partition columns whose values come from each record
    job: str                    # names the shards of this call: part-<job>-<partition>-<uuid>
    partitions: int             # of the collection (for messages)


@dataclasses.dataclass
class _Written:
    """What one partition's task hands to the client (picklable: _DataFile pickles)."""
    partition: int
    files: List[Any]
    records: int
    kind: Optional[str]       # "dicts", "bytes", or None for an empty partition
    schema: Optional[Schema]  # of the dicts


def to_table(collection: Any, path: Union[str, os.PathLike], *, mode: str = "append",
             predicate: Optional[str] = None, features: Optional[Mapping[str, Any]] = None,
             partition: Optional[Mapping[str, Any]] = None,
             partition_by: Optional[Sequence[str]] = None, codec: str = "zstd",
             target_file_size: int = DEFAULT_TARGET_FILE_SIZE, txn: Optional[TxnId] = None,
             name: Optional[str] = None, description: Optional[str] = None,
             configuration: Optional[Mapping[str, str]] = None,
             **compute_kwargs: Any) -> WriteResult:
    """Writes a dask.bag (of feature dicts or serialized records), a dask.dataframe (its rows,
    as dicts) or a list of dask.delayed partitions into the table at PATH as ONE commit.

    mode "append" or "overwrite" (replaces the files matching `predicate`, all by default);
    an absent table is created by the commit, with the feature schema `features` (default:
    the one the records have) and partitioned by `partition_by` (default: the keys of
    `partition`, the partition values of every shard written); a column of `partition_by`
    not in `partition` is taken out of each dict record as delta-rs does (its value names
    the shard's partition directory); `name`, `description` and `configuration` (table
    properties, "delta.*") as delta-rs's, used when this call creates the table.
    `txn=(app_id, version)` makes a rerun of the same job commit nothing. PATH must be
    reachable from the workers (an
    absolute local path on a shared file system, s3://, hdfs://). `compute_kwargs` go to
    `Client.compute` (e.g. retries=2) or `dask.compute` when no distributed Client is active.
    A failed partition raises PartitionError naming it; nothing is committed then."""
    if mode not in ("append", "overwrite"):
        raise _sluice.InvalidArgumentError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if predicate is not None and mode != "overwrite":
        raise _sluice.InvalidArgumentError("a predicate is only for mode='overwrite'")
    root = _absolute(os.fspath(path))
    if re.search(r"@v\d+/*$", root):
        raise _sluice.InvalidArgumentError(
            f"{root}: a write goes to the latest version: name the table's directory, without "
            f"@vN")
    parts = _partitions(collection)
    existing = _open_table(root)
    if txn is not None and existing is not None:
        done = existing._t.txn_version(txn[0])
        if done is not None and done >= txn[1]:
            return WriteResult(existing.version(), 0, 0, _count(parts), True)
    declared = _declared_features(features, existing)
    columns = list(partition_by) if partition_by is not None else sorted(partition or {})
    if existing is not None and set(existing.metadata()["partition_columns"]) != set(columns):
        raise _sluice.InvalidArgumentError(
            f"the table at {root} is partitioned by {existing.metadata()['partition_columns']}"
            f", not {columns}: pass partition_by= (and/or partition=) accordingly; nothing "
            f"was written")
    options = _Options(root, _partition(partition), codec, int(target_file_size), declared,
                       tuple(c for c in columns if c not in (partition or {})),
                       uuid.uuid4().hex[:8], _count(parts))
    written = [w for part in _run(_tasks(parts, options), compute_kwargs) for w in part]
    kind, schema = _check_partitions(written)
    files = [f for w in written for f in w.files]
    if kind == "dicts" and declared is None:
        declared = {name: (spec[0] or "float", spec[1]) for name, spec in schema.items()}
    result = _sluice._commit_files(root, files, mode, predicate, columns,
                                   _features(declared or {}), txn, name, description,
                                   dict(configuration or {}))
    return WriteResult(result["version"], sum(w.records for w in written),
                       0 if result["duplicate"] else len(files), _count(parts),
                       result["duplicate"])


def _absolute(path: str) -> str:
    """Workers may run elsewhere (another cwd): a local path is made absolute here."""
    return path if "://" in path else os.path.abspath(path)


def _open_table(root: str):
    from .table import Table
    resolved = _sluice._resolve_table(root)
    return None if resolved is None else Table(resolved[0])


def _declared_features(features: Optional[Mapping[str, Any]], existing) -> Optional[Schema]:
    """The schema records must have: `features`, else the existing table's (when it has one).
    Both given must agree."""
    asked = _features(features) if features else None
    table = existing.schema() if existing is not None else None
    if asked and table:
        conflict = check_schema(table, asked, counts=True)
        if conflict:
            raise _sluice.InvalidArgumentError(conflict_message(
                "features", conflict, f"the table at version {existing.version()}") +
                "; nothing was written")
    return asked or table or None


def _partitions(collection: Any):
    """A dask.bag.Bag, or a list of dask.delayed partitions (each an iterable of records)."""
    from dask.delayed import Delayed
    if type(collection).__module__.startswith("dask.dataframe"):
        collection = collection.to_bag(index=False, format="dict")
    if type(collection).__module__.startswith("dask.bag"):
        return collection
    if isinstance(collection, (list, tuple)) and all(isinstance(p, Delayed) for p in collection):
        return list(collection)
    raise TypeError(f"to_table: expected a dask.bag.Bag, a dask.dataframe.DataFrame or a list "
                    f"of dask.delayed partitions, not {type(collection).__name__}")


def _count(parts) -> int:
    return len(parts) if isinstance(parts, list) else parts.npartitions


def _tasks(parts, options: _Options) -> list:
    """One dask.delayed per partition, computing [_Written]."""
    import dask
    if isinstance(parts, list):
        return [dask.delayed(_write_listed, pure=False)(
                    part, i, options, dask_key_name=(f"sluice-to-table-{options.job}", i))
                for i, part in enumerate(parts)]
    return _bag_tasks(parts, options)


def _bag_tasks(bag, options: _Options) -> list:
    """A bag's partitions are written where they are computed: each write task holds its
    partition's task (from the bag's optimized graph) with the outer list()/reify() taken
    off, as Dask's bag optimizer does inside fused tasks, so the write pulls records from an
    iterator that runs the bag's maps and filters as it goes: a partition is never a list in
    memory, and an error of the user's functions raises inside the write, which names it."""
    from dask.bag.core import lazify_task
    from dask.core import istask
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph
    keys = bag.__dask_keys__()
    graph = dict(bag.__dask_optimize__(bag.__dask_graph__(), keys))
    name = f"sluice-to-table-{options.job}"
    for i, key in enumerate(keys):
        task = graph[key]
        while not istask(task) and _is_key(task, graph):  # an alias left by fusion
            task = graph[task]
        graph[(name, i)] = (_write_listed, lazify_task(task, start=False), i, options)
    layer = HighLevelGraph.from_collections(name, graph, dependencies=())
    return [Delayed((name, i), layer, layer=name) for i in range(len(keys))]


def _is_key(value: Any, graph: dict) -> bool:
    try:
        return value in graph
    except TypeError:  # unhashable: a literal
        return False


def _write_listed(records: Any, partition: int, options: _Options) -> List[_Written]:
    return [_write_partition(records, partition, options)]


def _run(tasks: list, compute_kwargs: Mapping[str, Any]) -> List[List[_Written]]:
    """Runs the partitions' tasks; the first failure raises PartitionError naming its partition
    (with a distributed Client even when the partition's input failed, before its write)."""
    import dask
    client = None if "scheduler" in compute_kwargs else _default_client()
    if client is None:
        return list(dask.compute(*tasks, **compute_kwargs))
    from distributed import as_completed
    futures = client.compute(tasks, **compute_kwargs)
    index = {f.key: i for i, f in enumerate(futures)}
    try:
        for future in as_completed(futures):
            if future.status == "error":
                raise _named(index[future.key], len(futures), future.exception())
            if future.status == "cancelled":
                raise _named(index[future.key], len(futures),
                             _sluice.CancelledError("its task was cancelled"))
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise


def _default_client():
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def _named(partition: int, count: int, error: BaseException) -> PartitionError:
    if isinstance(error, PartitionError):
        return error
    return PartitionError(partition, f"partition {partition} of {count}: "
                          f"{type(error).__name__}: {error}; nothing was committed")


def _write_partition(records: Any, partition: int, options: _Options) -> _Written:
    """The task: writes one partition's records as shards under the table root. Nothing is
    committed here. On failure the shards written are deleted (best effort: a killed worker
    leaves them, unreferenced)."""
    writers = _Writers(options, f"part-{options.job}-{partition:05d}")
    try:
        kind, schema = _write_records(writers, records, options)
        files = writers.finish()
    except BaseException as e:
        writers.abort()
        if isinstance(e, Exception):
            raise _named(partition, options.partitions, e) from None
        raise
    return _Written(partition, files, writers.records, kind, schema)


class _Writers:
    """A table writer per partition value of the table (one without `columns`)."""

    def __init__(self, options: _Options, prefix: str):
        self._options, self._prefix = options, prefix
        self._writers: Dict[tuple, Any] = {}
        self.records = 0

    def write(self, data: bytes, values: tuple = ()) -> None:
        writer = self._writers.get(values)
        if writer is None:
            o = self._options
            partition = dict(o.partition or {})
            partition.update(zip(o.columns, values))
            writer = _sluice._TableWriter(o.root, partition or None, o.codec,
                                          o.target_file_size, self._prefix)
            self._writers[values] = writer
        writer.write(data)
        self.records += 1

    def finish(self) -> List[Any]:
        return [f for w in self._writers.values() for f in w.finish()]

    def abort(self) -> None:
        for w in self._writers.values():
            w.abort()


def _write_records(writers: _Writers, records: Any, options: _Options):
    kind: Optional[str] = None
    checker = RecordChecker(options.features)
    for number, record in enumerate(records):
        values: tuple = ()
        if isinstance(record, Mapping):
            this = "dicts"
            record, values = _partition_values(record, options.columns, number)
            try:
                data, types, counts = _sluice._make_example_and_schema(record)
            except TypeError as e:
                raise TypeError(f"record {number}: {e}") from None
            checker.check(number, types, counts)
        elif isinstance(record, (bytes, bytearray, memoryview)):
            if options.columns:
                raise TypeError(f"record {number} is a serialized record (bytes): partition "
                                f"values ({', '.join(options.columns)}) come from dict records")
            this = "bytes"
            data = bytes(record)
        else:
            raise TypeError(f"record {number} is a {type(record).__name__}: expected a dict of "
                            f"features or a serialized record (bytes)")
        if kind is not None and this != kind:
            raise TypeError(f"record {number} is {_KIND[this]}, earlier records are {_KIND[kind]}")
        kind = this
        writers.write(data, values)
    return kind, checker.schema()


def _partition_values(record: Mapping, columns: Tuple[str, ...], number: int):
    """The record without its partition columns, and their values as the log spells them
    (strings; None is null)."""
    if not columns:
        return (record if isinstance(record, dict) else dict(record)), ()
    record = dict(record)  # make_example takes a dict; a partition column leaves this copy
    values = []
    for column in columns:
        if column not in record:
            raise _sluice.InvalidArgumentError(
                f"record {number} has no partition column '{column}'")
        value = record.pop(column)
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        elif isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, int):
            value = str(value)
        elif value is not None and not isinstance(value, str):
            raise TypeError(f"record {number}: partition column '{column}' is a "
                            f"{type(value).__name__}: expected str, bytes, int, bool or None")
        values.append(value)
    return record, tuple(values)


_KIND = {"dicts": "a dict of features", "bytes": "a serialized record (bytes)"}
_KINDS = {"dicts": "dicts of features", "bytes": "serialized records (bytes)"}


def _check_partitions(written: List[_Written]) -> Tuple[Optional[str], Schema]:
    """The partitions' records are all dicts or all bytes, and their schemas agree (value
    counts may differ: the feature then varies). Errors name the two partitions."""
    first: Optional[_Written] = None
    schema: Schema = {}
    for w in written:
        if w.kind is None:
            continue
        if first is None:
            first, schema = w, dict(w.schema or {})
            continue
        if w.kind != first.kind:
            raise _sluice.InvalidArgumentError(
                f"partition {w.partition} holds {_KINDS[w.kind]}, partition {first.partition} "
                f"{_KINDS[first.kind]}; nothing was committed")
        if w.kind == "dicts":
            conflict = check_schema(schema, w.schema, counts=False)
            if conflict:
                raise _sluice.InvalidArgumentError(conflict_message(
                    f"partition {w.partition}", conflict, f"partition {first.partition}") +
                    "; nothing was committed")
            schema = merge_schema(schema, w.schema)
    return (first.kind if first else None), schema
