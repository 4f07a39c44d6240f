"""vLLM phase markers (V1, with the V0 wordings that are cheap to keep); engines.md §B."""

from __future__ import annotations

from types import MappingProxyType

from logdoctor.core import rxcache
from logdoctor.engines.engine import Engine
from logdoctor.engines.markers import COMMON_DEATHS, Marker
from logdoctor.engines.spelling import F as _F
from logdoctor.engines.spelling import S as _S
from logdoctor.engines.spelling import Side
from logdoctor.engines.spelling import equals as _equals
from logdoctor.engines.spelling import negate as _negate
from logdoctor.engines.spelling import nonzero as _nonzero
from logdoctor.engines.spelling import side as _side
from logdoctor.engines.spelling import spec_method as _spec_method

NAME = "vllm"
SIGNATURES = (
    "vllm.entrypoints",
    "--gpu-memory-utilization",
    "gpu_memory_utilization",
    "/vllm/",
    "vllm serve",
    "vLLM server version",
    "vLLM API server version",
    "Initializing a V1 LLM engine",
    "EngineCore failed to start",
    "Initializing an LLM engine",
)

MARKERS: tuple[Marker, ...] = (
    Marker(
        "version",
        r"vLLM (?:server|API server) version (?P<version>\S+?),?(?: serving model (?P<model>\S+))?$|^vLLM API server version (?P<version2>\S+)",
        "launch",
        "version",
        keyword="version",
    ),
    Marker("non_default_args", r"non-default args: \{", "launch", "config", keyword="non-default args"),
    Marker("namespace_args", r"^args: Namespace\(", "launch", "config", keyword="Namespace("),
    Marker("max_model_len", r"Using max model len (?P<max_model_len>\d+)", "launch", keyword="max model len"),
    Marker(
        "chunked_prefill",
        r"Chunked prefill is enabled with max_num_batched_tokens=(?P<max_num_batched_tokens>\d+)",
        "launch",
        keyword="Chunked prefill",
    ),
    Marker(
        "engine_config",
        r"Initializing an? (?:V1 )?LLM engine \(v(?P<version>[^)]+)\) with config:",
        "launch",
        "config",
        keyword="LLM engine",
    ),
    Marker(
        "dist",
        r"world_size=(?P<world_size>\d+) rank=(?P<rank_n>\d+) local_rank=(?P<local_rank>\d+) distributed_init_method=(?P<init_method>\S+) backend=(?P<backend>\w+)",
        "dist_init",
        "begin",
        keyword="world_size=",
    ),
    Marker("dist_assigned", r"rank \d+ in world size \d+ is assigned as", "dist_init", keyword="is assigned as"),
    Marker("nccl_version", r"vLLM is using nccl==(?P<nccl>\S+)|Found nccl from library", "dist_init", keyword="nccl"),
    Marker("custom_allreduce", r"Custom allreduce is disabled|custom allreduce", "dist_init", keyword="llreduce"),
    Marker(
        "load_begin",
        r"Starting to load model (?P<model>\S+?)\.\.\.|Loading model from scratch\.\.\.|Loading model weights",
        "weight_load",
        "begin",
        keyword="oad",
    ),
    Marker(
        "attn_backend",
        r"Using (?P<attention_backend>\w+) attention backend out of potential backends|Using (?P<attention_backend2>\w+) backend\.$",
        "weight_load",
        keyword="backend",
    ),
    Marker(
        "weights_time",
        r"Loading weights took (?P<load_s>[\d.]+) seconds",
        "weight_load",
        keyword="Loading weights took",
    ),
    Marker(
        "model_loaded",
        r"Model loading took (?P<weights_gib>[\d.]+) (?:GiB|GB)(?: memory)? and (?P<load_s>[\d.]+) seconds",
        "weight_load",
        "end",
        then="graph_capture",
        keyword="Model loading took",
    ),
    Marker(
        "compile_cache",
        r"Using cache directory: .* for vLLM's torch\.compile",
        "graph_capture",
        keyword="torch.compile",
    ),
    Marker("dynamo", r"Dynamo bytecode transform time: (?P<dynamo_s>[\d.]+) s", "graph_capture", keyword="Dynamo"),
    Marker(
        "compile_range",
        r"Compiling a graph for (?:compile range|dynamic shape|shape)|Directly load the compiled graph",
        "graph_capture",
        keyword="graph",
    ),
    Marker(
        "compile_total",
        r"torch\.compile (?:took|takes) (?P<compile_s>[\d.]+) s in total",
        "graph_capture",
        "end",
        then="memory_pool",
        keyword="torch.compile t",
    ),
    Marker(
        "graph_mem_profile",
        r"CUDA graph memory profiling is enabled|Estimated CUDA graph memory: (?P<est_graph_gib>[\d.]+) GiB",
        "memory_pool",
        "begin",
        keyword="CUDA graph memory",
    ),
    Marker(
        "mem_profile",
        r"Memory profiling takes (?P<profile_s>[\d.]+) seconds",
        "memory_pool",
        "begin",
        keyword="Memory profiling",
    ),
    Marker(
        "kv_avail",
        r"Available KV cache memory: (?P<available_kv_gib>-?[\d.]+) GiB",
        "memory_pool",
        "begin",
        keyword="Available KV cache memory",
    ),
    Marker(
        "kv_size",
        r"(?:GPU(?: \+ host)?) KV cache size: (?P<kv_tokens>[\d,]+) tokens",
        "memory_pool",
        "end",
        then="graph_capture",
        keyword="KV cache size",
    ),
    Marker(
        "num_blocks",
        r"# (?:GPU|cuda) blocks: (?P<gpu_blocks>\d+)",
        "memory_pool",
        "end",
        then="graph_capture",
        keyword="blocks:",
    ),
    Marker(
        "max_concurrency",
        r"Maximum concurrency for (?P<tokens_per_req>[\d,]+) tokens per request: (?P<max_concurrency>[\d.]+)x",
        "memory_pool",
        keyword="Maximum concurrency",
    ),
    Marker(
        "capture_bar",
        r"Capturing CUDA graphs?\b|Capturing cudagraphs|Capturing the model for CUDA graphs",
        "graph_capture",
        "begin",
        keyword="Captur",
    ),
    Marker(
        "capture_done",
        r"Graph capturing finished in (?P<capture_s>\d+) secs?, took (?P<graph_gib>[\d.]+) GiB",
        "graph_capture",
        "end",
        then="warmup",
        keyword="Graph capturing finished",
    ),
    Marker(
        "init_engine",
        r"init engine \(profile, create kv cache, warmup model\) took (?P<init_s>[\d.]+) s",
        "warmup",
        "end",
        then="serving",
        keyword="init engine",
    ),
    Marker("swap_alloc", r"Allocating CPU swap space for the KV cache", "memory_pool", "begin", keyword="swap space"),
    Marker(
        "api_start", r"Starting vLLM (?:API )?server|Available routes are|Supported tasks:", "serving", keyword="vLLM"
    ),
    Marker("routes", r"^Route: /", "serving", keyword="Route:"),
    Marker("ready", r"Application startup complete\.", "serving", "ready", keyword="startup complete"),
    # a window cut after start-up still shows that the engine serves: request logs and throughput lines
    Marker(
        "serving_stats",
        r"Avg prompt throughput: [\d.]+ tokens/s|\"(?:POST|GET) /\S* HTTP/1\.[01]\" [1-5]\d\d",
        "serving",
        "ready",
        keyword="HTTP/1.|throughput",
    ),
)

