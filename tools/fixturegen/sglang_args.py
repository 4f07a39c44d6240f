"""SGLang's `server_args=` dump: a ServerArgs(...) repr (classic) or a dict (0.5.22+)."""
from __future__ import annotations

from .deploy import Deploy

# (field, default) in print order; None defaults that SGLang resolves at start-up are filled in below
CLASSIC = [
    ("model_path", None), ("tokenizer_path", None), ("tokenizer_mode", "auto"), ("tokenizer_worker_num", 1),
    ("skip_tokenizer_init", False), ("load_format", "auto"), ("model_loader_extra_config", "{}"),
    ("trust_remote_code", False), ("context_length", None), ("is_embedding", False), ("enable_multimodal", None),
    ("revision", None), ("model_impl", "auto"), ("host", "127.0.0.1"), ("port", 30000),
    ("skip_server_warmup", False), ("warmups", None), ("nccl_port", None), ("dtype", "auto"),
    ("quantization", None), ("quantization_param_path", None), ("kv_cache_dtype", "auto"),
    ("mem_fraction_static", None), ("max_running_requests", None), ("max_queued_requests", None),
    ("max_total_tokens", None), ("chunked_prefill_size", None), ("max_prefill_tokens", 16384),
    ("schedule_policy", "fcfs"), ("schedule_conservativeness", 1.0), ("page_size", 1),
    ("hybrid_kvcache_ratio", None), ("swa_full_tokens_ratio", 0.8), ("disable_hybrid_swa_memory", False),
    ("device", "cuda"), ("tp_size", 1), ("pp_size", 1), ("stream_interval", 1), ("stream_output", False),
    ("random_seed", None), ("watchdog_timeout", 300), ("dist_timeout", None), ("download_dir", None),
    ("base_gpu_id", 0), ("gpu_id_step", 1), ("log_level", "info"), ("log_level_http", None),
    ("log_requests", False), ("show_time_cost", False), ("enable_metrics", False), ("api_key", None),
    ("served_model_name", None), ("chat_template", None), ("reasoning_parser", None), ("tool_call_parser", None),
    ("dp_size", 1), ("load_balance_method", "round_robin"), ("dist_init_addr", None), ("nnodes", 1),
    ("node_rank", 0), ("json_model_override_args", "{}"), ("enable_lora", None), ("attention_backend", None),
    ("decode_attention_backend", None), ("prefill_attention_backend", None), ("sampling_backend", "flashinfer"),
    ("grammar_backend", "xgrammar"), ("mm_attention_backend", None), ("speculative_algorithm", None),
    ("speculative_draft_model_path", None), ("speculative_num_steps", None), ("speculative_eagle_topk", None),
    ("speculative_num_draft_tokens", None), ("ep_size", 1), ("moe_a2a_backend", "none"),
    ("moe_runner_backend", "auto"), ("enable_eplb", False), ("mamba_ssm_dtype", "float32"),
    ("mamba_full_memory_ratio", 0.9), ("max_mamba_cache_size", None), ("enable_hierarchical_cache", False),
    ("cpu_offload_gb", 0), ("disable_radix_cache", False), ("cuda_graph_max_bs", None), ("cuda_graph_bs", None),
    ("disable_cuda_graph", False), ("disable_cuda_graph_padding", False), ("enable_profile_cuda_graph", False),
    ("enable_nccl_nvls", False), ("disable_custom_all_reduce", False), ("enable_mscclpp", False),
    ("disable_overlap_schedule", False), ("enable_mixed_chunk", False), ("enable_dp_attention", False),
    ("enable_dp_lm_head", False), ("enable_two_batch_overlap", False), ("enable_torch_compile", False),
    ("torch_compile_max_bs", 32), ("torchao_config", ""), ("enable_nan_detection", False),
    ("enable_p2p_check", False), ("triton_attention_num_kv_splits", 8), ("num_continuous_decode_steps", 1),
    ("enable_memory_saver", False), ("allow_auto_truncate", False), ("disable_shared_experts_fusion", False),
    ("disable_chunked_prefix_cache", False), ("disable_piecewise_cuda_graph", False),
    ("piecewise_cuda_graph_max_tokens", 4096), ("disaggregation_mode", "null"),
    ("disaggregation_transfer_backend", "mooncake"), ("disaggregation_bootstrap_port", 8998),
    ("disaggregation_decode_tp", None), ("disaggregation_decode_dp", None), ("disaggregation_prefill_pp", 1),
    ("disaggregation_ib_device", None), ("num_reserved_decode_tokens", 512), ("pdlb_url", None),
    ("custom_weight_loader", []), ("weight_loader_disable_mmap", False), ("remote_instance_weight_loader_seed_instance_ip", None),
    ("enable_pdmux", False), ("sm_group_num", 3), ("max_loras_per_batch", 8), ("max_lora_rank", None),
    ("lora_target_modules", None), ("lora_paths", None), ("lora_backend", "triton"), ("max_loaded_loras", None),
    ("hicache_ratio", 2.0), ("hicache_size", 0), ("hicache_write_policy", "write_through"),
    ("hicache_io_backend", "kernel"), ("hicache_mem_layout", "layer_first"), ("hicache_storage_backend", None),
    ("hicache_storage_prefetch_policy", "best_effort"), ("enable_lmcache", False), ("enable_double_sparsity", False),
    ("ds_channel_config_path", None), ("ds_heavy_channel_num", 32), ("ds_heavy_token_num", 256),
    ("ds_heavy_channel_type", "qk"), ("ds_sparse_decode_threshold", 4096), ("offload_group_size", -1),
    ("offload_num_in_group", 1), ("offload_prefetch_step", 1), ("offload_mode", "cpu"),
    ("enable_deterministic_inference", False), ("enable_return_hidden_states", False),
    ("scheduler_recv_interval", 1), ("numa_node", None), ("debug_tensor_dump_output_folder", None),
    ("debug_tensor_dump_input_file", None), ("debug_tensor_dump_inject", False),
    ("debug_tensor_dump_prefill_only", False), ("enable_dynamic_batch_tokenizer", False),
    ("dynamic_batch_tokenizer_batch_size", 32), ("dynamic_batch_tokenizer_batch_timeout", 0.002),
    ("mm_max_concurrent_calls", 32), ("mm_per_request_timeout", 10.0), ("decrypted_config_file", None),
    ("decrypted_draft_config_file", None), ("kv_events_config", None), ("enable_trace", False),
    ("oltp_traces_endpoint", "localhost:4317"), ("file_storage_path", "sglang_storage"),
    ("enable_cache_report", False), ("tool_server", None), ("sampling_defaults", "model"),
    ("preferred_sampling_params", None), ("weight_version", "default"), ("gc_warning_threshold_secs", 0.0),
    ("enable_request_time_stats_logging", False), ("kv_cache_quant_algo", None), ("hybrid_kvcache_ratio_extra", None),
]

