"""vLLM endings about GPU memory: KV sizing, weights, activations (profile/warm-up/serving), graph capture."""
from __future__ import annotations

from . import levers
from . import vllm_frames as vf
from .case import Outcome, Run
from .pyerr import F, cuda_error, oom


def _oom(v, alloc: float, free_mib: float | None = None, other: tuple[int, float] | None = None, gpu: int = 0) -> str:
    tot = v.d.gpu.total
    free = free_mib if free_mib is not None else v.rng.uniform(40, 700)
    used = tot - free / 1024 - (other[1] if other else 0)
    return oom(v.d.v >= (0, 9), alloc, tot, free, used, used - v.rng.uniform(0.6, 2.0), v.rng.uniform(10, 400),
               gpu, other)


def _kv_need(v) -> float:
    return v.max_len * v.d.model.kv_bytes_per_token(v.d.tp) / 2**30


# -- KV cache -------------------------------------------------------------------
def kv_estimate(run: Run, notes: str = "") -> Outcome:
    """'... KV cache is needed, which is larger than the available KV cache memory' (+ estimated max len)."""
    v = run.vl()
    v.boot("profile")
    v.profile()
    d = v.d
    need = _kv_need(v)
    avail = max(v.kv_gib, 0.3)
    est = int(avail * 2**30 / d.model.kv_bytes_per_token(d.tp)) // 16 * 16
    if d.v >= (0, 10):
        models = "models's" if d.v < (0, 11) else "model's"
        err = (f"ValueError: To serve at least one request with the {models} max seq len ({v.max_len}), "
               f"({need:.2f} GiB KV cache is needed, which is larger than the available KV cache memory "
               f"({avail:.2f} GiB). Based on the available memory, the estimated maximum model length is {est}. "
               "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
        if d.v >= (0, 30):
            err += (" See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")
    else:
        err = (f"ValueError: The model's max seq len ({v.max_len}) is larger than the maximum number of tokens that "
               f"can be stored in KV cache ({est}). Try increasing `gpu_memory_utilization` or decreasing "
               "`max_model_len` when initializing the engine.")
    v.engine_error(vf.engine_core(d, "kv_check"), err)
    v.api_error()
    v.shutdown_noise()
    return Outcome("memory_pool", "kv_cache_oom", [f"--max-model-len {est}"],
                   fix_other=f"or raise --gpu-memory-utilization above {v.util} / add GPUs to keep {v.max_len}",
                   must_not=[f"--max-model-len {v.max_len}"], exit="exit1",
                   notes=notes or f"KV sizing: one {v.max_len}-token sequence needs {need:.1f} GiB of KV cache but "
                                  f"only {avail:.1f} GiB is left after weights and profiling; the engine computes "
                                  f"that {est} tokens would fit.")


def kv_no_blocks(run: Run) -> Outcome:
    v = run.vl()
    v.boot("profile")
    v.profile()
    d = v.d
    err = ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
           "initializing the engine.")
    if d.v >= (0, 30):
        err += " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    planning = "vllm/v1/core/kv_cache_planning.py" if d.v >= (0, 30) else "vllm/v1/core/kv_cache_utils.py"
    fr = vf.engine_core(d, "kv_check")[:-2] + [
        F(planning, 1186, "get_kv_cache_configs", "check_enough_kv_cache_memory(vllm_config, kv_cache_spec_one_worker,"),
        F(planning, 668, "check_enough_kv_cache_memory", "raise ValueError(")]
    v.engine_error(fr, err)
    v.api_error()
    v.shutdown_noise()
    target = levers.raise_mem(v.util, d.gpu.total, d.gpu.total - v.w - 3.2, need=4.0)
    return Outcome("memory_pool", "kv_cache_oom", [f"--gpu-memory-utilization {levers.fmt(target)}"],
                   must_not=[f"--gpu-memory-utilization {levers.fmt(v.util)}"], exit="exit1",
                   notes=f"At gpu_memory_utilization={v.util} the weights ({v.w:.1f} GiB) and the profiled "
                         "activations use the whole budget: no memory left for KV blocks.")


