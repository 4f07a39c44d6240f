#!/usr/bin/env python3
"""Record genuine GPU failure output under an SGLang-style start-up (logdoctor issue 6).

This script imitates the start-up of an SGLang inference server (classic 0.4/0.5.10-era wording) with real
PyTorch work on a real GPU, and triggers one real fault in the matching phase:

    python3 tools/record_gpu_faults.py SCENARIO           run one scenario (launcher + scheduler child process)
    python3 tools/record_gpu_faults.py all --out DIR      run every scenario, each in its own process tree,
                                                          writing DIR/<scenario>.log, DIR/versions.txt,
                                                          DIR/results.json and DIR/dmesg.txt
    python3 tools/record_gpu_faults.py list               list the scenarios

What is imitated and what is genuine:
  * Imitated (printed by this script, in SGLang's wording and prefix format): the phase markers
    (`server_args=ServerArgs(...)`, `Load weight begin/end`, `KV Cache is allocated`, `Memory pool end`,
    `Capture cuda graph begin/end`, the scheduler summary, uvicorn lines, `The server is fired up and ready to roll!`),
    the `Scheduler hit an exception:` wrapper, the `Capture cuda graph failed:` wrapper with its hint block,
    SGLang's own `Not enough memory` RuntimeError, and the parent's `Received sigquit from a child process` line.
    All `avail mem` / `mem usage` figures are real readings of torch.cuda.mem_get_info.
  * Genuine (produced by PyTorch / CUDA / Triton / the driver, never typed here): every traceback body, every
    torch.OutOfMemoryError / torch.AcceleratorError text, CUDA error strings, device-side assertion lines.

Layout like SGLang: the launcher (parent) prints server_args and spawns the scheduler (child, rank TP0, the only
process that touches CUDA). When the child hits an exception it logs the traceback and sends SIGQUIT to the parent,
which logs the sigquit line, kills the child and exits with status 1.

nccl_timeout is not implemented: it needs two GPUs, and only one-GPU machines were lent when this was written.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import traceback

try:  # Triton is only needed by the scheduler child (the kernel below); the launcher runs without it.
    import triton
    import triton.language as tl
except Exception:  # pragma: no cover - machines without triton
    triton = None
    tl = None

logger = logging.getLogger("sglang")
GB = 1 << 30

# ----------------------------------------------------------------------------------------------------------------
# Scenarios and model shapes
# ----------------------------------------------------------------------------------------------------------------

MODELS = {
    "llama-8b": dict(
        path="meta-llama/Llama-3.1-8B-Instruct",
        arch="LlamaForCausalLM",
        hidden=4096,
        inter=14336,
        layers=32,
        heads=32,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
        ctx=131072,
        shards=4,
        qkv_bias=False,
    ),
    "llama-70b": dict(
        path="meta-llama/Llama-3.3-70B-Instruct",
        arch="LlamaForCausalLM",
        hidden=8192,
        inter=28672,
        layers=80,
        heads=64,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
        ctx=131072,
        shards=30,
        qkv_bias=False,
    ),
    "llama-405b": dict(
        path="meta-llama/Llama-3.1-405B-Instruct",
        arch="LlamaForCausalLM",
        hidden=16384,
        inter=53248,
        layers=126,
        heads=128,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
        ctx=131072,
        shards=191,
        qkv_bias=False,
    ),
    "qwen-7b-1m": dict(
        path="Qwen/Qwen2.5-7B-Instruct-1M",
        arch="Qwen2ForCausalLM",
        hidden=3584,
        inter=18944,
        layers=28,
        heads=28,
        kv_heads=4,
        head_dim=128,
        vocab=152064,
        ctx=1010000,
        shards=4,
        qkv_bias=True,
    ),
}

# name -> (model, server-arg overrides, one-line description)
SCENARIOS = {
    "healthy": ("llama-8b", {}, "starts, captures graphs, warms up and serves a few requests"),
    "weights_oom": ("llama-405b", {}, "405B bf16 on one GPU: torch OOM while the model's weights are created"),
    "pool_oom": ("llama-70b", {}, "70B bf16 fits, leaves nothing for the KV pool: SGLang's own 'Not enough memory'"),
    "pool_alloc_oom": (
        "qwen-7b-1m",
        {"mem_fraction_static": 0.96},
        "1M context x 2048 requests req_to_token table is not counted when the pool is sized: "
        "torch OOM while allocating the KV buffers",
    ),
    "capture_oom": (
        "llama-8b",
        {"mem_fraction_static": 0.97, "cuda_graph_max_bs": 1024},
        "too little left after the pool for 1024-wide decode graphs: torch OOM during capture",
    ),
    "capture_oom_in_graph": (
        "llama-8b",
        {"mem_fraction_static": 0.97, "cuda_graph_max_bs": 1024, "attention_backend": "triton"},
        "same sizing; the decode backend allocates a worst-case split-KV scratch only while "
        "a graph is captured: torch OOM inside torch.cuda.graph",
    ),
    "capture_unsafe": (
        "llama-8b",
        {"attention_backend": "triton"},
        "a .item() host sync inside the attention backend while a CUDA graph is captured",
    ),
    "capture_unsafe_sync": (
        "llama-8b",
        {"attention_backend": "triton"},
        "a torch.cuda.synchronize() inside the attention backend while a graph is captured",
    ),
    "device_assert": (
        "llama-8b",
        {},
        "a request with a token id beyond the vocabulary: embedding index "
        "out of range -> device-side assert while serving",
    ),
    "device_assert_gather": (
        "llama-8b",
        {},
        "a request asks for the logprobs of token ids beyond the vocabulary: "
        "torch.gather out of range -> device-side assert while serving",
    ),
    "illegal_access": (
        "llama-8b",
        {},
        "warm-up request: Triton write_req_to_token_pool kernel gets a garbage "
        "req_pool_index and writes far out of bounds -> illegal memory access",
    ),
}
ORDER = [
    "healthy",
    "weights_oom",
    "pool_oom",
    "pool_alloc_oom",
    "capture_oom",
    "capture_oom_in_graph",
    "capture_unsafe",
    "capture_unsafe_sync",
    "device_assert",
    "device_assert_gather",
    "illegal_access",
]

# Llama-3 token ids of "The capital city of France is" (the warm-up prompt SGLang sends), and of a user prompt.
WARMUP_IDS = [128000, 791, 6864, 3363, 315, 9822, 374]
USER_IDS = [
    128000,
    128006,
    882,
    128007,
    271,
    10086,
    757,
    264,
    2875,
    3446,
    922,
    264,
    12585,
    889,
    48742,
    311,
    3371,
    13,
    128009,
    128006,
    78191,
    128007,
    271,
]


@dataclasses.dataclass
class ServerArgs:
    """The classic SGLang ServerArgs fields (a subset, in SGLang's order); printed as its dataclass repr."""

    model_path: str
    tokenizer_path: str | None = None
    tokenizer_mode: str = "auto"
    skip_tokenizer_init: bool = False
    load_format: str = "auto"
    trust_remote_code: bool = False
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    quantization: str | None = None
    quantization_param_path: str | None = None
    context_length: int | None = None
    device: str = "cuda"
    served_model_name: str | None = None
    chat_template: str | None = None
    is_embedding: bool = False
    revision: str | None = None
    host: str = "0.0.0.0"
    port: int = 30000
    mem_fraction_static: float = 0.88
    max_running_requests: int | None = None
    max_total_tokens: int | None = None
    chunked_prefill_size: int = 8192
    max_prefill_tokens: int = 16384
    schedule_policy: str = "fcfs"
    schedule_conservativeness: float = 1.0
    cpu_offload_gb: int = 0
    page_size: int = 1
    tp_size: int = 1
    stream_interval: int = 1
    stream_output: bool = False
    random_seed: int = 893164112
    constrained_json_whitespace_pattern: str | None = None
    watchdog_timeout: float = 300
    dist_timeout: int | None = None
    download_dir: str | None = None
    base_gpu_id: int = 0
    gpu_id_step: int = 1
    log_level: str = "info"
    log_level_http: str | None = None
    log_requests: bool = False
    log_requests_level: int = 0
    show_time_cost: bool = False
    enable_metrics: bool = False
    decode_log_interval: int = 40
    api_key: str | None = None
    file_storage_path: str = "sglang_storage"
    enable_cache_report: bool = False
    dp_size: int = 1
    load_balance_method: str = "round_robin"
    ep_size: int = 1
    dist_init_addr: str | None = None
    nnodes: int = 1
    node_rank: int = 0
    json_model_override_args: str = "{}"
    lora_paths: list | None = None
    max_loras_per_batch: int = 8
    lora_backend: str = "triton"
    attention_backend: str = "fa3"
    sampling_backend: str = "flashinfer"
    grammar_backend: str = "xgrammar"
    speculative_algorithm: str | None = None
    speculative_draft_model_path: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    enable_double_sparsity: bool = False
    disable_radix_cache: bool = False
    disable_cuda_graph: bool = False
    disable_cuda_graph_padding: bool = False
    enable_nccl_nvls: bool = False
    disable_outlines_disk_cache: bool = False
    disable_custom_all_reduce: bool = False
    disable_overlap_schedule: bool = False
    enable_mixed_chunk: bool = False
    enable_dp_attention: bool = False
    enable_ep_moe: bool = False
    enable_torch_compile: bool = False
    torch_compile_max_bs: int = 32
    cuda_graph_max_bs: int | None = 256
    cuda_graph_bs: list | None = None
    torchao_config: str = ""
    enable_nan_detection: bool = False
    enable_p2p_check: bool = False
    triton_attention_reduce_in_fp32: bool = False
    triton_attention_num_kv_splits: int = 8
    num_continuous_decode_steps: int = 1
    delete_ckpt_after_loading: bool = False
    enable_memory_saver: bool = False
    allow_auto_truncate: bool = False
    enable_custom_logit_processor: bool = False
    tool_call_parser: str | None = None
    enable_hierarchical_cache: bool = False
    warmups: str | None = None


def build_server_args(scenario: str) -> ServerArgs:
    model_key, overrides, _ = SCENARIOS[scenario]
    path = MODELS[model_key]["path"]
    args = ServerArgs(model_path=path, tokenizer_path=path, served_model_name=path)
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


def configure_logger(prefix: str = "") -> None:
    logging.basicConfig(
        level=logging.INFO, format=f"[%(asctime)s{prefix}] %(message)s", datefmt="%Y-%m-%d %H:%M:%S", force=True
    )


def progress(line: str) -> None:
    """tqdm-style progress state, one state per line (as it reaches a journal)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _fmt_td(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def flush_c_stdio() -> None:
    """Push out what the CUDA runtime wrote through C stdio (device-side assert lines) before Python logs more."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:
        pass


# ----------------------------------------------------------------------------------------------------------------
# Scheduler child: everything below runs in the spawned process and is the only code that touches CUDA.
# ----------------------------------------------------------------------------------------------------------------

if triton is not None:

    @triton.jit
    def write_req_to_token_pool_triton(
        req_to_token_ptr,  # [max_batch, max_context_len]
        req_pool_indices,
        pre_lens,
        seq_lens,
        extend_lens,
        out_cache_loc,
        req_to_token_ptr_stride: tl.constexpr,
        BLOCK_SIZE: tl.constexpr,
    ):
        pid = tl.program_id(0)
        req_pool_index = tl.load(req_pool_indices + pid)
        pre_len = tl.load(pre_lens + pid)
        seq_len = tl.load(seq_lens + pid)

        cumsum_start = tl.cast(0, tl.int64)
        for i in range(pid):
            cumsum_start += tl.load(extend_lens + i)

        num_loop = tl.cdiv(seq_len - pre_len, BLOCK_SIZE)
        for i in range(num_loop):
            offset = tl.arange(0, BLOCK_SIZE) + i * BLOCK_SIZE
            mask = offset < (seq_len - pre_len)
            value = tl.load(out_cache_loc + cumsum_start + offset, mask=mask)
            tl.store(
                req_to_token_ptr + req_pool_index * req_to_token_ptr_stride + offset + pre_len,
                value,
                mask=mask,
            )


def get_available_gpu_memory(gpu_id: int = 0, empty_cache: bool = True) -> float:
    import torch

    if empty_cache:
        torch.cuda.empty_cache()
    free_gpu_memory, _ = torch.cuda.mem_get_info(gpu_id)
    return free_gpu_memory / GB


CUDA_GRAPH_CAPTURE_FAILED_MSG = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)


