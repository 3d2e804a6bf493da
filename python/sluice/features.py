"""The feature schema of records given as dicts (the values `sluice.make_example` encodes):
name -> (type, values per record), types as a table's schema spells them ("bytes", "int64",
"float"), -1 values when the count varies. A feature seen only as an empty list has no type
yet (None); it agrees with every type."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

Spec = Tuple[Optional[str], int]
Schema = Dict[str, Spec]

_BYTES_LIKE = (bytes, bytearray, str)
_KINDS = {"i": "int64", "u": "int64", "b": "int64", "f": "float", "S": "bytes", "U": "bytes"}


def value_spec(name: str, value: Any) -> Spec:
    """The (type, count) make_example gives `value`; TypeError for a value it cannot encode."""
    if isinstance(value, _BYTES_LIKE):
        return "bytes", 1
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return "int64", 1
    if isinstance(value, (float, np.floating)):
        return "float", 1
    try:
        array = np.asarray(value)
    except ValueError as e:  # ragged nesting
        raise TypeError(f"feature '{name}' has an unsupported value {value!r:.80}: {e}") from None
    kind = array.dtype.kind
    if kind == "O" and all(isinstance(v, _BYTES_LIKE) for v in array.reshape(-1)):
        kind = "S"
    if kind not in _KINDS:
        raise TypeError(f"feature '{name}' has an unsupported value {value!r:.80}")
    if array.size == 0 and not isinstance(value, np.ndarray):
        return None, 0  # [] : no type yet
    return _KINDS[kind], int(array.size)


def record_schema(record: Mapping[str, Any], number: int) -> Schema:
    try:
        return {str(name): value_spec(str(name), value) for name, value in record.items()}
    except TypeError as e:
        raise TypeError(f"record {number}: {e}") from None


def check_schema(have: Schema, got: Schema, *,
                 counts: bool) -> Optional[Tuple[str, Optional[Spec], Optional[Spec]]]:
    """The first feature where `got` disagrees with `have`: (name, got's spec, have's spec),
    None for an absent feature. Types must be equal (or unknown); with `counts`, a fixed
    count in `have` must be `got`'s too."""
    for name in sorted(set(have) | set(got)):
        a, b = have.get(name), got.get(name)
        if a is None or b is None:
            return name, b, a
        if a[0] is not None and b[0] is not None and a[0] != b[0]:
            return name, b, a
        if counts and a[1] != -1 and b[1] != a[1]:
            return name, b, a
    return None


def merge_schema(a: Schema, b: Schema) -> Schema:
    """Two schemas that check_schema(counts=False) accepts, as one: a count that differs
    varies (-1)."""
    return {name: (spec[0] or b[name][0], spec[1] if spec[1] == b[name][1] else -1)
            for name, spec in a.items()}


def describe(spec: Optional[Spec]) -> str:
    if spec is None:
        return "absent"
    kind, count = spec
    if kind is None:
        return "an empty list"
    if count == -1:
        return f"{kind} (a varying number of values)"
    return f"{kind} ({count} value{'' if count == 1 else 's'} per record)"
