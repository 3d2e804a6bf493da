"""Datasets the Python tests share. Records are tf.train.Example bytes made by
sluice.make_example, or plain decimal ids ("17") that a Python map turns into features."""
import numpy as np

import sluice


def id_records(shards):
    """`shards[i]` records in shard i; record payload = its global id in decimal."""
    out, next_id = [], 0
    for n in shards:
        out.append([str(next_id + i).encode() for i in range(n)])
        next_id += n
    return out


def parse_id(element):
    """A Python map: {record: b"17"} -> {id: 17, vec: [17, 17, 17] as float32}."""
    i = int(element["record"])
    return {"id": i, "vec": np.full(3, i, np.float32)}


ID_FEATURES = {"id": "int64", "vec": "float32[3]"}


def ids_dataset(shards=(40, 25, 35), **map_options):
    return sluice.from_records(id_records(shards)).map(parse_id, output=ID_FEATURES,
                                                       **map_options)


def example_records(n, start=0):
    """tf.train.Examples with an int64 label, a float vector, bytes and a varying list."""
    return [sluice.make_example({
        "label": i,
        "vec": np.arange(3, dtype=np.float32) + i,
        "name": b"item-%d" % i,
        "tokens": np.arange(i % 5 + 1),
    }) for i in range(start, start + n)]


def ids_of(batches):
    """All ids of a list of batches, in order."""
    return [int(i) for b in batches for i in np.atleast_1d(b["id"])]
