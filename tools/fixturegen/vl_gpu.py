"""vLLM endings where the GPU or its kernels are at fault: hardware, illegal memory access, arch/ABI."""
from __future__ import annotations

from . import system
from . import vllm_frames as vf
from .case import Outcome, Run
from .pyerr import F, cuda_error, traceback

HW_NOTE = ("The config is not what fails: one rank alone hits a device error and the kernel log shows an Xid that "
           "blames that GPU.")


def _wname(v, i: int) -> str:
    return (f"VLLM::Worker_TP{i}" if v.workers else "VLLM::EngineCor")[:15]


def hardware(run: Run, phase: str, cuda_text: str, rank: int = 1, xids: tuple[int, ...] = (79,),
             notes: str = "", must_not: list[str] | None = None, secondary: str | None = None) -> Outcome:
    v = run.vl()
    d = v.d
    rank = rank if v.workers else 0
    pci = d.pci(rank)
    wpid = v.ranks()[rank].pid
    err = cuda_error(cuda_text, d.v >= (0, 11))

    def kernel() -> None:
        v.log.tick(0.01, 0.4)
        for code in xids:
            system.xid(v.log, run.rng, pci, code, wpid, _wname(v, rank))
        if 79 in xids:
            system.fallen_off(v.log, pci)

    if phase == "weight_load":
        v.boot("weight_load")
        v.load_begin()
        v.load_bar(stop=run.rng.uniform(0.2, 0.6))
        kernel()
        v.fail_in_worker(rank, vf.load(d, "weights")[:-5] + [
            F("vllm/model_executor/layers/linear.py", 1268, "weight_loader", "param_data.copy_(loaded_weight)")],
            err, "executor", at_start=True)
    elif phase == "warmup":
        v.boot("profile")
        v.hook("profile")
        kernel()
        v.fail_in_worker(rank, vf.profile(d), err, "profile")
    elif phase == "dist_init":
        v.boot("dist_init")
        v.hook("dist_init")
        n = len(v.ranks())
        v.each(lambda p, i: v.say(p, f"world_size={n} rank={i} local_rank={i} distributed_init_method=tcp://"
                                     f"127.0.0.1:{run.rng.randint(34000, 59999)} backend=nccl", "parallel_state.py",
                                  1208))
        v.say(v.workers[0], "vLLM is using nccl==2.21.5", "pynccl.py", 70)
        kernel()
        nccl = ("RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)")
        host = v.log.host
        v.log.app(f"{host}:{wpid}:{wpid + 41} [{rank}] transport/nvls.cc:{run.rng.choice([158, 161])} NCCL WARN Cuda "
                  f"failure 999 'unknown error'")
        fr = [F("vllm/v1/worker/gpu_worker.py", 186, "init_device",
                "init_worker_distributed_environment(self.vllm_config, self.rank,"),
              F("vllm/v1/worker/gpu_worker.py", 711, "init_worker_distributed_environment",
                "ensure_model_parallel_initialized(parallel_config.tensor_parallel_size,"),
              F("vllm/distributed/parallel_state.py", 1178, "ensure_model_parallel_initialized",
                "initialize_model_parallel(tensor_model_parallel_size,"),
              F("vllm/distributed/device_communicators/pynccl.py", 99, "__init__",
                "self.comm: ncclComm_t = self.nccl.ncclCommInitRank("),
              F("vllm/distributed/device_communicators/pynccl_wrapper.py", 277, "NCCL_CHECK",
                "raise RuntimeError(f\"NCCL error: {error_str}\")")]
        v.fail_in_worker(rank, fr, nccl, "executor", at_start=True, entry="self.worker.init_device()")
    else:  # serving
        v.boot()
        v.serve(run.rng.randint(4, 8))
        kernel()
        fr = vf.serving(d) + [F("vllm/v1/worker/gpu_model_runner.py", 2498, "execute_model",
                                "model_output = self.model(")]
        v.engine_error(fr, err, fatal=True)
        v.raw(v.api, "INFO:     Shutting down")
    mn = must_not if must_not is not None else ["--gpu-memory-utilization", "--enforce-eager"]
    return Outcome(phase, "hardware_fault", [], secondary=secondary,
                   fix_other=f"check/replace the GPU at PCI {pci} (rank {rank}): nvidia-smi -q -d "
                             "ECC,PAGE_RETIREMENT,ROW_REMAPPER, dcgmi diag -r 2; drain or exclude it",
                   must_not=mn, exit="exit1",
                   notes=notes or f"Rank {rank} alone fails with '{cuda_text}' and the kernel logs Xid "
                                  f"{'/'.join(map(str, xids))} for its GPU. {HW_NOTE}")


