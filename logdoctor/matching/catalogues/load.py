"""Lazy loading: each catalogue file is read on its first lookup, once per process, so `explain` on a log with no
CUDA/NCCL/Xid text never opens one (docs/performance.md)."""

from __future__ import annotations

import json
from functools import cache

from logdoctor.core.paths import PACKAGE
from logdoctor.matching.catalogues.entries import CudaError, NcclResult, TorchFamily, Xid

DATA = PACKAGE / "data" / "catalogues"


def _entries(name: str) -> list[dict]:
    with open(DATA / f"{name}.json", encoding="utf-8") as fh:
        return list(json.load(fh)["entries"])


@cache
def cuda() -> tuple[CudaError, ...]:
    return tuple(CudaError(**e) for e in _entries("cuda"))


@cache
def nccl() -> tuple[NcclResult, ...]:
    return tuple(NcclResult(**e) for e in _entries("nccl"))


@cache
def xids() -> dict[int, Xid]:
    return {
        e["code"]: Xid(code=e["code"], name=e["name"], cls=e["class"], host=e["host"], action=e["action"])
        for e in _entries("xid")
    }


@cache
def torch() -> tuple[TorchFamily, ...]:
    return tuple(TorchFamily(**e) for e in _entries("torch"))


@cache
def cuda_index() -> dict[object, CudaError]:
    """Lookups by number (the runtime entry), by enum name (either API) and by message text (lower case)."""
    idx: dict[object, CudaError] = {}
    for e in cuda():
        idx.setdefault(e.name, e)
        if e.api == "runtime":
            idx[e.code] = e
            if e.message:
                idx.setdefault(("msg", e.message.lower().rstrip(".")), e)
    for e in cuda():  # a driver-only number (no runtime twin) is still found by number
        idx.setdefault(e.code, e)
    return idx


@cache
def nccl_index() -> dict[object, NcclResult]:
    idx: dict[object, NcclResult] = {}
    for e in nccl():
        idx[e.code] = e
        idx[e.name] = e
        idx[("msg", e.message.split(" (")[0].lower())] = e
    return idx