DEATHS: tuple[Marker, ...] = (
    Marker("engine_failed", r"EngineCore failed to start\.", "launch", "death", keyword="EngineCore failed"),
    Marker(
        "engine_fatal",
        r"EngineCore encountered a (?:fatal error|issue)",
        "launch",
        "death",
        keyword="EngineCore encountered",
    ),
    Marker(
        "core_init_failed", r"Engine core initialization failed\.", "launch", "death", keyword="initialization failed"
    ),
    Marker(
        "frontend_failed",
        r"Frontend process failed during engine core initialization",
        "launch",
        "death",
        keyword="Frontend process",
    ),
    Marker(
        "worker_died",
        r"Worker proc (?P<proc_name>\S+) died unexpectedly(?: \(exit code: (?P<exit_code>-?\d+)\)|, shutting down executor)",
        "launch",
        "death",
        keyword="died unexpectedly",
    ),
    Marker(
        "worker_failed",
        r"WorkerProc (?:failed to start|hit an exception|failed)",
        "launch",
        "death",
        keyword="WorkerProc",
    ),
    Marker(
        "core_died",
        r"Engine core proc(?:ess)? (?P<proc_name>\S+) died unexpectedly|Process (?P<proc_name2>\S+) \(PID: \d+\) died with exit code (?P<exit_code>-?\d+)",
        "launch",
        "death",
        keyword="died",
    ),
    Marker(
        "ray_actor_died",
        r"The actor is dead because its worker process has died|RayActorError|ActorDiedError|"
        r"The actor died unexpectedly",
        "launch",
        "death",
        keyword="ctor",
    ),
    Marker(
        "config_validation",
        r"^\d+ validation errors? for \w*Config|^\s*Value error, ",
        "launch",
        "death",
        keyword="alue error",
    ),
    Marker("engine_dead", r"EngineDeadError", "launch", "death", keyword="EngineDeadError"),
) + COMMON_DEATHS


