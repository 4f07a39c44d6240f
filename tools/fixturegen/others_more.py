"""More TGI, TensorRT-LLM and lmdeploy endings: TGI warm-up / webserver / killed shard, TensorRT-LLM's KV-cache
component, engine plans and MPI spawn, lmdeploy's runtime reservation."""
from __future__ import annotations

from .case import Outcome, Run
from .others import _lmd, _tgi, _trt
from .pyerr import F, oom
from .sglang import tqdm_bar

TGI_SITE = "/usr/src/.venv/lib/python3.11/site-packages"


# -- TGI ---------------------------------------------------------------------------------------------------------------
def _tgi_boot(run: Run, **over) -> None:
    d = run.d
    shards = d.tp

    def opt(k, dflt="None"):
        v = over.get(k)
        return f"Some({v})" if v is not None else dflt
    args = [f'model_id: "{d.model.repo}"', "revision: None", "validation_workers: 2",
            "sharded: " + ("Some(true)" if shards > 1 else "None"),
            f"num_shard: {'Some(%d)' % shards if shards > 1 else 'None'}", "quantize: None", "speculate: None",
            "dtype: None", "kv_cache_dtype: None", "trust_remote_code: false", "max_concurrent_requests: 128",
            "max_best_of: 2", "max_stop_sequences: 4", "max_top_n_tokens: 5",
            f"max_input_tokens: {opt('max_input_tokens')}", "max_input_length: None",
            f"max_total_tokens: {opt('max_total_tokens')}", "waiting_served_ratio: 0.3",
            f"max_batch_prefill_tokens: {opt('max_batch_prefill_tokens')}", "max_batch_total_tokens: None",
            "max_waiting_tokens: 20", "max_batch_size: None", "cuda_graphs: None", f'hostname: "{run.log.host}"',
            f"port: {over.get('port', 80)}", 'shard_uds_path: "/tmp/text-generation-server"',
            'master_addr: "localhost"', "master_port: 29500", 'huggingface_hub_cache: Some("/data")',
            "disable_custom_kernels: false", "cuda_memory_fraction: 1.0", "json_output: false",
            "otlp_endpoint: None", "cors_allow_origin: []", "watermark_gamma: None", "watermark_delta: None",
            "env: false", "max_client_batch_size: 4", "lora_adapters: None", "usage_stats: On"]
    _tgi(run, "INFO", "text_generation_launcher", "Args {\n    " + ",\n    ".join(args) + ",\n}")
    _tgi(run, "INFO", "text_generation_launcher", "Using attention flashinfer - Prefix caching true")
    if over.get("max_batch_prefill_tokens") is None:
        _tgi(run, "INFO", "text_generation_launcher", "Default `max_batch_prefill_tokens` to 4096")
    _tgi(run, "INFO", "text_generation_launcher", "Using default cuda graphs [1, 2, 4, 8, 16, 32]")
    if shards > 1:
        _tgi(run, "INFO", "text_generation_launcher", f"Sharding model on {shards} processes")
    _tgi(run, "INFO", "download: text_generation_launcher", f"Starting check and download process for {d.model.repo}")
    run.log.wait(4)
    _tgi(run, "INFO", "text_generation_launcher", "Files are already present on the host. Skipping download.")
    _tgi(run, "INFO", "download: text_generation_launcher", f"Successfully downloaded weights for {d.model.repo}")
    for r in range(shards):
        _tgi(run, "INFO", "shard-manager: text_generation_launcher", "Starting shard", f" rank={r}")


def _tgi_shutdown(run: Run, shards: int, err: str, dead: int | None = None) -> None:
    _tgi(run, "INFO", "text_generation_launcher", "Shutting down shards")
    for r in [k for k in range(shards) if k != dead]:
        _tgi(run, "INFO", "shard-manager: text_generation_launcher", "Terminating shard", f" rank={r}")
        _tgi(run, "INFO", "shard-manager: text_generation_launcher", "Waiting for shard to gracefully shutdown",
             f" rank={r}")
    run.log.wait(1.2)
    for r in [k for k in range(shards) if k != dead]:
        _tgi(run, "INFO", "shard-manager: text_generation_launcher", "shard terminated", f" rank={r}")
    run.log.app(f"Error: {err}")


