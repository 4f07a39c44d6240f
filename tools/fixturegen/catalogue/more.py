"""More cases, one mechanism each: the rarer ways each engine reports a cause (old wordings, other engines,
launchers, windows without the kernel log), so that every rule of the rule base has a case of its own mechanism."""
from __future__ import annotations

from .. import others_more as O
from .. import sg_env as SE
from .. import sg_gpu as SG
from .. import sg_memory as SM
from .. import sg_more as S
from .. import vl_env as VE
from .. import vl_gpu as VG
from .. import vl_memory as VM
from .. import vl_more as V
from ..case import Attempt
from ..render import View
from ._h import P, hooks, multi, one, other, sg, vl


def kv_cache_oom() -> list:
    return [
        one("sglang-kv_cache_oom-router-req-pool", "sg-kv-req-pool",
            sg("0.1.16", "mistral7b", "A100-40", mem_fraction_static=0.45, site_style=3), S.router_req_pool,
            fmt="paste",
            notes="A terminal paste of a router-era SGLang server (0.1.x) that the operator squeezed to 45% of the "
                  "GPU."),
        one("trtllm-kv_cache_oom-kv-component", "trt-kv",
            other("trtllm", "1.0.0", "llama70b", "H100", tp=2), O.trt_kv_component, fmt="docker-t"),
        one("vllm-kv_cache_oom-check-frame-paste", "vl-kv-estimate",
            vl("0.11.0", "qwen3-30b-a3b", "H100", path_style=1, site_style=4), VM.kv_estimate, fmt="paste",
            excerpt={"start": r"EngineCore failed to start", "n": 40, "end": r"raise ValueError\($"},
            label={"label_confidence": "medium"},
            notes="A bug-report paste cut right after the last frame: the ValueError line itself is missing, the "
                  "frames show vLLM's KV-cache size check."),
        one("vllm-kv_cache_oom-no-estimate-a100", "vl-kv-no-estimate",
            vl("0.9.0", "llama70b", "A100", tp=2, path_style=1), V.kv_no_estimate, fmt="short-iso"),
        one("vllm-kv_cache_oom-gpu-shared", "vl-kv-free-mem",
            vl("0.11.0", "qwen3-8b", "H100", path_style=1), V.free_memory_low,
            notes="A second service was pinned to the same GPU by CUDA_VISIBLE_DEVICES."),
        one("vllm-kv_cache_oom-gpu-shared-docker", "vl-kv-free-mem",
            vl("0.33.0", "gpt-oss-20b", "L40S", path_style=0), P(V.free_memory_low, other_gib=21.7), fmt="docker-t",
            notes="docker logs; a notebook kernel on the host still holds part of the GPU."),
    ]


def weights_oom() -> list:
    return [
        one("sglang-weights_oom-paste-last-lines", "sg-weights",
            sg("0.5.10", "mistral24b", "L40S", path_style=1), SM.weights, fmt="paste",
            excerpt={"n": 4, "end": r"OutOfMemoryError"}, label={"label_confidence": "medium"},
            notes="Only the last four lines of the traceback were pasted: no phase marker and no frame that says "
                  "where. 47 GB of bf16 weights on a 48 GB card."),
    ]


def activation_oom() -> list:
    return [
        one("tgi-activation_oom-prefill-tokens", "tgi-warmup-prefill",
            other("tgi", "3.3.4", "mistral24b", "L40S", tp=2), O.tgi_prefill_oom, fmt="docker"),
        one("lmdeploy-activation_oom-runtime-mem", "lmd-runtime",
            other("lmdeploy", "0.9.2", "mistral24b", "L40S", session_len=32768, path_style=1), O.lmd_runtime_mem,
            fmt="kubectl"),
    ]


def graph_capture_fault() -> list:
    a1 = sg("0.5.23", "llama70b", "H100", tp=2, mem_fraction_static=0.8, path_style=1)
    a2 = a1.with_args(mem_fraction_static=0.93)
    return [
        multi("sglang-graph_capture_fault-pool-then-capture", "sg-capture-oom", [
            Attempt(a1, SM.kv_pool),
            Attempt(a2, P(SM.capture_oom, stop_bs=160, fix=["--cuda-graph-max-bs-decode 80"]), gap=540, manual=True)],
            notes="Attempt 1: the pool does not fit at 0.8; the operator jumps to 0.93 and attempt 2 runs out of "
                  "memory capturing the decode graphs. Going back to a lower fraction re-creates attempt 1: shrink "
                  "the captured range instead."),
        one("sglang-graph_capture_fault-flashinfer-workspace", "sg-capture-workspace",
            sg("0.5.10", "llama8b", "A100", speculative_algorithm="EAGLE3",
               speculative_draft_model_path="/models/sglang-EAGLE3-LLaMA3.1-Instruct-8B", speculative_num_steps=5,
               speculative_eagle_topk=8, speculative_num_draft_tokens=32, path_style=1), S.capture_workspace),
    ]


