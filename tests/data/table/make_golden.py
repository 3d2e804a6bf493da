#!/usr/bin/python3
"""Writes the golden tables of tests/data/table/golden/ (README.md lists them).

Each golden table is a directory `golden/<name>/` holding `table/` (a Delta table: its
_delta_log, and data files only where a test reads them) and `expected.json` (what a correct
reader must report). tests/unit/table_golden_test.cc runs every one through one helper.

Neither Spark nor delta-rs runs on this machine (no JVM, no PyPI), so the tables "written the
way Spark/delta-rs write them" are hand-made here from PROTOCOL.md and from the logs those
writers are documented to produce (field order, commitInfo fields, stats, .crc files,
partition directory escaping). They are not byte-for-byte outputs of those engines.

Run from the repository root: /usr/bin/python3 tests/data/table/make_golden.py
(deterministic: fixed ids and times; rerunning rewrites the same bytes).
"""
import json
import os
import shutil
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z
TABLE_ID = "af23c9d7-fff1-4a5a-a2c8-55c59bd782aa"
SPARK_ENGINE = "Apache-Spark/3.5.0 Delta-Lake/3.1.0"
DELTA_RS = "delta-rs.0.17.0"
CHECKPOINT_UUID = "80a083e8-7026-4e79-81be-64bd76c43a11"


def line(action):
    return json.dumps(action, separators=(",", ":"))


