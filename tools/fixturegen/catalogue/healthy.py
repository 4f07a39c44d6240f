"""Healthy start-ups full of scary-but-harmless lines, and windows whose LAST attempt is healthy."""
from __future__ import annotations

from .. import sg_basic as SB
from .. import sg_env as SE
from .. import vl_env as VE
from .. import vl_memory as VM
from ..case import Attempt
from ..render import View
from ._h import N, P, hooks, multi, one, sg, vl


def _sg_noise_serving(e) -> None:
    N.sg_too_long(e)


def _vl_noise_serving(e) -> None:
    N.vl_too_long(e)
    N.vl_abort(e)


def sglang() -> list:
    return [
        one("sglang-healthy-llama8b-classic", "sg-healthy",
            sg("0.5.10", "llama8b", "H100", path_style=1), SB.healthy,
            hooks=hooks(launch=[N.pynvml, N.torch_dtype_deprecated], http=N.sg_chat_template),
            notes="pynvml FutureWarning, '`torch_dtype` is deprecated', 'Attention backend not specified', "
                  "'Piecewise CUDA Graph is enabled by default as an experimental feature' - all harmless."),
        one("sglang-healthy-qwen3next-tp4-nccl", "sg-healthy",
            sg("0.5.23", "qwen3-next", "H200", tp=4, path_style=1), P(SB.healthy, pressure=True, serve=10),
            fmt="short-iso", hooks=hooks(dist_init_nccl=N.nccl_info),
            notes="NCCL_DEBUG=INFO chatter incl. 'Call to connect returned Connection refused, retrying' (a retried "
                  "bootstrap connect that completes) and 'KV cache pool is full. Retract requests.' under load."),
        one("sglang-healthy-dflash-graphs-off", "sg-healthy",
            sg("0.5.22", "qwen3-next-fp8", "H200", tp=2, speculative_algorithm="DFLASH",
               speculative_draft_model_path="/models/Qwen3-Next-80B-A3B-DFlash-b16", speculative_dflash_block_size=16,
               max_running_requests=64, mem_fraction_static=0.92, disable_cuda_graph=True,
               draft="/models/Qwen3-Next-80B-A3B-DFlash-b16", path_style=1),
            SB.healthy, hooks=hooks(http=N.sg_overlap_off),
            notes="The seed-story config on a healthy host: --disable-cuda-graph only prints a deprecation warning."),
        one("sglang-healthy-dsv2lite-docker", "sg-healthy",
            sg("0.5.10", "ds-v2-lite", "A100", tp=2, trust_remote_code=True, path_style=0, site_style=0),
            P(SB.healthy, extra=_sg_noise_serving), view=View("docker-t", scope="app", cr_bars=True),
            hooks=hooks(launch=N.pynvml),
            notes="docker logs -t: tqdm redraws arrive joined by carriage returns on one line. A client request "
                  "longer than the context is rejected with 400 while the server keeps serving."),
        one("sglang-healthy-gptoss-kubectl", "sg-healthy",
            sg("0.5.10", "gpt-oss-120b", "H200", path_style=3, reasoning_parser="gpt-oss"),
            P(SB.healthy, pressure=True), fmt="kubectl", hooks=hooks(launch=N.hf_retry),
            notes="kubectl logs --timestamps; a Hub HEAD request times out once and is retried; retract pressure."),
        one("sglang-healthy-dsv3-dp-attention-json", "sg-healthy",
            sg("0.5.23", "ds-v3", "H200", tp=8, dp=8, path_style=1, trust_remote_code=True), SB.healthy,
            fmt="json", rank_style="dp"),
        multi("sglang-healthy-after-port-retry", "sg-healthy-retry", [
            Attempt(sg("0.5.10", "qwen25-7b", "H100", path_style=1), SE.http_port),
            Attempt(sg("0.5.10", "qwen25-7b", "H100", path_style=1), SB.healthy, gap=30)],
            notes="Attempt 1 hit a port still held by the previous instance; the automatic restart came up. Judge "
                  "the last attempt: healthy."),
        one("sglang-healthy-serving-tail", "sg-healthy",
            sg("0.5.22", "qwen3-32b", "H100", tp=2, path_style=1),
            P(SB.healthy, serve=60, pressure=True, extra=_sg_noise_serving), tail=140,
            notes="journalctl -n 140 of a long-running server: only serving lines, with retract pressure and a "
                  "rejected over-long request."),
        one("sglang-healthy-qwen30b-l40s-precise", "sg-healthy",
            sg("0.5.22", "qwen3-30b-a3b", "L40S", tp=2, pp=2, path_style=2), SB.healthy, fmt="short-precise",
            hooks=hooks(launch=N.c10d_device_id), notes="TP2 x PP2: rank tags carry the pipeline stage (PP1 TP0)."),
        one("sglang-healthy-vl-waiter", "sg-healthy",
            sg("0.5.10", "qwen25-vl-7b", "A100", path_style=1), SB.healthy,
            hooks=hooks(launch=N.slow_processor, warmup=P(N.health_waiter, ident="sglang-ready", tries=4)),
            notes="An ExecStartPost health waiter logs 'Failed to connect ... retry' until the server is up."),
    ]


