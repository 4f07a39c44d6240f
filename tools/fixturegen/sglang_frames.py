"""Traceback frame stacks of SGLang, by start-up phase.  Two code layouts:
classic (<= 0.5.16: model_runner.py does everything) and new (0.5.17+: model_runner_components/)."""
from __future__ import annotations

from .deploy import Deploy
from .pyerr import F

S = "sglang/srt"


def _new(d: Deploy) -> bool:
    return d.v >= (0, 5, 17)


def _bump(d: Deploy, n: int) -> int:
    # line numbers drift between releases
    return n + (d.v[-1] * 7 if len(d.v) > 2 else 0) % 40


def scheduler_to_runner(d: Deploy) -> list[F]:
    b = lambda n: _bump(d, n)  # noqa: E731
    fr = [F(f"{S}/managers/scheduler.py", b(3096 if _new(d) else 2671), "run_scheduler_process",
            "scheduler = Scheduler(", None)]
    if _new(d):
        fr += [F(f"{S}/managers/scheduler.py", b(371), "__init__", "self.init_model_worker()"),
               F(f"{S}/managers/scheduler.py", b(585), "init_model_worker", "self.tp_worker = TpModelWorker("),
               F(f"{S}/managers/tp_worker.py", b(103), "__init__", "self.model_runner = ModelRunner("),
               F(f"{S}/model_executor/model_runner.py", b(231), "__init__", "self.initialize()")]
    else:
        fr += [F(f"{S}/managers/scheduler.py", b(318), "__init__", "self.tp_worker = TpWorkerClass("),
               F(f"{S}/managers/tp_worker_overlap_thread.py", b(66), "__init__",
                 "self.worker = TpModelWorker("),
               F(f"{S}/managers/tp_worker.py", b(84), "__init__", "self.model_runner = ModelRunner("),
               F(f"{S}/model_executor/model_runner.py", b(262), "__init__", "self.initialize(min_per_gpu_memory)")]
    return fr


def dist_init(d: Deploy) -> list[F]:
    b = lambda n: _bump(d, n)  # noqa: E731
    fr = scheduler_to_runner(d)
    if d.v >= (0, 5, 22):
        fr += [F(f"{S}/model_executor/model_runner.py", b(318), "initialize", "self.init_parallel()"),
               F(f"{S}/distributed/bootstrap.py", b(127), "init_parallel", "init_distributed_environment(")]
    else:
        fr += [F(f"{S}/model_executor/model_runner.py", b(297), "initialize",
                 "min_per_gpu_memory = self.init_torch_distributed()"),
               F(f"{S}/model_executor/model_runner.py", b(611), "init_torch_distributed",
                 "init_distributed_environment(")]
    fr += [F(f"{S}/distributed/parallel_state.py", b(1289), "init_distributed_environment",
             "torch.distributed.init_process_group("),
           F("torch/distributed/c10d_logger.py", 81, "wrapper", "return func(*args, **kwargs)",
             "       ^^^^^^^^^^^^^^^^^^^^^")]
    return fr


def tcp_store() -> list[F]:
    return [F("torch/distributed/distributed_c10d.py", 1689, "init_process_group",
              "store, rank, world_size = next(rendezvous_iterator)",
              "                          ^^^^^^^^^^^^^^^^^^^^^^^^^^"),
            F("torch/distributed/rendezvous.py", 270, "_env_rendezvous_handler",
              "store = _create_c10d_store("),
            F("torch/distributed/rendezvous.py", 198, "_create_c10d_store", "return TCPStore(",
              "       ^^^^^^^^^")]


def nccl_first_collective(d: Deploy) -> list[F]:
    b = lambda n: _bump(d, n)  # noqa: E731
    fr = dist_init(d)[:-2]
    fr += [F(f"{S}/distributed/parallel_state.py", b(1332), "init_distributed_environment",
             "initialize_model_parallel("),
           F(f"{S}/distributed/parallel_state.py", b(1467), "initialize_model_parallel",
             "_TP = init_model_parallel_group("),
           F(f"{S}/distributed/parallel_state.py", b(1180), "init_model_parallel_group", "return GroupCoordinator("),
           F(f"{S}/distributed/parallel_state.py", b(287), "__init__",
             "self.pynccl_comm = PyNcclCommunicator("),
           F(f"{S}/distributed/device_communicators/pynccl.py", b(104), "__init__",
             "self.comm: ncclComm_t = self.nccl.ncclCommInitRank("),
           F(f"{S}/distributed/device_communicators/pynccl_wrapper.py", b(390), "ncclCommInitRank",
             "self.NCCL_CHECK("),
           F(f"{S}/distributed/device_communicators/pynccl_wrapper.py", b(352), "NCCL_CHECK",
             "raise RuntimeError(f\"NCCL error: {error_str}\")")]
    return fr


