"""The feature schema of records given as dicts, as `_sluice._make_example_and_schema`
reports what it encoded: name -> (type, values per record), types as a table's schema spells
them ("bytes", "int64", "float"), -1 values when the count varies. A feature seen only as an
empty list has no type yet (None); it agrees with every type."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

Spec = Tuple[Optional[str], int]
Schema = Dict[str, Spec]


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


def conflict_message(subject: str, conflict: Tuple[str, Optional[Spec], Optional[Spec]],
                     other: str) -> str:
    """"record 3: feature 'tokens' is absent here, int64 (...) in the table's features"."""
    name, got, have = conflict
    return f"{subject}: feature '{name}' is {describe(got)} here, {describe(have)} in {other}"


class RecordChecker:
    """Checks the dict records of one partition as they are encoded (`check` takes what
    `_make_example_and_schema` reports): the same features with the same types in every
    record, and those of `declared` (with its fixed counts) when given. `schema()` is what
    the records had. Records of one schema cost two dict comparisons."""

    def __init__(self, declared: Optional[Schema]):
        self._declared = declared
        self._fixed = {n: c for n, (_, c) in (declared or {}).items() if c != -1}
        self._types: Optional[Dict[str, Optional[str]]] = None  # merged (None: only [] seen)
        self._counts: Dict[str, int] = {}                       # merged (-1: varies)
        self._last_types: Optional[dict] = None
        self._last_counts: Optional[dict] = None

    def check(self, number: int, types: dict, counts: dict) -> None:
        if types != self._last_types:
            got = {n: (t, counts[n]) for n, t in types.items()}
            if self._declared is not None:
                self._refuse(check_schema(self._declared, got, counts=False), number,
                             "the table's features")
            if self._types is None:
                self._types, self._counts = dict(types), dict(counts)
            else:
                have = {n: (t, self._counts[n]) for n, t in self._types.items()}
                self._refuse(check_schema(have, got, counts=False), number,
                             "earlier records")
                for n, t in types.items():
                    self._types[n] = self._types[n] or t
            self._last_types = types
        if counts != self._last_counts:
            for n, c in counts.items():
                if self._counts[n] != c:
                    self._counts[n] = -1
                if n in self._fixed and self._fixed[n] != c:
                    self._refuse((n, (types[n], c), self._declared[n]), number,
                                 "the table's features")
            self._last_counts = counts

    def schema(self) -> Optional[Schema]:
        if self._types is None:
            return None
        return {n: (t, self._counts[n]) for n, t in self._types.items()}

    @staticmethod
    def _refuse(conflict, number: int, other: str) -> None:
        if conflict:
            from ._sluice import InvalidArgumentError
            raise InvalidArgumentError(conflict_message(f"record {number}", conflict, other))