_VERSION = rxcache.compile(
    r"(?:vLLM (?:server|API server) version|LLM engine \(v)\s*v?(?P<v>\d+\.\d+[\w.+-]*?)(?:[,)]|\s|$)"
)
_MAX_LEN = rxcache.compile(r"Using max model len (\d+)")
_CHUNKED = rxcache.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)")


def resolved_config(msg: str) -> dict:
    """What vLLM resolved at start-up: the max model len and the chunked-prefill budget."""
    out: dict = {}
    m = _MAX_LEN.search(msg)
    if m:
        out["max_model_len"] = int(m.group(1))
    m = _CHUNKED.search(msg)
    if m:
        out["max_num_batched_tokens"] = int(m.group(1))
    return out


# ---- flags: aliases (argparse dest names), multi-value flags, flags only vLLM has
FLAG_ALIASES = MappingProxyType(
    {
        "tp": "tensor_parallel_size",
        "pp": "pipeline_parallel_size",
        "dp": "data_parallel_size",
        "dcp": "decode_context_parallel_size",
        "O": "optimization_level",
        "cc": "compilation_config",
        "q": "quantization",
        "ac": "attention_config",
    }
)
NARGS_FLAGS = frozenset(
    {
        "served_model_name",
        "cudagraph_capture_sizes",
        "lora_modules",
        "allowed_origins",
        "middleware",
        "cuda_graph_sizes",
    }
)
HINT_FLAGS = frozenset(
    {
        "gpu_memory_utilization",
        "max_model_len",
        "max_num_seqs",
        "enforce_eager",
        "max_num_batched_tokens",
        "pipeline_parallel_size",
        "speculative_config",
    }
)

