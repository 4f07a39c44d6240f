"""The reviewed, hand-written half of the catalogues: what each code means for an inference server (its cause in
logdoctor's vocabulary, whether it is fatal, what to do next), and the two catalogues that ship in no wheel (NVIDIA's
Xid table, PyTorch's error families).

The codes, names, messages and doc comments come from the vendors' own files (build.py reads them from the wheels);
this module only says what they mean here. A code with no row keeps cause None: the catalogue never guesses.

Cause values are logdoctor's causes (vocab.CAUSES) or None. `family` is a coarse kind for codes whose cause follows
from where they happened (an out-of-memory error is a weights, KV-pool, activation or capture OOM by phase).
`scope` says what it blames: host (the machine: driver, GPU, daemons — do not change flags), build (a binary,
library or driver that does not fit), code (a kernel or engine bug), config (the flags or environment),
memory (GPU memory), peer (another rank or process), none (not an error).
"""

from __future__ import annotations

# --------------------------------------------------------------------------------------------------------------------
# CUDA runtime (cudaError_t) and driver (CUresult) codes, by number: NVIDIA keeps the two enums' numbers aligned
# (cudaErrorIllegalAddress = CUDA_ERROR_ILLEGAL_ADDRESS = 700), so one row annotates both.
#   code: (cause, family, scope, fatal, phase, next step)

_FM = (
    "the host is not ready for CUDA work: on NVSwitch systems (HGX/DGX H100/H200/B200) the NVIDIA fabric manager must "
    "run before any CUDA context: `systemctl status nvidia-fabricmanager` (start/enable it; its version must equal the "
    "driver's), then `nvidia-smi -q | grep -i -A2 fabric`; do not change the server's flags"
)
_DRIVER_OLD = (
    "the installed NVIDIA driver is older than the CUDA runtime the engine was built with: upgrade the driver, or "
    "install the engine/torch build for the driver's CUDA version (`nvidia-smi` shows the driver's CUDA version)"
)
_KERNEL_BUG = (
    "a kernel faulted: rerun once with CUDA_LAUNCH_BLOCKING=1 to name it, try another attention backend, and check "
    "`journalctl -k | grep Xid` (13/31/43 = the application; 48/79/94/95 = the GPU)"
)
_LAUNCH_FAILURE = (
    "a kernel failed without detail: with a hardware Xid (48/79/94/95) next to it the GPU, otherwise usually a "
    "kernel bug; `journalctl -k | grep Xid`"
)
_CAPTURE = (
    "an operation is not allowed while a CUDA graph is being captured: run with graphs off (--disable-cuda-graph / "
    "--enforce-eager) to confirm, then report the capture-unsafe op to the engine"
)

