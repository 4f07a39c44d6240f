"""Traceback frame stacks of vLLM V1 (0.33 layout, with older file names where they differ)."""
from __future__ import annotations

from .deploy import Deploy
from .pyerr import F


def _b(d: Deploy, n: int) -> int:
    return n + (d.v[1] * 13 if len(d.v) > 1 else 0) % 90


def api_server(d: Deploy) -> list[F]:
    b = lambda n: _b(d, n)  # noqa: E731
    bin_ = "/usr/local/bin/vllm" if "dist-packages" in d.site else d.site.split("/lib/")[0] + "/bin/vllm"
    fr = [F(bin_, 8 if d.v < (0, 11) else 10, "<module>", "sys.exit(main())", "             ^^^^^^"),
          F("vllm/entrypoints/cli/main.py", b(54), "main", "args.dispatch_function(args)"),
          F("vllm/entrypoints/cli/serve.py", b(57), "cmd", "uvloop.run(run_server(args))")]
    if d.py_minor >= 12:
        fr += [F("uvloop/__init__.py", 96, "run", "return __asyncio.run(",
                 "       ^^^^^^^^^^^^^^"),
               F("/usr/lib/python3.12/asyncio/runners.py", 195, "run", "return runner.run(main)",
                 "       ^^^^^^^^^^^^^^^^"),
               F("/usr/lib/python3.12/asyncio/runners.py", 118, "run",
                 "return self._loop.run_until_complete(task)",
                 "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
               F("uvloop/loop.pyx", 1518, "uvloop.loop.Loop.run_until_complete"),
               F("uvloop/__init__.py", 48, "wrapper", "return await main", "       ^^^^^^^^^^")]
    else:
        fr += [F("uvloop/__init__.py", 82, "run", "return loop.run_until_complete(wrapper())",
                 "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
               F("uvloop/loop.pyx", 1517, "uvloop.loop.Loop.run_until_complete"),
               F("uvloop/__init__.py", 61, "wrapper", "return await main", "       ^^^^^^^^^^")]
    fr += [F("vllm/entrypoints/openai/api_server.py", b(1884), "run_server",
             "await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)"),
           F("vllm/entrypoints/openai/api_server.py", b(1902), "run_server_worker",
             "async with build_async_engine_client("),
           F("/usr/lib/python3.12/contextlib.py" if d.py_minor >= 12 else "/usr/lib/python3.11/contextlib.py",
             210 if d.py_minor >= 12 else 204, "__aenter__", "return await anext(self.gen)",
             "       ^^^^^^^^^^^^^^^^^^^^^"),
           F("vllm/entrypoints/openai/api_server.py", b(180), "build_async_engine_client",
             "async with build_async_engine_client_from_engine_args("),
           F("/usr/lib/python3.12/contextlib.py" if d.py_minor >= 12 else "/usr/lib/python3.11/contextlib.py",
             210 if d.py_minor >= 12 else 204, "__aenter__", "return await anext(self.gen)",
             "       ^^^^^^^^^^^^^^^^^^^^^"),
           F("vllm/entrypoints/openai/api_server.py", b(225), "build_async_engine_client_from_engine_args",
             "async_llm = AsyncLLM.from_vllm_config("),
           F("vllm/v1/engine/async_llm.py", b(207), "from_vllm_config", "return cls("),
           F("vllm/v1/engine/async_llm.py", b(134), "__init__",
             "self.engine_core = EngineCoreClient.make_async_mp_client("),
           F("vllm/v1/engine/core_client.py", b(102), "make_async_mp_client",
             "return AsyncMPClient(*client_args)", "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
           F("vllm/v1/engine/core_client.py", b(769), "__init__", "super().__init__("),
           F("vllm/v1/engine/core_client.py", b(448), "__init__",
             "with launch_core_engines(vllm_config, executor_class,"),
           F("/usr/lib/python3.12/contextlib.py" if d.py_minor >= 12 else "/usr/lib/python3.11/contextlib.py",
             144, "__exit__", "next(self.gen)"),
           F("vllm/v1/engine/utils.py", b(732), "launch_core_engines", "wait_for_engine_startup("),
           F("vllm/v1/engine/utils.py", b(785), "wait_for_engine_startup", "raise RuntimeError(")]
    return fr


def engine_core(d: Deploy, stage: str) -> list[F]:
    """EngineCore process down to `stage`: executor (worker start/load), profile, kv_check, kv_init, capture."""
    b = lambda n: _b(d, n)  # noqa: E731
    fr = [F("vllm/v1/engine/core.py", b(699), "run_engine_core",
            "engine_core = EngineCoreProc(*args, **kwargs)", "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
          F("vllm/v1/engine/core.py", b(498), "__init__", "super().__init__(vllm_config, executor_class, log_stats,")]
    if stage == "executor":
        fr += [F("vllm/v1/engine/core.py", b(83), "__init__", "self.model_executor = executor_class(vllm_config)",
                 "                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
               F("vllm/executor/executor_base.py" if d.v < (0, 11) else "vllm/v1/executor/abstract.py", b(54),
                 "__init__", "self._init_executor()")]
        return fr
    fr += [F("vllm/v1/engine/core.py", b(92), "__init__",
             "num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(",
             "                                                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]
    if stage == "profile":
        fr += [F("vllm/v1/engine/core.py", b(177), "_initialize_kv_caches",
                 "self.model_executor.determine_available_memory())",
                 "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]
    elif stage == "kv_check":
        planning = "vllm/v1/core/kv_cache_planning.py" if d.v >= (0, 30) else "vllm/v1/core/kv_cache_utils.py"
        fr += [F("vllm/v1/engine/core.py", b(186), "_initialize_kv_caches",
                 "kv_cache_configs = get_kv_cache_configs(vllm_config, kv_cache_specs,"),
               F(planning, b(1186), "get_kv_cache_configs",
                 "check_enough_kv_cache_memory(vllm_config, kv_cache_spec_one_worker,"),
               F(planning, b(686), "check_enough_kv_cache_memory", "raise ValueError(")]
        return fr
    else:  # kv_init / capture
        fr += [F("vllm/v1/engine/core.py", b(206), "_initialize_kv_caches",
                 "self.model_executor.initialize_from_config(kv_cache_configs)")]
        fr += [F("vllm/v1/executor/abstract.py", b(75), "initialize_from_config",
                 "self.collective_rpc(\"compile_or_warm_up_model\")")]
        return fr
    fr += [F("vllm/v1/executor/abstract.py", b(85), "determine_available_memory",
             "return self.collective_rpc(\"determine_available_memory\")",
             "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]
    return fr


def rpc_tail(d: Deploy, multiproc: bool) -> list[F]:
    b = lambda n: _b(d, n)  # noqa: E731
    if multiproc:
        return [F("vllm/v1/executor/multiproc_executor.py", b(264), "collective_rpc",
                  "result = get_response(w, dequeue_timeout, self.shutdown_event)",
                  "         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
                F("vllm/v1/executor/multiproc_executor.py", b(248), "get_response", "raise RuntimeError(")]
    return [F("vllm/executor/uniproc_executor.py", b(58), "collective_rpc",
              "answer = run_method(self.driver_worker, method, args, kwargs)",
              "         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
            F("vllm/utils/__init__.py" if d.v < (0, 30) else "vllm/v1/serial_utils.py", b(2948) if d.v < (0, 30)
              else b(431), "run_method", "return func(*args, **kwargs)", "       ^^^^^^^^^^^^^^^^^^^^^")]


def worker_main(d: Deploy, call: str = "self.worker.load_model()") -> list[F]:
    b = lambda n: _b(d, n)  # noqa: E731
    return [F("vllm/v1/executor/multiproc_executor.py", b(527), "worker_main",
              "worker = WorkerProc(*args, **kwargs)", "         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
            F("vllm/v1/executor/multiproc_executor.py", b(386 if "load" in call else 371), "__init__", call)]


def worker_rpc(d: Deploy) -> list[F]:
    return [F("vllm/v1/executor/multiproc_executor.py", _b(d, 592), "worker_busy_loop",
              "output = func(*args, **kwargs)", "         ^^^^^^^^^^^^^^^^^^^^^")]


def load(d: Deploy, where: str = "create") -> list[F]:
    b = lambda n: _b(d, n)  # noqa: E731
    m = d.model.vl_module
    fr = [F("vllm/v1/worker/gpu_worker.py", b(212), "load_model",
            "self.model_runner.load_model(eep_scale_up=eep_scale_up)"),
          F("vllm/v1/worker/gpu_model_runner.py", b(2605), "load_model",
            "self.model = model_loader.load_model(", "             ^^^^^^^^^^^^^^^^^^^^^^^^"),
          F("vllm/model_executor/model_loader/base_loader.py", b(44), "load_model",
            "model = initialize_model(vllm_config=vllm_config," if where == "create" else
            "self.load_weights(model, model_config)")]
    if where == "create":
        fr += [F("vllm/model_executor/model_loader/utils.py", b(63), "initialize_model",
                 "return model_class(vllm_config=vllm_config, prefix=prefix)",
                 "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
               F(f"vllm/model_executor/models/{m}.py", b(545), "__init__", "self.model = self._init_model("),
               F(f"vllm/model_executor/models/{m}.py", b(590), "_init_model",
                 "return LlamaModel(vllm_config=vllm_config," if m == "llama" else
                 "return self.model_cls(vllm_config=vllm_config,"),
               F("vllm/compilation/decorators.py", b(201), "__init__",
                 "old_init(self, vllm_config=vllm_config, prefix=prefix, **kwargs)"),
               F(f"vllm/model_executor/models/{m}.py", b(345), "__init__",
                 "self.start_layer, self.end_layer, self.layers = make_layers("),
               F("vllm/model_executor/models/utils.py", b(610), "make_layers",
                 "maybe_offload_to_cpu(layer_fn(prefix=f\"{prefix}.{idx}\"))"),
               F("vllm/model_executor/layers/linear.py", b(420), "__init__", "self.quant_method.create_weights("),
               F("vllm/model_executor/layers/linear.py", b(188), "create_weights",
                 "weight = Parameter(torch.empty(sum(output_partition_sizes),"),
               F("torch/utils/_device.py", 104, "__torch_function__", "return func(*args, **kwargs)",
                 "       ^^^^^^^^^^^^^^^^^^^^^")]
    else:
        fr += [F("vllm/model_executor/model_loader/default_loader.py", b(269), "load_weights",
                 "loaded_weights = model.load_weights("),
               F(f"vllm/model_executor/models/{m}.py", b(601), "load_weights", "return loader.load_weights("),
               F("vllm/model_executor/models/utils.py", b(291), "load_weights",
                 "autoloaded_weights = set(self._load_module(\"\", self.module, weights))"),
               F("vllm/model_executor/models/utils.py", b(236), "_load_module",
                 "for child_prefix, child_weights in self._groupby_prefix(weights):"),
               F("vllm/model_executor/models/utils.py", b(132), "_groupby_prefix",
                 "for prefix, group in itertools.groupby(weights_by_parts, key=lambda x: x[0][0]):"),
               F("vllm/model_executor/model_loader/default_loader.py", b(246), "get_all_weights",
                 "yield from self._get_weights_iterator(primary_weights)"),
               F("vllm/model_executor/model_loader/weight_utils.py", b(505), "safetensors_weights_iterator",
                 "with safe_open(st_file, framework=\"pt\") as f:")]
    return fr


def profile(d: Deploy, tail: str = "model") -> list[F]:
    b = lambda n: _b(d, n)  # noqa: E731
    fr = [F("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)",
            "       ^^^^^^^^^^^^^^^^^^^^^"),
          F("vllm/v1/worker/gpu_worker.py", b(276), "determine_available_memory", "self.model_runner.profile_run()"),
          F("vllm/v1/worker/gpu_model_runner.py", b(3311), "profile_run",
            "hidden_states, last_hidden_states = self._dummy_run(" if tail == "model" else
            "output = self._dummy_sampler_run(last_hidden_states)")]
    if tail == "model":
        fr += [F("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)",
                 "       ^^^^^^^^^^^^^^^^^^^^^"),
               F("vllm/v1/worker/gpu_model_runner.py", b(3048), "_dummy_run", "outputs = self.model(",
                 "          ^^^^^^^^^^^")]
    return fr


def capture(d: Deploy) -> list[F]:
    b = lambda n: _b(d, n)  # noqa: E731
    return [F("vllm/v1/worker/gpu_worker.py", b(345), "compile_or_warm_up_model",
              "self.model_runner.capture_model()"),
            F("vllm/v1/worker/gpu_model_runner.py", b(3520), "capture_model",
              "self._capture_cudagraphs(", ),
            F("vllm/v1/worker/gpu_model_runner.py", b(3588), "_capture_cudagraphs",
              "self._dummy_run("),
            F("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)",
              "       ^^^^^^^^^^^^^^^^^^^^^"),
            F("vllm/v1/worker/gpu_model_runner.py", b(3048), "_dummy_run", "outputs = self.model(",
              "          ^^^^^^^^^^^"),
            F("vllm/compilation/cuda_graph.py", b(204), "__call__",
              "with torch.cuda.graph(cudagraph, pool=self.graph_pool, stream=current_stream()):")]


def serving(d: Deploy) -> list[F]:
    b = lambda n: _b(d, n)  # noqa: E731
    return [F("vllm/v1/engine/core.py", b(761), "run_engine_core", "engine_core.run_busy_loop()"),
            F("vllm/v1/engine/core.py", b(788), "run_busy_loop", "self._process_engine_step()"),
            F("vllm/v1/engine/core.py", b(821), "_process_engine_step",
              "outputs, model_executed = self.step_fn()", "                           ^^^^^^^^^^^^^^"),
            F("vllm/v1/engine/core.py", b(336), "step_with_batch_queue" if d.tp > 1 else "step",
              "model_output = future.result()" if d.tp > 1 else
              "model_output = self.execute_model_with_error_logging(",)]


def api_prefix(d: Deploy, upto: str = "run_server") -> list[F]:
    """The API server's frames before (not including) the frame of function `upto`."""
    full = api_server(d)
    idx = next(i for i, f in enumerate(full) if f.func == upto)
    return full[:idx]


def api_config(d: Deploy) -> list[F]:
    """API server frames down to EngineArgs.create_engine_config (config validation errors)."""
    full = api_server(d)
    idx = next(i for i, f in enumerate(full) if f.func == "build_async_engine_client_from_engine_args")
    f = full[idx]
    return full[:idx] + [F(f.path, f.line - 9, f.func,
                           "vllm_config = engine_args.create_engine_config(usage_context=usage_context)",
                           "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]


def api_launch_core(d: Deploy) -> list[F]:
    """API server frames into launch_core_engines (before the engine processes exist)."""
    full = api_server(d)
    idx = next(i for i, f in enumerate(full) if f.func == "launch_core_engines")
    ctx = full[idx - 1]
    return full[:idx - 1] + [F(ctx.path, 137, "__enter__", "return next(self.gen)", "       ^^^^^^^^^^^^^^")]
