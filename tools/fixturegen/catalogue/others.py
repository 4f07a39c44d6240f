"""A few TGI, TensorRT-LLM and lmdeploy cases."""
from __future__ import annotations

from .. import others as O
from ._h import one, other


def cases() -> list:
    return [
        one("tgi-weights_oom-llama70b", "tgi-weights", other("tgi", "3.3.4", "llama70b", "H100"), O.tgi_weights_oom,
            fmt="docker"),
        one("tgi-healthy-llama8b", "tgi-healthy", other("tgi", "3.3.4", "llama8b", "A100"), O.tgi_healthy,
            fmt="docker"),
        one("trtllm-kernel_arch_mismatch-sm120", "trtllm-arch", other("trtllm", "1.0.0", "qwen3-8b", "RTX6000"),
            O.trt_sm_unsupported, fmt="paste"),
        one("trtllm-healthy-qwen3-32b", "trtllm-healthy", other("trtllm", "1.1.0", "qwen3-32b", "H200", tp=2),
            O.trt_healthy, fmt="docker-t"),
        one("lmdeploy-kv_cache_oom-qwen32b", "lmdeploy-kv",
            other("lmdeploy", "0.10.2", "qwen25-32b", "L40S", tp=2, cache_max_entry_count=0.5, session_len=32768),
            O.lmd_kv, fmt="paste"),
        one("lmdeploy-healthy-qwen7b", "lmdeploy-healthy",
            other("lmdeploy", "0.10.2", "qwen25-7b", "A100", session_len=32768), O.lmd_healthy, fmt="kubectl"),
    ]