def host_oom() -> list:
    return [
        one("sglang-host_oom-scheduler-died-unit", "sg-host-oom",
            sg("0.5.22", "qwen3-235b-fp8", "H200", tp=8, path_style=1), P(SE.host_oom, where=0.5),
            notes="journalctl -u only: the kernel's OOM-killer lines are not in the unit's journal; SGLang's own "
                  "'scheduler died ... exit code: -9' says SIGKILL."),
        one("sglang-host_oom-scheduler-died-docker", "sg-host-oom",
            sg("0.5.10", "qwen25-72b", "H100", tp=4, path_style=0, site_style=0), P(SE.host_oom, where=0.35),
            fmt="docker-t", label={"label_confidence": "medium"},
            notes="Container logs only: no kernel or systemd lines."),
        one("vllm-host_oom-ray-memory-monitor", "vl-host-oom-ray",
            vl("0.10.1.1", "qwen25-72b", "H100", tp=4, distributed_executor_backend="ray", path_style=1),
            V.ray_memory_monitor, fmt="short-iso"),
        one("vllm-host_oom-torchrun-sigkill", "vl-host-oom-torchrun",
            vl("0.10.1.1", "llama70b", "A100", tp=2, path_style=1), V.torchrun_sigkill, fmt="paste"),
        one("tgi-host_oom-shard-signal9", "tgi-host-oom",
            other("tgi", "3.3.4", "qwen25-72b", "H100", tp=4), O.tgi_shard_killed, fmt="docker-t"),
    ]


def startup_timeout() -> list:
    return [
        one("vllm-startup_timeout-compile-debris", "vl-timeout",
            vl("0.11.0", "qwen3-30b-a3b", "H100", path_style=1), V.timeout_compile_debris),
        one("sglang-startup_timeout-health-waiter", "sg-timeout-waiter",
            sg("0.5.22", "qwen3-235b-fp8", "H100", tp=4, path_style=4), S.waiter_gives_up, fmt="short-iso"),
        one("vllm-startup_timeout-health-waiter-compile", "vl-timeout-waiter",
            vl("0.11.0", "glm46-fp8", "H200", tp=8, path_style=1), V.waiter_gives_up),
        one("vllm-startup_timeout-engine-ready", "vl-timeout-ready",
            vl("0.33.0", "ds-v3", "H200", tp=8, trust_remote_code=True, path_style=3), V.engine_ready_timeout),
        one("sglang-startup_timeout-watchdog-jit", "sg-timeout-watchdog",
            sg("0.5.23", "ds-v3", "H200", tp=8, trust_remote_code=True, path_style=1), S.watchdog_first_use_jit),
        one("sglang-startup_timeout-watchdog-flashinfer-jit", "sg-timeout-watchdog",
            sg("0.5.10", "gemma3-27b", "A100", path_style=3), S.watchdog_flashinfer_jit, fmt="short-precise",
            notes="FlashInfer was installed without its ahead-of-time kernels, so the first prefill compiles one."),
    ]