NEW = [
    ("model_path", None), ("tokenizer_path", None), ("tokenizer_mode", "auto"), ("load_format", "auto"),
    ("trust_remote_code", False), ("context_length", None), ("revision", None), ("host", "127.0.0.1"),
    ("port", 30000), ("nccl_port", None), ("dtype", "auto"), ("quantization", None), ("kv_cache_dtype", "auto"),
    ("mem_fraction_static", None), ("max_running_requests", None), ("max_total_tokens", None),
    ("chunked_prefill_size", None), ("max_prefill_tokens", 16384), ("schedule_policy", "fcfs"), ("page_size", 1),
    ("tp_size", 1), ("pp_size", 1), ("attn_dp_size", 1), ("ep_size", 1), ("base_gpu_id", 0), ("random_seed", None),
    ("watchdog_timeout", 300), ("dist_timeout", None), ("log_level", "info"), ("api_key", None),
    ("served_model_name", None), ("dist_init_addr", None), ("nnodes", 1), ("node_rank", 0),
    ("json_model_override_args", "{}"), ("attention_backend", None), ("prefill_attention_backend", None),
    ("decode_attention_backend", None), ("sampling_backend", "flashinfer"), ("grammar_backend", "xgrammar"),
    ("speculative_algorithm", None), ("speculative_draft_model_path", None), ("speculative_num_steps", None),
    ("speculative_eagle_topk", None), ("speculative_num_draft_tokens", None),
    ("speculative_dflash_block_size", None), ("speculative_draft_attention_backend", None),
    ("mamba_ssm_dtype", "float32"), ("mamba_full_memory_ratio", 0.9), ("max_mamba_cache_size", None),
    ("mamba_scheduler_strategy", "auto"), ("linear_attn_backend", "triton"), ("disable_radix_cache", False),
    ("disable_cuda_graph", False), ("cuda_graph_max_bs_decode", None), ("cuda_graph_bs_decode", None),
    ("cuda_graph_backend_decode", "full"), ("cuda_graph_backend_prefill", "full"),
    ("cuda_graph_max_bs_prefill", 2048), ("enable_torch_compile", False), ("torch_compile_max_bs", 32),
    ("disable_custom_all_reduce", False), ("enable_mixed_chunk", False), ("cpu_offload_gb", 0),
    ("triton_attention_num_kv_splits", 8), ("enable_metrics", False), ("warmup_requests", 1),
    ("tool_call_parser", None), ("reasoning_parser", None),
]


