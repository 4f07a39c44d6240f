"""Basic TGI, TensorRT-LLM and lmdeploy start-ups (healthy and a few failures)."""
from __future__ import annotations

from .case import Outcome, Run
from .pyerr import F, oom, traceback
from .sglang import tqdm_bar


# -- TGI (text-generation-launcher) ------------------------------------------------------
def _tgi(run: Run, level: str, target: str, msg: str, extra: str = "") -> None:
    ts = run.log.et.strftime("%Y-%m-%dT%H:%M:%S.") + f"{run.log.et.microsecond:06d}Z"
    run.log.app(f"{ts} {level:>5} {target}: {msg}{extra}")


def _tgi_start(run: Run) -> None:
    d = run.d
    shards = d.tp
    args = [f'model_id: "{d.model.repo}"', "revision: None", "validation_workers: 2", "sharded: " +
            ("Some(true)" if shards > 1 else "None"), f"num_shard: {'Some(%d)' % shards if shards > 1 else 'None'}",
            "quantize: None", "speculate: None", "dtype: None", "kv_cache_dtype: None", "trust_remote_code: false",
            "max_concurrent_requests: 128", "max_best_of: 2", "max_stop_sequences: 4", "max_top_n_tokens: 5",
            "max_input_tokens: None", "max_input_length: None", "max_total_tokens: None",
            "waiting_served_ratio: 0.3", "max_batch_prefill_tokens: None", "max_batch_total_tokens: None",
            "max_waiting_tokens: 20", "max_batch_size: None", "cuda_graphs: None",
            f'hostname: "{run.log.host}"', "port: 80", "shard_uds_path: \"/tmp/text-generation-server\"",
            'master_addr: "localhost"', "master_port: 29500", 'huggingface_hub_cache: Some("/data")',
            "disable_custom_kernels: false", "cuda_memory_fraction: 1.0", "json_output: false",
            "otlp_endpoint: None", 'cors_allow_origin: []', "watermark_gamma: None", "watermark_delta: None",
            "env: false", "max_client_batch_size: 4", "lora_adapters: None", "usage_stats: On"]
    _tgi(run, "INFO", "text_generation_launcher", "Args {\n    " + ",\n    ".join(args) + ",\n}")
    _tgi(run, "INFO", "text_generation_launcher", "Using attention flashinfer - Prefix caching true")
    _tgi(run, "INFO", "text_generation_launcher", "Default `max_batch_prefill_tokens` to 4096")
    _tgi(run, "INFO", "text_generation_launcher", "Using default cuda graphs [1, 2, 4, 8, 16, 32]")
    if shards > 1:
        _tgi(run, "INFO", "text_generation_launcher", f"Sharding model on {shards} processes")
    _tgi(run, "INFO", "download: text_generation_launcher",
         f"Starting check and download process for {d.model.repo}")
    run.log.wait(4)
    _tgi(run, "INFO", "text_generation_launcher", "Files are already present on the host. Skipping download.")
    _tgi(run, "INFO", "download: text_generation_launcher", f"Successfully downloaded weights for {d.model.repo}")
    for r in range(shards):
        _tgi(run, "INFO", "shard-manager: text_generation_launcher", "Starting shard", f" rank={r}")
    run.log.wait(9)
    for r in range(shards):
        _tgi(run, "INFO", "shard-manager: text_generation_launcher", "Waiting for shard to be ready...",
             f" rank={r}")


def tgi_healthy(run: Run) -> Outcome:
    _tgi_start(run)
    d = run.d
    run.log.wait(14)
    _tgi(run, "INFO", "text_generation_launcher", "Using prefill chunking = True")
    for r in range(d.tp):
        _tgi(run, "INFO", "shard-manager: text_generation_launcher", f"Shard ready in {run.rng.uniform(20, 60):.2f}s",
             f" rank={r}")
    _tgi(run, "INFO", "text_generation_launcher", "Starting Webserver")
    _tgi(run, "INFO", "text_generation_router_v3", "backends/v3/src/lib.rs:125: Warming up model")
    _tgi(run, "INFO", "text_generation_launcher", "Cuda Graphs are enabled for sizes [32, 16, 8, 4, 2, 1]")
    run.log.wait(6)
    _tgi(run, "INFO", "text_generation_router_v3",
         f"backends/v3/src/lib.rs:137: Setting max batch total tokens to {run.rng.randint(90000, 400000)}")
    _tgi(run, "WARN", "text_generation_router_v3::backend",
         "backends/v3/src/backend.rs:39: Model supports prefill chunking. `waiting_served_ratio` and "
         "`max_waiting_tokens` will be ignored.")
    _tgi(run, "INFO", "text_generation_router_v3", "backends/v3/src/lib.rs:166: Using backend V3")
    _tgi(run, "INFO", "text_generation_router::server", "router/src/server.rs:2373: Connected")
    for _ in range(5):
        run.log.wait(run.rng.uniform(2, 9))
        _tgi(run, "INFO", "chat_completions{total_time=\"%.2fs\" validation_time=\"1.1ms\" queue_time=\"80µs\" "
             "inference_time=\"%.2fs\" time_per_token=\"21.3ms\" seed=\"None\"}" % (run.rng.uniform(1, 6),
                                                                                   run.rng.uniform(1, 6)),
             "text_generation_router::server", "router/src/server.rs:637: Success")
    return Outcome("serving", None, exit="alive", notes="Healthy TGI start (docker).")