def illegal(run: Run, phase: str = "serving", xid: int | None = 13, backend_fix: str | None = "FLASH_ATTN",
            assert_kind: bool = False, notes: str = "") -> Outcome:
    v = run.vl()
    d = v.d
    text = "device-side assert triggered" if assert_kind else "an illegal memory access was encountered"
    err = cuda_error(text, d.v >= (0, 11))
    i0 = 0
    if phase == "warmup":
        v.boot("profile")
        v.hook("profile")
        if xid:
            system.xid(v.log, run.rng, d.pci(0), xid, v.ranks()[0].pid, _wname(v, 0))
        v.fail_in_worker(0, vf.profile(d) + [
            F(f"vllm/model_executor/models/{d.model.vl_module}.py", 612, "forward",
              "hidden_states = self.model(input_ids, positions, intermediate_tensors,"),
            F("vllm/model_executor/layers/fused_moe/fused_moe.py", 1622, "fused_experts_impl",
              "invoke_fused_moe_kernel(")], err, "profile")
        fix, ph = [], "warmup"
    elif phase == "graph_capture":
        v.boot("graph_capture")
        v.hook("graph_capture")
        v.capture_bar("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 67, run.rng.randint(8, 40))
        if xid:
            system.xid(v.log, run.rng, d.pci(0), xid, v.ranks()[0].pid, _wname(v, 0))
        v.fail_in_worker(0, vf.capture(d) + [F("vllm/compilation/cuda_graph.py", 209, "__call__",
                                               "output = self.runnable(*args, **kwargs)")], err, "capture")
        fix, ph = ["--enforce-eager"], "graph_capture"
    else:
        v.boot()
        v.serve(run.rng.randint(5, 9))
        if assert_kind:
            for k in range(run.rng.randint(3, 6)):
                v.raw(v.ranks()[i0], f"/pytorch/aten/src/ATen/native/cuda/Indexing.cu:{run.rng.choice([1289, 1308])}: "
                                     f"indexSelectLargeIndex: block: [{run.rng.randint(0, 900)},0,0], thread: "
                                     f"[{32 * k + run.rng.randint(0, 31)},0,0] Assertion `srcIndex < "
                                     "srcSelectDimSize` failed.")
        if xid:
            system.xid(v.log, run.rng, d.pci(0), xid, v.ranks()[0].pid, _wname(v, 0))
        fr = vf.serving(d) + [F("vllm/v1/worker/gpu_model_runner.py", 2561, "execute_model",
                                "valid_sampled_token_ids = sampled_token_ids.tolist()")]
        v.engine_error(fr, err, fatal=True)
        v.say(v.api, "AsyncLLM output_handler failed.", "async_llm.py", 480, "ERROR")
        for k in range(run.rng.randint(2, 5)):
            v.say(v.api, "Error in chat completion stream generator.", "serving_chat.py", 1145, "ERROR")
            v.raw(v.api, f'INFO:     10.{run.rng.randint(0, 40)}.{run.rng.randint(0, 255)}.{run.rng.randint(2, 250)}:'
                         f'{run.rng.randint(30000, 65000)} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server '
                         "Error")
        v.raw(v.api, "INFO:     Shutting down")
        fix = [f"--attention-backend {backend_fix}"] if backend_fix and not assert_kind else []
        ph = "serving"
    return Outcome(ph, "illegal_memory_access", fix,
                   fix_other="CUDA_LAUNCH_BLOCKING=1 to localize the faulting kernel; report the bug",
                   must_not=["--gpu-memory-utilization", "--max-model-len"], exit="exit1",
                   notes=notes or f"'{text}' ({ph}); "
                                  + (f"the kernel's Xid {xid} is the application-side code for a bad address, not a "
                                     "hardware Xid. " if xid else "no Xid naming hardware. ")
                                  + "A kernel bug, not sizing.")


def import_then_unsupported(run: Run, why: str | None = None) -> Outcome:
    v = run.vl()
    d = v.d
    why = why or f"ImportError('{d.site}/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')"
    v.log.app(f"WARNING {v.log.et.strftime('%m-%d %H:%M:%S')} [_custom_ops.py:21] Failed to import from vllm._C with "
              f"{why}", 4)
    v.launch()
    if d.v >= (0, 10):
        v.config()
    known = ["AquilaForCausalLM", "ArcticForCausalLM", "BaiChuanForCausalLM", "BloomForCausalLM",
             "CohereForCausalLM", "DbrxForCausalLM", "DeciLMForCausalLM", "DeepseekForCausalLM",
             "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "ExaoneForCausalLM", "FalconForCausalLM",
             "GemmaForCausalLM", "Gemma2ForCausalLM", "GPT2LMHeadModel", "GPTBigCodeForCausalLM",
             "GraniteForCausalLM", "InternLM2ForCausalLM", "JambaForCausalLM", "MiniCPMForCausalLM",
             "MixtralForCausalLM", "MPTForCausalLM", "OPTForCausalLM", "PhiForCausalLM", "Phi3ForCausalLM"]
    err = (f"ValueError: Model architectures ['{d.model.arch}'] are not supported for now. Supported architectures: "
           f"dict_keys({known!r})")
    fr = [F("vllm/entrypoints/openai/api_server.py", 1078, "run_server",
            "async with build_async_engine_client(args) as engine_client:"),
          F("vllm/engine/arg_utils.py", 1154, "create_engine_config", "model_config = self.create_model_config()"),
          F("vllm/config.py", 489, "__init__", "self.multimodal_config = self._init_multimodal_config("),
          F("vllm/model_executor/models/registry.py", 429, "inspect_model_cls",
            "return self._raise_for_unsupported(architectures)"),
          F("vllm/model_executor/models/registry.py", 379, "_raise_for_unsupported", "raise ValueError(")]
    for ln in traceback(fr, err, d.site, d.py_minor):
        v.raw(v.api, ln, 3)
    return Outcome("launch", "kernel_arch_mismatch", [],
                   fix_other="reinstall vLLM built for the installed torch/CUDA (vllm._C does not load)",
                   must_not=["--trust-remote-code", "--gpu-memory-utilization"], exit="exit1",
                   secondary="model_load_error",
                   notes=f"{d.model.arch} is a supported architecture; the registry rejects it because vllm._C "
                         "failed to import first (see the WARNING at the top). The build, not the model.")


def no_kernel_image(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("profile")
    v.hook("profile")
    err = cuda_error("no kernel image is available for execution on the device", d.v >= (0, 11))
    fr = vf.profile(d) + [
        F(f"vllm/model_executor/models/{d.model.vl_module}.py", 388, "forward",
          "hidden_states, residual = self.input_layernorm(hidden_states, residual)"),
        F("vllm/model_executor/layers/layernorm.py", 251, "forward_cuda",
          "ops.fused_add_rms_norm("),
        F("vllm/_custom_ops.py", 344, "fused_add_rms_norm",
          "torch.ops._C.fused_add_rms_norm(input, residual, weight, epsilon)")]
    v.fail_in_worker(0, fr, err, "profile")
    return Outcome("warmup", "kernel_arch_mismatch", [],
                   fix_other=f"install a vLLM wheel/image built with sm_{d.gpu.sm} kernels (CUDA 12.8+ build)",
                   must_not=["--gpu-memory-utilization", "--enforce-eager", "--max-num-batched-tokens"],
                   exit="exit1",
                   notes=f"The first forward (profile run) fails with 'no kernel image is available': this build "
                         f"has no kernels for sm_{d.gpu.sm} ({d.gpu.name}).")


def undefined_symbol(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    sym = run.rng.choice(["_ZN3c1013MessageLoggerC1EPKciib", "_ZNK3c105Error4whatEv",
                          "_ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_RKSs"])
    err = f"ImportError: {d.site}/vllm/_C.abi3.so: undefined symbol: {sym}"
    bin_ = "/usr/local/bin/vllm" if "dist-packages" in d.site else d.site.split("/lib/")[0] + "/bin/vllm"
    fr = [F(bin_, 10, "<module>", "sys.exit(main())", "             ^^^^^^"),
          F("vllm/entrypoints/cli/main.py", 46, "main", "cmd.subparser_init(subparsers).set_defaults("),
          F("vllm/entrypoints/cli/serve.py", 118, "subparser_init",
            "serve_parser = make_arg_parser(serve_parser)"),
          F("vllm/entrypoints/openai/cli_args.py", 289, "make_arg_parser",
            "parser = AsyncEngineArgs.add_cli_args(parser)"),
          F("vllm/platforms/__init__.py", 271, "__getattr__", "_current_platform = resolve_obj_by_qualname("),
          F("vllm/platforms/cuda.py", 18, "<module>", "import vllm._C  # noqa")]
    for ln in traceback(fr, err, d.site, d.py_minor):
        v.raw(v.api, ln, 3)
    return Outcome("launch", "kernel_arch_mismatch", [],
                   fix_other="reinstall vLLM matching the installed torch (or use the vLLM image as shipped)",
                   must_not=["--gpu-memory-utilization", "--attention-backend"], exit="exit1",
                   notes="vllm._C does not link against the installed torch (undefined C++ symbol) — typically torch "
                         "was upgraded under vLLM. ABI mismatch at import.")


def jit_sm120(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("profile")
    v.hook("profile")
    w = v.ranks()[0]
    v.say(w, "Using FlashInfer for top-p & top-k sampling.", "topk_topp_sampler.py", 60)
    err = ("RuntimeError: Ninja build failed. Ninja output:\n"
           "[1/4] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile --dependency-output "
           "batch_prefill.cuda.o.d -DTORCH_EXTENSION_NAME=batch_prefill_with_kv_cache_dtype_q_bf16 "
           "-gencode=arch=compute_120a,code=sm_120a -c batch_prefill.cu -o batch_prefill.cuda.o\n"
           "FAILED: batch_prefill.cuda.o\n"
           "nvcc fatal   : Unsupported gpu architecture 'compute_120a'\n"
           "ninja: build stopped: subcommand failed.")
    fr = vf.profile(d) + [
        F("vllm/v1/attention/backends/flashinfer.py", 690, "build", "self._plan(num_prefills, num_decodes, attn_metadata)"),
        F("flashinfer/prefill.py", 1512, "plan", "self._cached_module = get_batch_prefill_module("),
        F("flashinfer/jit/core.py", 123, "build_and_load", "self.build(verbose)"),
        F("flashinfer/jit/cpp_ext.py", 241, "run_ninja", "raise RuntimeError(msg) from e")]
    v.fail_in_worker(0, fr, err, "profile")
    return Outcome("kernel_init", "kernel_arch_mismatch", ["--attention-backend TRITON_ATTN"],
                   fix_other="or a CUDA toolkit (12.8+) whose nvcc knows sm_120 for FlashInfer's JIT",
                   must_not=["--gpu-memory-utilization", "--enforce-eager"], exit="exit1",
                   notes="FlashInfer JIT-compiles its attention kernels on first use; the container's nvcc does not "
                         "know compute_120a (RTX PRO 6000 Blackwell). A toolchain/arch problem; another attention "
                         "backend avoids the JIT.")


def driver_insufficient(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    site = d.site
    v.raw(v.api, f"{site}/torch/cuda/__init__.py:182: UserWarning: CUDA initialization: CUDA driver version is "
                 "insufficient for CUDA runtime version (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:"
                 "119.)", 4)
    v.raw(v.api, "  return torch._C._cuda_getDeviceCount() > 0", 4)
    v.launch()
    v.config()
    v.engine_init()
    err = ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
           "NumCudaDevices() that might have already set an error? Error 35: CUDA driver version is insufficient for "
           "CUDA runtime version")
    fr = [F("vllm/v1/worker/gpu_worker.py", 162, "init_device", "torch.cuda.set_device(self.device)"),
          F("torch/cuda/__init__.py", 567, "set_device", "torch._C._cuda_setDevice(device)"),
          F("torch/cuda/__init__.py", 372, "_lazy_init", "torch._C._cuda_init()")]
    v.fail_in_worker(0, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    return Outcome("launch", "kernel_arch_mismatch", [],
                   fix_other="upgrade the host NVIDIA driver or use an image built for the installed driver's CUDA",
                   must_not=["--gpu-memory-utilization", "--tensor-parallel-size"], exit="exit1",
                   notes="torch warns at import that the driver is older than the image's CUDA runtime; the worker "
                         "then cannot initialise CUDA at all.")