# -- weights ---------------------------------------------------------------------------
def weights(run: Run, where: str = "create", stop: float = 0.4, rank: int = 0, fix_tp: int | None = None,
            wrapped: bool | None = None, notes: str = "") -> Outcome:
    v = run.vl()
    v.boot("weight_load")
    v.load_begin()
    if where != "create":
        v.load_bar(stop=stop)
    d = v.d
    text = _oom(v, v.rng.choice([0.5, 0.98, 1.75, 3.5]), gpu=0)
    if wrapped if wrapped is not None else d.v >= (0, 30):
        orig = text.split(": ", 1)[1]
        text = ("ValueError: Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to "
                "free memory for weights, increasing --tensor-parallel-size, or using --quantization. See "
                f"https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips. (original error: "
                f"{orig[:90]}...)")
        frames = vf.load(d, where)[:2] + [F("vllm/v1/worker/gpu_model_runner.py", 2631, "load_model",
                                            "raise ValueError(")]
    else:
        frames = vf.load(d, where)
    v.fail_in_worker(rank, frames, text, "executor", at_start=True)
    tp = fix_tp or levers.next_tp(d.tp, d.weights_gib(), d.gpu.total, d.model.heads)
    return Outcome("weight_load", "weights_oom", [f"--tensor-parallel-size {tp}"],
                   fix_other="or a quantized checkpoint of the same model",
                   must_not=["--gpu-memory-utilization", "--max-model-len", "--enforce-eager",
                             f"--tensor-parallel-size {d.tp}"], exit="exit1",
                   notes=notes or f"CUDA OOM while {'creating' if where == 'create' else 'loading'} the weights: "
                                  f"{d.model.name} needs ~{d.weights_gib():.0f} GiB per GPU at TP{d.tp} on "
                                  f"{d.gpu.label}. Utilization and context length cannot make weights fit.")


# -- activations -----------------------------------------------------------------------
def profile_oom(run: Run, site: str = "moe") -> Outcome:
    v = run.vl()
    v.boot("profile")
    v.hook("profile")
    d = v.d
    m = d.model.vl_module
    tail = vf.profile(d) + [F(f"vllm/model_executor/models/{m}.py", 612, "forward",
                              "hidden_states = self.model(input_ids, positions, intermediate_tensors,")]
    if site == "moe":
        tail += [F("vllm/model_executor/layers/fused_moe/fused_moe.py", 1540, "fused_experts_impl",
                   "intermediate_cache1 = torch.empty((M, top_k_num, N),")]
    elif site == "vision":
        tail = vf.profile(d)[:3] + [
            F("vllm/v1/worker/gpu_model_runner.py", 3262, "profile_run",
              "dummy_encoder_outputs = self.model.get_multimodal_embeddings("),
            F(f"vllm/model_executor/models/{m}.py", 1180, "get_multimodal_embeddings",
              "vision_embeddings = self._process_image_input(image_input)"),
            F(f"vllm/model_executor/models/{m}.py", 1104, "_process_image_input",
              "image_embeds = self.visual(pixel_values, grid_thw=grid_thw_list)")]
    else:
        tail += [F("vllm/model_executor/layers/logits_processor.py", 112, "_get_logits",
                   "logits = lm_head.quant_method.apply(lm_head, hidden_states, bias=embedding_bias)")]
    if site == "vision":
        v.say(v.ranks()[0], f"Encoder cache will be initialized with a budget of {v.mnbt} tokens, and profiled with 1 "
                            "image items of the maximum feature size.", "gpu_model_runner.py", 3203)
    text = _oom(v, v.rng.choice([4.5, 7.25, 11.0, 16.0]))
    v.fail_in_worker(0, tail, text, "profile")
    mnbt = v.mnbt
    fix = [f"--max-num-batched-tokens {max(2048, min(16384, mnbt // 4))}"] if mnbt > 8192 else \
        [f"--gpu-memory-utilization {levers.fmt(levers.lower_mem(v.util))}"]
    return Outcome("warmup", "activation_oom", fix,
                   must_not=[f"--max-num-batched-tokens {mnbt}", "--max-model-len"],
                   exit="exit1",
                   notes=f"CUDA OOM inside profile_run (the dummy forward with max_num_batched_tokens={mnbt}), "
                         "after the weights loaded and before KV sizing: activation memory of one big batch.")