def custom_allreduce_init(d: Deploy) -> list[F]:
    b = lambda n: _bump(d, n)  # noqa: E731
    fr = dist_init(d)[:-2]
    fr += [F(f"{S}/distributed/parallel_state.py", b(1332), "init_distributed_environment",
             "initialize_model_parallel("),
           F(f"{S}/distributed/parallel_state.py", b(1467), "initialize_model_parallel",
             "_TP = init_model_parallel_group("),
           F(f"{S}/distributed/parallel_state.py", b(301), "__init__", "self.ca_comm = CustomAllreduce("),
           F(f"{S}/distributed/device_communicators/custom_all_reduce.py", b(168), "__init__",
             "handles, offsets = self._get_ipc_meta(self.meta)"),
           F(f"{S}/distributed/device_communicators/custom_all_reduce.py", b(232), "_get_ipc_meta",
             "return self._gather_ipc_meta(shard_data)"),
           F(f"{S}/distributed/device_communicators/custom_all_reduce.py", b(251), "_gather_ipc_meta",
             "handles.append(ops.open_ipc_handle(handle))")]
    return fr


def load_model(d: Deploy, where: str = "create") -> list[F]:
    b = lambda n: _bump(d, n)  # noqa: E731
    m = d.model.sg_module
    fr = scheduler_to_runner(d)
    fr += [F(f"{S}/model_executor/model_runner.py", b(341 if _new(d) else 372), "initialize", "self.load_model()"),
           F(f"{S}/model_executor/model_runner.py", b(822), "load_model", "self.model = get_model("),
           F(f"{S}/model_loader/__init__.py", 28, "get_model", "return loader.load_model(",
             "       ^^^^^^^^^^^^^^^^^^")]
    if where == "create":
        fr += [F(f"{S}/model_loader/loader.py", b(594), "load_model", "model = _initialize_model("),
               F(f"{S}/model_loader/loader.py", b(262), "_initialize_model", "return model_class(",
                 "       ^^^^^^^^^^^^"),
               F(f"{S}/models/{m}.py", b(440), "__init__", "self.model = " + d.model.arch.replace("ForCausalLM", "Model").replace(
                     "ForConditionalGeneration", "Model") + "("),
               F(f"{S}/models/{m}.py", b(301), "__init__", "self.layers, self.start_layer, self.end_layer = make_layers("),
               F(f"{S}/utils/common.py", b(611), "make_layers", "+ [",),
               F(f"{S}/utils/common.py", b(612), "<listcomp>", "maybe_offload_to_cpu(layer_fn(idx=idx, prefix=add_prefix(idx, prefix)))"),
               F(f"{S}/models/{m}.py", b(303), "<lambda>", "lambda idx, prefix: " + d.model.arch.replace("ForCausalLM", "DecoderLayer").replace(
                     "ForConditionalGeneration", "DecoderLayer") + "("),
               F(f"{S}/models/{m}.py", b(215), "__init__", "self.mlp = " + ("MoE(" if d.model.kind == "moe" else "MLP(")),
               F(f"{S}/layers/linear.py", b(420), "__init__", "self.quant_method.create_weights("),
               F(f"{S}/layers/quantization/unquant.py", b(102), "create_weights", "torch.empty("),
               F("torch/utils/_device.py", 104, "__torch_function__", "return func(*args, **kwargs)",
                 "       ^^^^^^^^^^^^^^^^^^^^^")]
    else:  # copying weights in
        fr += [F(f"{S}/model_loader/loader.py", b(606), "load_model", "self.load_weights_and_postprocess("),
               F(f"{S}/model_loader/loader.py", b(627), "load_weights_and_postprocess",
                 "model.load_weights(weights)"),
               F(f"{S}/models/{m}.py", b(655), "load_weights", "weight_loader(param, loaded_weight, shard_id)"),
               F(f"{S}/layers/linear.py", b(812), "weight_loader", "param_data.copy_(loaded_weight)")]
    return fr


