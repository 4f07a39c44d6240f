"""The project's closed vocabularies, defined once: causes, phases, outcomes, fix operations, Xid classes and the
small string vocabularies that travel between stages (event kinds, marker edges, transports, block kinds).

Why: these lists used to be re-typed in the loader, the markers, the classifier features, the renderers, both JSON
schemas and the tests; a cause added in one place silently missed the others. Everything imports them from here;
`tests/test_vocab.py` checks the schemas (and the TAXONOMY-style docs) against them. Leaf module: imports nothing
from logdoctor, so any layer may use it.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final, Literal, get_args

# --------------------------------------------------------------------------------------------------------------------
# causes (shared/corpus/TAXONOMY.md): name -> one-line description (also the classifier's title for a cause)

Cause = Literal[
    "kv_cache_oom",
    "weights_oom",
    "activation_oom",
    "graph_capture_fault",
    "hardware_fault",
    "distributed_init",
    "port_in_use",
    "model_load_error",
    "config_invalid",
    "kernel_arch_mismatch",
    "illegal_memory_access",
    "host_oom",
    "startup_timeout",
]

CAUSE_TITLES: Final = MappingProxyType(
    {
        "kv_cache_oom": "the KV cache / memory pool did not fit in the memory left after the weights",
        "weights_oom": "the model weights did not fit in GPU memory",
        "activation_oom": "GPU memory ran out in a forward pass (profile / warm-up / prefill)",
        "graph_capture_fault": "CUDA-graph capture failed",
        "hardware_fault": "a GPU, driver or interconnect fault on this host",
        "distributed_init": "distributed initialisation (NCCL / gloo / torch.distributed) failed",
        "port_in_use": "a port the server needs is already in use",
        "model_load_error": "the model could not be loaded (path, config, weights or tokenizer)",
        "config_invalid": "the engine rejected an argument value",
        "kernel_arch_mismatch": "a build / architecture mismatch: a kernel, library or driver does not fit this GPU",
        "illegal_memory_access": "a device-side crash (illegal memory access / assert) in a kernel",
        "host_oom": "host RAM ran out: the kernel's OOM killer ended the process",
        "startup_timeout": "the service was stopped for taking too long to start",
    }
)
CAUSES: Final[tuple[str, ...]] = get_args(Cause)
UNKNOWN: Final = "unknown"  # the verdict when no cause can be established (not a rule's cause)

# --------------------------------------------------------------------------------------------------------------------
# start-up phases, in order (a later phase means the start got further); "unknown" is not a marker phase

Phase = Literal[
    "launch", "dist_init", "weight_load", "kernel_init", "memory_pool", "graph_capture", "warmup", "serving"
]
PhaseOrUnknown = Literal[Phase, "unknown"]

PHASE_WORDS: Final = MappingProxyType(
    {
        "launch": "at launch",
        "dist_init": "during distributed init",
        "weight_load": "while loading weights",
        "kernel_init": "during kernel/backend init",
        "memory_pool": "while sizing the memory pool",
        "graph_capture": "during CUDA-graph capture",
        "warmup": "during warm-up",
        "serving": "while serving",
        "unknown": "in an unknown phase",
    }
)
PHASES: Final[tuple[str, ...]] = get_args(Phase)
PHASE_INDEX: Final = MappingProxyType({p: i for i, p in enumerate(PHASES)})
PHASES_OR_UNKNOWN: Final[tuple[str, ...]] = (*PHASES, UNKNOWN)

# --------------------------------------------------------------------------------------------------------------------
# outcomes of a diagnosis: name -> (exit code of `explain`, description). design.md's documented exit codes.

Outcome = Literal["healthy", "known", "unknown"]
OUTCOMES: Final = MappingProxyType(
    {
        "healthy": (0, "no failure in the window"),
        "known": (1, "a failure with a named cause"),
        "unknown": (3, "a failure whose cause cannot be established from the log"),
    }
)

# outcomes of one attempt of the service in the window (JSON attempts[].outcome, attempts.outcome)
AttemptOutcome = Literal["failed", "ready", "in_progress", "stopped"]
ATTEMPT_OUTCOMES: Final[tuple[str, ...]] = get_args(AttemptOutcome)

# --------------------------------------------------------------------------------------------------------------------
# fix operations a rule may ask of a lever

FixOp = Literal["set", "raise", "lower", "halve", "double", "enable", "disable"]
FIX_OPS: Final = MappingProxyType(
    {
        "set": "set the lever to the rule's value (or say it must change, when no value is given)",
        "raise": "raise the lever by its step (fractions add, ints grow by the lever's growth), up to `max`",
        "lower": "lower the lever by its step, down to `min`",
        "halve": "halve the lever's current value, down to `min`",
        "double": "double the lever's current value, up to `max`",
        "enable": "turn a boolean lever on",
        "disable": "turn a boolean lever off",
    }
)
OPS: Final[tuple[str, ...]] = get_args(FixOp)

# --------------------------------------------------------------------------------------------------------------------
# rule precedence tiers, highest first (docs/rules.md "Precedence"; the points each is worth: matching/decide.py)

Tier = Literal["system", "specific", "inferred", "generic", "fallback"]
TIERS: Final = MappingProxyType(
    {
        "system": "the kernel, the GPU or systemd recorded the cause (Xid, OOM killer, ECC, bus loss, start timeout): "
        "whatever the engine printed after it is a consequence",
        "specific": "the failing component's own error names this mechanism: the engine's own check, CUDA's or a "
        "library's specific error, the inner error a wrapper names",
        "inferred": "a generic error (CUDA OOM, illegal address, SIGKILL, an ImportError, a divisibility assert) whose "
        "cause follows from where or when it happened: frame, phase, flags, ranks, earlier attempts",
        "generic": "evidence that is often a consequence or an echo of another failure (an NCCL error or timeout, a refused "
        "connection, Errno 98 alone, a ValueError in argument checks, an unexplained SIGKILL)",
        "fallback": "a catch-all: yields to any rule of another tier that fires on the same attempt",
    }
)
TIER_NAMES: Final[tuple[str, ...]] = get_args(Tier)

# --------------------------------------------------------------------------------------------------------------------
# NVIDIA Xid classes: the Xid catalogue (logdoctor/data/catalogues/xid.json, built by tools/catalogues/build.py) is
# the source; these literal sets keep this module import-free and tests/test_catalogues.py fails when they differ
# (hardware = the catalogue's host evidence, app = its application class: never hardware evidence on its own)

XidClass = Literal["hardware", "app"]
XID_CLASSES: Final = MappingProxyType(
    {
        "hardware": (
            frozenset({48, 57, 58, 61, 62, 63, 64, 74, 79, 92, 94, 95, 110, 119, 120, 140, 143, 154, 155}),
            "GPU, driver or interconnect faults: the host, not the configuration",
        ),
        "app": (
            frozenset({8, 13, 31, 43, 45, 69, 109}),
            "usually the application's own bug (bad address, killed context)",
        ),
    }
)
XID_HARDWARE: Final = XID_CLASSES["hardware"][0]
XID_APP: Final = XID_CLASSES["app"][0]


def xid_class(code: int) -> str:
    """'hardware' | 'app' | 'other' for an Xid code."""
    return "hardware" if code in XID_HARDWARE else "app" if code in XID_APP else "other"


# --------------------------------------------------------------------------------------------------------------------
# string vocabularies between stages

EventKind = Literal["marker", "death", "systemd", "kernel"]
EVENT_KINDS: Final = MappingProxyType(
    {
        "marker": "an engine phase marker line (engines/<engine>.py)",
        "death": "a line saying a process died (engine death marker, shell 'Killed', argparse error)",
        "systemd": "systemd's verdict on the unit (exit, result, timeout, oom, operator stop)",
        "kernel": "a kernel line about the GPU or memory (Xid, NVRM, OOM killer)",
    }
)

Edge = Literal["begin", "end", "point", "ready", "config", "version", "death"]
EDGES: Final = MappingProxyType(
    {
        "begin": "the phase begins at this line",
        "end": "the phase ends here (`then` names the phase that starts after it)",
        "point": "a line inside the phase",
        "ready": "the server is ready to serve",
        "config": "the engine's config dump",
        "version": "the engine's version banner",
        "death": "a process died",
    }
)

Transport = Literal["service", "kernel", "systemd", "meta"]
TRANSPORTS: Final = MappingProxyType(
    {
        "service": "the service's own stdout/stderr (or a raw paste)",
        "kernel": "the kernel ring buffer (journalctl -k, _TRANSPORT=kernel): Xid, OOM killer",
        "systemd": "PID 1 / systemd's own lines about the unit (Started, Main process exited, ...)",
        "meta": "journalctl's own lines: '-- Boot ... --', '-- No entries --'",
    }
)

PhaseSource = Literal["markers", "frames", "none"]
PHASE_SOURCES: Final = MappingProxyType(
    {
        "markers": "the engine's phase markers placed the failure",
        "frames": "no marker: the traceback frames (or error wording) placed it",
        "none": "nothing places it; the winning rule's first phase may",
    }
)

BlockKind = Literal["traceback", "abort"]