def _tgi_ready(run: Run, shards: int) -> None:
    for k in range(3):
        run.log.wait(10)
        for r in range(shards):
            _tgi(run, "INFO", "shard-manager: text_generation_launcher", "Waiting for shard to be ready...",
                 f" rank={r}")
    run.log.wait(6)
    _tgi(run, "INFO", "text_generation_launcher", "Using prefill chunking = True")
    for r in range(shards):
        _tgi(run, "INFO", "shard-manager: text_generation_launcher", f"Shard ready in {run.rng.uniform(30, 45):.2f}s",
             f" rank={r}")
    _tgi(run, "INFO", "text_generation_launcher", "Starting Webserver")
    _tgi(run, "INFO", "text_generation_router_v3", "backends/v3/src/lib.rs:125: Warming up model")


def tgi_prefill_oom(run: Run, prefill: int = 65536, max_input: int = 32000, max_total: int = 32768) -> Outcome:
    d = run.d
    _tgi_boot(run, max_batch_prefill_tokens=prefill, max_input_tokens=max_input, max_total_tokens=max_total)
    _tgi_ready(run, d.tp)
    run.log.wait(2.5)
    src = "/usr/src/server/text_generation_server"
    inner = [F(f"{src}/models/flash_causal_lm.py", 1667, "warmup", "_, _batch, _ = self.generate_token(batch)"),
             F("/usr/lib/python3.11/contextlib.py", 81, "inner", "return func(*args, **kwds)",
               "           ^^^^^^^^^^^^^^^^^^^"),
             F(f"{src}/models/flash_causal_lm.py", 2033, "generate_token",
               "out, speculative_logits = self.forward(batch, adapter_data)",
               "                          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
             F(f"{src}/models/flash_causal_lm.py", 1932, "forward", "logits, speculative_logits = self.model.forward("),
             F(f"{src}/models/custom_modeling/flash_mistral_modeling.py", 512, "forward", "hidden_states = self.model("),
             F(f"{src}/models/custom_modeling/flash_mistral_modeling.py", 444, "forward",
               "hidden_states, residual = layer("),
             F(f"{src}/models/custom_modeling/flash_mistral_modeling.py", 373, "forward",
               "mlp_output = self.mlp(normed_attn_res_output, adapter_data)"),
             F(f"{src}/models/custom_modeling/flash_mistral_modeling.py", 302, "forward",
               "return self.down_proj(self.act(gate_up_states[:, 0]) * gate_up_states[:, 1], adapter_data)",
               "                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]
    total = d.gpu.total
    text = oom(True, 7.0, total, 2118.0, total - 2.07, total - 4.9, 190.0)
    outer = [F("/usr/src/.venv/bin/text-generation-server", 10, "<module>", "sys.exit(app())"),
             F(f"{src}/cli.py", 119, "serve", "server.serve("),
             F(f"{src}/server.py", 315, "serve", "asyncio.run("),
             F("/usr/lib/python3.11/asyncio/runners.py", 190, "run", "return runner.run(main)"),
             F("/usr/lib/python3.11/asyncio/base_events.py", 641, "run_until_complete", "self.run_forever()"),
             F("grpc_interceptor/server.py", 165, "invoke_intercept_method", "return await self.intercept("),
             F(f"{src}/interceptor.py", 24, "intercept", "return await response"),
             F(f"{src}/server.py", 144, "Warmup", "self.model.warmup(batch, max_input_tokens, max_total_tokens)"),
             F(f"{src}/models/flash_causal_lm.py", 1675, "warmup", "raise RuntimeError(")]
    msg = (f"RuntimeError: Not enough memory to handle {prefill} prefill tokens. You need to decrease "
           "`--max-batch-prefill-tokens`")
    tb = (["Traceback (most recent call last):", *[ln for f in inner for ln in _fl(f)], *text.split("\n"), "",
           "The above exception was the direct cause of the following exception:", "",
           "Traceback (most recent call last):", *[ln for f in outer for ln in _fl(f)], msg])
    _tgi(run, "ERROR", "text_generation_launcher", "Method Warmup encountered an error.\n" + "\n".join(tb))
    span = (f"warmup{{max_input_length=Some({max_input}) max_prefill_tokens={prefill} max_total_tokens=Some({max_total}) "
            "max_batch_size=None}:warmup")
    short = msg.split(": ", 1)[1]
    _tgi(run, "ERROR", span, f"text_generation_router_v3::client: backends/v3/src/client/mod.rs:45: Server error: {short}")
    run.log.app(f'Error: Backend(Warmup(Generation("{short}")))')
    _tgi(run, "ERROR", "text_generation_launcher", "Webserver Crashed")
    _tgi_shutdown(run, d.tp, "WebserverFailed")
    return Outcome("warmup", "activation_oom", [f"--max-batch-prefill-tokens {prefill // 2}"],
                   fix_other=f"keep --max-input-tokens below it (now {max_input})",
                   must_not=[f"--max-batch-prefill-tokens {prefill}", "--cuda-memory-fraction"], exit="exit1",
                   notes=f"TGI's warm-up runs one prefill of --max-batch-prefill-tokens {prefill} tokens on the loaded "
                         f"shards; the MLP activations of that batch do not fit next to the weights on a "
                         f"{d.gpu.label}. Halve the prefill budget.")


def _fl(f: F) -> list[str]:
    path = f.path if f.path.startswith(("/", "<")) else f"{TGI_SITE}/{f.path}"
    out = [f'  File "{path}", line {f.line}, in {f.func}']
    if f.code:
        out.append(f"    {f.code}")
        if f.caret:
            out.append(f"    {f.caret}")
    return out


def tgi_port_busy(run: Run, port: int = 80) -> Outcome:
    d = run.d
    _tgi_boot(run, port=port)
    _tgi_ready(run, d.tp)
    run.log.wait(5)
    _tgi(run, "INFO", "text_generation_router_v3",
         f"backends/v3/src/lib.rs:137: Setting max batch total tokens to {run.rng.randint(150000, 400000)}")
    _tgi(run, "WARN", "text_generation_router_v3::backend",
         "backends/v3/src/backend.rs:39: Model supports prefill chunking. `waiting_served_ratio` and "
         "`max_waiting_tokens` will be ignored.")
    _tgi(run, "INFO", "text_generation_router_v3", "backends/v3/src/lib.rs:166: Using backend V3")
    run.log.wait(0.4)
    _tgi(run, "ERROR", "text_generation_router::server",
         f"router/src/server.rs:2453: Failed to bind to 0.0.0.0:{port}: Address already in use (os error 98)")
    _tgi(run, "ERROR", "text_generation_launcher", "Webserver Crashed")
    _tgi_shutdown(run, d.tp, "WebserverFailed")
    return Outcome("serving", "port_in_use", [f"--port {port + 8000 if port < 1024 else port + 1}"],
                   fix_other=f"or stop what listens on {port} on the host (docker --net host shares the host's ports)",
                   must_not=["--max-batch-prefill-tokens", "--num-shard"], exit="exit1",
                   notes=f"Shards loaded and warmed up; the router then cannot bind its HTTP port {port} (os error 98) "
                         "and the launcher reports the webserver crashed.")


def tgi_shard_killed(run: Run, rank: int = 2) -> Outcome:
    d = run.d
    _tgi_boot(run)
    for k in range(5):
        run.log.wait(10)
        for r in range(d.tp):
            _tgi(run, "INFO", "shard-manager: text_generation_launcher", "Waiting for shard to be ready...",
                 f" rank={r}")
    run.log.wait(4)
    _tgi(run, "ERROR", "shard-manager: text_generation_launcher", "Shard process was signaled to shutdown with signal 9",
         f" rank={rank}")
    _tgi(run, "ERROR", "text_generation_launcher", f"Shard {rank} failed to start")
    _tgi_shutdown(run, d.tp, "ShardCannotStart", dead=rank)
    return Outcome("weight_load", "host_oom", [],
                   fix_other="give the container more memory (docker run --memory / the host's RAM): a shard was "
                             "SIGKILLed while loading; `docker inspect` shows OOMKilled, dmesg the kill",
                   must_not=["--max-batch-prefill-tokens", "--max-total-tokens", "--num-shard"], exit="exit1",
                   confidence="medium",
                   notes=f"While the {d.tp} shards load {d.model.name}, shard {rank} is killed with signal 9 and "
                         "prints nothing of its own. A SIGKILL from outside during loading is the OOM killer (the "
                         "container's memory limit); the kernel log is not in docker's output.")


# -- TensorRT-LLM ------------------------------------------------------------------------------------------------------
def _trt_boot(run: Run, extra: str = "", backend: str = "pytorch") -> None:
    d = run.d
    run.log.app(f"trtllm-serve {d.path} --host 0.0.0.0 --port 8000 --tp_size {d.tp} --backend {backend}{extra}")
    _trt(run, "Starting TensorRT-LLM init.")
    run.log.app("[TensorRT-LLM][INFO] Set logger level to INFO")
    _trt(run, "TensorRT-LLM inited.")
    run.log.app(f"[TensorRT-LLM] TensorRT-LLM version: {d.version}")
    _trt(run, "Using LLM with PyTorch backend" if backend == "pytorch" else "Using LLM with TensorRT backend")
    _trt(run, "Set nccl_plugin to None.")


def trt_kv_component(run: Run, frac: float = 0.95) -> Outcome:
    d = run.d
    _trt_boot(run, f" --kv_cache_free_gpu_memory_fraction {frac}")
    run.log.wait(6)
    w = d.weights_gib()
    for r in range(d.tp):
        _trt(run, f"Use {w:.2f} GB for model weights.", r)
    run.log.wait(35)
    for r in range(d.tp):
        _trt(run, "[MemUsageChange] Allocated 2.41 GiB for max tokens in paged KV cache (8192).", r)
    run.log.wait(9)
    total = d.gpu.total - 0.08
    peak = w + 4.71
    avail = round(total - peak, 2)
    for r in range(d.tp):
        _trt(run, f"Memory used after loading model weights (inside torch) in memory usage profiling: {w + 0.31:.2f} GiB", r)
        _trt(run, f"Peak memory during memory usage profiling (torch + non-torch): {peak:.2f} GiB, available KV cache "
                  f"memory when calculating max tokens: {avail:.2f} GiB, fraction is set {frac}, kv size is 327680. "
                  f"device total memory {total:.2f} GiB, , tmp kv_mem 2.41 GiB", r)
    run.log.wait(2)
    ask = avail * frac
    free = avail - 1.12 + 0.04
    expl = ["Executor creation failed due to insufficient GPU memory.", "",
            "The following component could not be created: KV cache",
            f"Total GPU memory (GiB): {total:.2f}",
            f"Free GPU memory before component creation attempt (GiB): {free:.2f}", "",
            "Previous memory allocation summary:",
            f"  Model (GiB): {w + 0.31:.2f}", "  Sampler (GiB): 0.38", "  Guided decoder (GiB): 0.00",
            "  Initial KV cache (temporary for KV cache size estimation) (GiB): 2.41 (released)",
            "  Additional executor resources (temporary for KV cache size estimation) (GiB): 1.57 (released)",
            "  Model resources created during usage (GiB): 1.12", "",
            "Please refer to the TensorRT-LLM documentation for information on how to control the memory usage "
            "through TensorRT-LLM configuration options. Possible options include:",
            "  Model: reduce max_num_tokens and/or shard the model weights across GPUs by enabling pipeline and/or "
            "tensor parallelism",
            "  Sampler: reduce max_seq_len and/or max_attention_window_size",
            "  Initial KV cache (temporary for KV cache size estimation): reduce max_num_tokens",
            "  Additional executor resources (temporary for KV cache size estimation): reduce max_num_tokens",
            "  Model resources created during usage: reduce max_num_tokens",
            "  KV cache: reduce free_gpu_memory_fraction"]
    _trt(run, "Failed to initialize executor on rank 0: " + "\n".join(expl), 0, "E")
    site = "/usr/local/lib/python3.12/dist-packages"
    inner = [F("tensorrt_llm/_torch/pyexecutor/py_executor_creator.py", 486, "create_py_executor",
               "kv_cache_creator.build_managers(resources)"),
             F("tensorrt_llm/_torch/pyexecutor/_util.py", 419, "build_managers",
               "kv_cache_manager = self._create_kv_cache_manager(self._model_engine)"),
             F("tensorrt_llm/_torch/pyexecutor/_util.py", 352, "_create_kv_cache_manager", "kv_cache_manager = KVCacheManager("),
             F("tensorrt_llm/_torch/pyexecutor/resource_manager.py", 327, "__init__",
               "self.impl.allocate_pools(False)")]
    text = oom(True, ask, d.gpu.total, free * 1024, total - free, total - free - 1.9, 96.0)
    outer = [F("tensorrt_llm/executor/worker.py", 830, "worker_main", "worker: GenerationExecutorWorker = worker_cls("),
             F("tensorrt_llm/executor/worker.py", 153, "__init__", "self.engine = _create_py_executor("),
             F("tensorrt_llm/executor/worker.py", 125, "_create_py_executor", "_executor = create_executor(**args)"),
             F("tensorrt_llm/_torch/pyexecutor/py_executor_creator.py", 473, "create_py_executor",
               "with mem_monitor.observe_creation_stage("),
             F("/usr/lib/python3.12/contextlib.py", 158, "__exit__", "self.gen.throw(value)"),
             F("tensorrt_llm/_torch/pyexecutor/py_executor_creator.py", 117, "observe_creation_stage",
               "raise RuntimeError(explanation) from e")]
    tb = (["Traceback (most recent call last):", *_frames(inner, site), *text.split("\n"), "",
           "The above exception was the direct cause of the following exception:", "",
           "Traceback (most recent call last):", *_frames(outer, site), "RuntimeError: " + "\n".join(expl)])
    for ln in tb:
        run.log.app(ln)
    return Outcome("memory_pool", "kv_cache_oom", [f"--kv_cache_free_gpu_memory_fraction {frac - 0.1:g}"],
                   fix_other="(or kv_cache_config.free_gpu_memory_fraction in --extra_llm_api_options)",
                   must_not=[f"--kv_cache_free_gpu_memory_fraction {frac:g}", "--max_batch_size"], exit="exit1",
                   notes=f"TensorRT-LLM sizes the KV cache as {frac} of the memory left after its profiling run "
                         f"({avail:.2f} GiB); creating it then fails because the model's resources created during use "
                         "took part of that memory. The engine's own hint for the KV-cache component: reduce "
                         "free_gpu_memory_fraction.")


def _frames(frames: list[F], site: str) -> list[str]:
    out = []
    for f in frames:
        path = f.path if f.path.startswith(("/", "<", "src/")) else f"{site}/{f.path}"
        out.append(f'  File "{path}", line {f.line}, in {f.func}')
        if f.code:
            out.append(f"    {f.code}")
    return out


def trt_plan_mismatch(run: Run, built_on: str = "9.0") -> Outcome:
    d = run.d
    rng = run.rng
    eng_dir = f"/engines/{d.model.name.lower()}-fp8-tp{d.tp}"
    run.log.app(f"trtllm-serve {eng_dir} --tokenizer {d.path} --host 0.0.0.0 --port 8000 --backend trt")
    _trt(run, "Starting TensorRT-LLM init.")
    run.log.app("[TensorRT-LLM][INFO] Set logger level to INFO")
    _trt(run, "TensorRT-LLM inited.")
    run.log.app(f"[TensorRT-LLM] TensorRT-LLM version: {d.version}")
    run.log.wait(3)
    for m in (f"Engine version {d.version} found in the config file, assuming engine(s) built by new builder API.",
              "Refreshed the MPI local session", "MPI size: 1, MPI local size: 1, rank: 0",
              "Rank 0 is using GPU 0", "TRTGptModel maxNumSequences: 256", "TRTGptModel maxBatchSize: 256",
              "TRTGptModel maxBeamWidth: 1", "TRTGptModel maxSequenceLen: 8192", "TRTGptModel maxDraftLen: 0",
              "TRTGptModel mMaxAttentionWindowSize: (8192) * 32", "TRTGptModel enableTrtOverlap: 0",
              "TRTGptModel normalizeLogProbs: 0", "TRTGptModel maxNumTokens: 8192",
              "TRTGptModel maxInputLen: 8191 = maxSequenceLen - 1 since chunked context is enabled"):
        run.log.app(f"[TensorRT-LLM][INFO] {m}")
    run.log.wait(9)
    run.log.app(f"[TensorRT-LLM][INFO] Loaded engine size: {rng.randint(8500, 8900)} MiB")
    run.log.wait(0.4)
    have = f"{d.gpu.sm // 10}.{d.gpu.sm % 10}"
    run.log.app(f"[TensorRT-LLM][ERROR] IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine plan "
                f"file is generated on an incompatible device, expecting compute {have} got compute {built_on}, please "
                "rebuild.)")
    where = "/home/jenkins/agent/workspace/LLM/release-0.20/L0_PostMerge/llm/cpp/tensorrt_llm/runtime/tllmRuntime.cpp"
    site = "/usr/local/lib/python3.12/dist-packages"
    fr = [F("/usr/local/bin/trtllm-serve", 8, "<module>", "sys.exit(main())"),
          F("click/core.py", 1442, "__call__", "return self.main(*args, **kwargs)"),
          F("tensorrt_llm/commands/serve.py", 296, "serve", "launch_server(host, port, llm_args)"),
          F("tensorrt_llm/commands/serve.py", 144, "launch_server", "llm = LLM(**llm_args)"),
          F("tensorrt_llm/llmapi/llm.py", 1010, "__init__", "super().__init__(model, tokenizer, tokenizer_mode,"),
          F("tensorrt_llm/llmapi/llm.py", 208, "__init__", "self._build_model()"),
          F("tensorrt_llm/llmapi/llm.py", 903, "_build_model", "self._executor = self._executor_cls.create("),
          F("tensorrt_llm/executor/executor.py", 487, "create", "return GenerationExecutorWorker(**worker_kwargs)"),
          F("tensorrt_llm/executor/worker.py", 175, "__init__", "self.engine = _create_engine(device_id)"),
          F("tensorrt_llm/executor/worker.py", 142, "_create_engine", "return tllm.Executor(engine, tllm.ModelType.DECODER_ONLY,")]
    err = (f"RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine. ({where}:263)")
    native = [f"1       0x7f{rng.randint(16, 250):02x}3a8b1c4e tensorrt_llm::common::throwRuntimeError(char const*, int, "
              "char const*) + 95",
              "2       0x7f2c3aa1f3b2 tensorrt_llm::runtime::TllmRuntime::TllmRuntime(tensorrt_llm::runtime::RawEngine "
              "const&, nvinfer1::ILogger*, bool, float, bool) + 1714",
              "3       0x7f2c3b1d72a9 tensorrt_llm::batch_manager::TrtGptModelInflightBatching::TrtGptModelInflightBatching"
              "(...) + 1433",
              "4       0x7f2c3b19c5d1 tensorrt_llm::executor::Executor::Impl::createModel(...) + 1025",
              "5       0x7f2c3b19e0b7 tensorrt_llm::executor::Executor::Impl::loadModel(...) + 1799",
              "6       0x7f2c3b1a2c18 tensorrt_llm::executor::Executor::Impl::Impl(...) + 2424",
              "7       0x7f2c3b18d7c2 tensorrt_llm::executor::Executor::Executor(...) + 98"]
    for ln in ["Traceback (most recent call last):", *_frames(fr, site), err, *native]:
        run.log.app(ln)
    return Outcome("weight_load", "kernel_arch_mismatch", [],
                   fix_other=f"rebuild the engine on this GPU type ({d.gpu.name}, sm_{d.gpu.sm}) with trtllm-build of "
                             "the same TensorRT-LLM version, or run it on the GPUs it was built for",
                   must_not=["--max_batch_size", "--kv_cache_free_gpu_memory_fraction", "--tp_size"], exit="exit1",
                   notes=f"The TensorRT engine plan in {eng_dir} was built on compute {built_on} (H100); this host has "
                         f"compute {have}. TensorRT refuses to deserialize a plan for another GPU.")


def trt_mpi_spawn(run: Run) -> Outcome:
    d = run.d
    _trt_boot(run)
    run.log.wait(4)
    _trt(run, f"Using MpiPoolSession to spawn MPI processes with {d.tp} workers")
    run.log.wait(1.5)
    banner = "-" * 74
    for ln in (banner, "All nodes which are allocated for this job are already filled.", banner):
        run.log.app(ln)
    site = "/usr/local/lib/python3.12/dist-packages"
    fr = [F("/usr/local/bin/trtllm-serve", 8, "<module>", "sys.exit(main())"),
          F("click/core.py", 1442, "__call__", "return self.main(*args, **kwargs)"),
          F("tensorrt_llm/commands/serve.py", 296, "serve", "launch_server(host, port, llm_args)"),
          F("tensorrt_llm/commands/serve.py", 144, "launch_server", "llm = PyTorchLLM(**llm_args)"),
          F("tensorrt_llm/llmapi/llm.py", 1010, "__init__", "super().__init__(model, tokenizer, tokenizer_mode,"),
          F("tensorrt_llm/llmapi/llm.py", 208, "__init__", "self._build_model()"),
          F("tensorrt_llm/llmapi/llm.py", 903, "_build_model", "self._executor = self._executor_cls.create("),
          F("tensorrt_llm/executor/executor.py", 468, "create", "return GenerationExecutorProxy("),
          F("tensorrt_llm/executor/proxy.py", 101, "__init__", "self._start_executor_workers(worker_kwargs)"),
          F("tensorrt_llm/executor/proxy.py", 312, "_start_executor_workers", "self.mpi_futures = self.mpi_session.submit("),
          F("tensorrt_llm/llmapi/mpi_session.py", 151, "submit", "return [self.mpi_pool.submit(task, *args, **kwargs)"),
          F("mpi4py/futures/pool.py", 150, "submit", "return self._pool.push((fn, args, kwargs))"),
          F("mpi4py/futures/_core.py", 350, "push", "self.setup()"),
          F("mpi4py/futures/_core.py", 341, "setup", "raise self.exc"),
          F("mpi4py/futures/_core.py", 392, "_manager_spawn", "comm = client_spawn(*args)"),
          F("mpi4py/futures/_core.py", 1018, "client_spawn", "comm = MPI.COMM_SELF.Spawn(python_exe, args, max_workers, info)"),
          F("src/mpi4py/MPI.src/Comm.pyx", 2547, "mpi4py.MPI.Intracomm.Spawn")]
    err = "mpi4py.MPI.Exception: MPI_ERR_SPAWN: could not spawn processes"
    for ln in ["Traceback (most recent call last):", *_frames(fr, site), err]:
        run.log.app(ln)
    return Outcome("dist_init", "distributed_init", [],
                   fix_other=f"launch the ranks under MPI: mpirun -n {d.tp} --allow-run-as-root --oversubscribe "
                             "trtllm-llmapi-launch trtllm-serve ... (a singleton MPI job has one slot and cannot spawn "
                             "the workers)",
                   must_not=["--kv_cache_free_gpu_memory_fraction", "--max_batch_size"], exit="exit1",
                   notes=f"trtllm-serve with --tp_size {d.tp} spawns its workers through MPI; started as a plain "
                         "process in the pod, Open MPI has no free slots and MPI_Comm_spawn fails. The launch, not "
                         "the model.")


# -- lmdeploy -------------------------------------------------------------------------------------------------------------
def lmd_runtime_mem(run: Run) -> Outcome:
    d = run.d
    cme = d.args.get("cache_max_entry_count", 0.8)
    tmpl = d.args.get("chat_template", "mistral")
    _lmd(run, f"matching chat template '{tmpl}' for {d.path}", "builder.py:68")
    cfg = ("PytorchEngineConfig(dtype='auto', tp=%d, dp=1, dp_rank=0, ep=1, session_len=%s, max_batch_size=128, "
           "cache_max_entry_count=%s, prefill_interval=16, block_size=64, num_cpu_blocks=0, num_gpu_blocks=0, "
           "adapters=None, max_prefill_token_num=8192, thread_safe=False, enable_prefix_caching=False, "
           "device_type='cuda', eager_mode=False, custom_module_map=None, download_dir=None, revision=None, "
           "quant_policy=0, distributed_executor_backend=None, empty_init=False, enable_microbatch=False, "
           "enable_eplb=False, enable_metrics=False, role=<EngineRole.Hybrid: 1>, migration_backend="
           "<MigrationBackend.DLSlime: 1>)" % (d.tp, d.args.get("session_len"), cme))
    _lmd(run, f"input backend=pytorch, backend_config={cfg}", "async_engine.py:260")
    _lmd(run, "input chat_template_config=None", "async_engine.py:261")
    run.log.wait(3)
    _lmd(run, f"updated chat_template_onfig=ChatTemplateConfig(model_name='{tmpl}', system=None, meta_instruction=None, "
              "eosys=None, user=None, eoh=None, assistant=None, eoa=None, tool=None, eotool=None, separator=None, "
              "capability=None, stop_words=None)", "async_engine.py:270")
    run.log.wait(6)
    n = d.model.shards
    for i in range(n + 1):
        run.log.wait(5)
        run.log.app(tqdm_bar("Loading weights from safetensors", i, n, 5.0 * i, 0.2))
    run.log.wait(2)
    site = "/opt/py3/lib/python3.10/site-packages"
    fr = [F("/opt/py3/bin/lmdeploy", 8, "<module>", "sys.exit(run())"),
          F("lmdeploy/cli/entrypoint.py", 39, "run", "args.run(args)"),
          F("lmdeploy/cli/serve.py", 333, "api_server", "run_api_server(args.model_path,"),
          F("lmdeploy/serve/openai/api_server.py", 1283, "serve", "VariableInterface.async_engine = pipeline_class("),
          F("lmdeploy/serve/async_engine.py", 279, "__init__", "self._build_pytorch(model_path=model_path,"),
          F("lmdeploy/serve/async_engine.py", 341, "_build_pytorch", "self.engine = Engine.from_pretrained(model_path,"),
          F("lmdeploy/pytorch/engine/engine.py", 384, "from_pretrained", "return cls(model_path=pretrained_model_name_or_path,"),
          F("lmdeploy/pytorch/engine/engine.py", 321, "__init__", "self.executor.init()"),
          F("lmdeploy/pytorch/engine/executor/base.py", 160, "init", "self.update_configs()"),
          F("lmdeploy/pytorch/engine/executor/base.py", 129, "update_configs",
            "raise RuntimeError('No enough gpu memory for runtime.')")]
    for ln in ["Traceback (most recent call last):", *_frames(fr, site), "RuntimeError: No enough gpu memory for runtime."]:
        run.log.app(ln)
    return Outcome("memory_pool", "activation_oom", [f"--tp {d.tp * 2}"],
                   fix_other="or a 4-bit checkpoint (AWQ, --model-format awq) that leaves room next to the weights",
                   must_not=["--cache-max-entry-count", "--max-prefill-token-num", "--session-len"], exit="exit1",
                   notes=f"{d.model.name} in bf16 ({d.weights_gib():.1f} GiB) fills the {d.gpu.label} almost "
                         "completely; lmdeploy halves its prefill workspace (max_prefill_token_num) down to nothing "
                         "and still finds no memory for the runtime buffers. More GPUs or a smaller checkpoint.")
