"""The classifier's weight table packed for start-up: the model's 1 721 rows of 13 floats as one block of doubles.

Why: the marshal copy of the model (matching/cache.py `cached_json`) held the rows as nested float lists, ~22 000
objects that took 5-10 ms to load on every `explain`; one bytes block loads in well under 1 ms, and a run only
unpacks the rows of the feature buckets its log has (~100). The values are the same doubles (array('d') round-trips
a float exactly), so the classifier's answers are unchanged.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping

_D = array("d").itemsize


class PackedRows(Mapping[int, list[float]]):
    """Read-only {bucket: row} over packed doubles; a row is unpacked when asked for."""

    __slots__ = ("_index", "_packed", "_k")

    def __init__(self, buckets: list[int], packed: bytes, k: int):
        if len(packed) != len(buckets) * k * _D:
            raise ValueError("packed weights do not match the buckets")
        self._index = {b: i for i, b in enumerate(buckets)}
        self._packed = memoryview(packed)
        self._k = k

    def __getitem__(self, b: int) -> list[float]:
        i = self._index[b]
        w = self._k * _D
        row = array("d")
        row.frombytes(self._packed[i * w : (i + 1) * w])
        return row.tolist()

    def __contains__(self, b: object) -> bool:
        return b in self._index

    def __iter__(self) -> Iterator[int]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def pack(data: object) -> object:
    """The parsed model with "coef" as packed doubles (anything else, or ragged rows, is returned as it was)."""
    if not isinstance(data, dict) or not isinstance(data.get("coef"), list) or not isinstance(data.get("classes"), list):
        return data
    k = len(data["classes"])
    rows = data["coef"]
    if len(rows) != len(data.get("buckets") or ()) or any(not isinstance(r, list) or len(r) != k for r in rows):
        return data
    flat = array("d", [float(x) for r in rows for x in r])
    return {**data, "coef": flat.tobytes()}


def weights(data: dict, k: int) -> Mapping[int, list[float]]:
    coef = data["coef"]
    if isinstance(coef, bytes):
        return PackedRows(list(data["buckets"]), coef, k)
    return dict(zip(data["buckets"], coef))