CUDA: dict[int, tuple[str | None, str | None, str, bool, str | None, str]] = {
    0: (None, "success", "none", False, None, "not an error"),
    1: (
        None,
        "invalid_value",
        "code",
        True,
        None,
        "an API call got an invalid argument: an engine or kernel bug; report it with the traceback",
    ),
    2: (
        None,
        "out_of_memory",
        "memory",
        True,
        None,
        "GPU memory ran out; where it happened decides which limit to "
        "lower (weights: more GPUs or quantization; KV pool: a lower static memory fraction; capture: smaller batch "
        "sizes)",
    ),
    3: (
        None,
        "init",
        "host",
        True,
        None,
        "CUDA could not initialise: check `nvidia-smi`, that the driver is loaded and "
        "that the process did not fork after CUDA was initialised (multiprocessing start method 'spawn')",
    ),
    4: (None, "shutdown", "none", False, None, "the driver is shutting down: debris of an exit, not a cause"),
    34: (
        "kernel_arch_mismatch",
        "driver_missing",
        "build",
        True,
        None,
        "the CUDA driver found is a stub: the real "
        "libcuda is not visible (in a container: run it with the NVIDIA container runtime / --gpus)",
    ),
    35: ("kernel_arch_mismatch", "driver_too_old", "build", True, None, _DRIVER_OLD),
    36: ("kernel_arch_mismatch", "driver_too_old", "build", True, None, _DRIVER_OLD),
    46: (
        "hardware_fault",
        "device_unavailable",
        "host",
        True,
        None,
        "the GPU is busy or unavailable: another process "
        "holds it in exclusive-process mode, or the GPU is wedged (`nvidia-smi -q -d COMPUTE`, `nvidia-smi` for other "
        "processes; reset or drain the GPU if none holds it)",
    ),
    # a launch failure (53: in a prior launch, 719) says no more than "a kernel failed": an Xid beside it decides
    53: (None, "launch_failure", "code", True, None, _LAUNCH_FAILURE),
    98: (
        "kernel_arch_mismatch",
        "no_kernel",
        "build",
        True,
        None,
        "the kernel was not built for this GPU: install a "
        "build for its compute capability (TORCH_CUDA_ARCH_LIST) or choose another backend",
    ),
    100: (
        None,
        "no_device",
        "host",
        True,
        None,
        "no GPU is visible to the process: check CUDA_VISIBLE_DEVICES, the "
        "container's GPU access (--gpus / the device plugin) and `nvidia-smi`",
    ),
    101: (
        "config_invalid",
        "invalid_device",
        "config",
        True,
        None,
        "a device index is out of range: CUDA_VISIBLE_DEVICES lists fewer GPUs than the parallel sizes ask for",
    ),
    127: (None, "init", "host", True, None, "the CUDA runtime failed to start: check the driver (`nvidia-smi`)"),
    200: (
        "kernel_arch_mismatch",
        "no_kernel",
        "build",
        True,
        None,
        "the kernel image is invalid for this GPU: rebuild or reinstall the extension for this GPU's architecture",
    ),
    209: (
        "kernel_arch_mismatch",
        "no_kernel",
        "build",
        True,
        None,
        "no kernel was built for this GPU's compute "
        "capability: install a build that includes it (TORCH_CUDA_ARCH_LIST / a newer wheel) or choose a backend that "
        "supports the GPU",
    ),
    214: (
        "hardware_fault",
        "ecc",
        "host",
        True,
        None,
        "an uncorrectable ECC error: drain the GPU, `nvidia-smi -q -d "
        "ECC,ROW_REMAPPER`, reset it; replace it if it repeats",
    ),
    217: (
        "distributed_init",
        "peer_access",
        "host",
        True,
        None,
        "peer-to-peer access is not supported between these "
        "GPUs (no NVLink/P2P path): disable the custom all-reduce (--disable-custom-all-reduce) or set "
        "NCCL_P2P_DISABLE=1",
    ),
    218: (
        "kernel_arch_mismatch",
        "ptx",
        "build",
        True,
        None,
        "PTX JIT compilation failed: the driver cannot compile the "
        "shipped PTX for this GPU; use a build with native code for it or a newer driver",
    ),
    220: (
        "hardware_fault",
        "nvlink",
        "host",
        True,
        None,
        "an uncorrectable NVLink error: `nvidia-smi nvlink -e`, reset the GPUs, drain the host if it repeats",
    ),
    221: (
        "kernel_arch_mismatch",
        "ptx",
        "build",
        True,
        None,
        "the PTX JIT compiler library is missing: install the full driver (libnvidia-ptxjitcompiler)",
    ),
    222: (
        "kernel_arch_mismatch",
        "ptx",
        "build",
        True,
        None,
        "the PTX was built by a newer toolchain than the driver "
        "supports: upgrade the driver or use a build made for it",
    ),
    223: (
        "kernel_arch_mismatch",
        "ptx",
        "build",
        True,
        None,
        "PTX JIT is disabled (CUDA_DISABLE_PTX_JIT) and no native kernel fits this GPU",
    ),
    226: (
        "hardware_fault",
        "nvlink",
        "host",
        True,
        None,
        "a contained error: an invalid peer access over NVLink or a "
        "hardware error; check `journalctl -k | grep Xid` and `nvidia-smi nvlink -e`",
    ),
    400: (
        None,
        "invalid_handle",
        "code",
        True,
        None,
        "an invalid handle (often after an earlier error destroyed the "
        "context): look for the first CUDA error above it",
    ),
    600: (None, "not_ready", "none", False, None, "not an error: an asynchronous operation has not finished"),
    700: ("illegal_memory_access", "illegal_access", "code", True, None, _KERNEL_BUG),
    701: (
        "kernel_arch_mismatch",
        "launch_resources",
        "build",
        True,
        None,
        "a kernel asks for more registers or shared "
        "memory than this GPU has: a kernel/GPU mismatch; choose another backend or a build tuned for the GPU",
    ),
    704: (None, "peer_access", "none", False, None, "peer access was already enabled: harmless"),
    709: (
        None,
        "context_destroyed",
        "code",
        True,
        None,
        "the CUDA context was destroyed (usually after an earlier error): look for the first CUDA error above it",
    ),
    710: (
        "illegal_memory_access",
        "device_assert",
        "code",
        True,
        None,
        "a device-side assert fired (an index out of "
        "range: token ids beyond the vocabulary, a bad block table); rerun with CUDA_LAUNCH_BLOCKING=1",
    ),
    714: ("illegal_memory_access", "illegal_access", "code", True, None, _KERNEL_BUG),
    715: ("illegal_memory_access", "illegal_access", "code", True, None, _KERNEL_BUG),
    716: ("illegal_memory_access", "illegal_access", "code", True, None, _KERNEL_BUG),
    717: ("illegal_memory_access", "illegal_access", "code", True, None, _KERNEL_BUG),
    718: ("illegal_memory_access", "illegal_access", "code", True, None, _KERNEL_BUG),
    719: (None, "launch_failure", "code", True, None, _LAUNCH_FAILURE),
    802: ("hardware_fault", "host_not_ready", "host", True, None, _FM),
    803: (
        "kernel_arch_mismatch",
        "driver_mismatch",
        "build",
        True,
        None,
        "the user-space driver libraries do not match "
        "the kernel module (a driver upgrade without a reboot, or a container with another driver's libraries): "
        "reboot or align the versions",
    ),
    804: (
        "kernel_arch_mismatch",
        "forward_compat",
        "build",
        True,
        None,
        "the CUDA forward-compatibility package is "
        "loaded on a GPU that does not support it: remove cuda-compat from LD_LIBRARY_PATH or upgrade the driver",
    ),
    805: (
        None,
        "mps",
        "host",
        True,
        None,
        "the MPS control daemon is not reachable: check nvidia-cuda-mps-control on "
        "the host, or unset CUDA_MPS_PIPE_DIRECTORY",
    ),
    806: (None, "mps", "host", True, None, "the MPS server failed: restart nvidia-cuda-mps-control"),
    807: (None, "mps", "host", True, None, "the MPS server is not ready: restart nvidia-cuda-mps-control"),
    900: ("graph_capture_fault", "capture", "code", True, "graph_capture", _CAPTURE),
    901: ("graph_capture_fault", "capture", "code", True, "graph_capture", _CAPTURE),
    902: ("graph_capture_fault", "capture", "code", True, "graph_capture", _CAPTURE),
    903: ("graph_capture_fault", "capture", "code", True, "graph_capture", _CAPTURE),
    904: ("graph_capture_fault", "capture", "code", True, "graph_capture", _CAPTURE),
    905: ("graph_capture_fault", "capture", "code", True, "graph_capture", _CAPTURE),
    906: ("graph_capture_fault", "capture", "code", True, "graph_capture", _CAPTURE),
    907: ("graph_capture_fault", "capture", "code", True, "graph_capture", _CAPTURE),
    908: ("graph_capture_fault", "capture", "code", True, "graph_capture", _CAPTURE),
    999: (
        None,
        "unknown",
        "host",
        True,
        None,
        "CUDA reported an unknown error: after a good start usually the GPU or "
        "driver (`journalctl -k | grep Xid`, `nvidia-smi`); at start-up check the driver and the container's GPUs",
    ),
}
CUDA_DEFAULT = (None, None, "code", True, None, "look for the first CUDA error above it and where it was raised")

