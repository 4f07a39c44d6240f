"""The one table of per-engine, per-version memory overheads the budget needs, each marked measured or assumed.

Why one table: the engines' memory math changes between releases and the constants (CUDA context, allocator and
NCCL buffers, activation peaks) are facts about a GPU stack, not about a model. Keeping them here, each with where it
came from, lets the lead replace an `assumed` row with a `measured` one after a run on real hardware without
touching the arithmetic (docs/preflight.md "Calibrating"). A row applies from `since` (inclusive) until the next row
of the same engine and name."""

from __future__ import annotations

from dataclasses import dataclass

from logdoctor.engines.levers import version_tuple

GIB = 1 << 30


@dataclass(frozen=True)
class Overhead:
    engine: str  # "sglang" | "vllm" | "any"
    name: str
    value: float  # bytes, or a plain factor (see unit)
    unit: str  # "GiB" | "GiB per token" | "GiB per rank" | "factor"
    status: str  # "measured" | "assumed"
    source: str
    since: str | None = None  # first engine version it applies to (None: every version)


TABLE: tuple[Overhead, ...] = (
    Overhead(
        "any",
        "driver_reserved",
        0.60,
        "GiB",
        "measured",
        "H200: nvidia-smi 143771 MiB (140.40 GiB) vs torch total_memory 139.80 GiB (docs/gpu-real.md); "
        "memory the driver keeps that no process can allocate",
    ),
    Overhead(
        "sglang",
        "preload_context",
        1.15,
        "GiB",
        "measured",
        "H200, TP1, torch 2.11/CUDA 13: torch total 139.80 GiB - 'Load weight begin. avail mem=138.65 GB' "
        "(fixtures/journals/gpu-real/healthy): CUDA context + allocator + NCCL group of one; "
        "tools/preflight_measure.py read 1.245 GiB with cuBLAS initialised too",
    ),
    Overhead(
        "sglang",
        "preload_per_extra_rank",
        0.12,
        "GiB per rank",
        "assumed",
        "NCCL / custom all-reduce buffers per additional TP rank; fixture logs show 0.2-0.4 GB lower "
        "'Load weight begin' readings at TP 2-8 than at TP 1",
    ),
    Overhead(
        "sglang",
        "graph_per_bs",
        2.24 / 256,
        "GiB per batch size",
        "measured",
        "H200, Llama-3.1-8B shapes: 'Capture cuda graph end ... mem usage=2.24 GB' for 36 graphs up to bs 256 "
        "(gpu-real/healthy); scaled by hidden size / 4096 for other models (assumed)",
    ),
    Overhead(
        "any",
        "activation_bytes_per_token_hidden",
        34.0,
        "bytes per token per hidden unit",
        "assumed",
        "peak of a forward pass over a prefill chunk: about 17 bf16 buffers of hidden width (residual, norms, "
        "q/k/v/o, attention output); the MLP's gate/up/down buffers are added from the MLP width",
    ),
    Overhead(
        "vllm",
        "non_torch",
        0.70,
        "GiB",
        "measured",
        "H200, driver 580.159.04, torch 2.11.0+cu130 (tools/preflight_measure.py, 3 runs alike): memory outside "
        "the torch allocator is 0.514 GiB after the CUDA context and 1.214 GiB after cuBLAS and a one-rank NCCL "
        "group; vLLM snapshots after the context, so its non-torch increase is the 0.70 GiB difference. "
        "tools/data/gpu-overheads-h200-torch2.11.json (the lead's run) reads 0.63 GiB for the same two parts "
        "(cuBLAS 162 MiB + one-rank NCCL 484 MiB)",
    ),
    Overhead(
        "vllm",
        "non_torch_per_extra_rank",
        0.25,
        "GiB per rank",
        "assumed",
        "NCCL and custom all-reduce IPC buffers per additional rank",
    ),
    Overhead(
        "vllm",
        "sampler_per_seq_per_vocab",
        8.0,
        "bytes per seq per vocab entry",
        "assumed",
        "the sampler warm-up holds fp32 logits and probabilities for max_num_seqs requests",
    ),
    Overhead(
        "vllm",
        "cudagraph_per_capture_size",
        0.0035,
        "GiB per capture size",
        "assumed",
        "'Estimated CUDA graph memory' is subtracted from the KV budget since 0.21 (graph pools of the "
        "capture sizes up to max_cudagraph_capture_size, 512 by default: about 1.8 GiB)",
    ),
    Overhead(
        "any",
        "risky_margin",
        0.05,
        "factor",
        "assumed",
        "a start is 'risky' when the pool exceeds the need by less than 5 % of the memory it is carved from",
    ),
)


def get(engine: str, name: str, version: str | None = None) -> Overhead:
    """The row for (engine, name) in force at `version` (latest when unknown); falls back to engine 'any'."""
    vt = version_tuple(version)
    rows = [r for r in TABLE if r.name == name and r.engine in (engine, "any")]
    rows.sort(key=lambda r: (r.engine == "any", version_tuple(r.since) or ()))
    chosen = None
    for r in rows:
        if r.engine == "any" and chosen is not None:
            break
        lo = version_tuple(r.since)
        if lo is None or vt is None or vt >= lo:
            chosen = r
    if chosen is None:
        raise KeyError(f"no overhead {name!r} for {engine}")
    return chosen


def value(engine: str, name: str, version: str | None = None) -> float:
    """The constant in bytes when its unit is GiB (or GiB per something), else as stated."""
    r = get(engine, name, version)
    return r.value * GIB if r.unit.startswith("GiB") else r.value
