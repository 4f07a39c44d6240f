"""SGLang failure cases, by cause."""
from __future__ import annotations

from .. import sg_config as C
from .. import sg_env as E
from .. import sg_gpu as G
from .. import sg_memory as M
from ..case import Attempt
from ..render import View
from ._h import N, P, hooks, multi, one, sg


def kv_cache_oom() -> list:
    return [
        one("sglang-kv_cache_oom-llama70b-a100-classic", "sg-kv-pool",
            sg("0.5.10", "llama70b", "A100", tp=4, mem_fraction_static=0.42, path_style=1),
            M.kv_pool, hooks=hooks(launch=N.pynvml), native_tb=True, notes="Classic 0.5.10 wording (no current value in the "
            "message); mem_fraction_static=0.42 was set to share the GPUs with another service."),
        multi("sglang-kv_cache_oom-qwen3-32b-l40s-attempts", "sg-kv-pool", [
            Attempt(sg("0.5.22", "qwen3-32b", "L40S", tp=2, mem_fraction_static=0.7, path_style=2), M.kv_pool),
            Attempt(sg("0.5.22", "qwen3-32b", "L40S", tp=2, mem_fraction_static=0.74, path_style=2), M.kv_pool,
                    gap=420, manual=True)], fmt="short-iso",
            notes="Two attempts: the operator nudged 0.7 -> 0.74 and it failed the same way; both values are tried."),
        one("sglang-kv_cache_oom-gptoss-h100-json", "sg-kv-pool",
            sg("0.5.23", "gpt-oss-120b", "H100", mem_fraction_static=0.7, path_style=3, reasoning_parser="gpt-oss"),
            M.kv_pool, fmt="json"),
        one("sglang-kv_cache_oom-qwen235-h100-tail", "sg-kv-pool",
            sg("0.5.22", "qwen3-235b-fp8", "H100", tp=4, mem_fraction_static=0.7, path_style=0),
            M.kv_pool, tail=60, notes="journalctl -n 60: server_args is cut off; the value in force is only in the "
                                      "error message."),
        one("sglang-kv_cache_oom-qwen72b-paste", "sg-kv-pool",
            sg("0.5.23", "qwen25-72b", "H200", tp=2, mem_fraction_static=0.48, site_style=1),
            M.kv_pool, fmt="paste", excerpt={"n": 16, "end": r"^RuntimeError: Not enough memory"},
            notes="Only the traceback, as pasted into a bug report."),
        one("sglang-kv_cache_oom-qwen3next-mamba-h100", "sg-kv-mamba",
            sg("0.5.23", "qwen3-next-fp8", "H100", tp=4, mamba_full_memory_ratio=0.5, path_style=1),
            P(M.mamba_pool, ratio_to=0.9), notes="The operator had lowered --mamba-full-memory-ratio to 0.5."),
        one("sglang-kv_cache_oom-qwen3next-mamba-b200", "sg-kv-mamba",
            sg("0.5.22", "qwen3-next-think", "B200", tp=2, max_mamba_cache_size=None, path_style=2,
               attention_backend="triton"),
            P(M.mamba_pool, ratio_to=1.5), fmt="short-precise"),
        one("sglang-kv_cache_oom-decode-runtime-l40s", "sg-kv-runtime",
            sg("0.5.10", "llama8b", "L40S", max_running_requests=256, path_style=1, site_style=2),
            P(M.runtime_pool, which="Decode"), fmt="docker-t"),
        one("sglang-kv_cache_oom-prefill-runtime-h100", "sg-kv-runtime",
            sg("0.5.23", "qwen3-30b-a3b", "H100", tp=2, max_running_requests=512, path_style=1),
            P(M.runtime_pool, which="Prefill")),
    ]


def weights_oom() -> list:
    return [
        one("sglang-weights_oom-llama70b-h100-tp1", "sg-weights",
            sg("0.5.10", "llama70b", "H100", path_style=1), M.weights, hooks=hooks(launch=N.pynvml)),
        one("sglang-weights_oom-qwen235-h100-tp2", "sg-weights",
            sg("0.5.23", "qwen3-235b-fp8", "H100", tp=2, path_style=4), P(M.weights, where="weights", stop=0.55),
            fmt="short-iso"),
        one("sglang-weights_oom-gemma27b-l40s-docker", "sg-weights",
            sg("0.5.22", "gemma3-27b", "L40S", path_style=0, site_style=0), M.weights, fmt="docker",
            hooks=hooks(launch=N.slow_processor)),
        one("sglang-weights_oom-busy-gpu-tail", "sg-weights-busy",
            sg("0.5.10", "qwen25-32b", "H100", tp=2, path_style=1),
            P(M.weights, other_proc=(48213, 41.2), waiting_ranks=True), tail=24, native_tb=True),
    ]


