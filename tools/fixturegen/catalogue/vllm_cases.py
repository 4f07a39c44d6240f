"""vLLM failure cases, by cause."""
from __future__ import annotations

from .. import vl_config as K
from .. import vl_env as E
from .. import vl_gpu as G
from .. import vl_memory as M
from ..case import Attempt
from ..render import View
from ._h import N, P, hooks, multi, one, vl


def kv_cache_oom() -> list:
    return [
        one("vllm-kv_cache_oom-llama70b-estimate", "vl-kv-estimate",
            vl("0.33.0", "llama70b", "H100", tp=2, path_style=0), M.kv_estimate, hooks=hooks(launch=N.vl_platform)),
        one("vllm-kv_cache_oom-qwen30b-a100-docker", "vl-kv-estimate",
            vl("0.10.1.1", "qwen3-30b-a3b", "A100", path_style=0, site_style=0), M.kv_estimate, fmt="docker-t",
            hooks=hooks(launch=N.pynvml)),
        one("vllm-kv_cache_oom-old-wording-a100-40", "vl-kv-estimate",
            vl("0.8.5", "qwen25-32b", "A100-40", tp=2, max_model_len=32768, path_style=1, site_style=1), M.kv_estimate, fmt="cat",
            notes="Older wording ('larger than the maximum number of tokens that can be stored in KV cache'); the "
                  "fix uses the token count it prints."),
        one("vllm-kv_cache_oom-noblocks-l40s-docker", "vl-kv-noblocks",
            vl("0.10.1.1", "gemma3-27b", "L40S", tp=2, gpu_memory_utilization=0.6, path_style=0), M.kv_no_blocks,
            fmt="docker-t", notes="gpu_memory_utilization=0.6 was set to leave room for another container."),
        one("vllm-kv_cache_oom-noblocks-h100", "vl-kv-noblocks",
            vl("0.33.0", "qwen25-32b", "H100", gpu_memory_utilization=0.8, path_style=1), M.kv_no_blocks,
            fmt="short-iso"),
        multi("vllm-kv_cache_oom-gemma-attempts", "vl-kv-estimate", [
            Attempt(vl("0.11.0", "gemma3-27b", "L40S", tp=2, path_style=1), M.kv_estimate),
            Attempt(vl("0.11.0", "gemma3-27b", "L40S", tp=2, gpu_memory_utilization=0.95, path_style=1),
                    M.kv_estimate, gap=300, manual=True)],
            notes="The operator raised gpu_memory_utilization 0.9 -> 0.95; still short. Cap the context length.",
            label={"must_not_suggest": ["--max-model-len 131072", "--gpu-memory-utilization 0.95"]}),
        one("vllm-kv_cache_oom-qwen32b-paste", "vl-kv-estimate",
            vl("0.11.0", "qwen3-32b", "H100", path_style=1, site_style=4), M.kv_estimate, fmt="paste",
            excerpt={"n": 12, "end": r"ValueError: To serve"}),
    ]


def weights_oom() -> list:
    return [
        one("vllm-weights_oom-scout-h200", "vl-weights",
            vl("0.33.0", "llama4-scout", "H200", path_style=0), M.weights),
        one("vllm-weights_oom-gemma27b-l40s-cat", "vl-weights",
            vl("0.9.2", "gemma3-27b", "L40S", path_style=1, site_style=3), M.weights, fmt="cat", ansi=True),
        one("vllm-weights_oom-glm46-h100-tail", "vl-weights",
            vl("0.33.0", "glm46-fp8", "H100", tp=4, path_style=1), P(M.weights, where="weights", stop=0.8, rank=1),
            tail=90),
        multi("vllm-weights_oom-qwen72b-attempts", "vl-weights", [
            Attempt(vl("0.11.0", "qwen25-72b", "A100", path_style=1), M.weights),
            Attempt(vl("0.11.0", "qwen25-72b", "A100", gpu_memory_utilization=0.8, path_style=1), M.weights,
                    gap=240, manual=True)], fmt="short-iso",
            notes="Lowering --gpu-memory-utilization (attempt 2) cannot make 136 GiB of weights fit one 80 GB GPU."),
    ]


