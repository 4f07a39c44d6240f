"""Public catalogues as data: CUDA runtime/driver error codes, NCCL results, NVIDIA Xids and PyTorch's error
families, each code with its meaning, logdoctor cause and next step (built by tools/catalogues/build.py from the
vendors' wheels and NVIDIA's documentation; logdoctor/data/catalogues/*.json).

Lookups load their file on first use (nothing is read on explain's path until a line needs it):

    cuda_error(802) / cuda_error("cudaErrorSystemNotReady") / cuda_error("CUDA_ERROR_SYSTEM_NOT_READY")
    nccl_result(1) / nccl_result("ncclUnhandledCudaError")
    xid(31).cls == "app"
    mention("CUDA error: an illegal memory access was encountered").entry.cause == "illegal_memory_access"
    is_advice("For debugging consider passing CUDA_LAUNCH_BLOCKING=1")
"""

from __future__ import annotations

import re
from functools import cache

from logdoctor.core import rxcache
from logdoctor.matching.catalogues import load
from logdoctor.matching.catalogues.entries import CudaError, NcclResult, TorchFamily, Xid
from logdoctor.matching.catalogues.resolve import Mention, mention

__all__ = [
    "CudaError",
    "Mention",
    "NcclResult",
    "TorchFamily",
    "Xid",
    "cuda_error",
    "is_advice",
    "mention",
    "nccl_result",
    "torch_family",
    "xid",
    "xid_codes",
]


def cuda_error(code_or_name: int | str) -> CudaError | None:
    """The runtime entry for a number (the driver's where the runtime has none), or the entry of either enum name,
    or the entry whose message this is ("an illegal memory access was encountered")."""
    idx = load.cuda_index()
    if isinstance(code_or_name, str) and code_or_name.strip().lstrip("-").isdigit():
        code_or_name = int(code_or_name)
    if isinstance(code_or_name, int):
        return idx.get(code_or_name)
    return idx.get(code_or_name) or idx.get(("msg", code_or_name.strip().lower().rstrip(".")))


def nccl_result(code_or_name: int | str) -> NcclResult | None:
    """An ncclResult_t by number, name (ncclSystemError) or message ("unhandled system error")."""
    idx = load.nccl_index()
    if isinstance(code_or_name, str) and code_or_name.strip().isdigit():
        code_or_name = int(code_or_name)
    if isinstance(code_or_name, int):
        return idx.get(code_or_name)
    return idx.get(code_or_name) or idx.get(("msg", code_or_name.split(" (")[0].strip().lower()))


def xid(code: int) -> Xid | None:
    """The Xid catalogue's entry for a code, or None for a code it does not list."""
    return load.xids().get(int(code))


def xid_codes(*, host: bool | None = None, cls: str | None = None) -> frozenset[int]:
    """Xid codes that are (or are not) host evidence, or of one class: the source of vocab.XID_CLASSES."""
    return frozenset(
        c for c, x in load.xids().items() if (host is None or x.host == host) and (cls is None or x.cls == cls)
    )


@cache
def _torch_rx() -> tuple[tuple[re.Pattern[str], TorchFamily], ...]:
    return tuple((rxcache.compile(f.pattern), f) for f in load.torch())


def torch_family(text: str) -> TorchFamily | None:
    """The first PyTorch error family whose pattern the text holds (error and resolve kinds before advice)."""
    hits = [f for rx, f in _torch_rx() if rx.search(text)]
    hits.sort(key=lambda f: f.kind == "advice")
    return hits[0] if hits else None


_ERROR_HEAD = rxcache.compile(r"\w(?:Error|Exception)\b|\berror:|\bError:|\bfailed\b|\bfailure\b", re.I)


def is_advice(text: str) -> bool:
    """The line is advice the runtime prints after an error (set CUDA_LAUNCH_BLOCKING=1, compile with
    TORCH_USE_CUDA_DSA), not an error: no error head precedes the advice in the same line."""
    if "CUDA" not in text:
        return False
    for rx, f in _torch_rx():
        if f.kind != "advice":
            continue
        m = rx.search(text)
        if m and not _ERROR_HEAD.search(text[: m.start()]):
            return True
    return False
