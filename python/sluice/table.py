"""Versioned dataset tables on the Delta Lake transaction log (docs/table.md).

    t = sluice.Table("data/crawl")                 # latest version (or version=12, timestamp=...)
    t.version(); t.files(); t.history()
    with t.writer(partition={"source": "crawl-7"}) as w:
        for record in records:
            w.write(record)                        # committed as one append when the block ends
    t.delete("source = 'crawl-3'")
    t.optimize(); t.vacuum(dry_run=False); t.restore(12)
    ds = sluice.read("data/crawl@v12")             # a loader pinned to version 12

Names follow delta-rs's DeltaTable where it has one (version, files, history, optimize,
vacuum, restore, delete)."""

from __future__ import annotations

import datetime as _dt
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _sluice

Timestamp = Union[int, str, _dt.datetime, _dt.date]
TxnId = Tuple[str, int]

DEFAULT_TARGET_FILE_SIZE = 100_000_000


def timestamp_ms(value: Optional[Timestamp]) -> Optional[int]:
    """Milliseconds since the Unix epoch from an int (already ms), a datetime (naive = UTC), a
    date, or an ISO 8601 string ("2026-12-01T10:20:30Z")."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError("timestamp must be an int (ms), a datetime or an ISO 8601 string")
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return int(value.timestamp() * 1000)
    if isinstance(value, _dt.date):
        return timestamp_ms(_dt.datetime(value.year, value.month, value.day))
    if isinstance(value, str):
        return _sluice._parse_timestamp(value)
    raise TypeError(f"timestamp must be an int (ms), a datetime or an ISO 8601 string, "
                    f"not {type(value).__name__}")


def _features(features: Optional[Mapping[str, Any]]) -> Dict[str, Tuple[str, int]]:
    """{"text": "bytes", "label": "int64", "tokens": ("int64", -1)} -> name -> (type, values
    per record; -1 when it varies)."""
    out = {}
    for name, spec in (features or {}).items():
        out[name] = (spec, 1) if isinstance(spec, str) else (str(spec[0]), int(spec[1]))
    return out


class Table:
    """One version of a table: its files, schema and history never change for this object.
    Writes (append, delete, optimize, restore, writer commits) plan against the latest
    version, commit once, and move this object to the version they committed."""

    def __init__(self, path: Union[str, os.PathLike], version: Optional[int] = None,
                 timestamp: Optional[Timestamp] = None):
        self._t = _sluice._Table.open(os.fspath(path), version, timestamp_ms(timestamp))
        self._uri = os.fspath(path)

    @classmethod
    def create(cls, path: Union[str, os.PathLike], *, partition_by: Sequence[str] = (),
               features: Optional[Mapping[str, Any]] = None, name: Optional[str] = None,
               description: Optional[str] = None,
               configuration: Optional[Mapping[str, str]] = None) -> "Table":
        """Creates an empty table (version 0; reader 1 / writer 2). AlreadyExistsError when
        PATH is a table already."""
        t = cls.__new__(cls)
        t._t = _sluice._Table.create(os.fspath(path), list(partition_by), _features(features),
                                     name, description, dict(configuration or {}))
        t._uri = os.fspath(path)
        return t

    # --- the snapshot -----------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._t.root()

    def version(self) -> int:
        return self._t.version()

    def timestamp(self) -> int:
        """The commit time of this version, ms since the epoch (monotonized, docs/table.md)."""
        return self._t.timestamp_ms()

    def files(self) -> List[str]:
        """The live data files' paths as the log spells them, relative to the table root."""
        return self._t.files()

    def file_details(self) -> List[dict]:
        """Per file: path, size, records, partition_values, modification_time, tags."""
        return self._t.file_details()

    def num_records(self) -> Optional[int]:
        n = self._t.num_records()
        return None if n < 0 else n

    def protocol(self) -> dict:
        return self._t.protocol()

    def metadata(self) -> dict:
        return self._t.metadata()

    def schema(self) -> Dict[str, Tuple[str, int]]:
        """The records' features: name -> (type, values per record; -1 when it varies)."""
        return self._t.features()

    def history(self, limit: Optional[int] = None) -> List[dict]:
        """Commits up to this version, newest first: version, timestamp (ms), operation,
        operationParameters, operationMetrics, commitInfo (the JSON as written)."""
        return self._t.history(limit)

    def read(self, **kwargs: Any):
        """A sluice.read() of exactly this version."""
        from .dataset import read
        return read(f"{self.path}@v{self.version()}", **kwargs)

    def update(self) -> None:
        """Moves this object to the latest version."""
        self._t.update()

    # --- writes ------------------------------------------------------------------------------
    def append(self, paths: Union[str, Iterable[str], "_sluice.ShardWriter"], *,
               partition: Optional[Mapping[str, Any]] = None,
               txn: Optional[TxnId] = None) -> int:
        """Commits shards already under the table root as one append: paths relative to the
        root (e.g. written by sluice.RecordWriter), or a closed sluice.ShardWriter whose
        directory is the root or under it (all its shards). `txn` (app_id, version) makes a
        job's retry commit nothing. Returns the version."""
        if isinstance(paths, _sluice.ShardWriter):
            directory = self._relative_directory(paths.directory)
            paths = [f"{directory}/{s}" if directory else s for s in paths.shards]
        paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        return self._t.append([os.fspath(p) for p in paths], _partition(partition),
                              txn)["version"]

    def _relative_directory(self, directory: str) -> str:
        """`directory` relative to the table root ("" for the root itself)."""
        root = getattr(self, "_uri", self.path).rstrip("/")
        d = directory.rstrip("/")
        if "://" not in root and "://" not in d:
            root, d = os.path.abspath(root), os.path.abspath(d)
        if d == root:
            return ""
        if d.startswith(root + "/"):
            return d[len(root) + 1:]
        raise _sluice.InvalidArgumentError(
            f"the shard writer wrote into {directory}, which is not under the table root {root}")

    def writer(self, *, partition: Optional[Mapping[str, Any]] = None, codec: str = "zstd",
               target_file_size: int = DEFAULT_TARGET_FILE_SIZE) -> "TableWriter":
        """Writes records as new shards of this table; see TableWriter."""
        return TableWriter(self, partition=partition, codec=codec,
                           target_file_size=target_file_size)

    def delete(self, predicate: Optional[str] = None) -> dict:
        """Removes the files whose partition values match `predicate` ("source = 'x'", all
        files when None). Their data stays on disk until vacuum."""
        return self._t.delete(predicate)

    def optimize(self, *, target_size: int = DEFAULT_TARGET_FILE_SIZE,
                 predicate: Optional[str] = None) -> dict:
        """Compacts the shards smaller than target_size (per partition) into shards of about
        that size, in one commit with dataChange = false."""
        return self._t.optimize(target_size, predicate)

    def vacuum(self, retention_hours: Optional[float] = None, dry_run: bool = True,
               enforce_retention_duration: bool = True) -> List[str]:
        """Deletes files under the root that no version within the retention (default 7
        days) references; returns them (relative paths), or those it would delete (dry run,
        the default). A retention below the table's is refused unless
        enforce_retention_duration=False."""
        return self._t.vacuum(retention_hours, dry_run, enforce_retention_duration)

    def restore(self, target: Optional[Union[int, Timestamp]] = None, *,
                timestamp: Optional[Timestamp] = None) -> dict:
        """Commits a version holding exactly the files of version `target` (an int), or of the
        version current at a timestamp: `target` a datetime or ISO string (as delta-rs's
        restore takes), or `timestamp=` (also ms since the epoch). The version current at T
        is the latest committed at or before T; a T before the first commit is an
        InvalidArgumentError."""
        if (target is None) == (timestamp is None):
            raise TypeError("restore takes a version or a timestamp (one of them)")
        if timestamp is None and isinstance(target, int) and not isinstance(target, bool):
            return self._t.restore(target)
        when = timestamp_ms(timestamp if timestamp is not None else target)
        version = _sluice._Table.open(getattr(self, "_uri", self.path), None, when).version()
        return self._t.restore(version)

    def checkpoint(self) -> int:
        """Writes a checkpoint of the latest version now; returns its version."""
        return self._t.checkpoint()

    def __repr__(self) -> str:
        return f"sluice.Table({self.path!r}, version={self.version()})"