def activation_oom() -> list:
    return [
        one("sglang-activation_oom-moe-serving-h100", "sg-act",
            sg("0.5.10", "qwen3-30b-a3b", "H100", chunked_prefill_size=32768, path_style=1), M.activation),
        one("sglang-activation_oom-warmup-mem095", "sg-act-warmup",
            sg("0.5.23", "qwen25-32b", "H100", tp=2, mem_fraction_static=0.95, path_style=3),
            P(M.activation, when="warmup", site="logits", fix=["--mem-fraction-static 0.88"],
              must_not=["--mem-fraction-static 0.95"]), fmt="short-precise",
            notes="mem_fraction_static=0.95 leaves almost nothing for activations; the very first (warm-up) forward "
                  "runs out. Lower the static fraction."),
        one("sglang-activation_oom-nochunk-json", "sg-act",
            sg("0.5.22", "llama8b", "A100", chunked_prefill_size=-1, context_length=131072, path_style=2),
            P(M.activation, site="attention"), fmt="json",
            notes="Chunked prefill is disabled (-1): a 118k-token prompt is prefilled in one pass."),
        one("sglang-activation_oom-coder-l40s-paste", "sg-act",
            sg("0.5.10", "qwen3-coder-30b", "L40S", tp=2, chunked_prefill_size=16384, site_style=1),
            M.activation, fmt="paste", excerpt={"n": 14, "end": r"OutOfMemoryError"}),
    ]


def graph_capture_fault() -> list:
    return [
        one("sglang-graph_capture_fault-oom-l40s-classic", "sg-capture-oom",
            sg("0.5.10", "llama8b", "L40S", mem_fraction_static=0.92, path_style=2), P(M.capture_oom, stop_bs=80),
            notes="'Capture cuda graph failed: CUDA out of memory' at the first (largest) batch size."),
        one("sglang-graph_capture_fault-oom-glm46-tail", "sg-capture-oom",
            sg("0.5.23", "glm46-fp8", "H200", tp=8, path_style=1), P(M.capture_oom, stop_bs=320), tail=120,
            notes="0.5.2x wording ('Capture target decode CUDA graph'); the window starts after launch."),
        multi("sglang-graph_capture_fault-oom-attempts", "sg-capture-oom", [
            Attempt(sg("0.5.10", "qwen25-32b", "A100-40", tp=2, mem_fraction_static=0.9, path_style=1),
                    P(M.capture_oom, stop_bs=160)),
            Attempt(sg("0.5.10", "qwen25-32b", "A100-40", tp=2, mem_fraction_static=0.85, path_style=1),
                    P(M.capture_oom, stop_bs=96, fix=["--cuda-graph-max-bs 48"]), gap=600, manual=True)],
            notes="The operator followed hint 1 (0.9 -> 0.85); capture still runs out, now at a smaller bs. "
                  "Capture fewer batch sizes instead."),
        one("sglang-graph_capture_fault-unsafe-deepep", "sg-capture-unsafe",
            sg("0.5.10", "ds-v3", "H200", tp=8, ep=8, moe_a2a_backend="deepep", path_style=1,
               trust_remote_code=True),
            P(M.capture_unsafe, tail_fn=M.moe_sync_tail, ranks="some"), fmt="short-iso", rank_style="ep",
            notes="DeepEP dispatch reads a token count back to the host (.item()) inside the captured decode."),
        one("sglang-graph_capture_fault-unsafe-gdn-h100", "sg-capture-unsafe",
            sg("0.5.23", "qwen3-next-fp8", "H100", tp=4, speculative_algorithm="DFLASH",
               speculative_draft_model_path="/models/qwen3-next-dflash", speculative_dflash_block_size=8,
               max_running_requests=48, draft="/models/qwen3-next-dflash", path_style=1),
            M.capture_unsafe, fmt="docker-t"),
        one("sglang-graph_capture_fault-prefill-graph", "sg-prefill-graph",
            sg("0.5.23", "qwen3-32b", "H200", tp=2, path_style=1), M.prefill_graph),
        one("sglang-graph_capture_fault-prefill-graph-moe", "sg-prefill-graph",
            sg("0.5.22", "qwen3-30b-a3b", "H100", path_style=3), M.prefill_graph, fmt="short-precise"),
    ]