def hardware_fault() -> list:
    return [
        one("vllm-hardware_fault-cuda-unknown-one-worker", "vl-hw-init",
            vl("0.11.0", "qwen3-32b", "H100", tp=4, path_style=0), V.cuda_unknown_one_worker, fmt="docker-t"),
        one("sglang-hardware_fault-unknown-serving", "sg-hw-unknown",
            sg("0.5.22", "qwen3-8b", "H100", path_style=1),
            P(SG.hardware, phase="serving", cuda_text="unknown error", rank=0, xids=(),
              notes="TP0 (the only rank) had served for minutes when a replay fails with 'CUDA error: unknown error': "
                    "the GPU stopped answering after it had worked. The journal of the unit shows no kernel lines."),
            label={"label_confidence": "medium"}),
        one("vllm-hardware_fault-devices-unavailable", "vl-hw-busy",
            vl("0.11.0", "llama8b", "A100", path_style=0), V.devices_unavailable, fmt="docker-t"),
        one("sglang-hardware_fault-ecc-unit", "sg-hw",
            sg("0.5.23", "qwen25-72b", "H200", tp=8, path_style=1),
            P(SG.hardware, phase="serving", cuda_text="uncorrectable ECC error encountered", rank=5, xids=(48,),
              notes="TP5 alone fails with 'uncorrectable ECC error encountered' while serving. journalctl -u shows "
                    "only the service, so the Xid 48 the kernel logged is not in the window; CUDA's ECC error alone "
                    "names the GPU memory."), fmt="short-precise"),
        one("vllm-hardware_fault-nvml-gpu-lost", "vl-hw-lost",
            vl("0.10.1.1", "qwen25-72b", "H100", tp=8, path_style=0), V.gpu_lost_nvml, fmt="docker-t"),
        one("sglang-hardware_fault-launch-failure-tp1", "sg-hw-launch",
            sg("0.5.10", "llama8b", "H100", path_style=1),
            P(SG.hardware, phase="serving", cuda_text="unspecified launch failure", rank=0, xids=(),
              notes="One GPU, one rank: 'unspecified launch failure' while serving, with no kernel log in the window "
                    "to confirm it. Suspected hardware."),
            label={"label_confidence": "medium"}),
        multi("vllm-hardware_fault-launch-failure-configs", "vl-hw-launch", [
            Attempt(vl("0.33.0", "qwen3-8b", "H100", path_style=1),
                    P(VG.hardware, phase="warmup", cuda_text="unspecified launch failure", rank=0, xids=(),
                      notes="Profile run dies with 'unspecified launch failure'.")),
            Attempt(vl("0.33.0", "qwen3-8b", "H100", enforce_eager=True, gpu_memory_utilization=0.8, path_style=1),
                    P(VG.hardware, phase="weight_load", cuda_text="unspecified launch failure", rank=0, xids=(),
                      notes="The operator turned graphs off and lowered the memory share; the next start fails the "
                            "same way, earlier (while loading weights). The same CUDA launch failure under different "
                            "configurations: the GPU."), gap=420, manual=True)],
            fmt="short-iso"),
        one("vllm-hardware_fault-launch-failure-one-worker", "vl-hw",
            vl("0.10.1.1", "llama70b", "H100", tp=4, path_style=0),
            P(VG.hardware, phase="weight_load", cuda_text="unspecified launch failure", rank=2, xids=(79,),
              notes="Worker 2 alone hits 'unspecified launch failure' while the other three keep loading. Container "
                    "logs, so the Xid 79 in the host's kernel log is not shown."), fmt="docker-t"),
        one("sglang-hardware_fault-nvlink", "sg-hw-nvlink",
            sg("0.5.10", "qwen25-72b", "H100", tp=8, path_style=1), S.nvlink_serving),
        one("sglang-hardware_fault-nvml-unknown", "sg-hw-nvml",
            sg("0.5.22", "qwen3-32b", "H100", tp=4, path_style=0, gpu_ids=(0, 1, 2, 3)),
            P(SG.hardware, phase="dist_init", cuda_text="unknown error", rank=3, xids=(),
              notes="The container's entrypoint runs nvidia-smi -L: NVML cannot get a handle for one GPU ('Unknown "
                    "Error'), and TP3, the rank on that GPU, fails its first CUDA call. The GPU is lost to the "
                    "driver."),
            fmt="docker-t", hooks=hooks(launch=S.nvsmi_lost("0000:5D:00.0", good=3))),
    ]


def distributed_init() -> list:
    return [
        one("sglang-distributed_init-no-route", "sg-dist-multinode",
            sg("0.5.22", "qwen3-235b-fp8", "H100", tp=8, tp_size=16, nnodes=2, node_rank=1,
               dist_init_addr="10.20.0.31:5000", path_style=1), S.dist_no_route, rank_style="node1"),
        one("trtllm-distributed_init-mpi-spawn", "trt-mpi",
            other("trtllm", "1.0.0", "qwen3-32b", "H100", tp=2), O.trt_mpi_spawn, fmt="kubectl"),
        one("sglang-distributed_init-nccl-virbr0", "sg-dist-iface",
            sg("0.5.10", "ds-v3", "H200", tp=8, tp_size=16, nnodes=2, node_rank=0, dist_init_addr="10.20.0.11:5000",
               path_style=1, trust_remote_code=True), S.nccl_virbr, fmt="short-iso"),
        one("sglang-distributed_init-nccl-ib-remote", "sg-dist-ib",
            sg("0.5.23", "qwen3-235b-fp8", "H100", tp=8, tp_size=16, nnodes=2, node_rank=0,
               dist_init_addr="10.20.0.11:5000", path_style=1), S.nccl_ib_remote),
        one("sglang-distributed_init-nccl-peer-access", "sg-dist-p2p",
            sg("0.5.10", "qwen25-32b", "RTX6000", tp=2, path_style=2), S.nccl_peer_access, fmt="docker-t"),
    ]


def port_in_use() -> list:
    return [
        one("vllm-port_in_use-errno98-paste", "vl-port-http",
            vl("0.11.0", "qwen3-8b", "H100", port=8000, path_style=1), VE.http_port, fmt="paste",
            excerpt={"n": 2, "end": r"Errno 98"},
            notes="The user pasted only the last two lines of the traceback."),
        one("vllm-port_in_use-rendezvous-race", "vl-port-internal",
            vl("0.5.3.post1", "qwen2-72b", "A100", tp=4, path_style=1, site_style=3), V.rendezvous_race, fmt="cat"),
        one("tgi-port_in_use-webserver", "tgi-port",
            other("tgi", "3.3.4", "llama8b", "A100"), O.tgi_port_busy, fmt="docker"),
    ]