def tgi_weights_oom(run: Run) -> Outcome:
    _tgi_start(run)
    d = run.d
    run.log.wait(20)
    _tgi(run, "ERROR", "shard-manager: text_generation_launcher", "Shard complete standard error output:\n", "")
    site = "/usr/src/.venv/lib/python3.11/site-packages"
    fr = [F("/usr/src/.venv/bin/text-generation-server", 10, "<module>", "sys.exit(app())"),
          F("text_generation_server/cli.py", 119, "serve", "server.serve("),
          F("text_generation_server/server.py", 315, "serve", "asyncio.run("),
          F("text_generation_server/server.py", 268, "serve_inner", "model = get_model_with_lora_adapters("),
          F("text_generation_server/models/__init__.py", 1580, "get_model_with_lora_adapters", "model = get_model("),
          F("text_generation_server/models/__init__.py", 933, "get_model", "return FlashCausalLM("),
          F("text_generation_server/models/flash_causal_lm.py", 1146, "__init__", "model = model_class(prefix, config, "
            "weights)"),
          F("text_generation_server/models/custom_modeling/flash_llama_modeling.py", 640, "__init__",
            "self.model = FlashLlamaModel(prefix, config, weights)"),
          F("text_generation_server/utils/weights.py", 275,
            "get_sharded", "return self.get_tensor(tensor_name, to_device=to_device, to_dtype=to_dtype)"),
          F("text_generation_server/utils/weights.py", 231, "get_tensor", "tensor = tensor.to(device=self.device)")]
    text = oom(True, 1.75, d.gpu.total, 412.0, d.gpu.total - 0.4, d.gpu.total - 1.3, 88.0)
    for ln in traceback(fr, text, site, 11):
        run.log.app(ln)
    run.log.app(" rank=0")
    _tgi(run, "ERROR", "text_generation_launcher", "Shard 0 failed to start")
    _tgi(run, "INFO", "text_generation_launcher", "Shutting down shards")
    run.log.app("Error: ShardCannotStart")
    return Outcome("weight_load", "weights_oom", [f"--num-shard {max(2, d.tp * 2)}"],
                   fix_other="or a quantized variant (--quantize fp8)",
                   must_not=["--max-batch-prefill-tokens", "--max-total-tokens"], exit="exit1",
                   notes=f"TGI shard 0 runs out of GPU memory while placing the weights of {d.model.name} on one "
                         f"{d.gpu.label}: shard the model over more GPUs.")


# -- TensorRT-LLM (trtllm-serve, PyTorch backend) --------------------------------------------
def _trt(run: Run, msg: str, rank: int | None = None, lvl: str = "I") -> None:
    ts = run.log.et.strftime("%m/%d/%Y-%H:%M:%S")
    r = f" [RANK {rank}]" if rank is not None else ""
    run.log.app(f"[{ts}] [TRT-LLM]{r} [{lvl}] {msg}")


def _trt_start(run: Run) -> None:
    d = run.d
    run.log.app(f"trtllm-serve {d.model.repo} --host 0.0.0.0 --port 8000 --tp_size {d.tp} --backend pytorch")
    _trt(run, "Starting TensorRT-LLM init.")
    run.log.app("[TensorRT-LLM][INFO] Set logger level to INFO")
    _trt(run, "TensorRT-LLM inited.")
    run.log.app(f"[TensorRT-LLM] TensorRT-LLM version: {d.version}")
    _trt(run, "Using LLM with PyTorch backend")
    _trt(run, "Set nccl_plugin to None.")
    run.log.wait(6)
    for r in range(d.tp):
        _trt(run, f"Use {d.model.size_gb * 0.9313 / d.tp:.2f} GB for model weights.", r)
    run.log.wait(20)


