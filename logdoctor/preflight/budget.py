"""The memory budget per GPU, in each engine's own accounting, every number with its derivation.

SGLang (model_runner_kv_cache_mixin.profile_max_num_token, classic 0.5.x): the pool is
``mem_fraction_static x avail_before_load - weights``; hybrid models first take the speculative intermediate state
and a linear-attention share (``mamba_full_memory_ratio``); tokens = pool / KV bytes per token.
vLLM (V1 gpu_worker.determine_available_memory): ``gpu_memory_utilization x total - weights - activation peak -
non-torch memory - CUDA-graph estimate``; one request of max_model_len must fit (kv_cache_utils' own check).
Overheads come from overheads.TABLE (measured or assumed)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from logdoctor.engines.sglang import auto_static_fraction as sglang_auto_fraction
from logdoctor.preflight import overheads as oh
from logdoctor.preflight.model import DTYPE_BYTES, ModelSpec

GIB = 1 << 30


@dataclass
class Line:
    """One number of the budget and how it was obtained (the operator checks it by hand)."""

    key: str
    value: float
    unit: str
    how: str

    def to_dict(self) -> dict:
        return {"key": self.key, "value": self.value, "unit": self.unit, "how": self.how}


@dataclass
class Finding:
    """A reason the start would fail (no-go) or is close (risky), with the sized change that fits."""

    level: str  # "no-go" | "risky"
    cause: str
    phase: str
    message: str
    lever: str | None = None
    target: object = None  # the value that fits (sized from the shortfall)
    more: list[tuple[str, object]] = field(default_factory=list)  # other levers that fit, in order of preference
    sizable: bool = False  # a risky finding that a lever change removes (sized like a no-go)

    @property
    def changes(self) -> list[tuple[str, object]]:
        first = [(self.lever, self.target)] if self.lever and self.target is not None else []
        return first + [c for c in self.more if c not in first]


@dataclass
class Budget:
    engine: str
    version: str | None
    lines: list[Line] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    values: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, key: str, value: float, unit: str, how: str) -> float:
        self.lines.append(Line(key, round(value, 4) if isinstance(value, float) else value, unit, how))
        self.values[key] = value
        return value

    def to_dict(self) -> dict:
        return {
            "engine": self.engine,
            "engine_version": self.version,
            "per_gpu": {ln.key: ln.value for ln in self.lines},
            "lines": [ln.to_dict() for ln in self.lines],
        }


def _g(x: float) -> str:
    return f"{x / GIB:.2f} GiB"


def _int(v, default: int) -> int:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else default
    except (TypeError, ValueError):
        return default


def _float(v, default: float | None) -> float | None:
    try:
        return float(v) if v is not None and not isinstance(v, bool) else default
    except (TypeError, ValueError):
        return default


def kv_dtype_bytes(raw: dict, model: ModelSpec) -> float:
    kv = str(raw.get("kv_cache_dtype") or "auto").lower()
    if kv == "auto":
        return DTYPE_BYTES.get(model.dtype, 2) if model.dtype != "float32" else 2
    return 1 if "fp8" in kv or "int8" in kv else 2


def weights_per_gpu(b: Budget, model: ModelSpec, tp: int, pp: int, draft: ModelSpec | None) -> float:
    """Bytes of weights one GPU holds: the checkpoint split over TP x PP (EP moves experts between the same GPUs,
    so the per-GPU total stays the same), plus a draft model for speculative decoding."""
    total = model.weight_bytes or 0
    b.add("weights_total", total / GIB, "GiB", f"{model.weights_source}: {total:,} bytes")
    w = total / (tp * pp)
    how = f"{_g(total)} / (TP {tp} x PP {pp})"
    if draft is not None and draft.weight_bytes:
        w += draft.weight_bytes / tp
        how += f" + draft {_g(draft.weight_bytes)} / TP {tp}"
    b.add("weights", w / GIB, "GiB", how)
    return w


def activation_bytes(model: ModelSpec, tokens: int, tp: int) -> float:
    """Peak activation memory of one forward pass over `tokens` prefill tokens on one GPU (assumed constants, see
    overheads.TABLE): hidden-width buffers plus the MLP's gate/up/down (the routed experts' width for MoE)."""
    per_hidden = oh.value("any", "activation_bytes_per_token_hidden")
    width = model.intermediate_size
    if model.num_experts:
        width = model.moe_intermediate_size * max(model.experts_per_token, 1)
    return tokens * (model.hidden_size * per_hidden + 3 * 2 * width / tp)


def _torch_total(b: Budget, engine: str, gpu_bytes: int, other_used: int) -> float:
    drv = oh.value(engine, "driver_reserved")
    total = gpu_bytes - drv
    b.add("gpu_total", gpu_bytes / GIB, "GiB", "the GPU's framebuffer (smallest of the GPUs used)")
    how = f"{_g(gpu_bytes)} - driver reserve {_g(drv)} ({oh.get(engine, 'driver_reserved').status})"
    if other_used:
        total -= other_used
        how += f" - {_g(other_used)} held by other processes now"
    b.add("usable_total", total / GIB, "GiB", how)
    return total


# --------------------------------------------------------------------------------------------------------------------
# SGLang


def sglang(
    model: ModelSpec,
    raw: dict,
    gpu_bytes: int,
    *,
    version: str | None = None,
    other_used: int = 0,
    draft: ModelSpec | None = None,
    readings: dict | None = None,
) -> Budget:
    """`readings` ({"avail_before": bytes, "weights": bytes}) replaces the predicted memory before loading and the
    weights with what a log printed: the engine's formula over its own numbers (tools/preflight_validate.py)."""
    b = Budget("sglang", version)
    tp, pp = max(_int(raw.get("tp_size"), 1), 1), max(_int(raw.get("pp_size"), 1), 1)
    total = _torch_total(b, "sglang", gpu_bytes, other_used)
    ctx0 = oh.value("sglang", "preload_context", version)
    per_rank = oh.value("sglang", "preload_per_extra_rank", version)
    before = (
        b.add(
            "avail_before_load",
            (total - ctx0 - per_rank * (tp - 1)) / GIB,
            "GiB",
            f"usable - CUDA context/allocator {_g(ctx0)} ({oh.get('sglang', 'preload_context').status})"
            + (f" - {tp - 1} x {_g(per_rank)} NCCL buffers (assumed)" if tp > 1 else "")
            + "; the engine prints it as 'Load weight begin. avail mem='",
        )
        * GIB
    )
    w = weights_per_gpu(b, model, tp, pp, draft)
    if readings:
        before = b.add("avail_before_load", readings["avail_before"] / GIB, "GiB", "read from the log") * GIB
        w = b.add("weights", readings["weights"] / GIB, "GiB", "read from the log") * GIB
    if w >= before:
        b.findings.append(
            Finding(
                "no-go",
                "weights_oom",
                "weight_load",
                f"the weights per GPU ({_g(w)}) exceed the memory free before loading ({_g(before)})",
            )
        )
        return b
    gpu_mib = (gpu_bytes - oh.value("sglang", "driver_reserved")) / (1 << 20)  # torch's total, as SGLang reads it
    frac = _float(raw.get("mem_fraction_static"), None)
    auto_frac, chunk, graph_bs = sglang_auto_fraction(gpu_mib, raw, tp, pp, bool(model.mla))
    if frac is None:
        frac = auto_frac
        b.add("mem_fraction_static", frac, "", "SGLang's default for this GPU, TP and chunked prefill (auto)")
    else:
        b.add("mem_fraction_static", frac, "", "--mem-fraction-static")
    rest = (
        b.add(
            "pool_memory",
            (frac * before - w) / GIB,
            "GiB",
            f"{frac} x {_g(before)} - weights {_g(w)} (profile_max_num_token)",
        )
        * GIB
    )
    kvb = kv_dtype_bytes(raw, model)
    cell = model.kv_bytes_per_token(tp, kvb)
    how = (
        f"{model.full_attention_layers} full-attention layers x "
        + (
            f"(kv_lora_rank {model.mla['kv_lora_rank']} + rope {model.mla['qk_rope_head_dim']})"
            if model.mla
            else f"{model.kv_heads_per_gpu(tp)} KV heads/GPU x (K {model.head_dim} + V {model.v_head_dim})"
        )
        + f" x {kvb:g} B"
    )
    spec = str(raw.get("speculative_algorithm") or "").upper()
    if spec in ("EAGLE", "EAGLE3", "NEXTN", "DFLASH", "STANDALONE") and draft is not None:
        dcell = draft.kv_bytes_per_token(tp, kvb)
        cell += dcell
        how += f" + draft {dcell:.0f} B"
    b.add("kv_bytes_per_token", cell, "B", how)
    max_running = _int(raw.get("max_running_requests"), 0)
    if model.hybrid:
        rest = _sglang_linear_state(b, model, raw, tp, rest, max_running, spec)
    tokens = int(rest // cell) if cell else 0
    how = f"{_g(rest)} / {cell:.0f} B"
    if model.sliding_window_layers and cell and not raw.get("disable_hybrid_swa_memory"):
        tokens, how = _sglang_swa_split(b, model, raw, tp, kvb, rest)
    cap = _int(raw.get("max_total_tokens"), 0)
    if cap and cap < tokens:
        tokens, how = cap, f"--max-total-tokens {cap} (the pool would hold {tokens})"
    b.add("pool_tokens", tokens, "tokens", how + "; the engine prints 'KV Cache is allocated. #tokens:'")
    ctx = _int(raw.get("context_length"), _int(model.max_position_embeddings, 0))
    b.add(
        "context_length",
        ctx,
        "tokens",
        "--context-length"
        if raw.get("context_length")
        else "max_position_embeddings of config.json (SGLang's default)",
    )
    if tokens <= 0:
        b.findings.append(
            Finding(
                "no-go",
                "kv_cache_oom",
                "memory_pool",
                f"nothing is left for the KV pool: {_g(rest)} after the weights at "
                f"mem_fraction_static={frac} (SGLang: 'Not enough memory')",
            )
        )
    elif ctx and tokens < ctx:
        b.findings.append(
            Finding(
                "risky",
                "kv_cache_oom",
                "memory_pool",
                f"the pool holds {tokens} tokens, fewer than one request of --context-length "
                f"{ctx}: SGLang starts but caps inputs at {tokens - 1} tokens",
                sizable=True,
            )
        )
    margin = oh.value("sglang", "risky_margin")
    if tokens > 0 and ctx and ctx <= tokens < ctx * (1 + margin):
        b.findings.append(
            Finding(
                "risky",
                "kv_cache_oom",
                "memory_pool",
                f"the pool ({tokens} tokens) is within {margin:.0%} of one request of the context length ({ctx})",
            )
        )
    if tokens > 0:
        _sglang_graphs(b, model, raw, before, frac, chunk, graph_bs)
    return b


def _sglang_swa_split(b: Budget, model: ModelSpec, raw: dict, tp: int, kvb: float, rest: float) -> tuple[int, str]:
    """Hybrid sliding-window models (model_runner_kv_cache_mixin._resolve_hybrid_swa_tokens): one byte budget
    shared by a full pool and a sliding-window pool with swa_tokens = ratio x full_tokens
    (--swa-full-tokens-ratio, 0.8); the pool's reported #tokens is the full pool."""
    per_layer = model.kv_bytes_per_token(tp, kvb, layers=1)
    n_full, n_swa = model.full_attention_layers, model.sliding_window_layers
    ratio = _float(raw.get("swa_full_tokens_ratio"), 0.8) or 0.8
    full = int(rest // (per_layer * (n_full + ratio * n_swa)))
    b.add("swa_pool_tokens", int(full * ratio), "tokens", f"{ratio} x the full pool (--swa-full-tokens-ratio)")
    return full, (f"{_g(rest)} / ({per_layer:.0f} B x ({n_full} full + {ratio} x {n_swa} sliding-window layers))")


def _sglang_linear_state(
    b: Budget, model: ModelSpec, raw: dict, tp: int, rest: float, max_running: int, spec: str
) -> float:
    ssm_b = DTYPE_BYTES.get(str(raw.get("mamba_ssm_dtype") or "float32"), 4)
    per_req = model.linear_state_bytes(tp, ssm_b)
    b.add(
        "linear_state_per_request",
        per_req / (1 << 20),
        "MiB",
        f"{model.linear_layers} linear-attention layers x (conv {model.linear['conv_dim']}/{tp} x "
        f"{model.linear['conv_kernel'] - 1} x 2 B + SSM {model.linear['num_heads']}/{tp} x "
        f"{model.linear['head_dim']} x {model.linear['state_size']} x {ssm_b:g} B)",
    )
    if spec and max_running:
        d = _int(raw.get("speculative_num_draft_tokens"), 1)
        inter = per_req * max_running * d
        rest -= inter
        b.add(
            "speculative_state",
            inter / GIB,
            "GiB",
            f"{per_req / (1 << 20):.2f} MiB x max_running_requests {max_running} x {d} draft tokens",
        )
    ratio = _float(raw.get("mamba_full_memory_ratio"), 0.9) or 0.9
    if raw.get("max_mamba_cache_size"):
        slots = _int(raw.get("max_mamba_cache_size"), 0)
        how = "--max-mamba-cache-size"
    elif raw.get("disable_radix_cache") and max_running:
        slots, how = max_running, "--max-running-requests (radix cache off)"
    else:
        slots = int(max(rest, 0) * ratio / (1 + ratio) // per_req) if per_req else 0
        how = f"{_g(max(rest, 0))} x {ratio} / (1 + {ratio}) / per-request state"
    b.add("state_slots", slots, "requests", how)
    state = slots * per_req
    b.add("linear_state", state / GIB, "GiB", f"{slots} slots x {per_req / (1 << 20):.2f} MiB")
    if max_running and 0 < slots < max_running:
        b.findings.append(
            Finding(
                "risky",
                "kv_cache_oom",
                "memory_pool",
                f"{slots} linear-attention state slots for --max-running-requests {max_running}: "
                "at most that many requests run at once",
            )
        )
    if rest > 0 and slots <= 0:
        b.findings.append(
            Finding(
                "no-go",
                "kv_cache_oom",
                "memory_pool",
                "no linear-attention state slot fits ('Not enough space for mamba cache')",
            )
        )
    left = rest - state
    b.add(
        "kv_memory",
        left / GIB,
        "GiB",
        f"pool {_g(rest + (b.values.get('speculative_state', 0) * GIB))} - speculative state - linear state",
    )
    return left


def _sglang_graphs(
    b: Budget, model: ModelSpec, raw: dict, before: float, frac: float, chunk: int, graph_bs: int
) -> None:
    """What is left outside the static share must hold the prefill activations and the decode CUDA graphs."""
    free = b.add(
        "outside_static",
        before * (1 - frac) / GIB,
        "GiB",
        f"(1 - {frac}) x {_g(before)}: activations and CUDA graphs live here",
    )
    off = bool(raw.get("disable_cuda_graph")) or str(raw.get("cuda_graph_backend_decode") or "") == "disabled"
    per_bs = oh.value("sglang", "graph_per_bs") * model.hidden_size / 4096
    graphs = 0.0 if off else per_bs * graph_bs
    b.add(
        "cuda_graphs",
        graphs / GIB,
        "GiB",
        "CUDA graphs off"
        if off
        else f"{graph_bs} max batch size x {per_bs / (1 << 20):.1f} MiB (measured at hidden 4096, scaled)",
    )
    tp = max(_int(raw.get("tp_size"), 1), 1)
    act = activation_bytes(model, max(chunk, 0), tp)
    b.add(
        "activations",
        act / GIB,
        "GiB",
        f"one prefill chunk of {chunk} tokens (hidden {model.hidden_size}; "
        "assumed per-token constants, overheads table)",
    )
    free *= GIB
    if graphs and graphs > free:
        bs = max(1, int(free / per_bs / 2))
        b.findings.append(
            Finding(
                "no-go",
                "graph_capture_fault",
                "graph_capture",
                f"the CUDA graphs ({_g(graphs)}) do not fit in the {_g(free)} outside the static share",
                "graph_max_bs",
                1 << (bs.bit_length() - 1),
            )
        )
    elif graphs + act > free:
        b.findings.append(
            Finding(
                "risky",
                "graph_capture_fault",
                "graph_capture",
                f"CUDA graphs + prefill activations ({_g(graphs + act)}) exceed the {_g(free)} "
                "outside the static share",
            )
        )


# --------------------------------------------------------------------------------------------------------------------
# vLLM


def vllm(
    model: ModelSpec,
    raw: dict,
    gpu_bytes: int,
    *,
    version: str | None = None,
    other_used: int = 0,
    draft: ModelSpec | None = None,
) -> Budget:
    b = Budget("vllm", version)
    tp = max(_int(raw.get("tensor_parallel_size"), 1), 1)
    pp = max(_int(raw.get("pipeline_parallel_size"), 1), 1)
    total = _torch_total(b, "vllm", gpu_bytes, other_used)
    util = _float(raw.get("gpu_memory_utilization"), None)
    from logdoctor.engines import levers

    if util is None:
        util = _float(levers.default_for("mem_fraction", "vllm", version), 0.9) or 0.9
    b.add(
        "gpu_memory_utilization",
        util,
        "",
        "--gpu-memory-utilization" if raw.get("gpu_memory_utilization") else f"vLLM's default ({version or 'latest'})",
    )
    requested = b.add("requested", util * total / GIB, "GiB", f"{util} x {_g(total)}") * GIB
    w = weights_per_gpu(b, model, tp, pp, draft)
    if w >= requested:
        b.findings.append(
            Finding(
                "no-go",
                "weights_oom",
                "weight_load",
                f"the weights per GPU ({_g(w)}) exceed gpu_memory_utilization x total ({_g(requested)})",
            )
        )
        return b
    nt = oh.value("vllm", "non_torch", version) + oh.value("vllm", "non_torch_per_extra_rank") * (tp - 1)
    b.add("non_torch", nt / GIB, "GiB", "CUDA context + NCCL (assumed; overheads table)")
    batched = _int(raw.get("max_num_batched_tokens"), 8192 if gpu_bytes < 160 * GIB else 16384)
    seqs = _int(raw.get("max_num_seqs"), 1024 if gpu_bytes >= 70 * GIB else 256)
    act = activation_bytes(model, batched, tp)
    sampler = seqs * model.vocab_size * oh.value("vllm", "sampler_per_seq_per_vocab")
    peak = max(act, sampler)
    b.add(
        "activation_peak",
        peak / GIB,
        "GiB",
        f"profile run of {batched} tokens (hidden {model.hidden_size}, "
        f"assumed constants) or the sampler's {seqs} x vocab {model.vocab_size} logits, the larger",
    )
    eager = bool(raw.get("enforce_eager"))
    cap = _int(raw.get("max_cudagraph_capture_size"), min(2 * seqs, 512))
    graphs = 0.0 if eager else cap * oh.value("vllm", "cudagraph_per_capture_size")
    b.add(
        "cuda_graphs",
        graphs / GIB,
        "GiB",
        "--enforce-eager"
        if eager
        else f"capture sizes up to {cap} x {oh.value('vllm', 'cudagraph_per_capture_size') / (1 << 20):.1f} MiB (assumed)",
    )
    from logdoctor.engines.levers import version_tuple

    vt = version_tuple(version)
    profiled = vt is None or vt >= (0, 21, 0, 0)  # CUDA-graph memory is profiled into the budget since 0.21
    avail = (
        b.add(
            "kv_memory",
            (requested - w - peak - nt - (graphs if profiled else 0)) / GIB,
            "GiB",
            (
                "requested - weights - activation peak - non-torch - CUDA graphs"
                if profiled
                else f"requested - weights - activation peak - non-torch (vLLM {version} does not profile CUDA graphs: "
                "they are captured in the memory outside gpu_memory_utilization)"
            )
            + "; the engine prints 'Available KV cache memory:'",
        )
        * GIB
    )
    if not profiled and graphs:
        outside = total - requested
        b.add("outside_requested", outside / GIB, "GiB", f"(1 - {util}) x {_g(total)}: where CUDA graphs are captured")
        if graphs > outside:
            b.findings.append(
                Finding(
                    "no-go",
                    "graph_capture_fault",
                    "graph_capture",
                    f"the CUDA graphs ({_g(graphs)}) do not fit in the {_g(outside)} outside "
                    f"gpu_memory_utilization={util}",
                    "mem_fraction",
                    math.floor((1 - graphs / total) * 100) / 100,
                )
            )
    kvb = kv_dtype_bytes(raw, model)
    cell = model.kv_bytes_per_token(tp, kvb) // pp
    state = 0.0
    if model.hybrid:
        ssm_b = DTYPE_BYTES.get(str(raw.get("mamba_ssm_cache_dtype") or "float32").replace("auto", "float32"), 4)
        state = model.linear_state_bytes(tp, ssm_b) / pp
        b.add(
            "linear_state_per_request",
            state / (1 << 20),
            "MiB",
            f"{model.linear_layers} linear-attention layers' conv + SSM state / TP {tp}",
        )
    b.add(
        "kv_bytes_per_token",
        cell,
        "B",
        f"{model.full_attention_layers} attention layers / PP {pp} x "
        + (
            f"(kv_lora_rank + rope) x {kvb:g} B"
            if model.mla
            else f"{model.kv_heads_per_gpu(tp)} KV heads/GPU x (K {model.head_dim} + V {model.v_head_dim}) x {kvb:g} B"
        ),
    )
    ctx = _int(raw.get("max_model_len"), _int(model.max_position_embeddings, 0))
    b.add(
        "max_model_len",
        ctx,
        "tokens",
        "--max-model-len" if raw.get("max_model_len") else "derived from config.json (max_position_embeddings)",
    )
    tokens = int(max(avail, 0) // cell) if cell else 0
    b.add(
        "pool_tokens",
        tokens,
        "tokens",
        f"{_g(max(avail, 0))} / {cell:.0f} B; the engine prints 'GPU KV cache size: N tokens'",
    )
    need = ctx * cell + state
    b.add(
        "one_request",
        need / GIB,
        "GiB",
        f"max_model_len {ctx} x {cell:.0f} B" + (f" + {state / (1 << 20):.1f} MiB state" if state else ""),
    )
    if avail <= 0:
        b.findings.append(
            Finding(
                "no-go",
                "kv_cache_oom",
                "memory_pool",
                f"no memory is left for the KV cache ({_g(avail)}; vLLM: 'No available memory for the cache blocks')",
            )
        )
    elif need > avail:
        b.findings.append(
            Finding(
                "no-go",
                "kv_cache_oom",
                "memory_pool",
                f"one request of max_model_len {ctx} needs {_g(need)} of KV cache, more than the "
                f"{_g(avail)} available (vLLM's own start-up check)",
            )
        )
    elif need > avail * (1 - oh.value("vllm", "risky_margin")):
        b.findings.append(
            Finding(
                "risky",
                "kv_cache_oom",
                "memory_pool",
                f"one request of max_model_len {ctx} ({_g(need)}) is within "
                f"{oh.value('vllm', 'risky_margin'):.0%} of the KV budget ({_g(avail)})",
            )
        )
    return b


_FLAG = {
    "sglang": {"mem_fraction": "mem_fraction_static", "tp_size": "tp_size", "context_length": "context_length"},
    "vllm": {
        "mem_fraction": "gpu_memory_utilization",
        "tp_size": "tensor_parallel_size",
        "context_length": "max_model_len",
    },
}


def compute(engine: str, model: ModelSpec, raw: dict, gpu_bytes: int, *, size: bool = True, **kw) -> Budget:
    """The budget; with `size`, each no-go finding also gets the values that make it fit, found by recomputing the
    same budget with one lever changed (the smallest static fraction, the smallest TP, the longest context)."""
    b = (sglang if engine == "sglang" else vllm)(model, raw, gpu_bytes, **kw)
    if size:
        for f in b.findings:
            if (f.level == "no-go" or f.sizable) and f.cause in ("kv_cache_oom", "weights_oom"):
                f.more = _sized(engine, model, raw, gpu_bytes, kw, f)
    return b


def _fits(engine: str, model: ModelSpec, raw: dict, gpu_bytes: int, kw: dict, change: dict) -> Budget | None:
    b = compute(engine, model, {**raw, **change}, gpu_bytes, size=False, **kw)
    return None if any(f.level == "no-go" or f.sizable for f in b.findings) else b


def _sized(engine: str, model: ModelSpec, raw: dict, gpu_bytes: int, kw: dict, f: Finding) -> list[tuple[str, object]]:
    names = _FLAG[engine]
    out: list[tuple[str, object]] = []
    cur = b0 = compute(engine, model, raw, gpu_bytes, size=False, **kw)
    frac = cur.values.get("mem_fraction_static", cur.values.get("gpu_memory_utilization", 0.9))
    if f.cause == "kv_cache_oom":
        top = 0.95 if engine == "sglang" else 0.98
        x = round(frac + 0.01, 2)
        while x <= top:
            if _fits(engine, model, raw, gpu_bytes, kw, {names["mem_fraction"]: x}):
                out.append(("mem_fraction", x))
                break
            x = round(x + 0.01, 2)
    tp = _int(raw.get(names["tp_size"]), 1)
    t = tp * 2
    while t <= 16:
        if model.num_heads % t == 0 and _fits(engine, model, raw, gpu_bytes, kw, {names["tp_size"]: t}):
            out.append(("tp_size", t))
            break
        t *= 2
    if f.cause == "kv_cache_oom":
        ctx = b0.values.get("context_length") or b0.values.get("max_model_len") or 0
        lo, hi = 0, int(ctx)
        while hi - lo > 256:  # the longest context (multiple of 256) that passes the same budget
            mid = (lo + hi) // 2 // 256 * 256 or 256
            if _fits(engine, model, raw, gpu_bytes, kw, {names["context_length"]: mid}):
                lo = mid
            else:
                hi = mid
        if lo >= 256:
            out.append(("context_length", lo // 1024 * 1024 if lo >= 4096 else lo))
    return out