def hardware_fault() -> list:
    return [
        one("sglang-hardware_fault-ecc-capture-h100", "sg-hw",
            sg("0.5.10", "llama70b", "H100", tp=8, path_style=1),
            P(G.hardware, phase="graph_capture", cuda_text="uncorrectable ECC error encountered", rank=5,
              xids=(48, 63)), view=View("short", scope="boot", header=True), host_noise=3,
            notes="Tie-break: 'Capture cuda graph failed' wrapping ECC text with Xid 48 is hardware, not capture."),
        one("sglang-hardware_fault-xid94-serving", "sg-hw",
            sg("0.5.23", "qwen3-32b", "H200", tp=4, path_style=1),
            P(G.hardware, phase="serving", cuda_text="uncorrectable ECC error encountered", rank=2, xids=(94,),
              watchdog=True), fmt="short-iso", scope="boot", host_noise=2),
        one("sglang-hardware_fault-gsp-dist-b200", "sg-hw",
            sg("0.5.10", "gpt-oss-120b", "B200", tp=4, path_style=3),
            P(G.hardware, phase="dist_init", cuda_text="unknown error", rank=3, xids=(119, 154)),
            view=View("json", scope="boot", json_all=False),
            notes="journalctl -o json without -a: the server_args MESSAGE (over 4096 bytes) is null."),
        multi("sglang-hardware_fault-bus-then-ordinal", "sg-hw", [
            Attempt(sg("0.5.10", "qwen25-72b", "H100", tp=8, path_style=1),
                    P(G.hardware, phase="serving", cuda_text="unspecified launch failure", rank=7, xids=(79,))),
            Attempt(sg("0.5.10", "qwen25-72b", "H100", tp=8, path_style=1), G.gpu_gone, gap=15)],
            scope="boot",
            notes="Attempt 1 loses TP7's GPU (Xid 79); systemd restarts and attempt 2 finds only 7 devices."),
    ]


def illegal_memory_access() -> list:
    return [
        one("sglang-illegal_memory_access-flashinfer-xid13", "sg-ima",
            sg("0.5.10", "llama8b", "A100", path_style=1, attention_backend="flashinfer"),
            G.illegal, scope="boot", host_noise=2),
        one("sglang-illegal_memory_access-capture-h100", "sg-ima-capture",
            sg("0.5.23", "qwen3-8b", "H100", path_style=1, attention_backend="flashinfer"),
            P(G.illegal, phase="graph_capture"), fmt="short-precise"),
        one("sglang-illegal_memory_access-assert-l40s", "sg-ima",
            sg("0.5.22", "qwen25-7b", "L40S", path_style=0), P(G.illegal, assert_kind=True, xid13=False),
            fmt="docker-t"),
        one("sglang-illegal_memory_access-xid31-deepep-tail", "sg-ima",
            sg("0.5.10", "ds-v3", "H200", tp=8, ep=8, moe_a2a_backend="deepep", path_style=1,
               trust_remote_code=True),
            P(G.illegal, xid13=False, xid31=True, backend_fix=None), scope="boot", tail=100, rank_style="ep"),
    ]


def distributed_init() -> list:
    return [
        one("sglang-distributed_init-shm-docker", "sg-dist-shm",
            sg("0.5.10", "qwen25-32b", "A100", tp=4, path_style=0, site_style=0), E.shm_too_small, fmt="docker-t"),
        one("sglang-distributed_init-custom-ar-capture", "sg-dist-car",
            sg("0.5.10", "qwen25-32b", "RTX6000", tp=2, path_style=1), E.custom_allreduce_capture),
        one("sglang-distributed_init-custom-ar-capture-l40s", "sg-dist-car",
            sg("0.5.10", "qwen3-8b", "L40S", tp=2, path_style=2), E.custom_allreduce_capture, fmt="docker-t"),
        one("sglang-distributed_init-duplicate-gpu", "sg-dist-dup",
            sg("0.5.23", "qwen3-8b", "H100", tp=2, base_gpu_id=4, path_style=1), E.duplicate_gpu, fmt="short-iso"),
        one("sglang-distributed_init-nccl-watchdog-l40s", "sg-dist-watchdog",
            sg("0.5.22", "qwen3-32b", "L40S", tp=4, path_style=2), E.nccl_watchdog,
            view=View("short-iso", iso_colon=True, utc_offset_h=2), native_tb=True),
        one("sglang-distributed_init-multinode-timeout", "sg-dist-multinode",
            sg("0.5.23", "ds-v3", "H100", tp=8, tp_size=16, nnodes=2, node_rank=1,
               dist_init_addr="10.20.0.11:5000", path_style=1, trust_remote_code=True),
            E.dist_connect_timeout, rank_style="node1"),
    ]


