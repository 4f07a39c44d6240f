"""A log line -> the CUDA / NCCL code it names, through the catalogues: `CUDA error: <message>`, `Error 802: ...`,
`cudaErrorX` / `CUDA_ERROR_X` names, `Cuda failure <file>:<line> '<message>'`, `Triton Error [CUDA]: <message>`, `NCCL error ...: <result text>`.

Why by the vendors' own text: torch, vLLM's csrc, flashinfer and NCCL all print cudaGetErrorString /
ncclGetErrorString, so one table of messages resolves every wrapper's wording to the code, and the code to its
cause. `GATE` is a cheap test run first; most lines fail it and never touch a catalogue.
"""

from __future__ import annotations

from functools import cache

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass
from logdoctor.matching.catalogues import load
from logdoctor.matching.catalogues.entries import CudaError, NcclResult

GATE = rxcache.compile(
    r"CUDA (?:driver )?[Ee]rror|Cuda (?:error|failure)|CUDA failure|cudaError|CUDA_ERROR_|Triton Error|"
    r"NCCL (?:[Ee]rror|WARN)|nccl\w*Error|Error \d{1,3}: "
)
_CUDA_TEXT = rxcache.compile(
    r"(?:CUDA (?:driver )?error|Cuda (?:error|failure)|CUDA failure|CUDA Error|Triton Error \[CUDA\])(?: \S+:\d+)?:? '?(?P<text>[^\n]+)"
)
_CODE = rxcache.compile(
    r"\b(?:Error|error|code|code=|err=|CUresult|cudaError_t)\s*[=:]?\s*(?P<code>\d{1,3})\b(?::\s*(?P<text>[^\n(]+))?"
)
_NAME = rxcache.compile(
    r"\b(?P<name>cudaError\w+|CUDA_ERROR_[A-Z_]+|cudaSuccess|nccl(?:[A-Z]\w+Error|InProgress|Timeout))\b"
)
_NCCL_TEXT = rxcache.compile(r"NCCL (?:error|Error)[^\n]*?(?:: |, )(?P<text>[a-z][^\n(]+)")


@dataclass(frozen=True, slots=True)
class Mention:
    """A code a line names: which catalogue, the entry, and the text that named it."""

    kind: str  # "cuda" | "nccl"
    entry: CudaError | NcclResult
    text: str


@cache
def _messages() -> tuple[tuple[str, CudaError], ...]:
    """(message, entry) longest first, so "unspecified launch failure in prior launch" beats its prefix."""
    idx = load.cuda_index()
    pairs = [(k[1], v) for k, v in idx.items() if isinstance(k, tuple)]
    return tuple(sorted(pairs, key=lambda kv: -len(kv[0])))


def _by_message(text: str) -> CudaError | None:
    low = text.strip().lower()
    for msg, e in _messages():
        if low.startswith(msg):
            return e
    return None


def _nccl_by_text(text: str) -> NcclResult | None:
    low = text.strip().lower()
    for k, e in load.nccl_index().items():
        if isinstance(k, tuple) and k[1] and e.code and low.startswith(k[1]):
            return e
    return None


def cuda_mention(line: str) -> Mention | None:
    """The CUDA error code a line names, or None."""
    m = _NAME.search(line)
    if m and not m.group("name").startswith("nccl"):
        e = load.cuda_index().get(m.group("name"))
        if e is not None:
            return Mention("cuda", e, m.group(0))
    for m in _CUDA_TEXT.finditer(line):
        e = _by_message(m.group("text"))
        if e is not None:
            return Mention("cuda", e, m.group(0))
    if "cuda" in line.lower():
        for m in _CODE.finditer(line):
            e = load.cuda_index().get(int(m.group("code")))
            # a number alone is a weak mention: it must come with the code's own message when one is printed
            if e is not None and (m.group("text") is None or _by_message(m.group("text")) is e):
                if m.group("text") is not None or "Error " in m.group(0):
                    return Mention("cuda", e, m.group(0))
    return None


def nccl_mention(line: str) -> Mention | None:
    """The NCCL result a line names, or None."""
    m = _NAME.search(line)
    if m and m.group("name").startswith("nccl"):
        e = load.nccl_index().get(m.group("name"))
        if e is not None:
            return Mention("nccl", e, m.group(0))
    for m in _NCCL_TEXT.finditer(line):
        e = _nccl_by_text(m.group("text"))
        if e is not None:
            return Mention("nccl", e, m.group(0))
    return None


def mention(line: str) -> Mention | None:
    """The CUDA code, else the NCCL result, a line names (a NCCL error quoting its CUDA error is the CUDA error)."""
    if not GATE.search(line):
        return None
    return cuda_mention(line) or nccl_mention(line)
