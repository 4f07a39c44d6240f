"""The model as the memory budget sees it: layer kinds, KV geometry, linear-attention state and weight bytes.

Why a reader of our own: the engines size their pools from the Hugging Face ``config.json`` (plus the checkpoint's
byte count), and that file is all preflight has before the start. Only what the accounting needs is kept. Weight
bytes come from ``model.safetensors.index.json`` (``metadata.total_size``), else the sum of the ``*.safetensors``
files, else a parameter count from the config (said so in ``weights_source``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from logdoctor.core.errors import InputError

DTYPE_BYTES = {
    "float32": 4,
    "float": 4,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "int8": 1,
    "int4": 0.5,
}


@dataclass
class ModelSpec:
    """The parts of a model's config the engines' memory accounting reads."""

    name: str
    architecture: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    vocab_size: int
    intermediate_size: int
    max_position_embeddings: int | None
    dtype: str = "bfloat16"
    full_attention_layers: int = 0  # layers that hold KV per token (all of them for a plain transformer)
    sliding_window_layers: int = 0
    sliding_window: int | None = None
    linear_layers: int = 0  # GDN / Mamba layers: a fixed state per running request
    linear: dict = field(default_factory=dict)  # geometry of the linear-attention state (see linear_state_bytes)
    mla: dict | None = None  # {"kv_lora_rank": 512, "qk_rope_head_dim": 64}
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    quant_method: str | None = None
    quant_bits: float | None = None
    weight_bytes: int | None = None
    weights_source: str = ""
    tie_word_embeddings: bool = False
    mtp_layers: int = 0

    @property
    def hybrid(self) -> bool:
        return self.linear_layers > 0

    def kv_heads_per_gpu(self, tp: int) -> int:
        """SGLang and vLLM both replicate KV heads when TP exceeds them: max(1, heads // tp)."""
        return max(1, self.num_kv_heads // max(tp, 1))

    def kv_bytes_per_token(self, tp: int, kv_dtype_bytes: float, layers: int | None = None) -> float:
        """Bytes of KV one token costs on one GPU over `layers` KV-holding layers (default: all full-attention
        layers). MLA stores one latent (kv_lora_rank + rope dims) per layer, not split by TP."""
        n = self.full_attention_layers if layers is None else layers
        if self.mla:
            return (self.mla["kv_lora_rank"] + self.mla["qk_rope_head_dim"]) * n * kv_dtype_bytes
        return self.kv_heads_per_gpu(tp) * (self.head_dim + self.v_head_dim) * n * kv_dtype_bytes

    def linear_state_bytes(self, tp: int, ssm_dtype_bytes: float = 4, conv_dtype_bytes: float = 2) -> int:
        """Conv + SSM state of one request on one GPU (SGLang Mamba2StateShape): conv (conv_dim/tp, kernel-1),
        SSM (heads/tp, head_dim, state_size), times the linear layers."""
        if not self.linear_layers:
            return 0
        g = self.linear
        conv = g["conv_dim"] // tp * (g["conv_kernel"] - 1) * conv_dtype_bytes
        ssm = g["num_heads"] // tp * g["head_dim"] * g["state_size"] * ssm_dtype_bytes
        return int((conv + ssm) * self.linear_layers)


def _text_config(cfg: dict) -> dict:
    """Vision-language and wrapper configs keep the language model under text_config / llm_config."""
    for key in ("text_config", "llm_config", "language_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("num_hidden_layers"):
            merged = {k: v for k, v in cfg.items() if k not in ("text_config", "vision_config")}
            merged.update(sub)
            merged.setdefault("quantization_config", cfg.get("quantization_config"))
            return merged
    return cfg


def _quant(cfg: dict) -> tuple[str | None, float | None]:
    q = cfg.get("quantization_config") or cfg.get("compression_config")
    if not isinstance(q, dict):
        return None, None
    method = str(q.get("quant_method") or q.get("format") or "unknown").lower()
    bits = q.get("bits") or q.get("w_bit") or q.get("weight_bits")
    if bits is None:
        if "fp8" in method or q.get("fmt") in ("e4m3", "e5m2") or "float-quantized" in method:
            bits = 8
        elif method == "mxfp4":
            bits = 4.25  # an 8-bit shared exponent per 32 values
        elif method == "nvfp4":
            bits = 4.5  # an FP8 scale per 16 values
        elif method in ("awq", "gptq"):
            bits = 4
        elif method == "compressed-tensors":
            groups = q.get("config_groups") or {}
            for g in groups.values():
                w = (g or {}).get("weights") or {}
                if w.get("num_bits"):
                    bits = w["num_bits"]
                    break
    return method, (float(bits) if bits else None)


def _first(c: dict, *keys: str):
    """The first truthy value among keys (configs name one field several ways), else the last one's value: the
    `c.get(a) or c.get(b)` chain as one call."""
    v = None
    for k in keys:
        v = c.get(k)
        if v:
            return v
    return v


def from_config(cfg: dict, name: str = "") -> ModelSpec:
    """A ModelSpec from a parsed config.json (raises InputError when a field the budget needs is missing)."""
    quant_method, quant_bits = _quant(cfg)
    c = _text_config(cfg)
    try:
        layers = int(c["num_hidden_layers"])
        hidden = int(c["hidden_size"])
        heads = int(c["num_attention_heads"])
    except (KeyError, TypeError, ValueError):
        raise InputError(
            f"model config {name or ''}: needs num_hidden_layers, hidden_size and num_attention_heads"
        ) from None
    kv_heads = int(_first(c, "num_key_value_heads", "multi_query_group_num") or heads)
    head_dim = int(c.get("head_dim") or hidden // heads)
    arch = (c.get("architectures") or cfg.get("architectures") or [c.get("model_type", "unknown")])[0]
    dtype = _first(c, "torch_dtype", "dtype") or cfg.get("torch_dtype") or "bfloat16"
    spec = ModelSpec(
        name=name or str(c.get("_name_or_path") or arch),
        architecture=str(arch),
        num_layers=layers,
        hidden_size=hidden,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        v_head_dim=head_dim,
        vocab_size=int(c.get("vocab_size") or 0),
        intermediate_size=int(c.get("intermediate_size") or 4 * hidden),
        max_position_embeddings=_first(c, "max_position_embeddings", "seq_length"),
        dtype=str(dtype).replace("torch.", ""),
        full_attention_layers=layers,
        quant_method=quant_method,
        quant_bits=quant_bits,
        num_experts=int(_first(c, "num_experts", "n_routed_experts", "num_local_experts") or 0),
        experts_per_token=int(_first(c, "num_experts_per_tok", "experts_per_token") or 0),
        moe_intermediate_size=int(c.get("moe_intermediate_size") or 0),
        tie_word_embeddings=bool(c.get("tie_word_embeddings", False)),
        mtp_layers=int(_first(c, "num_nextn_predict_layers", "mtp_num_hidden_layers") or 0),
    )
    _set_attention_geometry(spec, c, layers)
    return spec


def _set_attention_geometry(spec: ModelSpec, c: dict, layers: int) -> None:
    """MLA's latent, and for hybrid models how many layers are full, sliding-window and linear attention (with the
    window and the linear state's geometry): what the KV and state budget is counted from."""
    if c.get("kv_lora_rank"):
        spec.mla = {"kv_lora_rank": int(c["kv_lora_rank"]), "qk_rope_head_dim": int(c.get("qk_rope_head_dim", 64))}
    kinds = _layer_kinds(c, layers)
    if kinds:
        spec.full_attention_layers = sum(k == "full" for k in kinds)
        spec.linear_layers = sum(k == "linear" for k in kinds)
        spec.sliding_window_layers = sum(k == "sliding" for k in kinds)
    if spec.sliding_window_layers:
        spec.sliding_window = int(c.get("sliding_window") or 0) or None
    if spec.linear_layers:
        spec.linear = _linear_geometry(c)


def _layer_kinds(c: dict, layers: int) -> list[str]:
    """Each layer's kind: full attention, sliding-window attention, or linear attention (GDN / Mamba)."""
    names = c.get("layer_types") or c.get("layers_block_type") or c.get("hybrid_override_pattern")
    if isinstance(names, str):  # Nemotron-H: "M-M-M*-..." (M mamba, * attention, - MLP)
        return ["linear" if ch == "M" else "full" if ch == "*" else "mlp" for ch in names]
    if isinstance(names, list) and names:
        out = []
        for n in names[:layers]:
            n = str(n).lower()
            if "linear" in n or "mamba" in n or n in ("gdn", "ssm"):
                out.append("linear")
            elif "sliding" in n or n == "swa":
                out.append("sliding")
            else:
                out.append("full")
        return out
    every = c.get("full_attention_interval")
    if every:
        return ["full" if (i + 1) % int(every) == 0 else "linear" for i in range(layers)]
    return []


def _linear_geometry(c: dict) -> dict:
    """Linear-attention state geometry. Qwen3-Next / Qwen3.5 GDN: conv over q,k,v channels, SSM state
    (value heads, value dim, key dim); Mamba2 (Nemotron-H, Falcon-H1): conv over x,B,C, SSM (heads, head dim,
    state size)."""
    if c.get("linear_num_value_heads"):
        nk, nv = int(c["linear_num_key_heads"]), int(c["linear_num_value_heads"])
        dk, dv = int(c["linear_key_head_dim"]), int(c["linear_value_head_dim"])
        return {
            "conv_dim": nk * dk * 2 + nv * dv,
            "conv_kernel": int(c.get("linear_conv_kernel_dim", 4)),
            "num_heads": nv,
            "head_dim": dv,
            "state_size": dk,
        }
    heads = int(c.get("mamba_num_heads") or c.get("mamba_n_heads") or 0)
    hd = int(c.get("mamba_head_dim") or c.get("mamba_d_head") or 0)
    groups = int(c.get("n_groups") or c.get("mamba_n_groups") or 1)
    state = int(c.get("ssm_state_size") or c.get("mamba_d_state") or 128)
    inter = heads * hd
    return {
        "conv_dim": inter + 2 * groups * state,
        "conv_kernel": int(c.get("conv_kernel") or c.get("mamba_d_conv") or 4),
        "num_heads": heads,
        "head_dim": hd,
        "state_size": state,
    }


def param_count(spec: ModelSpec, cfg: dict) -> int:
    """Parameters from the config alone (the fallback when no checkpoint sizes are at hand): embeddings, attention,
    MLP or experts, linear-attention projections. Norms and biases are left out (well under 0.1 %)."""
    return sum(param_parts(spec, cfg))


def param_parts(spec: ModelSpec, cfg: dict) -> tuple[int, int, int]:
    """(embeddings + LM head, attention + linear attention, MLP + experts) parameters. Quantized checkpoints keep
    the first two mostly in 16 bits; FP8/MXFP4 apply to the MLPs (and FP8 also to attention projections)."""
    c = _text_config(cfg)
    h, v = spec.hidden_size, spec.vocab_size
    emb = v * h * (1 if spec.tie_word_embeddings else 2)
    att_total = mlp_total = 0
    q = spec.num_heads * spec.head_dim
    kv = spec.num_kv_heads * spec.head_dim
    gated_q = 2 if "Qwen3Next" in spec.architecture or c.get("attn_output_gate") else 1
    if spec.mla:
        m = spec.mla
        qk = int(c.get("qk_nope_head_dim", 128)) + m["qk_rope_head_dim"]
        q_lora = c.get("q_lora_rank")
        qp = h * int(q_lora) + int(q_lora) * spec.num_heads * qk if q_lora else h * spec.num_heads * qk
        attn = (
            qp
            + h * (m["kv_lora_rank"] + m["qk_rope_head_dim"])
            + m["kv_lora_rank"] * spec.num_heads * (int(c.get("qk_nope_head_dim", 128)) + int(c.get("v_head_dim", 128)))
            + spec.num_heads * int(c.get("v_head_dim", 128)) * h
        )
    else:
        attn = h * q * gated_q + 2 * h * kv + q * h
    lin = 0
    if spec.linear_layers:
        g = spec.linear
        nv, dv = g["num_heads"], g["head_dim"]
        key_dim = (g["conv_dim"] - nv * dv) // 2
        lin = h * (2 * key_dim + 2 * nv * dv) + h * 2 * nv + g["conv_dim"] * g["conv_kernel"] + nv * dv * h
    experts = spec.num_experts
    moe_i = int(c.get("moe_intermediate_size") or 0)
    shared_i = int(c.get("shared_expert_intermediate_size") or 0) + int(c.get("n_shared_experts") or 0) * moe_i
    dense_layers = int(c.get("first_k_dense_replace") or 0)
    for i in range(spec.num_layers):
        is_linear = spec.linear_layers and _layer_is_linear(c, spec, i)
        att_total += lin if is_linear else attn
        if experts and moe_i and i >= dense_layers:
            mlp_total += experts * 3 * h * moe_i + h * experts + 3 * h * shared_i
        else:
            mlp_total += 3 * h * spec.intermediate_size
    return int(emb), int(att_total), int(mlp_total)


def _layer_is_linear(c: dict, spec: ModelSpec, i: int) -> bool:
    kinds = _layer_kinds(c, spec.num_layers)
    return i < len(kinds) and kinds[i] == "linear"


def load(path: str | Path) -> tuple[ModelSpec, dict]:
    """Read a model directory (config.json + checkpoint sizes) or a config.json file."""
    p = Path(path)
    cfg_path = p / "config.json" if p.is_dir() else p
    if not cfg_path.exists():
        raise InputError(f"no model config at {cfg_path}")
    try:
        from logdoctor.input.sources.guard import read_regular

        cfg = json.loads(read_regular(cfg_path, 64 << 20, "a model config.json").decode("utf-8"))
    except FileNotFoundError:
        raise InputError(f"no model config at {cfg_path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read {cfg_path}: {e}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{cfg_path} is not JSON: {e.msg} at line {e.lineno}") from None
    if not isinstance(cfg, dict):
        raise InputError(f"{cfg_path} is not a JSON object")
    folder = p if p.is_dir() else p.parent
    spec = from_config(cfg, name=folder.name if p.is_dir() else p.stem)
    spec.weight_bytes, spec.weights_source = _weight_bytes(folder, cfg, spec)
    return spec, cfg


def _weight_bytes(folder: Path, cfg: dict, spec: ModelSpec) -> tuple[int, str]:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            total = json.loads(index.read_text(encoding="utf-8")).get("metadata", {}).get("total_size")
        except (OSError, ValueError):
            total = None
        if total:
            return int(total), f"{index.name} metadata.total_size"
    files = sorted(folder.glob("*.safetensors"))
    if files:
        return sum(f.stat().st_size for f in files), f"sum of {len(files)} *.safetensors file(s)"
    emb, att, mlp = param_parts(spec, cfg)
    full = 8 * DTYPE_BYTES.get(spec.dtype, 2)
    bits = spec.quant_bits or full
    att_bits = bits if (spec.quant_bits or 16) >= 8 else full  # 4-bit MoE formats keep attention in 16 bits
    n = emb * full + att * att_bits + mlp * bits
    how = f"{(emb + att + mlp) / 1e9:.2f}B parameters counted from config.json"
    how += f" (embeddings {full:g}-bit, the rest {bits:g}-bit)" if bits != full else f" x {full:g} bits"
    return int(n / 8), how
