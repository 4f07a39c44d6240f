"""The start-up phase a message belongs to, from where it lives in the engine (module path and function name).

A short reviewed table, most specific first; the first row one of whose words appears in "module:Class.function"
names the phase (vocab.PHASES). A message the table cannot place has phase "unknown": the attempt's own markers
decide then.
"""

from __future__ import annotations

from typing import Final

from logdoctor.engines import ENGINES

_SHARED: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    # capturing CUDA graphs (SGLang cuda_graph_runner / capture_model, vLLM capture_model, piecewise backends)
    ("graph_capture", ("cuda_graph_runner", "capture_model", "cuda_graph", "cudagraph", "graph_runner", "piecewise")),
    # warm-up requests / dummy runs after the pool exists
    ("warmup", ("warmup", "warm_up", "_dummy_sampler_run", "_dummy_pooler_run")),
    # sizing and allocating the KV cache / memory pool
    (
        "memory_pool",
        (
            "memory_pool",
            "mem_cache/",
            "kv_cache",
            "pool_configurator",
            "block_pool",
            "cache_engine",
            "profile_max_num_token",
            "init_memory_pool",
            "determine_available_memory",
            "determine_num_available_blocks",
        ),
    ),
    # reading the checkpoint and building the model's modules
    (
        "weight_load",
        (
            "model_loader/",
            "weight_utils",
            "load_weights",
            "weight_loader",
            "load_model",
            "/models/",
            "layers/quantization/",
            "model_executor/layers/",
            "hf_transformers_utils",
            "transformers_utils/",
        ),
    ),
    # torch.distributed / NCCL groups and communicators
    (
        "dist_init",
        ("distributed/", "parallel_state", "init_distributed", "init_torch_distributed", "device_communicators"),
    ),
    # attention backends, custom kernels, JIT builds, platform checks, torch.compile
    (
        "kernel_init",
        (
            "layers/attention",
            "attention/backends",
            "v1/attention/",
            "attention_registry",
            "jit_kernel/",
            "_custom_ops",
            "platforms/",
            "compilation/",
            "srt/layers/",
        ),
    ),
    # argument and configuration checks before anything is loaded
    (
        "launch",
        (
            "server_args",
            "arg_utils",
            "arg_groups/",
            "srt/configs/",
            "entrypoints/cli",
            "launch_server",
        ),
    ),
)


def _with_engines(table: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The shared table with each engine's own words (Engine.source_phases) added to the row of their phase."""
    extra: dict[str, tuple[str, ...]] = {}
    for e in ENGINES.values():
        for phase, words in e.source_phases:
            extra[phase] = extra.get(phase, ()) + words
    return tuple((phase, words + extra.get(phase, ())) for phase, words in table)


# the rows, in order; engine package paths that mean a phase are on the engine's record
PHASE_TABLE: Final[tuple[tuple[str, tuple[str, ...]], ...]] = _with_engines(_SHARED)


def phase_of(module: str, qualname: str) -> str:
    """The phase of a message raised in `module` (a wheel path) by `qualname`, or "unknown"."""
    where = f"{module}:{qualname}"
    for phase, words in PHASE_TABLE:
        if any(w in where for w in words):
            return phase
    return "unknown"
