"""Python traceback text and the CUDA / torch error messages engines surface."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class F:
    """One traceback frame. `path` is relative to site-packages unless it starts with '/' or '<'."""
    path: str
    line: int
    func: str
    code: str | None = None
    caret: str | None = None     # python >= 3.11 position markers under `code`


def frame_lines(frames: list[F], site: str, py_minor: int = 12) -> list[str]:
    out = []
    for f in frames:
        path = f.path if f.path.startswith(("/", "<")) else f"{site}/{f.path}"
        out.append(f'  File "{path}", line {f.line}, in {f.func}')
        if f.code is not None:
            out.append(f"    {f.code}")
            if f.caret and py_minor >= 11:
                out.append(f"    {f.caret}")
    return out


def traceback(frames: list[F], error: str, site: str, py_minor: int = 12) -> list[str]:
    return ["Traceback (most recent call last):", *frame_lines(frames, site, py_minor), *error.split("\n")]


DURING = ["", "During handling of the above exception, another exception occurred:", ""]
CAUSE = ["", "The above exception was the direct cause of the following exception:", ""]


def oom(torch_new: bool, alloc: float, total: float, free_mib: float, in_use: float, by_torch: float,
        reserved_mib: float, gpu_index: int = 0, other_proc: tuple[int, float] | None = None) -> str:
    cls = "torch.OutOfMemoryError" if torch_new else "torch.cuda.OutOfMemoryError"
    alloc_s = f"{alloc:.2f} GiB" if alloc >= 1 else f"{alloc * 1024:.2f} MiB"
    free_s = f"{free_mib / 1024:.2f} GiB" if free_mib >= 1024 else f"{free_mib:.2f} MiB"
    res_s = f"{reserved_mib / 1024:.2f} GiB" if reserved_mib >= 1024 else f"{reserved_mib:.2f} MiB"
    other = f"Process {other_proc[0]} has {other_proc[1]:.2f} GiB memory in use. " if other_proc else ""
    return (f"{cls}: CUDA out of memory. Tried to allocate {alloc_s}. GPU {gpu_index} has a total capacity of "
            f"{total:.2f} GiB of which {free_s} is free. {other}Including non-PyTorch memory, this process has "
            f"{in_use:.2f} GiB memory in use. Of the allocated memory {by_torch:.2f} GiB is allocated by PyTorch, "
            f"and {res_s} is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
            "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
            "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


CUDA_ENUM = {
    "an illegal memory access was encountered": "cudaErrorIllegalAddress",
    "unspecified launch failure": "cudaErrorLaunchFailure",
    "uncorrectable ECC error encountered": "cudaErrorECCUncorrectable",
    "operation not permitted when stream is capturing": "cudaErrorStreamCaptureUnsupported",
    "no kernel image is available for execution on the device": "cudaErrorNoKernelImageForDevice",
    "device-side assert triggered": "cudaErrorAssert",
    "unknown error": "cudaErrorUnknown",
    "all CUDA-capable devices are busy or unavailable": "cudaErrorDevicesUnavailable",
    "invalid device ordinal": "cudaErrorInvalidDevice",
    "peer access is not supported between these two devices": "cudaErrorPeerAccessUnsupported",
    "out of memory": "cudaErrorMemoryAllocation",
    "misaligned address": "cudaErrorMisalignedAddress",
    "uncorrectable NVLink error detected during the execution": "cudaErrorNvlinkUncorrectable",
}


def cuda_error(text: str, torch_new: bool, search_hint: bool | None = None) -> str:
    """`torch.AcceleratorError: CUDA error: ...` plus torch's standard footer."""
    cls = "torch.AcceleratorError" if torch_new else "RuntimeError"
    lines = [f"{cls}: CUDA error: {text}"]
    if search_hint if search_hint is not None else torch_new:
        lines.append(f"Search for `{CUDA_ENUM.get(text, 'cudaErrorUnknown')}' in "
                     "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.")
    lines += ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
              "below might be incorrect.",
              "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
              "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]
    return "\n".join(lines)