def vllm() -> list:
    return [
        one("vllm-healthy-llama8b", "vl-healthy", vl("0.33.0", "llama8b", "H100", path_style=0), VE.healthy,
            hooks=hooks(launch=[N.pynvml, N.vl_platform]),
            notes="pynvml FutureWarning and 'CUDA graph memory profiling' lines are normal."),
        one("vllm-healthy-qwen235-tp8-json", "vl-healthy",
            vl("0.33.0", "qwen3-235b-fp8", "H200", tp=8, enable_expert_parallel=True, path_style=1), VE.healthy,
            view=View("json", json_all=False), ansi=True, hooks=hooks(dist_init_nccl=N.gloo),
            notes="VLLM_LOGGING_COLOR=1: every message with an ESC (the coloured process prefix) is a byte "
                  "array in -o json."),
        one("vllm-healthy-gemma-l40s-docker", "vl-healthy",
            vl("0.11.0", "gemma3-27b", "L40S", tp=4, path_style=0), VE.healthy, fmt="docker-t",
            hooks=hooks(launch=[N.vl_ulimit, N.vl_model_flag]),
            notes="PCIe-only L40S: 'Custom allreduce is disabled' WARNING, ulimit warning, --model deprecation."),
        one("vllm-healthy-qwen32b-a100-nccl", "vl-healthy",
            vl("0.10.1.1", "qwen25-32b", "A100", tp=4, path_style=1), P(VE.healthy, preempt=True),
            fmt="short-iso", hooks=hooks(dist_init_nccl=[N.nccl_info, N.gloo]),
            notes="NCCL INFO chatter and a KV-cache usage of 99.6% under load (no preemption error)."),
        one("vllm-healthy-ansi-docker", "vl-healthy",
            vl("0.9.2", "qwen3-8b", "H100", tp=2, path_style=0), VE.healthy, fmt="docker", ansi=True,
            hooks=hooks(launch=N.vl_spawn), notes="Raw docker logs with ANSI-coloured process prefixes."),
        one("vllm-healthy-old-cat", "vl-healthy", vl("0.8.5", "mistral24b", "H100", path_style=1), VE.healthy,
            fmt="cat"),
        multi("vllm-healthy-after-kv-fix", "vl-healthy-retry", [
            Attempt(vl("0.33.0", "qwen3-30b-a3b", "A100", path_style=1), VM.kv_estimate),
            Attempt(vl("0.33.0", "qwen3-30b-a3b", "A100", max_model_len=65536, path_style=1), VE.healthy,
                    gap=300, manual=True)],
            notes="Attempt 1 failed KV sizing; the operator set --max-model-len and attempt 2 serves. Healthy now."),
        one("vllm-healthy-serving-tail", "vl-healthy",
            vl("0.33.0", "qwen25-32b", "H100", tp=2, path_style=1),
            P(VE.healthy, serve=50, preempt=True, extra=_vl_noise_serving), tail=140,
            notes="Only serving lines: a 400 for an over-long prompt and an aborted request are per-request events."),
        one("vllm-healthy-gptoss20b-kubectl", "vl-healthy",
            vl("0.33.0", "gpt-oss-20b", "L40S", path_style=0), VE.healthy, fmt="kubectl",
            hooks=hooks(launch=N.hf_retry, http=N.vl_gen_config)),
        one("vllm-healthy-b200-eager-precise", "vl-healthy",
            vl("0.33.0", "glm46-fp8", "B200", tp=4, enforce_eager=True, path_style=1), VE.healthy,
            fmt="short-precise", hooks=hooks(launch=N.vl_platform)),
    ]


def cases() -> list:
    return sglang() + vllm()
