"""vLLM phase markers (V1, with the V0 wordings that are cheap to keep); engines.md §B."""
from __future__ import annotations

from logdoctor.engines.markers import COMMON_DEATHS, Marker

NAME = "vllm"
SIGNATURES = ("vllm.entrypoints", "--gpu-memory-utilization", "gpu_memory_utilization", "/vllm/", "vllm serve", "vLLM server version", "vLLM API server version",
              "Initializing a V1 LLM engine", "EngineCore failed to start", "Initializing an LLM engine")

MARKERS: tuple[Marker, ...] = (
    Marker("version", r"vLLM (?:server|API server) version (?P<version>\S+?),?(?: serving model (?P<model>\S+))?$|^vLLM API server version (?P<version2>\S+)",
           "launch", "version", keyword="version"),
    Marker("non_default_args", r"non-default args: \{", "launch", "config", keyword="non-default args"),
    Marker("namespace_args", r"^args: Namespace\(", "launch", "config", keyword="Namespace("),
    Marker("max_model_len", r"Using max model len (?P<max_model_len>\d+)", "launch", keyword="max model len"),
    Marker("chunked_prefill", r"Chunked prefill is enabled with max_num_batched_tokens=(?P<max_num_batched_tokens>\d+)", "launch",
           keyword="Chunked prefill"),
    Marker("engine_config", r"Initializing an? (?:V1 )?LLM engine \(v(?P<version>[^)]+)\) with config:", "launch", "config",
           keyword="LLM engine"),
    Marker("dist", r"world_size=(?P<world_size>\d+) rank=(?P<rank_n>\d+) local_rank=(?P<local_rank>\d+) distributed_init_method=(?P<init_method>\S+) backend=(?P<backend>\w+)",
           "dist_init", "begin", keyword="world_size="),
    Marker("dist_assigned", r"rank \d+ in world size \d+ is assigned as", "dist_init", keyword="is assigned as"),
    Marker("nccl_version", r"vLLM is using nccl==(?P<nccl>\S+)|Found nccl from library", "dist_init", keyword="nccl"),
    Marker("custom_allreduce", r"Custom allreduce is disabled|custom allreduce", "dist_init", keyword="llreduce"),
    Marker("load_begin", r"Starting to load model (?P<model>\S+?)\.\.\.|Loading model from scratch\.\.\.|Loading model weights", "weight_load", "begin",
           keyword="oad"),
    Marker("attn_backend", r"Using (?P<attention_backend>\w+) attention backend out of potential backends|Using (?P<attention_backend2>\w+) backend\.$",
           "weight_load", keyword="backend"),
    Marker("weights_time", r"Loading weights took (?P<load_s>[\d.]+) seconds", "weight_load", keyword="Loading weights took"),
    Marker("model_loaded", r"Model loading took (?P<weights_gib>[\d.]+) (?:GiB|GB)(?: memory)? and (?P<load_s>[\d.]+) seconds", "weight_load", "end",
           then="graph_capture", keyword="Model loading took"),
    Marker("compile_cache", r"Using cache directory: .* for vLLM's torch\.compile", "graph_capture", keyword="torch.compile"),
    Marker("dynamo", r"Dynamo bytecode transform time: (?P<dynamo_s>[\d.]+) s", "graph_capture", keyword="Dynamo"),
    Marker("compile_range", r"Compiling a graph for (?:compile range|dynamic shape|shape)|Directly load the compiled graph", "graph_capture",
           keyword="graph"),
    Marker("compile_total", r"torch\.compile (?:took|takes) (?P<compile_s>[\d.]+) s in total", "graph_capture", "end", then="memory_pool",
           keyword="torch.compile t"),
    Marker("graph_mem_profile", r"CUDA graph memory profiling is enabled|Estimated CUDA graph memory: (?P<est_graph_gib>[\d.]+) GiB", "memory_pool", "begin",
           keyword="CUDA graph memory"),
    Marker("mem_profile", r"Memory profiling takes (?P<profile_s>[\d.]+) seconds", "memory_pool", "begin", keyword="Memory profiling"),
    Marker("kv_avail", r"Available KV cache memory: (?P<available_kv_gib>-?[\d.]+) GiB", "memory_pool", "begin",
           keyword="Available KV cache memory"),
    Marker("kv_size", r"(?:GPU(?: \+ host)?) KV cache size: (?P<kv_tokens>[\d,]+) tokens", "memory_pool", "end", then="graph_capture",
           keyword="KV cache size"),
    Marker("num_blocks", r"# (?:GPU|cuda) blocks: (?P<gpu_blocks>\d+)", "memory_pool", "end", then="graph_capture", keyword="blocks:"),
    Marker("max_concurrency", r"Maximum concurrency for (?P<tokens_per_req>[\d,]+) tokens per request: (?P<max_concurrency>[\d.]+)x",
           "memory_pool", keyword="Maximum concurrency"),
    Marker("capture_bar", r"Capturing CUDA graphs?\b|Capturing cudagraphs|Capturing the model for CUDA graphs", "graph_capture", "begin",
           keyword="Captur"),
    Marker("capture_done", r"Graph capturing finished in (?P<capture_s>\d+) secs?, took (?P<graph_gib>[\d.]+) GiB", "graph_capture", "end",
           then="warmup", keyword="Graph capturing finished"),
    Marker("init_engine", r"init engine \(profile, create kv cache, warmup model\) took (?P<init_s>[\d.]+) s", "warmup", "end", then="serving",
           keyword="init engine"),
    Marker("swap_alloc", r"Allocating CPU swap space for the KV cache", "memory_pool", "begin", keyword="swap space"),
    Marker("api_start", r"Starting vLLM (?:API )?server|Available routes are|Supported tasks:", "serving", keyword="vLLM"),
    Marker("routes", r"^Route: /", "serving", keyword="Route:"),
    Marker("ready", r"Application startup complete\.", "serving", "ready", keyword="startup complete"),
    # a window cut after start-up still shows that the engine serves: request logs and throughput lines
    Marker("serving_stats", r"Avg prompt throughput: [\d.]+ tokens/s|\"(?:POST|GET) /\S* HTTP/1\.[01]\" [1-5]\d\d",
           "serving", "ready", keyword="HTTP/1.|throughput"),
)