def activation_oom() -> list:
    return [
        one("vllm-activation_oom-profile-moe", "vl-act-profile",
            vl("0.33.0", "qwen3-30b-a3b", "H100", max_num_batched_tokens=65536, path_style=0), M.profile_oom),
        one("vllm-activation_oom-sampler-l40s", "vl-act-sampler",
            vl("0.10.1.1", "mistral24b", "L40S", tp=2, max_num_seqs=1024, path_style=1), M.sampler_warmup,
            fmt="docker-t"),
        one("vllm-activation_oom-sampler-h200", "vl-act-sampler",
            vl("0.33.0", "qwen3-32b", "H200", path_style=1), M.sampler_warmup, fmt="short-precise"),
        one("vllm-activation_oom-vision-profile", "vl-act-profile",
            vl("0.9.2", "qwen25-vl-72b", "A100", tp=4, max_num_batched_tokens=32768, path_style=1),
            P(M.profile_oom, site="vision"), hooks=hooks(launch=N.slow_processor)),
        one("vllm-activation_oom-serving-json", "vl-act-serving",
            vl("0.33.0", "gpt-oss-20b", "L40S", max_num_batched_tokens=65536, path_style=0), M.serving_oom,
            fmt="json"),
    ]


def graph_capture_fault() -> list:
    return [
        one("vllm-graph_capture_fault-oom-095", "vl-capture-oom",
            vl("0.33.0", "qwen3-30b-a3b", "H100", gpu_memory_utilization=0.95, path_style=1), M.capture_oom),
        one("vllm-graph_capture_fault-oom-old-tp2", "vl-capture-oom",
            vl("0.10.1.1", "qwen25-32b", "A100", tp=2, gpu_memory_utilization=0.95, path_style=1),
            P(M.capture_oom, stop_frac=0.3), fmt="short-iso",
            notes="The EngineCore traceback ends in \"Worker failed with error 'CUDA out of memory...'\": it repeats "
                  "the worker's error; there is one failure."),
        one("vllm-graph_capture_fault-unsafe-flashinfer", "vl-capture-unsafe",
            vl("0.33.0", "llama8b", "B200", attention_backend="FLASHINFER", path_style=1), M.capture_unsafe),
        one("vllm-graph_capture_fault-paste", "vl-capture-oom",
            vl("0.9.2", "qwen3-8b", "L40S", gpu_memory_utilization=0.95, path_style=1, site_style=3),
            P(M.capture_oom, at_end=True, stop_frac=0.6), fmt="paste",
            excerpt={"n": 18, "end": r"OutOfMemoryError"}),
    ]


def hardware_fault() -> list:
    return [
        one("vllm-hardware_fault-xid79-load", "vl-hw",
            vl("0.33.0", "llama70b", "H100", tp=4, path_style=1),
            P(G.hardware, phase="weight_load", cuda_text="unspecified launch failure", rank=2, xids=(79,)),
            scope="boot", host_noise=2),
        one("vllm-hardware_fault-kernel-excerpt", "vl-hw",
            vl("0.33.0", "qwen3-32b", "H200", tp=2, path_style=1),
            P(G.hardware, phase="serving", cuda_text="uncorrectable ECC error encountered", rank=1, xids=(95, 154)),
            scope="boot", excerpt={"start": r"NVRM: Xid", "n": 20, "last": False, "end": r"CUDA error: uncorrectable"},
            notes="Only the kernel lines and the first engine error line were pasted (journalctl -k style)."),
        one("vllm-hardware_fault-nvlink-nccl", "vl-hw",
            vl("0.9.2", "qwen25-72b", "H100", tp=4, path_style=1),
            P(G.hardware, phase="dist_init", cuda_text="unknown error", rank=3, xids=(74,),
              secondary="distributed_init"), scope="boot",
            notes="NCCL init fails ('unhandled cuda error') right after an NVLink Xid 74 on rank 3's GPU: the "
                  "interconnect, not NCCL configuration."),
        multi("vllm-hardware_fault-attempts", "vl-hw", [
            Attempt(vl("0.11.0", "qwen3-32b", "H200", tp=2, path_style=1, gpu_ids=(2, 3)),
                    P(G.hardware, phase="warmup", cuda_text="unspecified launch failure", rank=1, xids=(62,))),
            Attempt(vl("0.11.0", "qwen3-32b", "H200", tp=2, enforce_eager=True, path_style=1, gpu_ids=(2, 3)),
                    P(G.hardware, phase="weight_load", cuda_text="unknown error", rank=1, xids=(119,)),
                    gap=900, reboot=True)], fmt="short-iso", scope="boot",
            notes="The operator rebooted the host and added --enforce-eager after attempt 1; attempt 2 dies earlier, "
                  "on the same GPU. The flags are not the problem."),
    ]