class TableWriter:
    """Writes records as shards into a table's directory (unique names) and commits them as
    one commit: commit() explicitly, or at the end of a `with` block that raised nothing (an
    exception aborts: the shards are deleted and nothing is committed)."""

    def __init__(self, table: Table, *, partition: Optional[Mapping[str, Any]] = None,
                 codec: str = "zstd", target_file_size: int = DEFAULT_TARGET_FILE_SIZE):
        self._table = table
        self._w = _sluice._TableWriter(table.path, _partition(partition), codec,
                                       target_file_size)
        self._done = False

    def write(self, record: bytes) -> None:
        self._w.write(record)

    @property
    def records_written(self) -> int:
        return self._w.records_written

    def commit(self, *, mode: str = "append", predicate: Optional[str] = None,
               txn: Optional[TxnId] = None) -> int:
        """mode "append", or "overwrite" (replaces the files matching `predicate`, all by
        default). Returns the version committed."""
        if self._done:
            raise _sluice.FailedPreconditionError("this table writer has committed or aborted")
        self._done = True
        files = self._w.finish()
        try:
            return self._table._t.commit_written(files, mode, predicate, txn)["version"]
        except BaseException:
            self._w.abort()  # the shards were never referenced
            raise

    def abort(self) -> None:
        self._done = True
        self._w.abort()

    def __enter__(self) -> "TableWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._done:
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_table(path: Union[str, os.PathLike], records: Iterable[bytes], *,
                mode: str = "append", predicate: Optional[str] = None,
                partition: Optional[Mapping[str, Any]] = None,
                partition_by: Optional[Sequence[str]] = None,
                features: Optional[Mapping[str, Any]] = None, codec: str = "zstd",
                txn: Optional[TxnId] = None,
                target_file_size: int = DEFAULT_TARGET_FILE_SIZE) -> int:
    """Writes `records` into the table at PATH as one commit, like delta-rs's
    write_deltalake: appends, or overwrites the files matching `predicate` (all by default).
    An absent table is created by this commit (version 0 then holds the records), partitioned
    by `partition_by` (default: the keys of `partition`) with the feature schema `features`.
    Returns the version."""
    path = os.fspath(path)
    columns = list(partition_by) if partition_by is not None else sorted(partition or {})
    writer = _sluice._TableWriter(path, _partition(partition), codec, target_file_size)
    try:
        for record in records:
            writer.write(record)
        files = writer.finish()
        return _sluice._commit_files(path, files, mode, predicate, columns, _features(features),
                                     txn)["version"]
    except BaseException:
        writer.abort()  # the shards were never referenced
        raise


def resolve_read(path: str, version: Optional[int],
                 timestamp: Optional[Timestamp]) -> Optional[str]:
    """PATH pinned for sluice.read when it names a table: "ROOT@vN" (the version asked for,
    else the latest now), so that the Dataset, and any copy rebuilt from its recipe, reads one
    version. None when PATH is not a table."""
    resolved = _sluice._resolve_table(path, version, timestamp_ms(timestamp))
    return None if resolved is None else f"{resolved[0]}@v{resolved[1]}"


def _partition(partition: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    return None if partition is None else {str(k): v for k, v in partition.items()}