def sampler_warmup(run: Run) -> Outcome:
    v = run.vl()
    v.boot("graph_capture")
    v.capture()
    d = v.d
    n = v.max_seqs
    err = (f"RuntimeError: CUDA out of memory occurred when warming up sampler with {n} dummy requests. Please try "
           "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.")
    fr = [F("vllm/v1/worker/gpu_worker.py", 371, "compile_or_warm_up_model",
            "self.model_runner._dummy_sampler_run("),
          F("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)",
            "       ^^^^^^^^^^^^^^^^^^^^^"),
          F("vllm/v1/worker/gpu_model_runner.py", 3170, "_dummy_sampler_run", "raise RuntimeError(")]
    v.fail_in_worker(0, fr, err, "capture")
    return Outcome("warmup", "activation_oom", [f"--max-num-seqs {max(64, n // 4)}"],
                   must_not=[f"--max-num-seqs {n}", "--max-model-len", "--enforce-eager"], exit="exit1",
                   notes=f"KV sized and graphs captured; the sampler warm-up with {n} dummy requests then runs out of "
                         "memory. A warm-up activation OOM, not graph capture: fewer concurrent sequences.")


def serving_oom(run: Run) -> Outcome:
    v = run.vl()
    v.boot()
    v.serve(v.rng.randint(4, 8))
    d = v.d
    text = _oom(v, v.rng.choice([9.5, 12.3, 18.0]))
    fr = vf.serving(d) + [
        F("vllm/v1/executor/abstract.py" if d.tp == 1 else "vllm/v1/executor/multiproc_executor.py", 102,
          "execute_model", "output = self.collective_rpc(\"execute_model\","),
        F("vllm/v1/worker/gpu_model_runner.py", 2498, "execute_model", "model_output = self.model("),
        F(f"vllm/model_executor/models/{d.model.vl_module}.py", 612, "forward",
          "hidden_states = self.model(input_ids, positions, intermediate_tensors,"),
        F("vllm/model_executor/layers/fused_moe/fused_moe.py" if d.model.kind == "moe" else
          "vllm/model_executor/layers/activation.py", 1540 if d.model.kind == "moe" else 84,
          "fused_experts_impl" if d.model.kind == "moe" else "forward_cuda",
          "intermediate_cache1 = torch.empty((M, top_k_num, N)," if d.model.kind == "moe" else
          "out = torch.empty(output_shape, dtype=x.dtype, device=x.device)")]
    v.engine_error(fr, text, fatal=True)
    v.say(v.api, "AsyncLLM output_handler failed.", "async_llm.py", 480, "ERROR")
    for ln in v.tb([F("vllm/v1/engine/async_llm.py", 439, "output_handler",
                      "outputs = await engine_core.get_output_async()"),
                    F("vllm/v1/engine/core_client.py", 846, "get_output_async", "raise self._format_exception(outputs) "
                      "from None")],
                   "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
                   "(above) for the root cause."):
        v.say(v.api, ln, "async_llm.py", 480, "ERROR")
    v.raw(v.api, "INFO:     Shutting down")
    v.raw(v.api, f"INFO:     Finished server process [{v.api.pid}]")
    mnbt = v.mnbt
    return Outcome("serving", "activation_oom", [f"--max-num-batched-tokens {min(16384, max(4096, mnbt // 8))}"],
                   must_not=[f"--max-num-batched-tokens {mnbt}", "--max-model-len"], exit="exit1",
                   notes=f"The server ran, then a large prefill chunk (max_num_batched_tokens={mnbt}) ran out of "
                         "activation memory in the forward pass: 'EngineCore encountered a fatal error' with a CUDA "
                         "OOM. Smaller prefill chunks.")