def _define_model_classes():
    """Model classes named like SGLang's, so tracebacks read like a server's. Built lazily: torch is imported
    only in the scheduler child."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class UnquantizedLinearMethod:
        def create_weights(self, layer, input_size, output_size, params_dtype, bias):
            weight = nn.Parameter(torch.empty(output_size, input_size, dtype=params_dtype), requires_grad=False)
            layer.register_parameter("weight", weight)
            if bias:
                layer.register_parameter(
                    "bias", nn.Parameter(torch.empty(output_size, dtype=params_dtype), requires_grad=False)
                )
            else:
                layer.bias = None

        def apply(self, layer, x):
            return F.linear(x, layer.weight, layer.bias)

    class LinearBase(nn.Module):
        def __init__(self, input_size, output_size, bias=False, params_dtype=torch.bfloat16):
            super().__init__()
            self.quant_method = UnquantizedLinearMethod()
            self.quant_method.create_weights(self, input_size, output_size, params_dtype, bias)

        def forward(self, x):
            return self.quant_method.apply(self, x)

    class QKVParallelLinear(LinearBase):
        def __init__(self, hidden_size, head_size, total_num_heads, total_num_kv_heads, bias=False):
            super().__init__(hidden_size, (total_num_heads + 2 * total_num_kv_heads) * head_size, bias=bias)

    class MergedColumnParallelLinear(LinearBase):
        def __init__(self, input_size, output_sizes, bias=False):
            super().__init__(input_size, sum(output_sizes), bias=bias)

    class RowParallelLinear(LinearBase):
        pass

    class VocabParallelEmbedding(nn.Module):
        def __init__(self, num_embeddings, embedding_dim):
            super().__init__()
            self.weight = nn.Parameter(
                torch.empty(num_embeddings, embedding_dim, dtype=torch.bfloat16), requires_grad=False
            )

        def forward(self, input_):
            return F.embedding(input_, self.weight)

    class ParallelLMHead(VocabParallelEmbedding):
        pass

    class RMSNorm(nn.Module):
        def __init__(self, hidden_size, eps=1e-5):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden_size, dtype=torch.bfloat16), requires_grad=False)
            self.variance_epsilon = eps

        def forward(self, x):
            xf = x.float()
            xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
            return xf.to(x.dtype) * self.weight

    class SiluAndMul(nn.Module):
        def forward(self, x):
            d = x.shape[-1] // 2
            return F.silu(x[..., :d]) * x[..., d:]

    class RadixAttention(nn.Module):
        def __init__(self, num_heads, head_dim, num_kv_heads, layer_id):
            super().__init__()
            self.tp_q_head_num, self.head_dim, self.tp_k_head_num = num_heads, head_dim, num_kv_heads
            self.layer_id = layer_id

        def forward(self, q, k, v, forward_batch):
            return forward_batch.attn_backend.forward(q, k, v, self, forward_batch)

    class LlamaAttention(nn.Module):
        def __init__(self, cfg, layer_id):
            super().__init__()
            self.head_dim = cfg["head_dim"]
            self.q_size = cfg["heads"] * self.head_dim
            self.kv_size = cfg["kv_heads"] * self.head_dim
            self.qkv_proj = QKVParallelLinear(
                cfg["hidden"], self.head_dim, cfg["heads"], cfg["kv_heads"], bias=cfg["qkv_bias"]
            )
            self.o_proj = RowParallelLinear(cfg["heads"] * self.head_dim, cfg["hidden"])
            self.attn = RadixAttention(cfg["heads"], self.head_dim, cfg["kv_heads"], layer_id)

        def forward(self, positions, hidden_states, forward_batch):
            qkv = self.qkv_proj(hidden_states)
            q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
            attn_output = self.attn(q, k, v, forward_batch)
            return self.o_proj(attn_output)

    class LlamaMLP(nn.Module):
        def __init__(self, hidden_size, intermediate_size):
            super().__init__()
            self.gate_up_proj = MergedColumnParallelLinear(hidden_size, [intermediate_size] * 2)
            self.down_proj = RowParallelLinear(intermediate_size, hidden_size)
            self.act_fn = SiluAndMul()

        def forward(self, x):
            return self.down_proj(self.act_fn(self.gate_up_proj(x)))

    class LlamaDecoderLayer(nn.Module):
        def __init__(self, cfg, layer_id):
            super().__init__()
            self.self_attn = LlamaAttention(cfg, layer_id)
            self.mlp = LlamaMLP(cfg["hidden"], cfg["inter"])
            self.input_layernorm = RMSNorm(cfg["hidden"])
            self.post_attention_layernorm = RMSNorm(cfg["hidden"])

        def forward(self, positions, hidden_states, forward_batch):
            residual = hidden_states
            hidden_states = self.self_attn(positions, self.input_layernorm(hidden_states), forward_batch)
            hidden_states = hidden_states + residual
            residual = hidden_states
            return self.mlp(self.post_attention_layernorm(hidden_states)) + residual

    def make_layers(num_hidden_layers, layer_fn):
        return nn.ModuleList([layer_fn(idx) for idx in range(num_hidden_layers)])

    class LlamaModel(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.embed_tokens = VocabParallelEmbedding(cfg["vocab"], cfg["hidden"])
            self.layers = make_layers(cfg["layers"], lambda idx: LlamaDecoderLayer(cfg, idx))
            self.norm = RMSNorm(cfg["hidden"])

        def forward(self, input_ids, positions, forward_batch):
            hidden_states = self.embed_tokens(input_ids)
            for layer in self.layers:
                hidden_states = layer(positions, hidden_states, forward_batch)
            return self.norm(hidden_states)

    class LogitsProcessor(nn.Module):
        def forward(self, input_ids, hidden_states, lm_head, forward_batch):
            if forward_batch.forward_mode == "extend":  # only the last token of each sequence
                hidden_states = hidden_states[forward_batch.extend_last_index]
            logits = torch.matmul(hidden_states, lm_head.weight.T)
            return logits.float()

    class LlamaForCausalLM(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.model = LlamaModel(cfg)
            self.lm_head = ParallelLMHead(cfg["vocab"], cfg["hidden"])
            self.logits_processor = LogitsProcessor()

        def forward(self, input_ids, positions, forward_batch):
            hidden_states = self.model(input_ids, positions, forward_batch)
            return self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch)

    class Qwen2ForCausalLM(LlamaForCausalLM):
        pass

    return {"LlamaForCausalLM": LlamaForCausalLM, "Qwen2ForCausalLM": Qwen2ForCausalLM}


class ForwardBatch:
    def __init__(
        self,
        forward_mode,
        batch_size,
        input_ids,
        positions,
        out_cache_loc,
        seq_lens,
        req_pool_indices,
        attn_backend,
        token_to_kv_pool,
        extend_last_index=None,
    ):
        self.forward_mode = forward_mode
        self.batch_size = batch_size
        self.input_ids = input_ids
        self.positions = positions
        self.out_cache_loc = out_cache_loc
        self.seq_lens = seq_lens
        self.req_pool_indices = req_pool_indices
        self.attn_backend = attn_backend
        self.token_to_kv_pool = token_to_kv_pool
        self.extend_last_index = extend_last_index


class AttentionBackend:
    """Stores K/V into the pool like a real backend; the attention maths itself is a stand-in (q passes through),
    which is irrelevant to the faults recorded here. `unsafe` plants the scenario's capture-time fault."""

    def __init__(self, unsafe: str | None, context_len: int):
        self.unsafe = unsafe
        self.max_kv_splits = max(1, context_len // 256)

    def forward(self, q, k, v, layer, forward_batch):
        pool = forward_batch.token_to_kv_pool
        pool.set_kv_buffer(
            layer,
            forward_batch.out_cache_loc,
            k.view(-1, layer.tp_k_head_num, layer.head_dim),
            v.view(-1, layer.tp_k_head_num, layer.head_dim),
        )
        if forward_batch.forward_mode == "decode":
            return self.forward_decode(q, layer, forward_batch)
        return q

    def forward_decode(self, q, layer, forward_batch):
        import torch

        if self.unsafe == "item" and layer.layer_id == 0:
            # split-KV count from the longest sequence in the batch: a host sync
            max_seq_len = forward_batch.seq_lens.max().item()
            self.num_kv_splits = max(1, min(8, (max_seq_len + 255) // 256))
        if self.unsafe == "synchronize" and layer.layer_id == 0:
            torch.cuda.synchronize()
        if self.unsafe == "worst_case_scratch" and layer.layer_id == 0 and torch.cuda.is_current_stream_capturing():
            # split-KV partial results sized for the longest possible context, allocated inside the graph
            self.attn_logits = torch.empty(
                (q.shape[0], layer.tp_q_head_num, self.max_kv_splits, layer.head_dim + 1),
                dtype=torch.float32,
                device=q.device,
            )
        return q


class ReqToTokenPool:
    def __init__(self, size, max_context_len, device):
        import torch

        self.size = size
        self.max_context_len = max_context_len
        self.req_to_token = torch.zeros((size, max_context_len), dtype=torch.int32, device=device)


class MHATokenToKVPool:
    def __init__(self, size, page_size, dtype, head_num, head_dim, layer_num, device):
        self.size, self.page_size, self.dtype = size, page_size, dtype
        self.head_num, self.head_dim, self.layer_num, self.device = head_num, head_dim, layer_num, device
        self._create_buffers()
        k_size, v_size = self.get_kv_size_bytes()
        logger.info(
            f"KV Cache is allocated. #tokens: {size}, K size: {k_size / GB:.2f} GB, V size: {v_size / GB:.2f} GB"
        )

    def _create_buffers(self):
        import torch

        # [size, head_num, head_dim] for each layer; the padded slot 0 is used for dummy outputs from padded tokens.
        self.k_buffer = [
            torch.zeros(
                (self.size + self.page_size, self.head_num, self.head_dim), dtype=self.dtype, device=self.device
            )
            for _ in range(self.layer_num)
        ]
        self.v_buffer = [
            torch.zeros(
                (self.size + self.page_size, self.head_num, self.head_dim), dtype=self.dtype, device=self.device
            )
            for _ in range(self.layer_num)
        ]

    def get_kv_size_bytes(self):
        k = sum(b.numel() * b.element_size() for b in self.k_buffer)
        v = sum(b.numel() * b.element_size() for b in self.v_buffer)
        return k, v

    def set_kv_buffer(self, layer, loc, cache_k, cache_v):
        self.k_buffer[layer.layer_id][loc] = cache_k
        self.v_buffer[layer.layer_id][loc] = cache_v


class CudaGraphRunner:
    def __init__(self, model_runner):
        import torch

        self.model_runner = model_runner
        max_bs = model_runner.server_args.cuda_graph_max_bs
        capture_bs = [1, 2, 4, 8, 12] + list(range(16, 257, 8))
        if max_bs > 256:
            capture_bs += list(range(272, max_bs + 1, 16))
        self.capture_bs = [bs for bs in capture_bs if bs <= max_bs]
        self.max_bs = max(self.capture_bs)
        self.graphs, self.output_buffers = {}, {}
        dev = "cuda"
        self.input_ids = torch.zeros((self.max_bs,), dtype=torch.int64, device=dev)
        self.positions = torch.zeros((self.max_bs,), dtype=torch.int64, device=dev)
        self.out_cache_loc = torch.zeros((self.max_bs,), dtype=torch.int64, device=dev)
        self.req_pool_indices = torch.zeros((self.max_bs,), dtype=torch.int32, device=dev)
        self.seq_lens = torch.ones((self.max_bs,), dtype=torch.int32, device=dev)
        self.stream = None
        try:
            self.capture()
        except RuntimeError as e:
            raise Exception(f"Capture cuda graph failed: {e}\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}")

    def capture(self):
        import torch

        self.stream = torch.cuda.Stream()
        self.stream.wait_stream(torch.cuda.current_stream())
        total = len(self.capture_bs)
        tic = time.perf_counter()
        with torch.cuda.stream(self.stream):
            for i, bs in enumerate(reversed(self.capture_bs)):
                avail_mem = get_available_gpu_memory(empty_cache=False)
                el = time.perf_counter() - tic
                rate = (i / el) if el > 0 and i else 0.0
                rem = (total - i) / rate if rate else None
                progress(
                    f"Capturing batches (bs={bs} avail_mem={avail_mem:.2f} GB): {int(100 * i / total):3d}%|"
                    f"{'█' * (10 * i // total):<10}| {i}/{total} [{_fmt_td(el)}<"
                    f"{_fmt_td(rem) if rem is not None else '?'}, "
                    f"{f'{rate:.2f}it/s' if rate else '?it/s'}]"
                )
                graph, output_buffers = self.capture_one_batch_size(bs)
                self.graphs[bs] = graph
                self.output_buffers[bs] = output_buffers
        el = time.perf_counter() - tic
        avail_mem = get_available_gpu_memory(empty_cache=False)
        progress(
            f"Capturing batches (bs={self.capture_bs[0]} avail_mem={avail_mem:.2f} GB): "
            f"100%|██████████| "
            f"{total}/{total} [{_fmt_td(el)}<00:00, {total / el:.2f}it/s]"
        )

    def capture_one_batch_size(self, bs):
        import torch

        mr = self.model_runner
        forward_batch = ForwardBatch(
            "decode",
            bs,
            self.input_ids[:bs],
            self.positions[:bs],
            self.out_cache_loc[:bs],
            self.seq_lens[:bs],
            self.req_pool_indices[:bs],
            mr.attn_backend,
            mr.token_to_kv_pool,
        )

        def run_once():
            return mr.model.forward(forward_batch.input_ids, forward_batch.positions, forward_batch)

        for _ in range(2):
            torch.cuda.synchronize()
            run_once()

        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=mr.graph_memory_pool, stream=self.stream):
            out = run_once()
        mr.graph_memory_pool = graph.pool()
        return graph, out

    def replay(self, input_ids, out_cache_loc, seq_lens):
        bs = input_ids.shape[0]
        self.input_ids[:bs].copy_(input_ids)
        self.out_cache_loc[:bs].copy_(out_cache_loc)
        self.seq_lens[:bs].copy_(seq_lens)
        self.graphs[bs].replay()
        return self.output_buffers[bs][:bs]


class ModelRunner:
    def __init__(self, server_args, scenario):
        self.server_args = server_args
        self.scenario = scenario
        self.cfg = MODELS[SCENARIOS[scenario][0]]
        self.gpu_id = 0
        self.graph_memory_pool = None
        self.cuda_graph_runner = None
        self.initialize()

    def initialize(self):
        min_per_gpu_memory = self.init_torch_distributed()
        self.load_model()
        self.init_memory_pool(
            min_per_gpu_memory, self.server_args.max_running_requests, self.server_args.max_total_tokens
        )
        self.init_attention_backend()
        self.init_cuda_graphs()

    def init_torch_distributed(self):
        import datetime

        import torch
        import torch.distributed as dist

        logger.info("Init torch distributed begin.")
        tic = time.perf_counter()
        torch.cuda.set_device(self.gpu_id)
        before = get_available_gpu_memory()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dist.init_process_group(
            backend="nccl",
            init_method=f"tcp://127.0.0.1:{port}",
            world_size=1,
            rank=0,
            timeout=datetime.timedelta(seconds=120),
            device_id=torch.device("cuda", self.gpu_id),
        )
        try:
            logger.info(f"sglang is using nccl=={'.'.join(str(x) for x in torch.cuda.nccl.version())}")
        except Exception:
            pass
        t = torch.ones(1, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
        min_per_gpu_memory = get_available_gpu_memory()
        logger.info(
            f"Init torch distributed ends. elapsed={time.perf_counter() - tic:.2f} s, "
            f"mem usage={before - min_per_gpu_memory:.2f} GB"
        )
        return min_per_gpu_memory

    def load_model(self):
        import torch

        before_avail_memory = get_available_gpu_memory(self.gpu_id)
        logger.info(f"Load weight begin. avail mem={before_avail_memory:.2f} GB")
        tic = time.perf_counter()
        self.model = get_model(self.cfg, torch.device("cuda", self.gpu_id))
        self.dtype = torch.bfloat16
        after_avail_memory = get_available_gpu_memory(self.gpu_id)
        self.weight_load_mem_usage = before_avail_memory - after_avail_memory
        logger.info(
            f"Load weight end. elapsed={time.perf_counter() - tic:.2f} s, type={type(self.model).__name__}, "
            f"dtype={self.dtype}, avail mem={after_avail_memory:.2f} GB, "
            f"mem usage={self.weight_load_mem_usage:.2f} GB."
        )

    def profile_max_num_token(self, total_gpu_memory):
        import torch

        available_gpu_memory = get_available_gpu_memory(self.gpu_id)
        cfg = self.cfg
        cell_size = cfg["kv_heads"] * cfg["head_dim"] * cfg["layers"] * 2 * torch._utils._element_size(torch.bfloat16)
        rest_memory = available_gpu_memory - total_gpu_memory * (1 - self.server_args.mem_fraction_static)
        return int(rest_memory * (1 << 30) // cell_size)

    def init_memory_pool(self, total_gpu_memory, max_num_reqs=None, max_total_tokens=None):
        import torch

        self.context_len = self.server_args.context_length or self.cfg["ctx"]
        self.max_total_num_tokens = self.profile_max_num_token(total_gpu_memory)
        if max_num_reqs is None:
            max_num_reqs = min(max(int(self.max_total_num_tokens / self.context_len * 512), 2048), 4096)
        if max_total_tokens is not None:
            self.max_total_num_tokens = min(self.max_total_num_tokens, max_total_tokens)
        if self.max_total_num_tokens <= 0:
            raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.")
        self.req_to_token_pool = ReqToTokenPool(
            size=max_num_reqs + 1, max_context_len=self.context_len + 4, device="cuda"
        )
        self.token_to_kv_pool = MHATokenToKVPool(
            self.max_total_num_tokens,
            page_size=1,
            dtype=torch.bfloat16,
            head_num=self.cfg["kv_heads"],
            head_dim=self.cfg["head_dim"],
            layer_num=self.cfg["layers"],
            device="cuda",
        )
        self.max_num_reqs = max_num_reqs
        logger.info(f"Memory pool end. avail mem={get_available_gpu_memory(self.gpu_id):.2f} GB")

    def init_attention_backend(self):
        unsafe = {
            "capture_unsafe": "item",
            "capture_unsafe_sync": "synchronize",
            "capture_oom_in_graph": "worst_case_scratch",
        }.get(self.scenario)
        self.attn_backend = AttentionBackend(unsafe, self.context_len)

    def init_cuda_graphs(self):
        if self.server_args.disable_cuda_graph:
            return
        tic = time.perf_counter()
        before_mem = get_available_gpu_memory(self.gpu_id)
        logger.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={before_mem:.2f} GB")
        self.cuda_graph_runner = CudaGraphRunner(self)
        after_mem = get_available_gpu_memory(self.gpu_id)
        logger.info(
            f"Capture cuda graph end. Time elapsed: {time.perf_counter() - tic:.2f} s. "
            f"mem usage={(before_mem - after_mem):.2f} GB. avail mem={after_mem:.2f} GB."
        )

    def forward_extend(self, forward_batch):
        return self.model.forward(forward_batch.input_ids, forward_batch.positions, forward_batch)


def _initialize_model(cfg):
    model_class = _define_model_classes()[cfg["arch"]]
    return model_class(cfg)


class DefaultModelLoader:
    def load_model(self, cfg, device):
        import torch

        torch.set_default_dtype(torch.bfloat16)
        with torch.device(device):
            model = _initialize_model(cfg)
        torch.set_default_dtype(torch.float32)
        self.load_weights(model, cfg)
        return model.eval()

    def load_weights(self, model, cfg):
        """Stands in for reading safetensors shards: fills the parameters shard by shard on the GPU."""
        import torch

        params = [p for n, p in model.named_parameters() if "norm" not in n]
        n = cfg["shards"]
        per = max(1, -(-len(params) // n))
        desc = "Loading safetensors checkpoint shards"
        progress(f"{desc}:   0% Completed | 0/{n} [00:00<?, ?it/s]")
        tic = time.perf_counter()
        gen = torch.Generator(device="cuda")
        gen.manual_seed(0)
        for i in range(n):
            for p in params[i * per : (i + 1) * per]:
                p.normal_(mean=0.0, std=0.02, generator=gen)
            torch.cuda.synchronize()
            el = time.perf_counter() - tic
            rate = (i + 1) / el if el > 0 else 0.0
            rem = (n - i - 1) / rate if rate else 0.0
            progress(
                f"{desc}: {int(100 * (i + 1) / n):3d}% Completed | {i + 1}/{n} "
                f"[{_fmt_td(el)}<{_fmt_td(rem)}, {rate:5.2f}it/s]"
            )


def get_model(cfg, device):
    loader = DefaultModelLoader()
    return loader.load_model(cfg, device)


class Req:
    def __init__(self, rid, input_ids, max_new_tokens):
        self.rid, self.origin_input_ids, self.max_new_tokens = rid, list(input_ids), max_new_tokens
        self.output_ids = []
        self.token_ids_logprob = None
        self.req_pool_idx = None
        self.kv_locs = []


class Scheduler:
    def __init__(self, server_args, scenario):
        self.server_args = server_args
        self.scenario = scenario
        self.init_model_worker()
        self.next_free_slot = 1
        self.next_req_pool_idx = 0
        self.last_gen_throughput = 0.0

    def init_model_worker(self):
        self.tp_worker = TpModelWorker(self.server_args, self.scenario)
        mr = self.tp_worker.model_runner
        self.max_total_num_tokens = mr.max_total_num_tokens
        self.max_running_requests = min(mr.max_num_reqs, mr.req_to_token_pool.size - 1)
        logger.info(
            f"max_total_num_tokens={self.max_total_num_tokens}, "
            f"chunked_prefill_size={self.server_args.chunked_prefill_size}, "
            f"max_prefill_tokens={self.server_args.max_prefill_tokens}, "
            f"max_running_requests={self.max_running_requests}, "
            f"context_len={mr.context_len}, "
            f"available_gpu_mem={get_available_gpu_memory(mr.gpu_id):.2f} GB"
        )

    # -- request handling ---------------------------------------------------------------------------------------
    def event_loop_normal(self, conn):
        while True:
            msg = conn.recv()
            if msg["type"] == "shutdown":
                return
            req = Req(msg["rid"], msg["input_ids"], msg["max_new_tokens"])
            req.token_ids_logprob = msg.get("token_ids_logprob")
            self.run_request(req)
            conn.send({"type": "done", "rid": req.rid, "output_ids": req.output_ids})

    def run_request(self, req):
        batch = self.get_new_batch_prefill(req)
        result = self.run_batch(batch)
        self.process_batch_result_prefill(batch, result)
        steps = 0
        tic = time.perf_counter()
        while len(req.output_ids) < req.max_new_tokens:
            result = self.run_batch(self.get_decode_batch(req))
            self.process_batch_result_decode(req, result)
            steps += 1
            if steps % self.server_args.decode_log_interval == 0:
                self.last_gen_throughput = steps / (time.perf_counter() - tic)
                num_used = self.next_free_slot - 1
                logger.info(
                    f"Decode batch. #running-req: 1, #token: {num_used}, "
                    f"token usage: {num_used / self.max_total_num_tokens:.2f}, "
                    f"cuda graph: {self.tp_worker.model_runner.cuda_graph_runner is not None}, "
                    f"gen throughput (token/s): {self.last_gen_throughput:.2f}, #queue-req: 0, "
                )
        self.next_req_pool_idx = (self.next_req_pool_idx + 1) % self.max_running_requests

    def get_new_batch_prefill(self, req):
        import torch

        mr = self.tp_worker.model_runner
        n = len(req.origin_input_ids)
        req.req_pool_idx = self.next_req_pool_idx
        num_used = self.next_free_slot - 1
        logger.info(
            f"Prefill batch. #new-seq: 1, #new-token: {n}, #cached-token: 0, "
            f"token usage: {num_used / self.max_total_num_tokens:.2f}, #running-req: 0, #queue-req: 0, "
        )
        out_cache_loc = torch.arange(self.next_free_slot, self.next_free_slot + n, dtype=torch.int64, device="cuda")
        req.kv_locs = list(range(self.next_free_slot, self.next_free_slot + n))
        self.next_free_slot += n
        req_pool_indices = torch.tensor([req.req_pool_idx], dtype=torch.int64, device="cuda")
        if self.scenario == "illegal_access":
            # a stale / garbage request-slot index reaching the kernel (no bounds check in the kernel)
            req_pool_indices = torch.tensor([1 << 26], dtype=torch.int64, device="cuda")
        return dict(
            mode="extend",
            req=req,
            token_ids_logprob=req.token_ids_logprob,
            input_ids=torch.tensor(req.origin_input_ids, dtype=torch.int64, device="cuda"),
            positions=torch.arange(0, n, dtype=torch.int64, device="cuda"),
            out_cache_loc=out_cache_loc,
            req_pool_indices=req_pool_indices,
            pre_lens=torch.zeros(1, dtype=torch.int64, device="cuda"),
            seq_lens=torch.tensor([n], dtype=torch.int64, device="cuda"),
            extend_lens=torch.tensor([n], dtype=torch.int64, device="cuda"),
            req_to_token=mr.req_to_token_pool.req_to_token,
        )

    def get_decode_batch(self, req):
        import torch

        loc = self.next_free_slot
        self.next_free_slot += 1
        req.kv_locs.append(loc)
        return dict(
            mode="decode",
            req=req,
            input_ids=torch.tensor([req.output_ids[-1]], dtype=torch.int64, device="cuda"),
            out_cache_loc=torch.tensor([loc], dtype=torch.int64, device="cuda"),
            seq_lens=torch.tensor([len(req.kv_locs)], dtype=torch.int32, device="cuda"),
        )

    def run_batch(self, batch):
        return self.tp_worker.forward_batch_generation(batch)

    def process_batch_result_prefill(self, batch, next_token_ids):
        next_token_ids = next_token_ids.tolist()
        batch["req"].output_ids.append(next_token_ids[0])
        if batch.get("token_ids_logprob_val") is not None:
            batch["req"].output_token_ids_logprobs = batch["token_ids_logprob_val"].tolist()

    def process_batch_result_decode(self, req, next_token_ids):
        next_token_ids = next_token_ids.tolist()
        req.output_ids.append(next_token_ids[0])


class TpModelWorker:
    def __init__(self, server_args, scenario):
        self.model_runner = ModelRunner(server_args, scenario)

    def forward_batch_generation(self, batch):
        import torch

        mr = self.model_runner
        if batch["mode"] == "extend":
            write_req_to_token_pool_triton[(1,)](
                batch["req_to_token"],
                batch["req_pool_indices"],
                batch["pre_lens"],
                batch["seq_lens"],
                batch["extend_lens"],
                batch["out_cache_loc"],
                batch["req_to_token"].shape[1],
                BLOCK_SIZE=512,
            )
            n = batch["input_ids"].shape[0]
            fb = ForwardBatch(
                "extend",
                1,
                batch["input_ids"],
                batch["positions"],
                batch["out_cache_loc"],
                batch["seq_lens"],
                batch["req_pool_indices"],
                mr.attn_backend,
                mr.token_to_kv_pool,
                extend_last_index=torch.tensor([n - 1], dtype=torch.int64, device="cuda"),
            )
            logits = mr.forward_extend(fb)
        else:
            logits = mr.cuda_graph_runner.replay(batch["input_ids"], batch["out_cache_loc"], batch["seq_lens"])
        return self.sample(logits, batch)

    def sample(self, logits, batch):
        import torch

        next_token_ids = torch.argmax(logits, dim=-1)
        if batch.get("token_ids_logprob"):
            logprobs = torch.log_softmax(logits, dim=-1)
            ids = torch.tensor([batch["token_ids_logprob"]], dtype=torch.int64, device=logits.device)
            batch["token_ids_logprob_val"] = torch.gather(logprobs, 1, ids)
        return next_token_ids


def run_scheduler_process(server_args, scenario, conn):
    configure_logger(" TP0")
    parent_pid = os.getppid()
    try:
        import torch

        torch.set_grad_enabled(False)
        scheduler = Scheduler(server_args, scenario)
        conn.send({"type": "ready", "max_total_num_tokens": scheduler.max_total_num_tokens})
        scheduler.event_loop_normal(conn)
        try:
            import torch.distributed as dist

            dist.destroy_process_group()
        except Exception:
            pass
    except Exception:
        flush_c_stdio()
        logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        os.kill(parent_pid, signal.SIGQUIT)


# ----------------------------------------------------------------------------------------------------------------
# Launcher (parent): no CUDA here.
# ----------------------------------------------------------------------------------------------------------------

_CHILDREN = []


def _launch_phase_sigquit_handler(signum, frame):
    logger.error("Received sigquit from a child process. It usually means the child failed.")
    for p in _CHILDREN:
        try:
            p.kill()
        except Exception:
            pass
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


def _wait(conn, proc, what, timeout=600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if conn.poll(0.2):
                return conn.recv()
        except (EOFError, OSError):
            pass  # the child closed its end; a SIGQUIT may follow
        if not proc.is_alive():
            time.sleep(1.0)  # a SIGQUIT from the child may still be on its way
            logger.error(f"Rank 0 scheduler died during {what} (exit code: {proc.exitcode}).")
            os._exit(1)
    logger.error(f"Timed out after {timeout} s waiting for the scheduler ({what}).")
    proc.kill()
    os._exit(1)


def launch_server(scenario: str) -> int:
    import multiprocessing as mp

    configure_logger("")
    server_args = build_server_args(scenario)
    logger.info(f"server_args={server_args}")
    signal.signal(signal.SIGQUIT, _launch_phase_sigquit_handler)

    ctx = mp.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=run_scheduler_process, args=(server_args, scenario, child_conn))
    proc.start()
    _CHILDREN.append(proc)
    _wait(parent_conn, proc, "initialization")

    pid = os.getpid()
    logger.info(f"INFO:     Started server process [{pid}]")
    logger.info("INFO:     Waiting for application startup.")
    logger.info("INFO:     Application startup complete.")
    logger.info(f"INFO:     Uvicorn running on http://{server_args.host}:{server_args.port} (Press CTRL+C to quit)")
    logger.info('INFO:     127.0.0.1:51436 - "GET /get_model_info HTTP/1.1" 200 OK')
    parent_conn.send({"type": "generate", "rid": "warmup", "input_ids": WARMUP_IDS, "max_new_tokens": 8})
    _wait(parent_conn, proc, "warmup")
    logger.info('INFO:     127.0.0.1:51442 - "POST /generate HTTP/1.1" 200 OK')
    logger.info("The server is fired up and ready to roll!")

    if scenario == "device_assert":
        # a client sends token ids from a tokenizer with added tokens the model's embedding does not have
        bad = USER_IDS[:10] + [128260, 128261] + USER_IDS[10:]
        parent_conn.send({"type": "generate", "rid": "r1", "input_ids": bad, "max_new_tokens": 64})
        _wait(parent_conn, proc, "serving")
    elif scenario == "device_assert_gather":
        # a client asks for the logprobs of token ids taken from another model's tokenizer
        parent_conn.send(
            {
                "type": "generate",
                "rid": "r1",
                "input_ids": USER_IDS,
                "max_new_tokens": 64,
                "token_ids_logprob": [9906, 128300, 151643],
            }
        )
        _wait(parent_conn, proc, "serving")
    else:
        for i in range(2):
            parent_conn.send({"type": "generate", "rid": f"r{i}", "input_ids": USER_IDS, "max_new_tokens": 120})
            _wait(parent_conn, proc, "serving")
            logger.info(f'INFO:     127.0.0.1:{51460 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
    parent_conn.send({"type": "shutdown"})
    proc.join(60)
    return 0


# ----------------------------------------------------------------------------------------------------------------
# all: run every scenario in its own process tree and collect the outputs
# ----------------------------------------------------------------------------------------------------------------

VERSIONS_SNIPPET = r"""
import platform, sys
print("python:", sys.version.split()[0])
import torch
print("torch:", torch.__version__)
print("torch.version.cuda:", torch.version.cuda)
try:
    print("nccl:", ".".join(str(x) for x in torch.cuda.nccl.version()))
except Exception as e:
    print("nccl: n/a", e)
try:
    import triton
    print("triton:", triton.__version__)
except Exception as e:
    print("triton: n/a", e)
print("gpu_count:", torch.cuda.device_count())
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(f"gpu[{i}]: {p.name}, {p.total_memory / 2**30:.2f} GiB, sm_{p.major}{p.minor}, "
          f"{p.multi_processor_count} SMs")
free, total = torch.cuda.mem_get_info()
print(f"mem_get_info: free={free / 2**30:.2f} GiB total={total / 2**30:.2f} GiB")
print("platform:", platform.platform())
"""


def _sh(args, timeout=60):
    """Run a command (an argument list, no shell) and return stdout + stderr, or a note saying why it failed."""
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        return (r.stdout + r.stderr).rstrip("\n")
    except Exception as e:  # noqa: BLE001
        return f"<{' '.join(args)!r} failed: {e}>"


def write_versions(path):
    try:
        r = subprocess.run([sys.executable, "-c", VERSIONS_SNIPPET], capture_output=True, text=True, timeout=120)
        lines = [(r.stdout + r.stderr).rstrip("\n")]
    except Exception as e:  # noqa: BLE001
        lines = [f"<versions snippet failed: {e}>"]
    lines.append(
        "nvidia-smi: "
        + _sh(
            [
                "nvidia-smi",
                "--query-gpu=name,driver_version,memory.total,pci.bus_id,vbios_version",
                "--format=csv,noheader",
            ]
        )
    )
    lines.append("\n".join(_sh(["nvidia-smi"]).splitlines()[2:4]))  # the driver / CUDA version banner
    lines.append("kernel: " + _sh(["uname", "-r"]))
    text = "\n".join(lines) + "\n"
    with open(path, "w") as f:
        f.write(text)
    return text


def _gpu_mem_used_mib():
    out = _sh(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"])
    try:
        return max(int(x.strip()) for x in out.splitlines() if x.strip())
    except ValueError:
        return None


def _wait_gpu_idle(limit_s=60):
    t0 = time.time()
    while time.time() - t0 < limit_s:
        used = _gpu_mem_used_mib()
        if used is None or used < 2048:
            return used
        time.sleep(1.0)
    return _gpu_mem_used_mib()


KEY_WORDS = (
    "Error",
    "error",
    "Exception",
    "Assertion",
    "Not enough",
    "sigquit",
    "fired up",
    "died",
    "Timed out",
    "Capture cuda graph end",
)


def _pack(out_dir, tar_path):
    """One archive of everything so far (the device tool brings back at most 8 files)."""
    if not tar_path:
        return
    import tarfile

    tmp = tar_path + ".part"
    with tarfile.open(tmp, "w:gz") as t:
        for name in sorted(os.listdir(out_dir)):
            t.add(os.path.join(out_dir, name), arcname=name)
    os.replace(tmp, tar_path)


def run_all(out_dir, scenarios, timeout, tar_path=None):
    os.makedirs(out_dir, exist_ok=True)
    print(write_versions(os.path.join(out_dir, "versions.txt")), flush=True)
    dmesg_before = _sh(["dmesg"]).splitlines()
    results = {}
    env = dict(
        os.environ,
        PYTHONUNBUFFERED="1",
        PYTHONIOENCODING="utf-8",
        NCCL_NVLS_ENABLE="0",
        TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
        NVSHMEM_DISABLE_NVLS="1",
    )
    for sc in scenarios:
        idle = _wait_gpu_idle()
        log_path = os.path.join(out_dir, f"{sc}.log")
        t0 = time.time()
        with open(log_path, "wb") as f:
            p = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), sc],
                stdout=f,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                rc = "timeout"
            try:  # the launcher kills its scheduler; make sure nothing of this scenario's tree is left
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if rc == "timeout":
                p.wait()
        wall = time.time() - t0
        results[sc] = {"rc": rc, "wall_s": round(wall, 1), "gpu_mem_used_mib_before": idle}
        with open(os.path.join(out_dir, "results.json"), "w") as f:
            json.dump(results, f, indent=2)
        _pack(out_dir, tar_path)
        print(f"=== {sc}: rc={rc} wall={wall:.1f}s", flush=True)
        with open(log_path, errors="replace") as f:
            for line in f:
                if any(k in line for k in KEY_WORDS):
                    print("    " + line.rstrip("\n")[:300], flush=True)
    dmesg_after = _sh(["dmesg"]).splitlines()
    new = dmesg_after[len(dmesg_before) :] if dmesg_after[: len(dmesg_before)] == dmesg_before else dmesg_after
    with open(os.path.join(out_dir, "dmesg.txt"), "w") as f:
        f.write("# dmesg lines that appeared during the run\n")
        f.write("\n".join(new) + "\n")
        f.write("# all NVRM / Xid lines in dmesg\n")
        f.write("\n".join(x for x in dmesg_after if "NVRM" in x or "Xid" in x) + "\n")
    print("=== dmesg during the run:", flush=True)
    for x in new[-40:]:
        print("    " + x, flush=True)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    _pack(out_dir, tar_path)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", help="a scenario name, 'all' or 'list'")
    ap.add_argument("--out", default="gpu-fault-recordings", help="output folder for 'all'")
    ap.add_argument("--only", default=None, help="comma-separated scenarios for 'all'")
    ap.add_argument("--timeout", type=int, default=180, help="per-scenario limit in seconds for 'all'")
    ap.add_argument("--tar", default=None, help="for 'all': keep a .tar.gz of the output folder up to date here")
    a = ap.parse_args(argv)
    if a.scenario == "list":
        for name in ORDER:
            print(f"{name:22s} {SCENARIOS[name][2]}")
        print(f"{'nccl_timeout':22s} not implemented: needs a 2-GPU machine")
        return 0
    if a.scenario == "all":
        scenarios = a.only.split(",") if a.only else ORDER
        unknown = [s for s in scenarios if s not in SCENARIOS]
        if unknown:
            ap.error(f"unknown scenario(s): {unknown}")
        return run_all(a.out, scenarios, a.timeout, a.tar)
    if a.scenario not in SCENARIOS:
        ap.error(f"unknown scenario {a.scenario!r}; try 'list'")
    return launch_server(a.scenario)


if __name__ == "__main__":
    sys.exit(main())
