"""SGLang endings about what was asked for: model files, argument values, builds that do not fit the GPU."""
from __future__ import annotations

from . import sglang_frames as sf
from .case import Outcome, Run
from .pyerr import DURING, F, cuda_error, frame_lines, traceback
from .sg_memory import _wrapper_lines


def _launch_tb(e, frames: list[F], err: str) -> None:
    """An error raised in the launcher process itself (printed raw on stderr, no prefix)."""
    for ln in traceback(frames, err, e.d.site, e.d.py_minor):
        e.raw(ln)


def _tokenizer_frames(d) -> list[F]:
    return sf.launch_main(d)[:4] + [
        F("sglang/srt/entrypoints/http_server.py", 1531, "launch_server",
          "tokenizer_manager, template_manager, scheduler_info, *_ = _launch_subprocesses("),
        F("sglang/srt/entrypoints/engine.py", 812, "_launch_subprocesses",
          "tokenizer_manager = TokenizerManager(server_args, port_args)"),
        F("sglang/srt/managers/tokenizer_manager.py", 203, "__init__",
          "self.model_config = ModelConfig.from_server_args(server_args)"),
        F("sglang/srt/configs/model_config.py", 226, "from_server_args", "return ModelConfig("),
    ]


# -- model_load_error ------------------------------------------------------------------
def no_config(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    e.launch()
    err = (f"OSError: {d.path} does not appear to have a file named config.json. Checkout "
           f"'https://huggingface.co/{d.path}/tree/None' for available files.")
    fr = _tokenizer_frames(d) + [
        F("sglang/srt/configs/model_config.py", 94, "__init__", "self.hf_config = get_config("),
        F("sglang/srt/utils/hf_transformers_utils.py", 236, "get_config", "config = AutoConfig.from_pretrained("),
        F("transformers/models/auto/configuration_auto.py", 1332, "from_pretrained",
          "config_dict, unused_kwargs = PretrainedConfig.get_config_dict(pretrained_model_name_or_path, **kwargs)"),
        F("transformers/utils/hub.py", 479, "cached_files", "raise OSError(")]
    _launch_tb(e, fr, err)
    return Outcome("launch", "model_load_error", [],
                   fix_other=f"point --model-path at the directory that holds config.json ({d.path} has none: "
                             "wrong path or an unfinished copy)",
                   must_not=["--mem-fraction-static", "--trust-remote-code"], exit="exit1",
                   notes="The model directory has no config.json: the launcher fails before any GPU work.")


def remote_code(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    e.launch()
    err = (f"ValueError: The repository {d.path} contains custom code which must be executed to correctly load the "
           f"model. You can inspect the repository content at {d.path} .\n"
           " You can inspect the repository content at https://hf.co/" + d.path.lstrip("/") + ".\n"
           "Please pass the argument `trust_remote_code=True` to allow custom code to be run.")
    fr = _tokenizer_frames(d) + [
        F("sglang/srt/configs/model_config.py", 94, "__init__", "self.hf_config = get_config("),
        F("sglang/srt/utils/hf_transformers_utils.py", 236, "get_config", "config = AutoConfig.from_pretrained("),
        F("transformers/models/auto/configuration_auto.py", 1305, "from_pretrained",
          "trust_remote_code = resolve_trust_remote_code("),
        F("transformers/dynamic_module_utils.py", 746, "resolve_trust_remote_code", "raise ValueError(")]
    _launch_tb(e, fr, err)
    return Outcome("launch", "model_load_error", ["--trust-remote-code"], must_not=["--mem-fraction-static"],
                   exit="exit1", notes="The checkpoint ships its own modelling code; transformers refuses to run it "
                                       "unless --trust-remote-code is given.")


def bad_shard(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    e.boot("weight_load")
    e.load_begin()
    e.load_bar(stop=run.rng.uniform(0.3, 0.8))
    err = "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer"
    for r in e.ranks:
        e.log.tick(0.001, 0.2)
        e.exception(r, e.tb(sf.safetensors_read(d), err))
    e.sigquit()
    return Outcome("weight_load", "model_load_error", [],
                   fix_other="re-download the checkpoint: one .safetensors shard is truncated",
                   must_not=["--mem-fraction-static", "--tp-size", "--load-format"], exit="sigkill",
                   notes="Loading stops part-way with a safetensors header error: a shard file is incomplete (an "
                         "interrupted download or copy).")


def unsupported_arch(run: Run, import_error: str | None = None, arch: str | None = None) -> Outcome:
    """'Model architectures [...] are not supported' — model_load_error on its own; kernel_arch_mismatch when an
    'Ignore import error when loading ...' line shows the model module failed to import."""
    e = run.sg()
    d = e.d
    arch = arch or d.model.arch
    e.launch()
    e.dist_init()
    e.load_begin()
    if import_error:
        e.each(lambda r: f"Ignore import error when loading sglang.srt.models.{d.model.sg_module}: {import_error}")
    known = ["BaichuanForCausalLM", "ChatGLMModel", "DeepseekForCausalLM", "DeepseekV2ForCausalLM",
             "DeepseekV3ForCausalLM", "ExaoneForCausalLM", "GemmaForCausalLM", "Gemma2ForCausalLM",
             "Gemma3ForConditionalGeneration", "GptOssForCausalLM", "GraniteForCausalLM", "InternLM2ForCausalLM",
             "LlamaForCausalLM", "LlavaLlamaForCausalLM", "MiniCPMForCausalLM", "MistralForCausalLM",
             "MixtralForCausalLM", "OlmoForCausalLM", "Phi3ForCausalLM", "QWenLMHeadModel", "Qwen2ForCausalLM",
             "Qwen2MoeForCausalLM", "Qwen2VLForConditionalGeneration", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"]
    known = [k for k in known if k != arch]
    err = (f"ValueError: Model architectures ['{arch}'] are not supported for now. Supported architectures: "
           f"dict_keys({known!r})")
    fr = sf.load_model(d, "create")[:6] + [
        F("sglang/srt/model_loader/loader.py", 591, "load_model", "model = _initialize_model("),
        F("sglang/srt/model_loader/loader.py", 247, "_initialize_model",
          "model_class, _ = get_model_architecture(model_config)"),
        F("sglang/srt/model_loader/utils.py", 94, "get_model_architecture",
          "return ModelRegistry.resolve_model_cls(architectures)"),
        F("sglang/srt/models/registry.py", 69, "resolve_model_cls",
          "return self._raise_for_unsupported(architectures)"),
        F("sglang/srt/models/registry.py", 42, "_raise_for_unsupported", "raise ValueError(")]
    for r in e.ranks:
        e.log.tick(0.001, 0.2)
        e.exception(r, e.tb(fr, err))
    e.sigquit()
    if import_error:
        return Outcome("weight_load", "kernel_arch_mismatch", [],
                       fix_other="reinstall sglang / sgl-kernel built for this torch and CUDA (the model module "
                                 "failed to import)",
                       must_not=["--trust-remote-code", "--mem-fraction-static"], exit="sigkill",
                       secondary="model_load_error",
                       notes="'are not supported' looks like a model problem, but the first line shows the model "
                             "module failed to import (a compiled extension does not load): the architecture is "
                             "supported, the build is broken.")
    return Outcome("weight_load", "model_load_error", [], fix_other="upgrade sglang to a release that supports "
                   f"{arch} (or try --model-impl transformers)", must_not=["--mem-fraction-static", "--tp-size"],
                   exit="sigkill",
                   notes=f"This SGLang build does not know {arch} (no import error before it): the model is newer "
                         "than the engine.")


# -- config_invalid ---------------------------------------------------------------------
def context_too_long(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    e.launch()
    want = e.cfg["context_length"]
    have = d.model.ctx
    err = (f"ValueError: User-specified context_length ({want}) is greater than the derived context_length ({have}). "
           "This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ "
           "from max_position_embeddings in the model's config. To allow overriding this maximum, set the env var "
           "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
    fr = _tokenizer_frames(d) + [F("sglang/srt/configs/model_config.py", 261, "__init__",
                                   "self._derive_context_length(context_length)"),
                                 F("sglang/srt/configs/model_config.py", 318, "_derive_context_length",
                                   "raise ValueError(")]
    _launch_tb(e, fr, err)
    return Outcome("launch", "config_invalid", [f"--context-length {have}"],
                   must_not=[f"--context-length {want}", "--mem-fraction-static"], exit="exit1",
                   notes=f"--context-length {want} exceeds the model's {have}; the engine rejects it at start-up.")


def ep_divisible(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    err = f"AssertionError: tp_size {d.tp} must be divisible by ep_size {d.ep}"
    for ln in traceback(sf.args_main(d) + [F("sglang/srt/server_args.py", 1288, "_handle_moe_args",
                                             "assert self.tp_size % self.ep_size == 0, (")],
                        err, d.site, d.py_minor):
        e.raw(ln)
    return Outcome("launch", "config_invalid", [f"--ep-size {d.tp}"], must_not=[f"--ep-size {d.ep}"], exit="exit1",
                   notes=f"Argument check: --ep-size {d.ep} does not divide --tp-size {d.tp}; rejected before "
                         "server_args is even printed.")


def dflash_no_draft(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    if d.args.get("speculative_draft_model_path"):
        bs = d.args.get("speculative_dflash_block_size", 0)
        err = "ValueError: DFLASH requires --speculative-dflash-block-size to be positive"
        for ln in traceback(sf.args_main(d) + [F("sglang/srt/arg_groups/speculative_hook.py", 221, "_handle_dflash",
                                                 "raise ValueError(")], err, d.site, d.py_minor):
            e.raw(ln)
        return Outcome("launch", "config_invalid", ["--speculative-dflash-block-size 16"],
                       must_not=[f"--speculative-dflash-block-size {bs}", "--mem-fraction-static"], exit="exit1",
                       notes=f"--speculative-dflash-block-size {bs}: DFLASH needs a positive block size (the draft "
                             "checkpoint's, typically 16).")
    err = "ValueError: DFLASH speculative decoding requires setting --speculative-draft-model-path."
    for ln in traceback(sf.args_main(d) + [F("sglang/srt/arg_groups/speculative_hook.py", 214,
                                             "_handle_dflash", "raise ValueError(")], err, d.site, d.py_minor):
        e.raw(ln)
    return Outcome("launch", "config_invalid", ["--speculative-draft-model-path"],
                   fix_other="point it at the DFLASH draft checkpoint that matches the target model",
                   must_not=["--mem-fraction-static"], exit="exit1",
                   notes="--speculative-algorithm DFLASH without a draft model: an argument error at start-up.")


def proxy_warmup(run: Run, auth: bool = False) -> Outcome:
    e = run.sg()
    d = e.d
    e.boot("warmup")
    e.hook("warmup")
    proxy = run.rng.choice(["proxy.corp.example:3128", "10.0.0.3:8080", "squid.internal:3128"])
    host, port = proxy.split(":")
    if auth:
        err = (f"requests.exceptions.ProxyError: HTTPConnectionPool(host='{host}', port={port}): Max retries exceeded "
               f"with url: http://127.0.0.1:{d.http_port}/get_model_info (Caused by ProxyError('Unable to connect to "
               "proxy', OSError('Tunnel connection failed: 407 Proxy Authentication Required')))")
    else:
        err = (f"requests.exceptions.ProxyError: HTTPConnectionPool(host='{host}', port={port}): Max retries exceeded "
               f"with url: http://127.0.0.1:{d.http_port}/get_model_info (Caused by ProxyError('Unable to connect to "
               "proxy', NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f2c1a3b9d50>: Failed to "
               "establish a new connection: [Errno 111] Connection refused')))")
    fr = [F("/usr/lib/python3.12/threading.py", 1075, "_bootstrap_inner", "self.run()"),
          F("/usr/lib/python3.12/threading.py", 1012, "run", "self._target(*self._args, **self._kwargs)"),
          F("sglang/srt/entrypoints/http_server.py", 1468, "_wait_and_warmup",
            "res = requests.get(url + \"/get_model_info\", timeout=5, headers=headers)"),
          F("requests/api.py", 73, "get", "return request(\"get\", url, params=params, **kwargs)"),
          F("requests/adapters.py", 694, "send", "raise ProxyError(e, request=request)")]
    e.line(f"Initialization failed. warmup error: {err.split(': ', 1)[1][:160]}", prio=3)
    for ln in e.tb(fr, err):
        e.raw(ln)
    return Outcome("warmup", "config_invalid", [],
                   fix_other="unset http_proxy/HTTPS_PROXY for the service or set no_proxy=127.0.0.1,localhost",
                   must_not=["--mem-fraction-static", "--port"], exit="exit1",
                   notes="The server came up; its own warm-up request to 127.0.0.1 went through the HTTP proxy from "
                         "the environment and failed. Environment settings that break start-up count as "
                         "config_invalid.")


# -- kernel_arch_mismatch ------------------------------------------------------------------
def capture_no_kernel(run: Run) -> Outcome:
    d = run.d
    inner = cuda_error("no kernel image is available for execution on the device", d.v >= (0, 5, 0)).rstrip("\n")
    e = run.sg()
    e.boot("graph_capture")
    e.capture_begin()
    bs = e.capture_bar(max(e.graph_bs()))
    inner_fr, outer = sf.graph_capture(d, [
        F(f"sglang/srt/models/{d.model.sg_module}.py", 455, "forward", "hidden_states = self.model("),
        F("sglang/srt/layers/layernorm.py", 126, "forward_cuda", "out = rmsnorm(x, self.weight.data, "
          "self.variance_epsilon)"),
        F("sgl_kernel/elementwise.py", 43, "rmsnorm", "torch.ops.sgl_kernel.rmsnorm.default(out, input, weight, eps, "
          "enable_pdl)")])
    for r in e.ranks:
        e.log.tick(0.001, 0.2)
        tb = (["Traceback (most recent call last):", *frame_lines(inner_fr, d.site, d.py_minor), *inner.split("\n")]
              + DURING + ["Traceback (most recent call last):", *frame_lines(outer, d.site, d.py_minor)]
              + _wrapper_lines(e, inner))
        e.exception(r, tb)
    e.sigquit()
    return Outcome("graph_capture", "kernel_arch_mismatch", [],
                   fix_other=f"install an sglang/sgl-kernel build with sm_{d.gpu.sm} kernels (a CUDA 12.8+ wheel or "
                             "image) for this GPU",
                   must_not=["--mem-fraction-static", "--cuda-graph-max-bs", "--disable-cuda-graph"], exit="sigkill",
                   notes=f"'Capture cuda graph failed: ... no kernel image is available' on the first batch (bs={bs}): "
                         f"the wrapper is a capture failure, but the wrapped error is a missing kernel for sm_"
                         f"{d.gpu.sm} ({d.gpu.name}).")


def undefined_symbol(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    sym = run.rng.choice(["_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib",
                          "_ZNK3c1010TensorImpl15decref_pyobjectEv", "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"])
    arch = "sm100" if d.gpu.sm >= 100 else "sm90"
    err = f"ImportError: {d.site}/sgl_kernel/{arch}/common_ops.abi3.so: undefined symbol: {sym}"
    fr = [F("<frozen runpy>", 189, "_run_module_as_main"), F("<frozen runpy>", 112, "_get_module_details"),
          F("sglang/launch_server.py", 7, "<module>", "from sglang.srt.entrypoints.http_server import launch_server"),
          F("sglang/srt/entrypoints/http_server.py", 47, "<module>",
            "from sglang.srt.entrypoints.engine import _launch_subprocesses"),
          F("sglang/srt/entrypoints/engine.py", 61, "<module>",
            "from sglang.srt.managers.scheduler import run_scheduler_process"),
          F("sglang/srt/layers/quantization/fp8_kernel.py", 40, "<module>", "from sgl_kernel import ("),
          F("sgl_kernel/__init__.py", 18, "<module>", "common_ops = _load_architecture_specific_ops()"),
          F("sgl_kernel/load_utils.py", 188, "_load_architecture_specific_ops", "raise ImportError(error_msg)")]
    for ln in traceback(fr, err, d.site, d.py_minor):
        e.raw(ln)
    return Outcome("launch", "kernel_arch_mismatch", [],
                   fix_other="reinstall sgl-kernel built for the installed torch (or the matching sglang image)",
                   must_not=["--attention-backend", "--mem-fraction-static"], exit="exit1",
                   notes="The compiled sgl_kernel extension does not link against the installed torch (undefined "
                         "C++ symbol): an ABI mismatch at import, before the server starts.")


def blackwell_gdn_backend(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    want = d.args.get("attention_backend", "fa3")
    err = (f"AssertionError: triton or trtllm_mha backend are the only supported backends on Blackwell GPUs for "
           f"hybrid GDN models, use --attention-backend triton or --attention-backend trtllm_mha to specify the "
           "backend.")
    for ln in traceback(sf.args_main(d) + [F("sglang/srt/arg_groups/model_hook.py", 377, "_handle_hybrid_gdn",
                                             "assert self.attention_backend in (\"triton\", \"trtllm_mha\"), (")],
                        err, d.site, d.py_minor):
        e.raw(ln)
    return Outcome("launch", "kernel_arch_mismatch", ["--attention-backend triton"],
                   must_not=[f"--attention-backend {want}", "--mem-fraction-static"], exit="exit1",
                   secondary="config_invalid",
                   notes=f"--attention-backend {want} has no hybrid-GDN kernels for Blackwell (sm_{d.gpu.sm}); "
                         "the engine rejects it and names the backends that exist.")


def driver_too_old(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    e.boot("dist_init")
    e.each(lambda r: "Init parallel begin." if e.new_par else "Init torch distributed begin.")
    err = cuda_error("CUDA driver version is insufficient for CUDA runtime version", d.v >= (0, 5, 0),
                     search_hint=False)
    fr = sf.dist_init(d)[:-2] + [F("torch/cuda/__init__.py", 567, "set_device", "torch._C._cuda_setDevice(device)")]
    for r in e.ranks:
        e.log.tick(0.001, 0.1)
        e.exception(r, e.tb(fr, err))
    e.sigquit()
    return Outcome("dist_init", "kernel_arch_mismatch", [],
                   fix_other="upgrade the NVIDIA driver (or use an image built for the installed CUDA driver)",
                   must_not=["--mem-fraction-static", "--tp-size"], exit="sigkill",
                   notes="Every rank fails its first CUDA call: the image's CUDA runtime is newer than the host "
                         "driver.")


def flashinfer_jit(run: Run) -> Outcome:
    """FlashInfer JIT-compiles its kernels at attention-backend init; the toolkit does not know the GPU's arch."""
    e = run.sg()
    d = e.d
    e.boot("kernel_init")
    e.hook("kernel_init")
    arch = f"compute_{d.gpu.sm}a"
    err = ("RuntimeError: Ninja build failed. Ninja output:\n"
           f"[1/3] /usr/local/cuda/bin/nvcc -DTORCH_EXTENSION_NAME=batch_decode_with_kv_cache_dtype_q_bf16 "
           f"-gencode=arch={arch},code=sm_{d.gpu.sm}a -c batch_decode.cu -o batch_decode.cuda.o\n"
           "FAILED: batch_decode.cuda.o\n"
           f"nvcc fatal   : Unsupported gpu architecture '{arch}'\n"
           "ninja: build stopped: subcommand failed.")
    fr = sf.scheduler_to_runner(d) + [
        F("sglang/srt/model_executor/model_runner.py", 409, "initialize", "self.init_attention_backend()"),
        F("sglang/srt/model_executor/model_runner.py", 1711, "init_attention_backend",
          "self.attn_backend = self._get_attention_backend()"),
        F("sglang/srt/layers/attention/flashinfer_backend.py", 167, "__init__",
          "self.decode_wrappers.append(BatchDecodeWithPagedKVCacheWrapper("),
        F("flashinfer/decode.py", 744, "__init__", "self._cached_module = get_batch_decode_module("),
        F("flashinfer/jit/cpp_ext.py", 241, "run_ninja", "raise RuntimeError(msg) from e")]
    for r in e.ranks:
        e.log.tick(0.001, 0.2)
        e.exception(r, e.tb(fr, err))
    e.sigquit()
    return Outcome("kernel_init", "kernel_arch_mismatch", ["--attention-backend triton"],
                   fix_other=f"or a CUDA toolkit (12.8+) whose nvcc knows sm_{d.gpu.sm}",
                   must_not=["--mem-fraction-static", "--disable-cuda-graph"], exit="sigkill",
                   notes=f"After the memory pool, FlashInfer JIT-compiles its attention kernels and nvcc rejects "
                         f"{arch}: the toolchain does not support this GPU. The Triton backend needs no nvcc JIT.")