def port_in_use() -> list:
    return [
        one("sglang-port_in_use-http-classic", "sg-port-http",
            sg("0.5.10", "qwen25-7b", "H100", path_style=1), E.http_port),
        multi("sglang-port_in_use-http-attempts", "sg-port-http", [
            Attempt(sg("0.5.23", "llama8b", "L40S", port=30000, path_style=2), E.http_port),
            Attempt(sg("0.5.23", "llama8b", "L40S", port=30000, path_style=2), E.http_port, gap=10)],
            fmt="short-iso", notes="Restart=on-failure brings it back with the same port and it fails the same way: "
                                   "a stale server still holds 30000."),
        one("sglang-port_in_use-nccl-port", "sg-port-nccl",
            sg("0.5.10", "llama70b", "H100", tp=4, nccl_port=29500, path_style=1), E.nccl_port),
        one("sglang-port_in_use-dist-init-addr", "sg-port-dist",
            sg("0.5.23", "ds-v3", "H200", tp=8, tp_size=16, nnodes=2, node_rank=0,
               dist_init_addr="10.20.0.11:20000", path_style=1, trust_remote_code=True),
            E.dist_addr_port, fmt="json", native_tb=True),
    ]


def model_load_error() -> list:
    return [
        one("sglang-model_load_error-no-config", "sg-model-files",
            sg("0.5.10", "qwen3-32b", "H100", tp=2, path_style=1), C.no_config),
        one("sglang-model_load_error-remote-code", "sg-model-remote",
            sg("0.5.22", "minimax-m2", "H200", tp=4, path_style=1), C.remote_code, fmt="docker-t"),
        one("sglang-model_load_error-bad-shard", "sg-model-files",
            sg("0.5.23", "qwen3-30b-a3b", "H100", tp=2, path_style=3), C.bad_shard, fmt="short-precise"),
        one("sglang-model_load_error-unsupported-arch", "sg-model-arch",
            sg("0.4.10.post2", "qwen3-next", "H100", tp=4, path_style=1), C.unsupported_arch),
    ]


def config_invalid() -> list:
    return [
        one("sglang-config_invalid-context-length", "sg-cfg-ctx",
            sg("0.5.10", "qwen25-7b", "H100", context_length=65536, path_style=1), C.context_too_long),
        one("sglang-config_invalid-ep-divisible", "sg-cfg-ep",
            sg("0.5.22", "qwen3-235b-fp8", "H200", tp=8, ep=3, path_style=1), C.ep_divisible, fmt="cat"),
        one("sglang-config_invalid-dflash-no-draft", "sg-cfg-spec",
            sg("0.5.23", "qwen3-8b", "H100", speculative_algorithm="DFLASH", path_style=1), C.dflash_no_draft,
            fmt="short-iso"),
        one("sglang-config_invalid-proxy-warmup", "sg-cfg-env",
            sg("0.5.10", "mistral24b", "A100", path_style=1), C.proxy_warmup),
        one("sglang-config_invalid-proxy-warmup-407", "sg-cfg-env",
            sg("0.5.22", "qwen3-8b", "L40S", path_style=0), P(C.proxy_warmup, auth=True), fmt="docker-t"),
        one("sglang-config_invalid-dflash-block-size", "sg-cfg-spec",
            sg("0.5.22", "qwen3-next-fp8", "H200", tp=2, speculative_algorithm="DFLASH",
               speculative_draft_model_path="/models/qwen3-next-dflash", speculative_dflash_block_size=0,
               path_style=1), C.dflash_no_draft),
    ]