# --------------------------------------------------------------------------------------------------------------------
# NCCL results (ncclResult_t): code: (cause, family, scope, fatal, next step)

_NCCL_DEBUG = "rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) to see which step failed"
NCCL: dict[int, tuple[str | None, str, str, bool, str]] = {
    0: (None, "success", "none", False, "not an error"),
    1: (
        "distributed_init",
        "cuda",
        "host",
        True,
        "a CUDA call inside NCCL failed; the CUDA error in the NCCL WARN "
        "lines names it (an OOM, a peer-access or an illegal-address error decides the cause); " + _NCCL_DEBUG,
    ),
    2: (
        "distributed_init",
        "system",
        "host",
        True,
        "a system call failed (shared memory /dev/shm too small in "
        "containers, sockets, file limits): give the container --shm-size / --ipc=host; " + _NCCL_DEBUG,
    ),
    3: (
        "distributed_init",
        "internal",
        "host",
        True,
        "NCCL hit an internal error (often mismatched NCCL versions across ranks, or a network plugin); " + _NCCL_DEBUG,
    ),
    4: (
        "distributed_init",
        "invalid_argument",
        "config",
        True,
        "NCCL was called with an invalid argument (rank or world size wrong, two ranks on one GPU); " + _NCCL_DEBUG,
    ),
    5: (
        "distributed_init",
        "invalid_usage",
        "config",
        True,
        "NCCL was used wrongly (two ranks on one GPU: check "
        "CUDA_VISIBLE_DEVICES and the parallel sizes); " + _NCCL_DEBUG,
    ),
    6: (
        "distributed_init",
        "remote",
        "peer",
        True,
        "another rank exited or the network failed: the other ranks' logs hold the root cause",
    ),
    7: (None, "in_progress", "none", False, "not an error: a non-blocking NCCL call is still running"),
    8: (
        "distributed_init",
        "timeout",
        "peer",
        True,
        "a collective timed out: a rank is stuck or dead, or the network "
        "is partitioned; the slowest rank's log holds the cause",
    ),
}