def illegal_memory_access() -> list:
    return [
        one("vllm-illegal_memory_access-serving-xid13", "vl-ima",
            vl("0.33.0", "qwen3-32b", "H100", tp=2, attention_backend="FLASHINFER", path_style=1),
            G.illegal, scope="boot", host_noise=2),
        one("vllm-illegal_memory_access-warmup-b200", "vl-ima",
            vl("0.33.0", "qwen3-235b-fp8", "B200", tp=4, path_style=0),
            P(G.illegal, phase="warmup", xid=None), fmt="short-precise"),
        one("vllm-illegal_memory_access-assert-old", "vl-ima",
            vl("0.8.5", "qwen25-7b", "A100", path_style=1), P(G.illegal, assert_kind=True, xid=None),
            fmt="docker", ansi=True),
        one("vllm-illegal_memory_access-capture-tail", "vl-ima-capture",
            vl("0.11.0", "gpt-oss-120b", "H200", tp=2, path_style=0), P(G.illegal, phase="graph_capture", xid=31),
            scope="boot", tail=90),
    ]


def distributed_init() -> list:
    return [
        one("vllm-distributed_init-custom-ar-p2p", "vl-dist-car",
            vl("0.33.0", "qwen25-32b", "RTX6000", tp=2, path_style=1), E.custom_allreduce),
        one("vllm-distributed_init-shm-docker", "vl-dist-shm",
            vl("0.9.2", "llama70b", "A100", tp=4, path_style=0), E.shm_nccl, fmt="docker-t", ansi=True),
        one("vllm-distributed_init-store-timeout", "vl-dist-multinode",
            vl("0.11.0", "ds-v3", "H200", tp=8, nnodes=2, node_rank=0, master_addr="10.20.0.11", master_port=29501,
               path_style=1, trust_remote_code=True), E.store_timeout, fmt="short-iso"),
        one("vllm-distributed_init-nccl-watchdog", "vl-dist-watchdog",
            vl("0.11.0", "qwen3-32b", "L40S", tp=4, path_style=1), E.nccl_watchdog, fmt="short-precise"),
        one("vllm-distributed_init-duplicate-gpu", "vl-dist-dup",
            vl("0.10.1.1", "qwen3-8b", "H100", tp=2, path_style=1), E.duplicate_gpu),
    ]


def port_in_use() -> list:
    return [
        one("vllm-port_in_use-http", "vl-port-http", vl("0.33.0", "llama8b", "H100", path_style=0), E.http_port,
            hooks=hooks(launch=N.vl_platform)),
        one("vllm-port_in_use-http-docker", "vl-port-http",
            vl("0.9.2", "qwen25-7b", "L40S", port=8080, path_style=0), E.http_port, fmt="docker"),
        one("vllm-port_in_use-master-port", "vl-port-dist",
            vl("0.11.0", "qwen3-235b-fp8", "H100", tp=8, nnodes=2, node_rank=0, master_addr="10.20.0.11",
               master_port=29501, path_style=1), E.master_port, fmt="short-iso"),
        one("vllm-port_in_use-dp-rpc", "vl-port-dp",
            vl("0.33.0", "qwen3-30b-a3b", "H100", dp=2, data_parallel_rpc_port=13345, path_style=1), E.dp_rpc_port),
        multi("vllm-port_in_use-attempts", "vl-port-http", [
            Attempt(vl("0.10.1.1", "mistral24b", "H100", path_style=1), E.http_port),
            Attempt(vl("0.10.1.1", "mistral24b", "H100", path_style=1), E.http_port, gap=5),
            Attempt(vl("0.10.1.1", "mistral24b", "H100", path_style=1), E.http_port, gap=5)],
            notes="Three restarts, same bind error: an old instance still owns port 8000."),
    ]