def safetensors_read(d: Deploy) -> list[F]:
    b = lambda n: _bump(d, n)  # noqa: E731
    fr = load_model(d, "weights")[:-2]
    fr += [F(f"{S}/model_loader/loader.py", b(627), "load_weights_and_postprocess",
             "model.load_weights(weights)"),
           F(f"{S}/models/{d.model.sg_module}.py", b(631), "load_weights", "for name, loaded_weight in weights:"),
           F(f"{S}/model_loader/loader.py", b(431), "_get_weights_iterator", "weights_iterator = safetensors_weights_iterator("),
           F(f"{S}/model_loader/weight_utils.py", b(489), "safetensors_weights_iterator",
             "with safe_open(st_file, framework=\"pt\") as f:")]
    return fr


def memory_pool(d: Deploy) -> list[F]:
    b = lambda n: _bump(d, n)  # noqa: E731
    fr = scheduler_to_runner(d)
    if d.v >= (0, 5, 22):
        fr += [F(f"{S}/model_executor/model_runner.py", b(366), "initialize", "self.init_memory_pool("),
               F(f"{S}/model_executor/model_runner.py", b(1540), "init_memory_pool",
                 "self.kv_cache_configurator.configure(self, total_gpu_memory)"),
               F(f"{S}/mem_cache/kv_cache_configurator.py", b(148), "configure",
                 "self.max_total_num_tokens = self._resolve_max_total_num_tokens(runner, total_gpu_memory)"),
               F(f"{S}/mem_cache/kv_cache_configurator.py", b(203), "_resolve_max_total_num_tokens",
                 "num_tokens = self.pool_configurator.profile_max_num_token(total_gpu_memory)"),
               F(f"{S}/model_executor/pool_configurator.py", b(121), "profile_max_num_token", "raise RuntimeError(")]
    else:
        fr += [F(f"{S}/model_executor/model_runner.py", b(396), "initialize", "self.init_memory_pool("),
               F(f"{S}/model_executor/model_runner_kv_cache_mixin.py", b(331), "init_memory_pool",
                 "raise RuntimeError(")]
    return fr


def mamba_pool(d: Deploy) -> list[F]:
    b = lambda n: _bump(d, n)  # noqa: E731
    fr = memory_pool(d)[:-1]
    fr += [F(f"{S}/mem_cache/kv_cache_configurator.py", b(262), "_create_pools",
             "runner.req_to_token_pool = HybridReqToTokenPool("),
           F(f"{S}/mem_cache/memory_pool.py", b(318), "__init__", "self.mamba_pool = MambaPool("),
           F(f"{S}/mem_cache/memory_pool.py", b(177), "__init__", "raise RuntimeError(")]
    return fr


def graph_capture(d: Deploy, model_tail: list[F] | None = None) -> tuple[list[F], list[F]]:
    """(inner frames down to the model call, outer frames from the scheduler to the raise)."""
    b = lambda n: _bump(d, n)  # noqa: E731
    m = d.model.sg_module
    if _new(d):
        rb = f"{S}/model_executor/runner_backend"
        inner = [F(f"{rb}/full_cuda_graph_backend.py", b(214), "capture", "self._capture_one(bs, forward)"),
                 F(f"{rb}/full_cuda_graph_backend.py", b(268), "_capture_one", "run_once()"),
                 F(f"{rb}/full_cuda_graph_backend.py", b(251), "run_once", "output = forward("),
                 F("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)",
                   "       ^^^^^^^^^^^^^^^^^^^^^")]
        outer = scheduler_to_runner(d) + [
            F(f"{S}/model_executor/model_runner.py", b(402), "initialize", "self.init_device_graphs()"),
            F(f"{S}/model_executor/model_runner_components/cuda_graph_setup.py", b(77), "init_device_graphs",
              "runner.graph_runner = DecodeGraphRunner(runner, backend=backend)"),
            F(f"{S}/model_executor/runner_backend/decode_graph_runner.py", b(133), "__init__",
              "self.backend.capture(self.capture_bs, self._forward)"),
            F(f"{S}/model_executor/runner_backend/full_cuda_graph_backend.py", b(221), "capture",
              "raise Exception("),
        ]
    else:
        cg = f"{S}/model_executor/cuda_graph_runner.py"
        inner = [F(cg, b(391), "__init__", "self.capture()"),
                 F(cg, b(503), "capture", ") = self.capture_one_batch_size(bs, forward)"),
                 F(cg, b(672), "capture_one_batch_size", "run_once()"),
                 F(cg, b(659), "run_once", "logits_output_or_pp_proxy_tensors = forward("),
                 F("torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)",
                   "       ^^^^^^^^^^^^^^^^^^^^^")]
        outer = scheduler_to_runner(d) + [
            F(f"{S}/model_executor/model_runner.py", b(421), "initialize", "self.init_device_graphs()"),
            F(f"{S}/model_executor/model_runner.py", b(2034), "init_device_graphs",
              "self.graph_runner = graph_runners[self.device](self)"),
            F(cg, b(393), "__init__", "raise Exception("),
        ]
    tail = model_tail if model_tail is not None else [
        F(f"{S}/models/{m}.py", b(512), "forward", "hidden_states = self.model("),
        F("torch/nn/modules/module.py", 1775, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)",
          "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        F("torch/nn/modules/module.py", 1786, "_call_impl", "return forward_call(*args, **kwargs)",
          "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
    ]
    return inner + tail, outer