# -- graph capture ---------------------------------------------------------------------------
def capture_oom(run: Run, stop_frac: float = 0.45, at_end: bool = False) -> Outcome:
    v = run.vl()
    v.boot("graph_capture")
    v.hook("graph_capture")
    d = v.d
    n = 67
    stop = int(n * stop_frac)
    desc = ("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)" if d.v >= (0, 11)
            else "Capturing CUDA graph shapes")
    v.capture_bar(desc, n, stop)
    text = _oom(v, v.rng.choice([0.25, 0.5, 1.0]), free_mib=v.rng.uniform(20, 200))
    fr = vf.capture(d) + ([F("torch/cuda/graphs.py", 186, "__exit__", "self.cuda_graph.capture_end()")] if at_end
                          else [F("vllm/compilation/cuda_graph.py", 209, "__call__",
                                  "output = self.runnable(*args, **kwargs)"),
                                F("vllm/model_executor/layers/fused_moe/fused_moe.py", 1540, "fused_experts_impl",
                                  "intermediate_cache1 = torch.empty((M, top_k_num, N),")])
    v.fail_in_worker(0, fr, text, "capture")
    mx = d.args.get("max_cudagraph_capture_size", 512)
    fixes = [f"--gpu-memory-utilization {levers.fmt(levers.lower_mem(v.util, 0.04))}",
             f"--max-cudagraph-capture-size {levers.halve(mx, 64)}"]
    return Outcome("graph_capture", "graph_capture_fault", fixes,
                   must_not=[f"--gpu-memory-utilization {levers.fmt(v.util)}", "--max-model-len"], exit="exit1",
                   notes=f"CUDA OOM while capturing CUDA graphs (bar stopped at {stop}/{n}) after KV sizing at "
                         f"gpu_memory_utilization={v.util}: graph memory did not fit in what was left. The "
                         "EngineCore's 'Worker failed with error' repeats the worker's OOM; it is the same error.")


def capture_unsafe(run: Run) -> Outcome:
    v = run.vl()
    v.boot("graph_capture")
    v.hook("graph_capture")
    d = v.d
    v.capture_bar("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 67)
    v.capture_bar("Capturing CUDA graphs (decode, FULL)", 35, v.rng.randint(1, 6))
    err = cuda_error("operation not permitted when stream is capturing", True)
    fr = vf.capture(d) + [
        F("vllm/v1/worker/gpu_model_runner.py", 3031, "_dummy_run",
          "attn_metadata_i = builder.build_for_cudagraph_capture(common_attn_metadata)"),
        F("vllm/v1/attention/backends/flashinfer.py", 618, "build_for_cudagraph_capture",
          "return self.build(0, m)"),
        F("vllm/v1/attention/backends/flashinfer.py", 742, "build",
          "num_blocks = paged_kv_indptr_cpu[-1].item()", "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]
    v.fail_in_worker(0, fr, err, "capture")
    return Outcome("graph_capture", "graph_capture_fault", ["--enforce-eager"],
                   fix_other="or keep piecewise graphs only: -cc '{\"cudagraph_mode\": \"PIECEWISE\"}'",
                   must_not=["--gpu-memory-utilization", "--max-model-len"], exit="exit1",
                   notes="The FULL decode graph capture fails with 'operation not permitted when stream is "
                         "capturing': the attention metadata builder reads a value back to the host (.item()) while "
                         "capturing. A capture-unsafe op, not memory.")