def model_load_error() -> list:
    return [
        one("vllm-model_load_error-bad-repo", "vl-model-repo",
            vl("0.33.0", "qwen3-8b", "H100", model="Qwen/Qwen3-8B-Instruct"), K.bad_repo),
        one("vllm-model_load_error-gated", "vl-model-repo",
            vl("0.10.1.1", "llama8b", "A100", path_style=0), K.gated, fmt="docker-t"),
        one("vllm-model_load_error-missing-shard", "vl-model-files",
            vl("0.33.0", "qwen25-32b", "H100", tp=2, path_style=2), K.missing_shard, fmt="short-iso"),
        one("vllm-model_load_error-remote-code", "vl-model-remote",
            vl("0.10.1.1", "minimax-m2", "H200", tp=4, path_style=1), K.remote_code, fmt="short-iso"),
        one("vllm-model_load_error-truncated-shard", "vl-model-files",
            vl("0.11.0", "qwen3-30b-a3b", "A100", path_style=3), P(K.missing_shard, truncated=True), fmt="docker"),
        one("vllm-model_load_error-unsupported-arch", "vl-model-arch",
            vl("0.9.2", "qwen3-next", "H200", tp=4, path_style=1), K.unsupported_arch,
            view=View("short", all_chars=True), ansi=True, hooks=hooks(launch=N.vl_spawn),
            notes="journalctl -a keeps the ANSI colour codes of the log."),
    ]


def config_invalid() -> list:
    return [
        one("vllm-config_invalid-heads-tp", "vl-cfg-tp",
            vl("0.33.0", "qwen25-32b", "H100", tp=6, path_style=1), K.heads_tp),
        one("vllm-config_invalid-max-len", "vl-cfg-len",
            vl("0.33.0", "qwen25-7b", "H100", max_model_len=65536, path_style=0), K.max_len_too_long,
            fmt="short-precise"),
        one("vllm-config_invalid-batched-lt-len", "vl-cfg-sched",
            vl("0.8.5", "llama8b", "A100", max_model_len=32768, max_num_batched_tokens=8192,
               enable_chunked_prefill=False, path_style=1), K.batched_lt_len, fmt="cat"),
        one("vllm-config_invalid-batched-lt-len-092", "vl-cfg-sched",
            vl("0.9.2", "qwen25-7b", "L40S", max_model_len=32768, max_num_batched_tokens=4096,
               enable_chunked_prefill=False, path_style=1), K.batched_lt_len, fmt="short-iso"),
        one("vllm-config_invalid-bf16-v100", "vl-cfg-dtype",
            vl("0.10.1.1", "llama8b", "V100", tp=2, path_style=1), K.bf16_old_gpu),
        one("vllm-config_invalid-bf16-t4", "vl-cfg-dtype",
            vl("0.9.2", "qwen25-7b", "T4", path_style=0), K.bf16_old_gpu, fmt="docker-t"),
        one("vllm-config_invalid-visible-devices", "vl-cfg-env",
            vl("0.11.0", "qwen3-32b", "A100", tp=4, path_style=1), K.visible_devices),
    ]


