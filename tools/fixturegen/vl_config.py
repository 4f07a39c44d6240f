"""vLLM endings about what was asked for: model files and argument values."""
from __future__ import annotations

from . import vllm_frames as vf
from .case import Outcome, Run
from .pyerr import F, cuda_error
from .vl_env import _api_head, _api_tb, _config_frames


# -- model files ---------------------------------------------------------------------
def bad_repo(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.launch()
    name = d.path
    err = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
           f"  Value error, Invalid repository ID or local directory specified: '{name}'.\n"
           "Please verify the following requirements:\n"
           "1. Provide a valid Hugging Face repository ID.\n"
           "2. Specify a local directory that contains a recognized configuration file.\n"
           "   - For Hugging Face models: ensure the presence of a 'config.json'.\n"
           "   - For Mistral models: ensure the presence of a 'params.json'.\n"
           f" [type=value_error, input_value=ArgsKwargs((), {{'model': '{name}', 'runner': 'auto', ...}}), "
           "input_type=ArgsKwargs]\n"
           "    For further information visit https://errors.pydantic.dev/2.12/v/value_error")
    _api_tb(v, _config_frames(v, [F("vllm/engine/arg_utils.py", 1189, "create_model_config", "return ModelConfig(",
                                    "       ^^^^^^^^^^^^")]), err)
    return Outcome("launch", "model_load_error", [],
                   fix_other=f"fix the model id / path ('{name}' is neither a local folder nor a Hub repo)",
                   must_not=["--trust-remote-code", "--gpu-memory-utilization"], exit="exit1",
                   notes="The model argument names no local folder with a config and no Hub repository.")