# --------------------------------------------------------------------------------------------------------------------
# NVIDIA Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/): written from NVIDIA's public Xid documentation as
# this project knows it (code, short name, class, whether it is evidence against the host, NVIDIA's suggested action).
# Classes: app (the application's own fault: a bad address, a killed context; never hardware evidence on its own),
# memory (ECC / row remapping), bus (PCIe / fallen off the bus), nvlink, firmware (GSP / micro-controller), driver
# (driver or system software), other. `host`: the Xid by itself blames the GPU/host.
#   code: (name, class, host, action)
XID: dict[int, tuple[str, str, bool, str]] = {
    8: (
        "GPU stopped processing (channel idle timeout)",
        "app",
        False,
        "restart the application; if it repeats on one GPU only, run `dcgmi diag -r 2`",
    ),
    13: (
        "Graphics Engine Exception (illegal address, out-of-range access)",
        "app",
        False,
        "an application or kernel bug: fix the code, restart the application",
    ),
    31: (
        "GPU memory page fault (MMU fault)",
        "app",
        False,
        'an application or kernel bug (the CUDA side is "an '
        'illegal memory access was encountered"): restart the application',
    ),
    32: (
        "Invalid or corrupted push buffer stream",
        "driver",
        False,
        "driver or system memory/bus corruption: update the driver; check the PCIe link if it repeats",
    ),
    38: ("Driver firmware error", "driver", False, "update the driver; reset the GPU if it repeats"),
    43: (
        "GPU stopped processing (channel reset after a fault)",
        "app",
        False,
        "secondary to an application fault (13/31): restart the application",
    ),
    44: (
        "Graphics Engine fault during context switch",
        "driver",
        False,
        "restart the application; update the driver if it repeats",
    ),
    45: (
        "Preemptive cleanup, due to previous errors (process killed)",
        "app",
        False,
        "secondary: a process was torn down after an earlier error or a kill; look for the first Xid",
    ),
    48: ("Double Bit ECC Error", "memory", True, "drain the GPU, reset it (`nvidia-smi -r`); replace it if it repeats"),
    56: ("Display Engine error", "driver", False, "update the driver"),
    57: ("Error programming video memory interface", "memory", True, "reset the GPU; contact support if it repeats"),
    58: ("Unstable video memory interface detected", "memory", True, "reset the GPU; contact support if it repeats"),
    61: (
        "Internal micro-controller breakpoint/warning",
        "firmware",
        True,
        "reset the GPU; contact support if it repeats",
    ),
    62: ("Internal micro-controller halt", "firmware", True, "reset the GPU; contact support if it repeats"),
    63: (
        "ECC page retirement or row remapping recording event",
        "memory",
        True,
        "reset the GPU (or reboot) to apply the remap: `nvidia-smi -q -d PAGE_RETIREMENT,ROW_REMAPPER`",
    ),
    64: ("ECC page retirement or row remapper recording failure", "memory", True, "replace the GPU (RMA candidate)"),
    68: ("Video processor exception (NVDEC)", "driver", False, "restart the application; update the driver"),
    69: ("Graphics Engine class error", "app", False, "an application or driver bug: restart the application"),
    74: (
        "NVLink Error",
        "nvlink",
        True,
        "`nvidia-smi nvlink -e`; reset the GPUs; check cabling/NVSwitch if it repeats",
    ),
    79: ("GPU has fallen off the bus", "bus", True, "drain the node; reseat the GPU, check power and cooling; reboot"),
    92: ("High single-bit ECC error rate", "memory", True, "watch the GPU; replace it if the rate persists"),
    93: ("Non-fatal violation of provisioned InfoROM wear limit", "other", False, "no immediate action"),
    94: ("Contained ECC error", "memory", True, "restart the application; reset the GPU when convenient"),
    95: ("Uncontained ECC error", "memory", True, "reset the GPU now (every application on it was hit)"),
    109: ("Context Switch Timeout Error", "app", False, "restart the application; run `dcgmi diag` if it repeats"),
    110: ("Security Fault Error", "firmware", True, "reset the GPU; contact support"),
    119: ("GSP RPC Timeout", "firmware", True, "reset the GPU; update the driver"),
    120: ("GSP Error", "firmware", True, "reset the GPU; update the driver"),
    121: ("C2C Link corrected error", "nvlink", False, "no action unless it repeats"),
    140: ("Unrecovered ECC Error", "memory", True, "reset the GPU"),
    143: ("GPU Initialization Failure", "firmware", True, "reset the GPU or reboot; contact support if it repeats"),
    154: (
        "GPU Recovery Action Changed",
        "driver",
        True,
        "follow the recovery action it names (reset the GPU, reboot, or drain and replace)",
    ),
    155: ("NVLink SW Defined Error (link down)", "nvlink", True, "`nvidia-smi nvlink -s`; reset the GPUs / NVSwitch"),
}

