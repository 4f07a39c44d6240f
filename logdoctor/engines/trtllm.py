"""TensorRT-LLM (trtllm-serve): basic markers, enough to detect the engine and place the big phases."""

from __future__ import annotations

from logdoctor.engines.engine import Engine
from logdoctor.engines.markers import Marker

NAME = "trtllm"
SIGNATURES = ("[TensorRT-LLM]", "[TRT-LLM]", "tensorrt_llm", "trtllm-serve", "trtllm-build")

MARKERS: tuple[Marker, ...] = (
    Marker("trt_load", r"Loading (?:engine|weights|model)", "weight_load", "begin", keyword="Loading"),
    Marker(
        "trt_kv",
        r"\[MemUsageChange\]|Allocated .* for max tokens in paged KV cache|KV cache",
        "memory_pool",
        keyword="KV cache",
    ),
    Marker("trt_ready", r"Uvicorn running on|Application startup complete", "serving", "ready", keyword="running"),
)

ENGINE = Engine(
    name=NAME,
    title="TensorRT-LLM",
    signatures=SIGNATURES,
    markers=MARKERS,
    banner_names=("tensorrt_llm",),
    launch_pattern=r"trtllm-serve",
    command_words=("trtllm",),
    package_dirs=("tensorrt_llm",),
    process_names=("trtllm",),
    unit_words=("trtllm", "tensorrt"),
)
