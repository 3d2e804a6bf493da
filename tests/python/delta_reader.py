"""An independent reader of Delta Lake transaction logs, written from PROTOCOL.md (delta-io/
delta) alone, without sluice: the tests replay tables sluice wrote with it and compare.

It lists _delta_log, takes the newest JSON V2 checkpoint (UUID-named, `N.checkpoint.<uuid>.json`)
at or below the wanted version when there is one, replays the commits after it ("Action
Reconciliation": the latest protocol and metaData win, files keyed by path, add/remove,
txn by appId), checks that versions are contiguous and that the reader features are known,
and URL-decodes data file paths. Parquet checkpoints are not read (no Parquet here either).
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Dict, List, Optional

_COMMIT = re.compile(r"^(\d{20})\.json$")
_UUID_JSON_CHECKPOINT = re.compile(
    r"^(\d{20})\.checkpoint\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{12}\.json$")
KNOWN_READER_FEATURES = {"v2Checkpoint", "vacuumProtocolCheck", "timestampNtz",
                         "deletionVectors", "columnMapping", "typeWidening", "variantType"}


class DeltaLogError(Exception):
    pass


@dataclass
class Snapshot:
    version: int
    protocol: dict
    metadata: dict
    files: Dict[str, dict] = field(default_factory=dict)       # path as spelled -> add
    tombstones: Dict[str, dict] = field(default_factory=dict)  # path -> remove
    txns: Dict[str, int] = field(default_factory=dict)
    commit_infos: Dict[int, dict] = field(default_factory=dict)

    def paths(self) -> List[str]:
        return sorted(self.files)

    def decoded_paths(self) -> List[str]:
        return sorted(urllib.parse.unquote(p) for p in self.files)

    def num_records(self) -> Optional[int]:
        total = 0
        for add in self.files.values():
            stats = add.get("stats")
            if stats is None:
                return None
            total += json.loads(stats)["numRecords"]
        return total


def _actions(path: str) -> List[dict]:
    out = []
    with open(path, "rb") as f:
        for number, line in enumerate(f.read().decode("utf-8").split("\n"), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DeltaLogError(f"{path}: line {number}: {e}") from e
            if not isinstance(obj, dict) or len(obj) != 1:
                raise DeltaLogError(f"{path}: line {number}: not a single action")
            out.append(obj)
    return out


def _apply(snap: Snapshot, action: dict) -> None:
    (kind, body), = action.items()
    if kind == "protocol":
        snap.protocol = body
    elif kind == "metaData":
        snap.metadata = body
    elif kind == "add":
        snap.tombstones.pop(body["path"], None)
        snap.files[body["path"]] = body
    elif kind == "remove":
        snap.files.pop(body["path"], None)
        snap.tombstones[body["path"]] = body
    elif kind == "txn":
        snap.txns[body["appId"]] = body["version"]


def read_snapshot(root: str, version: Optional[int] = None) -> Snapshot:
    log = os.path.join(root, "_delta_log")
    names = sorted(os.listdir(log))
    commits = {int(m.group(1)): n for n in names if (m := _COMMIT.match(n))}
    checkpoints = {}
    for n in names:
        m = _UUID_JSON_CHECKPOINT.match(n)
        if m:
            checkpoints.setdefault(int(m.group(1)), []).append(n)
    if not commits:
        raise DeltaLogError(f"{log}: no commits")
    latest = max(commits)
    if version is None:
        version = latest
    if version > latest:
        raise DeltaLogError(f"version {version} > latest {latest}")
    usable = [v for v in checkpoints if v <= version]
    snap = Snapshot(version=-1, protocol={}, metadata={})
    start = 0
    if usable:
        cp = max(usable)
        for action in _actions(os.path.join(log, max(checkpoints[cp]))):
            (kind, body), = action.items()
            if kind == "checkpointMetadata":
                assert body["version"] == cp, (body, cp)
            elif kind == "sidecar":
                raise DeltaLogError("sidecar files (Parquet) are not supported")
            else:
                _apply(snap, action)
        start = cp + 1
    for v in range(start, version + 1):
        if v not in commits:
            raise DeltaLogError(f"missing commit {v}: a gap in the versions")
        seen = {"protocol": 0, "metaData": 0}
        actions = _actions(os.path.join(log, commits[v]))
        # Removes and adds of one commit: a remove and a re-add of a path leave it live.
        for action in sorted(actions, key=lambda a: 0 if "remove" in a else 1):
            (kind, body), = action.items()
            if kind in seen:
                seen[kind] += 1
                if seen[kind] > 1:
                    raise DeltaLogError(f"commit {v}: two {kind} actions")
            if kind == "commitInfo":
                snap.commit_infos[v] = body
            _apply(snap, action)
        if not snap.protocol or not snap.metadata:
            raise DeltaLogError(f"version {v}: no protocol or metaData yet")
    reader = snap.protocol.get("minReaderVersion")
    if reader == 3:
        unknown = set(snap.protocol.get("readerFeatures", [])) - KNOWN_READER_FEATURES
        if unknown:
            raise DeltaLogError(f"unknown reader features {unknown}")
        if snap.protocol.get("minWriterVersion") != 7:
            raise DeltaLogError("reader version 3 requires writer version 7")
    elif reader not in (1, 2):
        raise DeltaLogError(f"reader version {reader}")
    snap.version = version
    return snap


def versions(root: str) -> List[int]:
    return sorted(int(m.group(1)) for n in os.listdir(os.path.join(root, "_delta_log"))
                  if (m := _COMMIT.match(n)))