def auto_mem_fraction(d: Deploy) -> float:
    g = d.gpu.total
    base = 0.79 if g < 50 else 0.83 if g < 90 else 0.86 if g < 150 else 0.88
    return round(base + 0.02 * (d.tp >= 4) - 0.04 * (d.args.get("speculative_algorithm") is not None), 3)


def auto_chunk(d: Deploy) -> int:
    g = d.gpu.total
    return 2048 if g < 30 else 4096 if g < 60 else 8192 if g < 120 else 16384


def auto_graph_bs(d: Deploy) -> int:
    g = d.gpu.total
    return 8 if g < 30 else 80 if g < 60 else (256 if d.tp < 4 else 512) if g < 120 else 512


def auto_backend(d: Deploy) -> str:
    if d.model.kind == "mla":
        return "flashinfer" if d.gpu.sm < 90 else "fa3"
    if d.gpu.sm >= 100:
        return "trtllm_mha" if d.gpu.sm == 100 else "triton"
    return "fa3" if d.gpu.sm == 90 else "flashinfer"


def resolved(d: Deploy, new: bool) -> dict:
    a = d.args
    fields = NEW if new else CLASSIC
    out = {k: v for k, v in fields}
    out.update({k: v for k, v in a.items() if k in out})
    out["model_path"] = d.path
    out["tokenizer_path"] = a.get("tokenizer_path", d.path)
    out["served_model_name"] = a.get("served_model_name", d.path)
    out["tp_size"] = d.tp
    out["pp_size"] = d.pp
    out["ep_size"] = d.ep
    if new:
        out["attn_dp_size"] = d.dp
    else:
        out["dp_size"] = d.dp
        out["enable_dp_attention"] = d.dp > 1
    out["port"] = d.http_port
    if "host" not in a:
        out["host"] = "0.0.0.0"
    for k in ("tp_size", "nnodes", "node_rank"):
        if k in a:
            out[k] = a[k]
    if out["mem_fraction_static"] is None:
        out["mem_fraction_static"] = auto_mem_fraction(d)
    if out["chunked_prefill_size"] is None:
        out["chunked_prefill_size"] = auto_chunk(d)
    if out["random_seed"] is None:
        out["random_seed"] = 100_000_000 + (hash_str(d.path) % 900_000_000)
    if not new:
        if out["cuda_graph_max_bs"] is None:
            out["cuda_graph_max_bs"] = auto_graph_bs(d)
        if out["attention_backend"] is None:
            out["attention_backend"] = auto_backend(d)
    elif a.get("disable_cuda_graph"):
        out["cuda_graph_backend_decode"] = "disabled"
    return out


def hash_str(s: str) -> int:
    h = 0
    for ch in s:
        h = (h * 131 + ord(ch)) % 4_294_967_291
    return h


def server_args_line(d: Deploy, new: bool) -> str:
    r = resolved(d, new)
    if new:
        return "server_args=" + repr(r)
    return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in r.items()) + ")"