def trt_healthy(run: Run) -> Outcome:
    _trt_start(run)
    d = run.d
    for r in range(d.tp):
        _trt(run, "[MemUsageChange] Allocated "
                  f"{run.rng.uniform(20, 60):.2f} GiB for max tokens in paged KV cache ({run.rng.randint(200000, 900000)}).",
             r)
    _trt(run, "Memory used outside torch (e.g., NCCL and CUDA graphs) in memory usage profiling: 3.12 GiB", 0, "W")
    run.log.wait(12)
    for m in (f"INFO:     Started server process [{run.log.pid}]", "INFO:     Waiting for application startup.",
              "INFO:     Application startup complete.",
              "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)"):
        run.log.app(m)
    for _ in range(4):
        run.log.wait(run.rng.uniform(3, 9))
        run.log.app(f'INFO:     10.0.{run.rng.randint(0, 9)}.{run.rng.randint(2, 200)}:{run.rng.randint(30000, 60000)} - '
                    '"POST /v1/chat/completions HTTP/1.1" 200 OK')
    return Outcome("serving", None, exit="alive", notes="Healthy trtllm-serve start; the W line about memory used "
                                                        "outside torch is informational.")


def trt_sm_unsupported(run: Run) -> Outcome:
    _trt_start(run)
    d = run.d
    err = (f"RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: Unsupported SM version {d.gpu.sm} for the "
           "fmha kernels (/src/tensorrt_llm/cpp/tensorrt_llm/kernels/contextFusedMultiHeadAttention/"
           "fmhaRunner.cpp:88)")
    _trt(run, "Failed to initialize executor on rank 0: " + err.split(": ", 1)[1], 0, "E")
    fr = [F("tensorrt_llm/_torch/pyexecutor/py_executor_creator.py", 412, "create_py_executor",
            "py_executor = create_py_executor_instance("),
          F("tensorrt_llm/_torch/attention_backend/trtllm.py", 1102, "__init__",
            "self.wrapper = TrtllmAttentionWrapper("),
          F("tensorrt_llm/_torch/attention_backend/trtllm.py", 288, "plan", "thop.attention_preprocess(")]
    for ln in traceback(fr, err, "/usr/local/lib/python3.12/dist-packages", 12):
        run.log.app(ln)
    return Outcome("kernel_init", "kernel_arch_mismatch", [],
                   fix_other=f"use a TensorRT-LLM build with sm_{d.gpu.sm} kernels for this GPU",
                   must_not=["--kv_cache_free_gpu_memory_fraction", "--max_batch_size"], exit="exit1",
                   confidence="medium",
                   notes=f"The attention kernels of this TensorRT-LLM build do not support sm_{d.gpu.sm} "
                         f"({d.gpu.name}): an arch mismatch at executor init.")


# -- lmdeploy ------------------------------------------------------------------------------
def _lmd(run: Run, msg: str, src: str, lvl: str = "INFO") -> None:
    t = run.log.et
    run.log.app(f"{t.strftime('%Y-%m-%d %H:%M:%S')},{t.microsecond // 1000:03d} - lmdeploy - {lvl} - {src} - {msg}")


def _lmd_start(run: Run, backend: str) -> None:
    d = run.d
    cme = d.args.get("cache_max_entry_count", 0.8)
    _lmd(run, f"matching chat template 'qwen2d5' for {d.path}", "builder.py:68")
    cfg = ("TurbomindEngineConfig(dtype='auto', model_format='hf', tp=%d, session_len=%s, max_batch_size=128, "
           "cache_max_entry_count=%s, cache_block_seq_len=64, enable_prefix_caching=False, quant_policy=0, "
           "rope_scaling_factor=0.0, use_logn_attn=False, download_dir=None, revision=None, max_prefill_token_num=8192, "
           "num_tokens_per_iter=0, max_prefill_iters=1)" % (d.tp, d.args.get("session_len"), cme)) \
        if backend == "turbomind" else \
        ("PytorchEngineConfig(dtype='auto', tp=%d, session_len=%s, max_batch_size=128, cache_max_entry_count=%s, "
         "prefill_interval=16, block_size=64, num_cpu_blocks=0, num_gpu_blocks=0, adapters=None, "
         "max_prefill_token_num=4096, thread_safe=False, enable_prefix_caching=False, device_type='cuda', "
         "eager_mode=False, custom_module_map=None, download_dir=None, revision=None, quant_policy=0)"
         % (d.tp, d.args.get("session_len"), cme))
    _lmd(run, f"input backend={backend}, backend_config={cfg}", "async_engine.py:260")
    _lmd(run, "input chat_template_config=None", "async_engine.py:261")
    run.log.wait(3)
    _lmd(run, f"updated chat_template_onfig=ChatTemplateConfig(model_name='qwen2d5', system=None, meta_instruction=None, "
              "eosys=None, user=None, eoh=None, assistant=None, eoa=None, tool=None, eotool=None, separator=None, "
              "capability=None, stop_words=None)", "async_engine.py:270")
    run.log.wait(20)