DEATHS: tuple[Marker, ...] = (
    Marker("engine_failed", r"EngineCore failed to start\.", "launch", "death", keyword="EngineCore failed"),
    Marker("engine_fatal", r"EngineCore encountered a (?:fatal error|issue)", "launch", "death", keyword="EngineCore encountered"),
    Marker("core_init_failed", r"Engine core initialization failed\.", "launch", "death", keyword="initialization failed"),
    Marker("frontend_failed", r"Frontend process failed during engine core initialization", "launch", "death", keyword="Frontend process"),
    Marker("worker_died", r"Worker proc (?P<proc_name>\S+) died unexpectedly(?: \(exit code: (?P<exit_code>-?\d+)\)|, shutting down executor)", "launch", "death",
           keyword="died unexpectedly"),
    Marker("worker_failed", r"WorkerProc (?:failed to start|hit an exception|failed)", "launch", "death", keyword="WorkerProc"),
    Marker("core_died", r"Engine core proc(?:ess)? (?P<proc_name>\S+) died unexpectedly|Process (?P<proc_name2>\S+) \(PID: \d+\) died with exit code (?P<exit_code>-?\d+)",
           "launch", "death", keyword="died"),
    Marker("ray_actor_died", r"The actor is dead because its worker process has died|RayActorError|ActorDiedError|"
           r"The actor died unexpectedly", "launch", "death", keyword="ctor"),
    Marker("config_validation", r"^\d+ validation errors? for \w*Config|^\s*Value error, ", "launch", "death",
           keyword="alue error"),
    Marker("engine_dead", r"EngineDeadError", "launch", "death", keyword="EngineDeadError"),
) + COMMON_DEATHS
