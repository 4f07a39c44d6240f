"""Basic markers for TGI, TensorRT-LLM and lmdeploy: enough to detect the engine and place the big phases."""
from __future__ import annotations

from logdoctor.engines.markers import Marker

TGI_SIGNATURES = ("text_generation_launcher", "text_generation_server", "text-generation-launcher", "shard-manager")
TRTLLM_SIGNATURES = ("[TensorRT-LLM]", "[TRT-LLM]", "tensorrt_llm", "trtllm-serve", "trtllm-build")
LMDEPLOY_SIGNATURES = ("lmdeploy", "turbomind")

TGI = (
    Marker("tgi_args", r"^Args \{", "launch", "config", keyword="Args"),
    Marker("tgi_shard_start", r"Starting shard|Starting download process|Waiting for shard to be ready", "weight_load", "begin", keyword="hard"),
    Marker("tgi_shard_ready", r"Shard ready in|Shard \d+ ready", "weight_load", "end", then="warmup", keyword="ready"),
    Marker("tgi_warmup", r"Warming up model", "warmup", "begin", keyword="Warming up"),
    Marker("tgi_cuda_graphs", r"Cuda Graphs are enabled for sizes", "graph_capture", keyword="Cuda Graphs"),
    Marker("tgi_ready", r"Connected$|Invalid hostname, defaulting to|Serving revision", "serving", "ready", keyword="onnected"),
)
TRTLLM = (
    Marker("trt_load", r"Loading (?:engine|weights|model)", "weight_load", "begin", keyword="Loading"),
    Marker("trt_kv", r"\[MemUsageChange\]|Allocated .* for max tokens in paged KV cache|KV cache", "memory_pool", keyword="KV cache"),
    Marker("trt_ready", r"Uvicorn running on|Application startup complete", "serving", "ready", keyword="running"),
)
LMDEPLOY = (
    Marker("lmd_build", r"build (?:model|TurboMind)|Loading weights", "weight_load", "begin", keyword="oad"),
    Marker("lmd_cache", r"(?:block_count|cache_max_entry_count|num_gpu_blocks)", "memory_pool", keyword="block"),
    Marker("lmd_ready", r"Uvicorn running on|Application startup complete", "serving", "ready", keyword="running"),
)