# --------------------------------------------------------------------------------------------------------------------
# PyTorch's error families as they reach a server log. `kind`: error (a failure's own text), advice (a footer the
# runtime prints after an error: never the error itself), resolve (a wrapper whose CUDA / NCCL text the other
# catalogues resolve). `cause`: a vocab cause, or None when the wrapped code or the phase decides.
#   (id, pattern, exception, kind, cause, family, meaning)
TORCH: tuple[tuple[str, str, str | None, str, str | None, str | None, str], ...] = (
    (
        "oom",
        r"CUDA out of memory\. Tried to allocate|OutOfMemoryError",
        "torch.OutOfMemoryError",
        "error",
        None,
        "out_of_memory",
        "the caching allocator could not get GPU memory; the phase decides which budget",
    ),
    (
        "cuda-error",
        r"CUDA error: (?P<text>[^\n]+)",
        "torch.AcceleratorError / RuntimeError",
        "resolve",
        None,
        None,
        "a CUDA runtime error raised by torch's C10_CUDA_CHECK; the text after 'CUDA error:' is cudaGetErrorString",
    ),
    (
        "cuda-driver-error",
        r"CUDA driver error: (?P<text>[^\n]+)",
        "RuntimeError",
        "resolve",
        None,
        None,
        "a CUDA driver API error; the text is cuGetErrorString",
    ),
    (
        "cuda-init",
        r"Unexpected error from cudaGetDeviceCount\(\)|CUDA initialization: ",
        "RuntimeError / UserWarning",
        "resolve",
        None,
        None,
        "torch could not initialise CUDA; the 'Error N: text' it quotes is the CUDA code",
    ),
    (
        "no-driver",
        r"Found no NVIDIA driver on your system",
        "RuntimeError",
        "error",
        None,
        "driver_missing",
        "no NVIDIA driver is visible to the process (host or container set-up)",
    ),
    (
        "driver-too-old",
        r"The NVIDIA driver on your system is too old",
        "RuntimeError",
        "error",
        "kernel_arch_mismatch",
        "driver_too_old",
        "the driver is older than torch's CUDA build",
    ),
    (
        "no-gpus",
        r"No CUDA GPUs are available",
        "RuntimeError",
        "error",
        None,
        "no_device",
        "no GPU is visible (CUDA_VISIBLE_DEVICES, container GPU access, or a CUDA init error logged above)",
    ),
    (
        "nccl-error",
        r"NCCL error in: [^\n]*|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|"
        r"ncclInvalidUsage|ncclRemoteError|ncclInvalidArgument",
        "torch.distributed.DistBackendError",
        "resolve",
        "distributed_init",
        None,
        "an NCCL call failed; the result text names the ncclResult_t",
    ),
    (
        "dist-backend",
        r"DistBackendError",
        "torch.distributed.DistBackendError",
        "error",
        "distributed_init",
        None,
        "a collective backend (NCCL/gloo) failed",
    ),
    (
        "dist-network",
        r"DistNetworkError|DistStoreError",
        "torch.distributed.DistNetworkError",
        "error",
        "distributed_init",
        None,
        "the rendezvous store or the network between ranks failed",
    ),
    (
        "watchdog",
        r"Watchdog caught collective operation timeout",
        "torch.distributed (ProcessGroupNCCL)",
        "error",
        "distributed_init",
        "timeout",
        "a collective did not finish within the process group's timeout",
    ),
    (
        "launch-blocking",
        r"CUDA_LAUNCH_BLOCKING=1|CUDA kernel errors might be asynchronously reported",
        None,
        "advice",
        None,
        None,
        "torch's footer after a CUDA error: advice on how to debug, not an error",
    ),
    (
        "device-side-assertions",
        r"TORCH_USE_CUDA_DSA",
        None,
        "advice",
        None,
        None,
        "torch's footer: compile with device-side assertions to locate the kernel; not an error",
    ),
    (
        "nvrtc",
        r"nvrtc: error|NVRTC_ERROR",
        "RuntimeError",
        "error",
        "kernel_arch_mismatch",
        "jit",
        "a runtime-compiled kernel (NVRTC) failed to build for this GPU",
    ),
)