def kernel_arch_mismatch() -> list:
    return [
        one("vllm-kernel_arch_mismatch-import-unsupported", "vl-arch-import",
            vl("0.8.5", "qwen25-7b", "A100", path_style=1), G.import_then_unsupported),
        one("vllm-kernel_arch_mismatch-import-unsupported-cudart", "vl-arch-import",
            vl("0.9.2", "mistral24b", "H100", path_style=1),
            P(G.import_then_unsupported, why="ImportError('libcudart.so.13: cannot open shared object file: No such "
                                             "file or directory')"), fmt="cat"),
        one("vllm-kernel_arch_mismatch-no-kernel-b200", "vl-arch-image",
            vl("0.10.1.1", "llama8b", "B200", path_style=1), G.no_kernel_image, fmt="short-iso"),
        one("vllm-kernel_arch_mismatch-undefined-symbol", "vl-arch-abi",
            vl("0.11.0", "qwen3-8b", "H100", path_style=1, site_style=4), G.undefined_symbol, fmt="cat"),
        one("vllm-kernel_arch_mismatch-flashinfer-jit-sm120", "vl-arch-jit",
            vl("0.33.0", "qwen3-8b", "RTX6000", attention_backend="FLASHINFER", path_style=1), G.jit_sm120),
        one("vllm-kernel_arch_mismatch-driver", "vl-arch-driver",
            vl("0.9.2", "llama8b", "H100", path_style=0), G.driver_insufficient, fmt="docker-t"),
    ]


def host_oom() -> list:
    return [
        one("vllm-host_oom-cpu-offload", "vl-host-oom",
            vl("0.33.0", "qwen3-235b-fp8", "H100", tp=4, cpu_offload_gb=60, path_style=1), E.host_oom_worker,
            scope="boot", host_noise=2),
        one("vllm-host_oom-paste-killed", "vl-host-oom-paste",
            vl("0.8.5", "qwen25-32b", "A100", swap_space=64, path_style=1), E.paste_killed, fmt="paste"),
        one("vllm-host_oom-worker-killed-docker", "vl-host-oom",
            vl("0.9.2", "qwen25-72b", "H100", tp=4, path_style=0), P(E.host_oom_worker, kernel=False, where=0.3),
            fmt="docker-t", label={"label_confidence": "medium"},
            notes="Container logs only: no kernel lines, but a worker SIGKILLed (-9) mid-load is the OOM killer's "
                  "signature; check dmesg on the host."),
        one("vllm-host_oom-unit-compile", "vl-host-oom-unit",
            vl("0.11.0", "qwen3-30b-a3b", "H100", tp=2, path_style=1), E.host_oom_unit, fmt="short-iso"),
        multi("vllm-host_oom-attempts", "vl-host-oom", [
            Attempt(vl("0.10.1.1", "llama70b", "A100", tp=4, path_style=1), P(E.host_oom_worker, where=0.4)),
            Attempt(vl("0.10.1.1", "llama70b", "A100", tp=4, path_style=1), P(E.host_oom_worker, where=0.45),
                    gap=30)], scope="boot"),
    ]


def startup_timeout() -> list:
    return [
        one("vllm-startup_timeout-download", "vl-timeout-download",
            vl("0.33.0", "qwen25-72b", "H200", tp=2, path_style=0), E.timeout_download),
        one("vllm-startup_timeout-deepgemm", "vl-timeout",
            vl("0.33.0", "qwen3-235b-fp8", "H200", tp=4, path_style=1), E.timeout_deepgemm, fmt="short-precise"),
        multi("vllm-startup_timeout-compile-attempts", "vl-timeout", [
            Attempt(vl("0.11.0", "glm46-fp8", "H200", tp=8, path_style=1), E.timeout_compile),
            Attempt(vl("0.11.0", "glm46-fp8", "H200", tp=8, path_style=1), E.timeout_compile, gap=30),
            Attempt(vl("0.11.0", "glm46-fp8", "H200", tp=8, path_style=1), E.timeout_compile, gap=30)],
            fmt="short-iso"),
    ]


def cases() -> list:
    out = []
    for fn in (kv_cache_oom, weights_oom, activation_oom, graph_capture_fault, hardware_fault, illegal_memory_access,
               distributed_init, port_in_use, model_load_error, config_invalid, kernel_arch_mismatch, host_oom,
               startup_timeout):
        out += fn()
    return out