def model_load_error() -> list:
    return [
        one("sglang-model_load_error-tokenizer-sentencepiece", "sg-model-tokenizer",
            sg("0.5.10", "mistral7b", "A100", tp=2, model_path="/data/ft/mistral-7b-support-v3"),
            S.tokenizer_no_sentencepiece),
        one("vllm-model_load_error-head-dim-dropped", "vl-model-shape",
            vl("0.10.1.1", "qwen3-32b", "H100", tp=2, model="/models/Qwen3-32B-sft-merged"), V.head_dim_dropped,
            fmt="short-iso"),
    ]


def config_invalid() -> list:
    return [
        one("sglang-config_invalid-multinode-dp", "sg-cfg-dp",
            sg("0.5.10", "ds-v3", "H200", tp=8, tp_size=16, dp=2, nnodes=2, node_rank=0,
               dist_init_addr="10.20.0.11:5000", path_style=1, trust_remote_code=True), S.multinode_dp_assert),
        one("sglang-config_invalid-vllm-flags", "sg-cfg-argparse",
            sg("0.5.22", "qwen25-32b", "H100", tp=2, path_style=1), S.foreign_flags),
        one("sglang-config_invalid-fp8-block-tp8", "sg-cfg-block",
            sg("0.5.22", "qwen3-235b-fp8", "H200", tp=8, path_style=1), S.fp8_block_not_divisible, fmt="short-iso"),
        one("vllm-config_invalid-env-int", "vl-cfg-env",
            vl("0.10.1.1", "qwen25-7b", "L40S", path_style=1), V.env_int_value),
        one("vllm-config_invalid-quantization-mismatch", "vl-cfg-quant",
            vl("0.10.1.1", "qwen3-235b-fp8", "H200", tp=4, quantization="awq", path_style=1), V.quant_mismatch,
            fmt="docker-t"),
    ]


def kernel_arch_mismatch() -> list:
    return [
        one("vllm-kernel_arch_mismatch-head-dim-flashinfer", "vl-arch-headdim",
            vl("0.33.0", "phi35-mini", "H100", attention_backend="FLASHINFER", path_style=1), V.head_dim_backend),
        one("vllm-kernel_arch_mismatch-driver-library", "vl-arch-driver-lib",
            vl("0.10.1.1", "qwen3-32b", "H100", tp=2, path_style=1), V.driver_library_mismatch,
            view=View("short-iso", scope="boot"), host_noise=2),
        one("sglang-kernel_arch_mismatch-triton-smem", "sg-arch-smem",
            sg("0.5.22", "qwen3-8b", "RTX6000", path_style=1), S.triton_smem),
        one("vllm-kernel_arch_mismatch-cudart-missing", "vl-arch-import",
            vl("0.11.0", "llama8b", "H100", path_style=0), V.cudart_missing, fmt="docker"),
        one("vllm-kernel_arch_mismatch-missing-module", "vl-arch-module",
            vl("0.10.1.1", "gpt-oss-120b", "H100", path_style=1, site_style=4), V.missing_module, fmt="cat"),
        one("trtllm-kernel_arch_mismatch-engine-plan", "trt-plan",
            other("trtllm", "0.20.0", "llama8b", "L40S"), O.trt_plan_mismatch, fmt="docker"),
    ]


def illegal_memory_access() -> list:
    return [
        one("vllm-illegal_memory_access-misaligned", "vl-ima-misaligned",
            vl("0.11.0", "qwen3-30b-a3b", "H100", tp=2, enable_expert_parallel=True, path_style=1),
            V.misaligned_serving, fmt="docker-t"),
        one("sglang-illegal_memory_access-xid-dmesg-paste", "sg-ima",
            sg("0.5.10", "llama8b", "A100", path_style=1, attention_backend="flashinfer"), SG.illegal,
            view=View("paste", scope="boot"), excerpt={"start": r"NVRM: Xid", "n": 2, "last": False},
            label={"label_confidence": "medium", "fix_flags": []},
            notes="Only the kernel's two Xid lines were pasted (dmesg): Xid 13 (a graphics exception, out-of-range "
                  "address) and Xid 43 for the engine's process: an application-side fault."),
    ]


def cases() -> list:
    out = []
    for fn in (kv_cache_oom, weights_oom, activation_oom, graph_capture_fault, host_oom, startup_timeout,
               hardware_fault, distributed_init, port_in_use, model_load_error, config_invalid, kernel_arch_mismatch,
               illegal_memory_access):
        out += fn()
    return out