def gated(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.launch()
    rid = "Root=1-" + "".join(run.rng.choice("0123456789abcdef") for _ in range(8)) + "-" + "".join(
        run.rng.choice("0123456789abcdef") for _ in range(24))
    err = (f"huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: {rid})\n\n"
           f"Cannot access gated repo for url https://huggingface.co/{d.model.repo}/resolve/main/config.json.\n"
           f"Access to model {d.model.repo} is restricted. You must have access to it and be authenticated to access "
           "it. Please log in.")
    fr = _config_frames(v, [F("vllm/engine/arg_utils.py", 1189, "create_model_config", "return ModelConfig("),
                            F("vllm/transformers_utils/config.py", 378, "get_config",
                              "config_dict, _ = PretrainedConfig.get_config_dict("),
                            F("huggingface_hub/utils/_http.py", 426, "hf_raise_for_status",
                              "raise _format(GatedRepoError, message, response) from e")])
    _api_tb(v, fr, err)
    return Outcome("launch", "model_load_error", [],
                   fix_other="give the service an HF_TOKEN with access to the gated repo (or a local copy)",
                   must_not=["--trust-remote-code", "--gpu-memory-utilization"], exit="exit1",
                   notes="The Hub refuses the config download (401 gated repo): no token with access in the "
                         "service environment.")


def missing_shard(run: Run, truncated: bool = False) -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("weight_load")
    v.load_begin()
    k = run.rng.randint(3, d.model.shards - 1)
    v.load_bar(stop=(k - 1) / d.model.shards)
    fname = f"{d.path}/model-{k:05d}-of-{d.model.shards:05d}.safetensors"
    if truncated:
        err = "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer"
        why = f"shard {k} of {d.model.shards} is truncated (an interrupted download)"
    else:
        err = f"FileNotFoundError: [Errno 2] No such file or directory: '{fname}'"
        why = f"shard {k} of {d.model.shards} is missing"
    v.fail_in_worker(0, vf.load(d, "weights"), err, "executor", at_start=True)
    return Outcome("weight_load", "model_load_error", [], fix_other=f"re-sync the checkpoint: {why}",
                   must_not=["--gpu-memory-utilization", "--tensor-parallel-size"], exit="exit1",
                   notes=f"Loading stops part-way: {why}. The files, not the config.")


def remote_code(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.launch()
    err = (f"ValueError: The repository {d.path} contains custom code which must be executed to correctly load the "
           f"model. You can inspect the repository content at https://hf.co/{d.path}.\n"
           "Please pass the argument `trust_remote_code=True` to allow custom code to be run.")
    fr = _config_frames(v, [F("vllm/engine/arg_utils.py", 1189, "create_model_config", "return ModelConfig("),
                            F("vllm/transformers_utils/config.py", 365, "get_config",
                              "config = AutoConfig.from_pretrained("),
                            F("transformers/dynamic_module_utils.py", 746, "resolve_trust_remote_code",
                              "raise ValueError(")])
    _api_tb(v, fr, err)
    return Outcome("launch", "model_load_error", ["--trust-remote-code"], must_not=["--gpu-memory-utilization"],
                   exit="exit1", notes="The checkpoint ships custom modelling code; it needs --trust-remote-code.")


def unsupported_arch(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.launch()
    known = ["AquilaForCausalLM", "ArcticForCausalLM", "BaiChuanForCausalLM", "DeepseekV2ForCausalLM",
             "DeepseekV3ForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM", "GraniteForCausalLM",
             "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Phi3ForCausalLM", "Qwen2ForCausalLM",
             "Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"]
    err = (f"ValueError: Model architectures ['{d.model.arch}'] are not supported for now. Supported architectures: "
           f"dict_keys({known!r})")
    fr = _config_frames(v, [F("vllm/engine/arg_utils.py", 1002, "create_model_config", "return ModelConfig("),
                            F("vllm/config.py", 566, "__init__",
                              "self.multimodal_config = self._init_multimodal_config("),
                            F("vllm/model_executor/models/registry.py", 489, "inspect_model_cls",
                              "return self._raise_for_unsupported(architectures)"),
                            F("vllm/model_executor/models/registry.py", 439, "_raise_for_unsupported",
                              "raise ValueError(")])
    _api_tb(v, fr, err)
    return Outcome("launch", "model_load_error", [],
                   fix_other=f"upgrade vLLM to a release that supports {d.model.arch} (or try --model-impl "
                             "transformers)", must_not=["--gpu-memory-utilization", "--tensor-parallel-size"],
                   exit="exit1",
                   notes=f"vLLM {d.version} predates {d.model.arch}; nothing failed to import before the error.")


# -- config ------------------------------------------------------------------------------
def _pyd(field: str, msg: str, args: str) -> str:
    return (f"pydantic_core._pydantic_core.ValidationError: 1 validation error for {field}\n"
            f"  Value error, {msg} [type=value_error, input_value=ArgsKwargs((), {{{args}}}), "
            "input_type=ArgsKwargs]\n"
            "    For further information visit https://errors.pydantic.dev/2.12/v/value_error")


def heads_tp(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.launch()
    v.config()
    msg = (f"Total number of attention heads ({d.model.heads}) must be divisible by tensor parallel size ({d.tp}).")
    fr = _api_head(v) + [F("vllm/engine/arg_utils.py", 1502, "create_engine_config", "config = VllmConfig(",
                           "         ^^^^^^^^^^^")]
    _api_tb(v, fr, _pyd("VllmConfig", msg, "'model_config': ModelConfig(...), ..."))
    good = [t for t in (1, 2, 4, 8) if d.model.heads % t == 0 and t < d.tp]
    tp = good[-1]
    return Outcome("launch", "config_invalid", [f"--tensor-parallel-size {tp}"],
                   must_not=[f"--tensor-parallel-size {d.tp}", "--gpu-memory-utilization"], exit="exit1",
                   notes=f"{d.model.heads} attention heads cannot be split over {d.tp} ranks: a config check at "
                         "start-up.")


def max_len_too_long(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.launch()
    want = v.max_len
    have = d.model.ctx
    msg = (f"User-specified max_model_len ({want}) is greater than the derived max_model_len "
           f"(max_position_embeddings={have} or model_max_length=None in model's config.json). To allow overriding "
           "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used "
           "with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding derived "
           "max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding derived "
           "max_model_len will cause a CUDA array out-of-bounds error.")
    fr = _config_frames(v, [F("vllm/engine/arg_utils.py", 1189, "create_model_config", "return ModelConfig(",
                              "       ^^^^^^^^^^^^")])
    _api_tb(v, fr, _pyd("ModelConfig", msg, f"'model': '{d.path}', 'max_model_len': {want}, ..."))
    return Outcome("launch", "config_invalid", [f"--max-model-len {have}"],
                   must_not=[f"--max-model-len {want}", "--gpu-memory-utilization"], exit="exit1",
                   notes=f"--max-model-len {want} is above the model's {have}; rejected at config time.")


def batched_lt_len(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.launch()
    v.config()
    err = (f"ValueError: max_num_batched_tokens ({v.mnbt}) is smaller than max_model_len ({v.max_len}). This "
           "effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer "
           "sequences. Please increase max_num_batched_tokens or decrease max_model_len.")
    fr = _api_head(v) + [F("vllm/engine/arg_utils.py", 1290, "create_engine_config",
                           "scheduler_config = SchedulerConfig("),
                         F("<string>", 22, "__init__"),
                         F("vllm/config.py", 2039, "__post_init__", "self._verify_args()"),
                         F("vllm/config.py", 2052, "_verify_args", "raise ValueError(")]
    _api_tb(v, fr, err)
    return Outcome("launch", "config_invalid", [f"--max-num-batched-tokens {v.max_len}"],
                   fix_other="or enable chunked prefill",
                   must_not=[f"--max-num-batched-tokens {v.mnbt}", "--gpu-memory-utilization"], exit="exit1",
                   notes="With chunked prefill off, one batch must hold a whole max-length prompt.")


def bf16_old_gpu(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.launch()
    v.config()
    v.engine_init()
    err = (f"ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
           f"{d.gpu.name} GPU has compute capability {d.gpu.sm // 10}.{d.gpu.sm % 10}. You can use float16 instead "
           "by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.")
    fr = [F("vllm/v1/worker/gpu_worker.py", 160, "init_device", "_check_if_gpu_supports_dtype(self.model_config.dtype)"),
          F("vllm/v1/worker/gpu_worker.py", 732, "_check_if_gpu_supports_dtype", "raise ValueError(")]
    v.fail_in_worker(0, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    return Outcome("launch", "config_invalid", ["--dtype half"], must_not=["--gpu-memory-utilization"], exit="exit1",
                   notes=f"The model is bf16 and the {d.gpu.name} (sm_{d.gpu.sm}) has no bf16: pass --dtype half.")


def visible_devices(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("dist_init")
    err = cuda_error("invalid device ordinal", d.v >= (0, 11))
    fr = [F("vllm/v1/worker/gpu_worker.py", 162, "init_device", "torch.cuda.set_device(self.device)"),
          F("torch/cuda/__init__.py", 567, "set_device", "torch._C._cuda_setDevice(device)")]
    v.worker_error(3, vf.worker_main(d, "self.worker.init_device()") + fr, err, at_start=True)
    v.fail_in_worker(2, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    return Outcome("launch", "config_invalid", ["--tensor-parallel-size 2"],
                   fix_other="or expose four GPUs in CUDA_VISIBLE_DEVICES (it lists two)",
                   must_not=["--gpu-memory-utilization", "--disable-custom-all-reduce"], exit="exit1",
                   confidence="medium",
                   notes="Ranks 2 and 3 get 'invalid device ordinal': the unit's CUDA_VISIBLE_DEVICES exposes two "
                         "GPUs for TP4. An environment setting, no hardware evidence (no Xid).")
