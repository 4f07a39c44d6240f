"""The catalogues' entries as typed, frozen records (one per code), built from logdoctor/data/catalogues/*.json."""

from __future__ import annotations

from logdoctor.core.lean import dataclass


@dataclass(frozen=True, slots=True)
class CudaError:
    """A CUDA runtime (`cudaError_t`) or driver (`CUresult`) error code, with what it means for a server."""

    api: str  # "runtime" | "driver"
    code: int
    name: str  # cudaErrorSystemNotReady | CUDA_ERROR_SYSTEM_NOT_READY
    message: str | None  # cudaGetErrorString's text ("system not yet initialized")
    doc: str  # the header's doc comment
    cause: str | None  # a vocab cause, or None when where it happened decides (`family` says what kind)
    family: str | None
    scope: str  # host | build | code | config | memory | peer | none
    fatal: bool  # False: not an error, or shutdown debris
    phase: str | None  # the phase the code itself implies (stream capture -> graph_capture), else None
    next: str  # the next step


@dataclass(frozen=True, slots=True)
class NcclResult:
    """An `ncclResult_t` code."""

    code: int
    name: str  # ncclUnhandledCudaError
    message: str  # ncclGetErrorString's text
    cause: str | None
    family: str | None
    scope: str
    fatal: bool
    phase: str | None
    next: str


@dataclass(frozen=True, slots=True)
class Xid:
    """An NVIDIA Xid code: its class and whether it is, on its own, evidence against the GPU/host."""

    code: int
    name: str
    cls: str  # app | memory | bus | nvlink | firmware | driver | other
    host: bool
    action: str


@dataclass(frozen=True, slots=True)
class TorchFamily:
    """A family of PyTorch errors as they reach a log; `kind` advice lines are never an error themselves."""

    id: str
    pattern: str
    exception: str | None
    kind: str  # error | advice | resolve
    cause: str | None
    family: str | None
    meaning: str