def lmd_healthy(run: Run) -> Outcome:
    _lmd_start(run, "turbomind")
    d = run.d
    run.log.app(f"[TM][INFO] [LlamaTritonModel] max_context_token_num set to {d.model.ctx}")
    run.log.app(f"[TM][INFO] [BlockManager] block_size = 64 MB")
    run.log.app(f"[TM][INFO] [BlockManager] max_block_count = {run.rng.randint(300, 1500)}")
    run.log.app("[TM][INFO] [BlockManager] chunk_size = 1")
    run.log.app("[TM][WARNING] [SegMgr] prefix caching is disabled")
    run.log.wait(5)
    _lmd(run, "Engine initialized.", "async_engine.py:288")
    run.log.app(f"HINT:    Please open \x1b[93m\x1b[1mhttp://0.0.0.0:{d.http_port}\x1b[0m in a browser for detailed "
                "api usage!!!")
    for m in (f"INFO:     Started server process [{run.log.pid}]", "INFO:     Waiting for application startup.",
              "INFO:     Application startup complete.",
              f"INFO:     Uvicorn running on http://0.0.0.0:{d.http_port} (Press CTRL+C to quit)"):
        run.log.app(m)
    for _ in range(4):
        run.log.wait(run.rng.uniform(3, 9))
        run.log.app(f'INFO:     10.1.{run.rng.randint(0, 9)}.{run.rng.randint(2, 200)}:{run.rng.randint(30000, 60000)} - '
                    '"POST /v1/chat/completions HTTP/1.1" 200 OK')
    return Outcome("serving", None, exit="alive", notes="Healthy lmdeploy (turbomind) start.")


def lmd_kv(run: Run) -> Outcome:
    _lmd_start(run, "pytorch")
    d = run.d
    cme = d.args.get("cache_max_entry_count", 0.8)
    for i, pct in enumerate((0, 50, 100)):
        run.log.wait(4)
        run.log.app(tqdm_bar("Loading weights from safetensors", d.model.shards * pct // 100, d.model.shards,
                             4.0 * i, 1.3))
    _lmd(run, "build CacheEngine with config: CacheConfig(block_size=64, num_cpu_blocks=0, num_gpu_blocks=0, "
              f"window_size=-1, cache_max_entry_count={cme}, max_prefill_token_num=4096)", "model_agent.py:350")
    err = ("RuntimeError: No enough gpu memory for kv cache. The number of free gpu blocks is 0 after loading the "
           f"model with cache_max_entry_count={cme}. Please increase cache_max_entry_count or use a smaller session_len.")
    fr = [F("lmdeploy/pytorch/engine/engine.py", 195, "__init__", "self._build_model()"),
          F("lmdeploy/pytorch/engine/model_agent.py", 361, "build_cache_engine", "self._build_cache_engine()"),
          F("lmdeploy/pytorch/engine/cache_engine.py", 298, "get_cache_block_size",
            "raise RuntimeError(")]
    for ln in traceback(fr, err, "/opt/py3/lib/python3.10/site-packages", 10):
        run.log.app(ln)
    new = min(0.95, round(cme + 0.15, 2))
    return Outcome("memory_pool", "kv_cache_oom", [f"--cache-max-entry-count {new:g}"],
                   fix_other="or a smaller --session-len",
                   must_not=[f"--cache-max-entry-count {cme:g}"], exit="exit1", confidence="medium",
                   notes="lmdeploy's PyTorch engine finds no room for KV blocks after the weights at "
                         f"cache_max_entry_count={cme}.")