# ---- levers: how vLLM spells each canonical lever (levers.py; engines.md §D)
LEVER_SIDES: MappingProxyType[str, Side] = MappingProxyType(
    {
        "mem_fraction": _side(
            _S("--gpu-memory-utilization"), _F("gpu_memory_utilization"), defaults=((None, 0.9), ("0.33", 0.92))
        ),
        "context_length": _side(_S("--max-model-len"), _F("max_model_len", "max_seq_len")),
        "max_running": _side(_S("--max-num-seqs"), _F("max_num_seqs")),  # 1024 on >=70 GB non-A100 GPUs, else 256
        "prefill_chunk": _side(_S("--max-num-batched-tokens"), _F("max_num_batched_tokens")),  # 2048..16384 by GPU
        # 0.9-0.11.0: --cuda-graph-sizes N (N alone: capture up to N); 0.11.1+: --max-cudagraph-capture-size (the
        # older one deprecated); before 0.9 no flag (the captured sizes stop at --max-num-seqs)
        "graph_max_bs": _side(
            (
                _S("--cuda-graph-sizes", since="0.9", hint_field="cuda_graph_sizes"),
                _S("--max-cudagraph-capture-size", since="0.11.1", hint_field="max_cudagraph_capture_size"),
            ),
            _F(
                "max_cudagraph_capture_size",
                "compilation_config.max_cudagraph_capture_size",
                "compilation_config.max_capture_size",
                "cuda_graph_sizes",
            ),
        ),
        "graphs_off": _side(
            _S("--enforce-eager", switch=True),
            _F("enforce_eager") + _F("compilation_config.cudagraph_mode", read=_equals("none")),
            False,
        ),
        # vLLM compiles by default (V1, 0.8+); only "off" has a flag: -O0
        "torch_compile": _side(
            _S("-O", attach=True, values=((False, "0"),)),
            _F("optimization_level", "compilation_config.mode", "compilation_config.level", read=_nonzero),
            defaults=((None, False), ("0.8", True)),
        ),
        "tp_size": _side(_S("--tensor-parallel-size"), _F("tensor_parallel_size"), 1),
        "pp_size": _side(_S("--pipeline-parallel-size"), _F("pipeline_parallel_size"), 1),
        "dp_size": _side(_S("--data-parallel-size"), _F("data_parallel_size"), 1),
        "expert_parallel": _side(_S("--enable-expert-parallel", switch=True), _F("enable_expert_parallel"), False),
        # a command-line flag since 0.13 (AttentionConfig); before, only env VLLM_ATTENTION_BACKEND (LEVER_NOTES)
        "attention_backend": _side(
            _S("--attention-backend", since="0.13", hint_field="attention_backend"), _F("attention_backend")
        ),
        "max_lora_rank": _side(_S("--max-lora-rank"), _F("max_lora_rank", "lora_config.max_lora_rank"), 16),
        "custom_all_reduce_off": _side(
            _S("--disable-custom-all-reduce", switch=True), _F("disable_custom_all_reduce"), False
        ),
        "prefix_cache_off": _side(
            _S("--no-enable-prefix-caching", switch=True),
            _F("no_enable_prefix_caching") + _F("enable_prefix_caching", read=_negate),
            False,
        ),
        "port": _side(_S("--port"), _F("port"), 8000),
        "kv_cache_dtype": _side(_S("--kv-cache-dtype"), _F("kv_cache_dtype"), "auto"),
        "quantization": _side(_S("--quantization"), _F("quantization")),
        "dtype": _side(_S("--dtype"), _F("dtype"), "auto"),
        "trust_remote_code": _side(_S("--trust-remote-code", switch=True), _F("trust_remote_code"), False),
        "speculative_algorithm": _side(
            _S("--spec-method", since="0.33"), _F("spec_method") + _F("speculative_config", read=_spec_method)
        ),
        "max_seq_len_to_capture": _side(
            _S("--max-seq-len-to-capture", until="0.11"),
            _F("max_seq_len_to_capture"),
            defaults=((None, 8192), ("0.11", None)),
        ),
        "swap_space": _side(_S("--swap-space"), _F("swap_space"), 4),
        "cpu_offload": _side(_S("--cpu-offload-gb"), _F("cpu_offload_gb"), 0),
        "dist_timeout": _side(_S("--distributed-timeout-seconds"), _F("distributed_timeout_seconds")),
        "shm": _side((), _F("shm_size")),
    }
)

# what is particular to vLLM's handling of a lever
LEVER_NOTES: MappingProxyType[str, str] = MappingProxyType(
    {
        "piecewise_graph_off": "piecewise is part of cudagraph_mode (-cc), no single flag",
        "attention_backend": "before 0.13 another backend is chosen with the environment variable VLLM_ATTENTION_BACKEND; its names vary by release",
        "graph_max_bs": "before 0.9 the captured batch sizes stop at --max-num-seqs",
        "speculative_algorithm": "before 0.33: only --speculative-config JSON (not rendered)",
        "max_seq_len_to_capture": "vLLM only; gone from current builds (not in 0.33)",
    }
)

ENGINE = Engine(
    name=NAME,
    title="vLLM",
    signatures=SIGNATURES,
    markers=MARKERS,
    deaths=DEATHS,
    version_pattern=_VERSION,
    version_keywords=("version", "LLM engine (v"),
    version_strip=".,",
    banner_names=("vllm",),
    launch_pattern=r"vllm\.entrypoints|(?:^|\s|/)vllm serve\s",
    command_words=("vllm",),
    command_line=True,
    flag_aliases=FLAG_ALIASES,
    nargs_flags=NARGS_FLAGS,
    hint_flags=HINT_FLAGS,
    resolved_config=resolved_config,
    no_flags_negate=True,
    config_complete=True,
    proc_is_rank=True,
    unknown_fallback=True,
    lever_sides=LEVER_SIDES,
    lever_notes=LEVER_NOTES,
    package_dirs=("vllm",),
    compile_dirs=("vllm/compilation",),
    process_names=("vllm", "EngineCore", "Worker"),
    front_end_processes=(r"APIServer\w*", r"EngineCore\w*", r"LLMEngine\w*"),
    worker_processes=(r"Worker_", r"VllmWorker"),
    unit_words=("vllm",),
    config_dump=(r"non-default args:", r"^vLLM (?:server|API server) version"),
    config_dump_words=("non-default args:", "vLLM "),
    env_prefixes=("VLLM_",),
    source_phases=(("launch", ("vllm/config",)),),
    in_atlas=True,
)