def kernel_arch_mismatch() -> list:
    imp = "/usr/local/lib/python3.12/dist-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: " \
          "_ZN3c104cuda20CUDACachingAllocator9allocatorE"
    return [
        one("sglang-kernel_arch_mismatch-capture-sm120", "sg-arch-capture",
            sg("0.5.10", "qwen3-8b", "RTX6000", path_style=2), C.capture_no_kernel),
        one("sglang-kernel_arch_mismatch-import-unsupported", "sg-arch-import",
            sg("0.5.10", "qwen3-30b-a3b", "H100", tp=2, path_style=1), P(C.unsupported_arch, import_error=imp),
            fmt="short-iso"),
        one("sglang-kernel_arch_mismatch-import-unsupported-fla", "sg-arch-import",
            sg("0.5.22", "gemma3-27b", "H200", path_style=3),
            P(C.unsupported_arch, import_error="libcudart.so.13: cannot open shared object file: No such file or "
                                               "directory"), fmt="cat"),
        one("sglang-kernel_arch_mismatch-undefined-symbol", "sg-arch-abi",
            sg("0.5.22", "llama8b", "H100", path_style=1), C.undefined_symbol, fmt="docker"),
        one("sglang-kernel_arch_mismatch-blackwell-gdn", "sg-arch-backend",
            sg("0.5.23", "qwen3-next", "B200", tp=2, attention_backend="fa3", path_style=1),
            C.blackwell_gdn_backend),
        one("sglang-kernel_arch_mismatch-blackwell-gdn-flashinfer", "sg-arch-backend",
            sg("0.5.22", "qwen3-next-fp8", "B200", tp=4, attention_backend="flashinfer", path_style=3),
            C.blackwell_gdn_backend, fmt="cat"),
        one("sglang-kernel_arch_mismatch-flashinfer-jit-sm120", "sg-arch-jit",
            sg("0.5.22", "qwen25-7b", "RTX6000", attention_backend="flashinfer", path_style=1), C.flashinfer_jit),
        one("sglang-kernel_arch_mismatch-driver", "sg-arch-driver",
            sg("0.5.22", "qwen25-7b", "A100", tp=2, path_style=0), C.driver_too_old, fmt="docker-t"),
    ]


def host_oom() -> list:
    return [
        one("sglang-host_oom-glm46-tp8", "sg-host-oom",
            sg("0.5.23", "glm46-fp8", "H200", tp=8, path_style=1), E.host_oom, scope="boot", host_noise=2),
        one("sglang-host_oom-old-dead", "sg-host-oom",
            sg("0.4.10.post2", "llama70b", "A100", tp=4, path_style=1), P(E.host_oom, style="old", where=0.6),
            fmt="short-iso", scope="boot"),
        one("sglang-host_oom-cpu-offload-unit", "sg-host-oom-unit",
            sg("0.5.22", "qwen25-72b", "H100", tp=2, cpu_offload_gb=120, path_style=1),
            P(E.host_oom, style="systemd", where=0.3)),
        one("sglang-host_oom-tail", "sg-host-oom",
            sg("0.5.10", "qwen3-235b-fp8", "H100", tp=4, path_style=1), P(E.host_oom, where=0.7),
            fmt="short-precise", scope="boot", tail=70),
    ]


def startup_timeout() -> list:
    return [
        one("sglang-startup_timeout-torch-compile", "sg-timeout",
            sg("0.5.10", "llama70b", "H100", tp=4, enable_torch_compile=True, path_style=1), E.timeout_compile),
        one("sglang-startup_timeout-download", "sg-timeout-download",
            sg("0.5.23", "qwen3-32b", "H200", tp=2, path_style=0), E.timeout_download, fmt="short-iso"),
        multi("sglang-startup_timeout-deepgemm-attempts", "sg-timeout", [
            Attempt(sg("0.5.22", "ds-v3", "H200", tp=8, path_style=1, trust_remote_code=True), E.timeout_deepgemm),
            Attempt(sg("0.5.22", "ds-v3", "H200", tp=8, path_style=1, trust_remote_code=True), E.timeout_deepgemm,
                    gap=60)],
            notes="Restart=on-failure: the second start repeats the same JIT compile and is killed again."),
    ]


def cases() -> list:
    out = []
    for fn in (kv_cache_oom, weights_oom, activation_oom, graph_capture_fault, hardware_fault, illegal_memory_access,
               distributed_init, port_in_use, model_load_error, config_invalid, kernel_arch_mismatch, host_oom,
               startup_timeout):
        out += fn()
    return out