def schema(fields):
    return json.dumps({"type": "struct", "fields": [
        {"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields]},
        separators=(",", ":"))


def protocol(reader=1, writer=2, reader_features=None, writer_features=None):
    p = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        p["readerFeatures"] = reader_features
    if writer_features is not None:
        p["writerFeatures"] = writer_features
    return {"protocol": p}


def metadata(partition_columns=(), fields=(("id", "long"),), configuration=None,
             provider="parquet"):
    return {"metaData": {"id": TABLE_ID, "format": {"provider": provider, "options": {}},
                         "schemaString": schema(list(fields) + [(c, "string") for c in
                                                                partition_columns]),
                         "partitionColumns": list(partition_columns),
                         "configuration": configuration or {}, "createdTime": T0}}


def stats(records, first=0):
    return json.dumps({"numRecords": records, "minValues": {"id": first},
                       "maxValues": {"id": first + records - 1}, "nullCount": {"id": 0}},
                      separators=(",", ":"))


def add(path, records, size=1000, partition=None, data_change=True, t=T0, first=0):
    return {"add": {"path": path, "partitionValues": partition or {}, "size": size,
                    "modificationTime": t, "dataChange": data_change,
                    "stats": stats(records, first)}}


def remove(path, t, partition=None, size=1000, data_change=True):
    return {"remove": {"path": path, "deletionTimestamp": t, "dataChange": data_change,
                       "extendedFileMetadata": True, "partitionValues": partition or {},
                       "size": size}}


def spark_commit_info(t, operation, params, metrics=None, read_version=None, blind=True):
    info = {"timestamp": t, "operation": operation, "operationParameters": params,
            "isolationLevel": "Serializable", "isBlindAppend": blind,
            "operationMetrics": metrics or {}, "engineInfo": SPARK_ENGINE,
            "txnId": f"00000000-0000-4000-8000-{t % 10**12:012d}"}
    if read_version is not None:
        info["readVersion"] = read_version
    return {"commitInfo": info}


def delta_rs_commit_info(t, operation, params):
    return {"commitInfo": {"timestamp": t, "operation": operation,
                           "operationParameters": params, "clientVersion": DELTA_RS}}


class Table:
    def __init__(self, name, description):
        self.dir = os.path.join(GOLDEN, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.log = os.path.join(self.dir, "table", "_delta_log")
        os.makedirs(self.log)
        self.expected = {"description": description}

    def commit(self, version, actions, crc=None):
        self.file(f"{version:020d}.json", "\n".join(line(a) for a in actions) + "\n")
        if crc is not None:
            self.file(f"{version:020d}.crc", json.dumps(crc))

    def file(self, name, text, mode="w"):
        path = os.path.join(self.log, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as f:
            f.write(text)

    def expect(self, **kw):
        self.expected.update(kw)

    def save(self):
        with open(os.path.join(self.dir, "expected.json"), "w") as f:
            json.dump(self.expected, f, indent=1, sort_keys=True)
            f.write("\n")


def spark_writes():
    t = Table("spark_writes", "Spark-style log: create, append, DELETE rewriting a file; "
                              ".crc files after every commit (ignored)")
    f = [f"part-0000{i}-1b2c3d4e-0000-4000-8000-00000000000{i}-c000.snappy.parquet"
         for i in range(5)]
    crc = lambda n, size: {"tableSizeBytes": size, "numFiles": n, "numMetadata": 1,  # noqa
                           "numProtocol": 1, "metadata": metadata()["metaData"],
                           "protocol": protocol()["protocol"]}
    t.commit(0, [spark_commit_info(T0, "WRITE", {"mode": "ErrorIfExists", "partitionBy": "[]"},
                                   {"numFiles": "1", "numOutputRows": "10"}),
                 metadata(), protocol(), add(f[0], 10)], crc(1, 1000))
    t.commit(1, [spark_commit_info(T0 + 1000, "WRITE", {"mode": "Append", "partitionBy": "[]"},
                                   read_version=0),
                 add(f[1], 5, first=10), add(f[2], 7, first=15)], crc(3, 3000))
    t.commit(2, [spark_commit_info(T0 + 2000, "DELETE", {"predicate": "[\"(id#1L < 3L)\"]"},
                                   read_version=1, blind=False),
                 remove(f[0], T0 + 2000), add(f[3], 7, first=3)], crc(3, 3000))
    t.expect(latest={"version": 2, "files": sorted([f[1], f[2], f[3]]), "records": 19,
                     "protocol": [1, 2], "timestamps": [T0, T0 + 1000, T0 + 2000]},
             versions={"0": {"files": [f[0]], "records": 10},
                       "1": {"files": sorted(f[:3]), "records": 22}},
             history=["DELETE", "WRITE", "WRITE"])
    t.save()


def spark_partitioned():
    t = Table("spark_partitioned", "Spark-style partitioned table: Hive-escaped directory "
                                   "names, URI-encoded paths, a null partition")
    values = [{"date": "2024-01-01", "region": "us west"},
              {"date": "2024-01-01", "region": "a:b"},
              {"date": "2024-01-02", "region": None}]

    def dirname(v):
        parts = []
        for k in ("date", "region"):
            value = v[k]
            if value is None:
                value = "__HIVE_DEFAULT_PARTITION__"
            else:
                value = "".join(f"%{ord(c):02X}" if c in "\"#%'*/:=?\\{[]^" else c for c in value)
            parts.append(f"{k}={value}")
        return "/".join(parts)

    paths = [urllib.parse.quote(f"{dirname(v)}/part-0000{i}-c000.snappy.parquet", safe="/=")
             for i, v in enumerate(values)]
    t.commit(0, [spark_commit_info(T0, "WRITE", {"mode": "Append",
                                                 "partitionBy": "[\"date\",\"region\"]"}),
                 metadata(partition_columns=["date", "region"]), protocol()] +
             [add(p, 4, partition=v) for p, v in zip(paths, values)])
    t.expect(latest={"version": 0, "files": sorted(paths), "records": 12, "protocol": [1, 2],
                     "partition_columns": ["date", "region"],
                     "decoded": sorted(urllib.parse.unquote(p) for p in paths)})
    t.save()


def delta_rs_writes():
    t = Table("delta_rs_writes", "delta-rs-style log: protocol and metaData first, commitInfo "
                                 "last with clientVersion; a streaming txn; OPTIMIZE with "
                                 "dataChange=false")
    f = [f"part-0000{i}-5e6f7a8b-0000-4000-8000-00000000000{i}-c000.zstd.parquet"
         for i in range(4)]
    t.commit(0, [protocol(), metadata(), add(f[0], 3),
                 delta_rs_commit_info(T0, "CREATE TABLE", {"mode": "ErrorIfExists"})])
    t.commit(1, [add(f[1], 4, first=3),
                 {"txn": {"appId": "stream-1", "version": 7, "lastUpdated": T0 + 1}},
                 delta_rs_commit_info(T0 + 10, "WRITE", {"mode": "Append"})])
    t.commit(2, [remove(f[0], T0 + 20, data_change=False),
                 remove(f[1], T0 + 20, data_change=False),
                 add(f[2], 7, data_change=False),
                 delta_rs_commit_info(T0 + 20, "OPTIMIZE", {"targetSize": "104857600"})])
    t.expect(latest={"version": 2, "files": [f[2]], "records": 7, "protocol": [1, 2],
                     "txns": {"stream-1": 7}},
             history=["OPTIMIZE", "WRITE", "CREATE TABLE"])
    t.save()


def v2_checkpoint_json():
    t = Table("v2_checkpoint_json", "reader 3 / writer 7 with v2Checkpoint: a UUID-named JSON "
                                    "checkpoint at version 3 (a classic Parquet one next to it, "
                                    "unread), commits 0..5, _last_checkpoint")
    p = protocol(3, 7, ["v2Checkpoint"], ["v2Checkpoint", "appendOnly", "invariants"])
    files = [f"f{i}.parquet" for i in range(6)]
    t.commit(0, [spark_commit_info(T0, "CREATE TABLE", {}), p, metadata(), add(files[0], 1)])
    for v in range(1, 6):
        t.commit(v, [spark_commit_info(T0 + v, "WRITE", {"mode": "Append"}),
                     add(files[v], 1, first=v)])
    checkpoint = [{"checkpointMetadata": {"version": 3, "tags": {}}}, p, metadata(),
                  ] + [add(files[i], 1, data_change=False, first=i) for i in range(4)]
    t.file(f"{3:020d}.checkpoint.{CHECKPOINT_UUID}.json",
           "\n".join(line(a) for a in checkpoint) + "\n")
    t.file(f"{3:020d}.checkpoint.parquet", "PAR1 not really parquet PAR1")
    t.file("_last_checkpoint", json.dumps({"version": 3, "size": 6}))
    # Commits before the checkpoint are cleaned up: replay must start from it.
    for v in range(0, 3):
        os.remove(os.path.join(t.log, f"{v:020d}.json"))
    t.expect(latest={"version": 5, "files": files, "records": 6, "protocol": [3, 7]},
             versions={"3": {"files": files[:4], "records": 4}},
             version_errors={"2": "no longer in the log"})
    t.save()


def parquet_checkpoint(name, keep_early_commits):
    t = Table(name, "a classic Parquet checkpoint at version 10 and _last_checkpoint pointing "
                    "at it; " + ("every commit kept (sluice replays JSON)" if keep_early_commits
                                 else "commits before 10 cleaned up"))
    files = [f"f{i}.parquet" for i in range(13)]
    t.commit(0, [spark_commit_info(T0, "WRITE", {}), protocol(), metadata(), add(files[0], 1)])
    for v in range(1, 13):
        t.commit(v, [spark_commit_info(T0 + v, "WRITE", {}), add(files[v], 1, first=v)])
    t.file(f"{10:020d}.checkpoint.parquet", "PAR1 not really parquet PAR1")
    t.file("_last_checkpoint", json.dumps({"version": 10, "size": 13}))
    if not keep_early_commits:
        for v in range(0, 10):
            os.remove(os.path.join(t.log, f"{v:020d}.json"))
    t.expect(latest={"version": 12, "files": sorted(files), "records": 13, "protocol": [1, 2]})
    t.save()


def reader_feature_table(name, description, proto):
    t = Table(name, description)
    t.commit(0, [spark_commit_info(T0, "CREATE TABLE", {}), proto, metadata(),
                 add("f0.parquet", 1)])
    t.expect(latest={"version": 0, "files": ["f0.parquet"], "records": 1})
    t.save()


def in_commit_timestamps():
    t = Table("in_commit_timestamps", "writer feature inCommitTimestamp: commitInfo first with "
                                      "inCommitTimestamp, which differs from its timestamp")
    p = protocol(1, 7, None, ["inCommitTimestamp", "appendOnly", "invariants"])
    for v in range(3):
        info = {"commitInfo": {"inCommitTimestamp": T0 + 100 * v, "timestamp": T0 + 5000 - v,
                               "operation": "WRITE", "operationParameters": {}}}
        actions = [info] + ([p, metadata(configuration={"delta.enableInCommitTimestamps": "true"})]
                            if v == 0 else []) + [add(f"f{v}.parquet", 1, first=v)]
        t.commit(v, actions)
    t.expect(latest={"version": 2, "files": ["f0.parquet", "f1.parquet", "f2.parquet"],
                     "records": 3, "timestamps": [T0, T0 + 100, T0 + 200]},
             at_timestamp={str(T0 + 150): 1})
    t.save()


def broken(name, description, commits, error_code, contains, versions=None):
    t = Table(name, description)
    for v, text in commits:
        if isinstance(text, bytes):
            t.file(f"{v:020d}.json", text, mode="wb")
        else:
            t.file(f"{v:020d}.json", text)
    t.expect(error={"code": error_code, "contains": contains})
    if versions:
        t.expect(versions=versions)
    t.save()


def good_start(extra=()):
    return "\n".join(line(a) for a in [spark_commit_info(T0, "WRITE", {}), protocol(),
                                       metadata(), add("f0.parquet", 2), *extra]) + "\n"


def negative_tables():
    one = "\n".join(line(a) for a in [spark_commit_info(T0 + 1, "WRITE", {}),
                                      add("f1.parquet", 3, first=2)]) + "\n"
    broken("version_gap", "commits 0, 1 and 3: version 2 is missing",
           [(0, good_start()), (1, one), (3, one.replace("f1.", "f3."))], "DataLoss",
           ["00000000000000000002.json", "missing"], {"1": {"files": ["f0.parquet", "f1.parquet"],
                                                            "records": 5}})
    broken("missing_protocol", "version 0 has metaData but no protocol",
           [(0, "\n".join(line(a) for a in [metadata(), add("f0.parquet", 1)]) + "\n")],
           "DataLoss", ["00000000000000000000.json", "no protocol"])
    broken("missing_metadata", "version 0 has protocol but no metaData",
           [(0, "\n".join(line(a) for a in [protocol(), add("f0.parquet", 1)]) + "\n")],
           "DataLoss", ["00000000000000000000.json", "no metaData"])
    broken("two_metadata", "one commit with two metaData actions",
           [(0, good_start([metadata()]))], "DataLoss", ["more than one metaData"])
    broken("truncated_commit", "the last commit is cut in the middle of a line",
           [(0, good_start()), (1, one[: len(one) // 2])], "DataLoss",
           ["00000000000000000001.json", "line 1"], {"0": {"files": ["f0.parquet"],
                                                           "records": 2}})
    broken("corrupt_commit", "the last commit holds binary garbage",
           [(0, good_start()), (1, b"\x00\x9f\x13\xff garbage \x01\n")], "DataLoss",
           ["00000000000000000001.json", "not a JSON object"])
    broken("reader_version_4", "minReaderVersion 4, newer than any reader knows",
           [(0, good_start().replace('"minReaderVersion":1', '"minReaderVersion":4'))],
           "Unimplemented", ["reader version 4"])
    broken("unknown_reader_feature", "reader 3 with a reader feature nobody implements",
           [(0, "\n".join(line(a) for a in [protocol(3, 7, ["madeUpFeature"], ["madeUpFeature"]),
                                            metadata(), add("f0.parquet", 1)]) + "\n")],
           "Unimplemented", ["madeUpFeature"])


def non_commit_files():
    t = Table("non_commit_files", "files in _delta_log that are not commits: .crc, a sluice "
                                  "put temp, Hadoop .crc of a commit, a .tmp, a staged commit "
                                  "(unratified), a log compaction, an editor backup")
    t.commit(0, [spark_commit_info(T0, "WRITE", {}), protocol(), metadata(), add("f0.parquet", 1)],
             {"tableSizeBytes": 1000, "numFiles": 1, "numMetadata": 1, "numProtocol": 1})
    t.commit(1, [spark_commit_info(T0 + 1, "WRITE", {}), add("f1.parquet", 1, first=1)])
    t.file(f"{2:020d}.json.put.tmp-4242-0", line(add("leftover.parquet", 1)))
    t.file(f".{1:020d}.json.crc", "hadoop checksum bytes")
    t.file(f"{2:020d}.json.tmp", line(add("tmp.parquet", 1)))
    t.file(f"_staged_commits/{2:020d}.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json",
           line(add("staged.parquet", 1)) + "\n")
    t.file(f"{0:020d}.{1:020d}.compacted.json", line(add("compacted.parquet", 1)) + "\n")
    t.file(f"{1:020d}.json~", "backup")
    t.expect(latest={"version": 1, "files": ["f0.parquet", "f1.parquet"], "records": 2})
    t.save()


def unsafe_paths():
    t = Table("unsafe_paths", "adds whose paths leave the table root (absolute, .., a URI): "
                              "the log opens, resolving those files is refused")
    t.commit(0, [spark_commit_info(T0, "WRITE", {}), protocol(), metadata(), add("ok.parquet", 1),
                 add("/etc/passwd", 1), add("../outside.parquet", 1),
                 add("s3://bucket/elsewhere.parquet", 1)])
    t.expect(latest={"version": 0, "records": 4,
                     "files": sorted(["ok.parquet", "/etc/passwd", "../outside.parquet",
                                      "s3://bucket/elsewhere.parquet"])},
             unsafe_paths=sorted(["/etc/passwd", "../outside.parquet",
                                  "s3://bucket/elsewhere.parquet"]))
    t.save()


def sidecar_checkpoint(name, keep_early_commits):
    t = Table(name, "a V2 JSON checkpoint whose files are in a Parquet sidecar; " +
              ("every commit kept (the checkpoint is skipped)" if keep_early_commits
               else "commits before it cleaned up"))
    p = protocol(3, 7, ["v2Checkpoint"], ["v2Checkpoint"])
    t.commit(0, [spark_commit_info(T0, "WRITE", {}), p, metadata(), add("f0.parquet", 1)])
    t.commit(1, [spark_commit_info(T0 + 1, "WRITE", {}), add("f1.parquet", 1, first=1)])
    t.commit(2, [spark_commit_info(T0 + 2, "WRITE", {}), add("f2.parquet", 1, first=2)])
    cp = [{"checkpointMetadata": {"version": 1, "tags": {}}}, p, metadata(),
          {"sidecar": {"path": "016ae953-37a9-438e-8683-9a9a4a79a395.parquet",
                       "sizeInBytes": 100, "modificationTime": T0}}]
    t.file(f"{1:020d}.checkpoint.{CHECKPOINT_UUID}.json", "\n".join(line(a) for a in cp) + "\n")
    t.file("_sidecars/016ae953-37a9-438e-8683-9a9a4a79a395.parquet", "PAR1 PAR1")
    if not keep_early_commits:
        for v in range(0, 2):
            os.remove(os.path.join(t.log, f"{v:020d}.json"))
    t.expect(latest={"version": 2, "files": ["f0.parquet", "f1.parquet", "f2.parquet"],
                     "records": 3})
    t.save()


def main():
    spark_writes()
    spark_partitioned()
    delta_rs_writes()
    v2_checkpoint_json()
    parquet_checkpoint("parquet_checkpoint_all_commits", True)
    parquet_checkpoint("parquet_checkpoint_only", False)
    sidecar_checkpoint("sidecar_checkpoint_all_commits", True)
    sidecar_checkpoint("sidecar_checkpoint_only", False)
    reader_feature_table("deletion_vectors", "reader 3 / writer 7 with deletionVectors",
                         protocol(3, 7, ["deletionVectors"], ["deletionVectors"]))
    reader_feature_table("column_mapping", "reader 2 / writer 5: column mapping",
                         protocol(2, 5))
    reader_feature_table("writer_version_4", "reader 1 / writer 4 (change data feed, generated "
                                             "columns): readable, not writable",
                         protocol(1, 4))
    in_commit_timestamps()
    non_commit_files()
    unsafe_paths()
    negative_tables()


if __name__ == "__main__":
    main()