def forward_batch(d: Deploy, mode: str = "decode") -> list[F]:
    """Serving: the scheduler event loop down to the model's forward."""
    b = lambda n: _bump(d, n)  # noqa: E731
    loop = "event_loop_overlap" if d.v < (0, 5, 17) else "event_loop_normal"
    return [
        F(f"{S}/managers/scheduler.py", b(3111 if _new(d) else 2688), "run_scheduler_process",
          f"scheduler.{loop}()"),
        F("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)",
          "       ^^^^^^^^^^^^^^^^^^^^^"),
        F(f"{S}/managers/scheduler.py", b(1012 if _new(d) else 884), loop, "result = self.run_batch(batch)"),
        F(f"{S}/managers/scheduler.py", b(2188 if _new(d) else 1853), "run_batch",
          "batch_result = self.model_worker.forward_batch_generation("),
        F(f"{S}/managers/tp_worker.py", b(262), "forward_batch_generation",
          "logits_output, can_run_cuda_graph = self.model_runner.forward("),
        F(f"{S}/model_executor/model_runner.py", b(2311 if _new(d) else 1893), "forward",
          "output = self._forward_raw("),
        F(f"{S}/model_executor/model_runner.py", b(2350 if _new(d) else 1932), "_forward_raw",
          f"ret = self.forward_{mode}(" if mode != "replay" else "ret = self.graph_runner.replay("),
    ]


def launch_main(d: Deploy) -> list[F]:
    b = lambda n: _bump(d, n)  # noqa: E731
    return [F("<frozen runpy>", 198, "_run_module_as_main"),
            F("<frozen runpy>", 88, "_run_code"),
            F("sglang/launch_server.py", 29, "<module>", "run_server(server_args)"),
            F("sglang/launch_server.py", 21, "run_server", "launch_server(server_args)"),
            F(f"{S}/entrypoints/http_server.py", b(1544), "launch_server",
              "tokenizer_manager, template_manager, scheduler_info, *_ = _launch_subprocesses("),
            F(f"{S}/entrypoints/engine.py", b(861), "_launch_subprocesses",
              "raise _scheduler_died_error(rank, proc.exitcode)" if d.v >= (0, 5, 5) else
              "raise RuntimeError(")]


def args_main(d: Deploy) -> list[F]:
    b = lambda n: _bump(d, n)  # noqa: E731
    post = "sglang/srt/server_args.py" if d.v < (0, 5, 22) else "sglang/srt/arg_groups/server_args_base.py"
    return [F("<frozen runpy>", 198, "_run_module_as_main"),
            F("<frozen runpy>", 88, "_run_code"),
            F("sglang/launch_server.py", 26, "<module>", "server_args = prepare_server_args(sys.argv[1:])"),
            F("sglang/srt/server_args.py", b(3411), "prepare_server_args",
              "return ServerArgs.from_cli_args(raw_args)"),
            F("sglang/srt/server_args.py", b(3102), "from_cli_args",
              "return cls(**{attr: getattr(args, attr) for attr in attrs})"),
            F("<string>", 312, "__init__"),
            F(post, b(611), "__post_init__", "self._handle_model_specific_adjustments()"
              if d.v < (0, 5, 22) else "self.resolve()")]
