"""The effective configuration of one attempt: the raw field map the engine printed (or the command line the
service ran) and the canonical levers it implies (levers.py). Later sources win over earlier ones in this order:
command line < vLLM engine-config line < non-default args / server_args (the engine's own resolved view)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from logdoctor.records import SERVICE, Record

_CMD = re.compile(r"(?:sglang\.launch_server|vllm\.entrypoints|(?:^|\s|/)vllm serve\s|text-generation-launcher|trtllm-serve|lmdeploy serve)")
_ENV = re.compile(r"\b(CUDA_VISIBLE_DEVICES|NCCL_[A-Z_]+|SGLANG_[A-Z_]+|VLLM_[A-Z_]+|TORCH_[A-Z_]+|PYTORCH_[A-Z_]+|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY)=(\S*)")
# resolved values SGLang prints after start-up (scheduler summary) fill levers the server_args left as None
_RESOLVED = {"max_running_requests": "max_running_requests", "context_len": "context_length",
             "chunked_prefill_size": "chunked_prefill_size", "max_total_num_tokens": "max_total_tokens"}


@dataclass
class Config:
    engine: str
    raw: dict[str, object] = field(default_factory=dict)
    levers: dict[str, object] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)   # "server_args", "non-default args", "command line", ...
    truncated: bool = False
    line: int = 0                                        # the input line of the main dump (for evidence)

    @property
    def known(self) -> bool:
        return bool(self.sources)


def extract_config(records: list[Record], engine: str, version: str | None) -> Config:
    cfg = Config(engine=engine)
    layers: list[tuple[int, dict]] = []
    for r in records:
        if r.transport != SERVICE or not r.msg:
            continue
        msg = r.msg
        for k, v in _ENV.findall(msg):
            cfg.env.setdefault(k, v)
        if msg.startswith("server_args="):
            from logdoctor.engines.config_fast import parse_server_args
            d = parse_server_args(msg)
            layers.append((3, d.values))
            cfg.sources.append("server_args")
            cfg.truncated |= d.truncated
            cfg.line = r.line
        elif "non-default args:" in msg:
            from logdoctor.engines.config_fast import parse_py_dict
            d = parse_py_dict(msg)
            layers.append((3, d.values))
            cfg.sources.append("non-default args")
            cfg.truncated |= d.truncated
            cfg.line = r.line
        elif "Namespace(" in msg and ("args" in msg[:40]):
            from logdoctor.engines.config_dump import parse_namespace
            d = parse_namespace(msg)
            layers.append((2, d.values))
            cfg.sources.append("Namespace")
            cfg.line = cfg.line or r.line
        elif "with config:" in msg and "LLM engine" in msg:
            from logdoctor.engines.config_dump import parse_vllm_engine_config
            d = parse_vllm_engine_config(msg)
            vals = {("max_model_len" if k == "max_seq_len" else k): v for k, v in d.values.items()
                    if k in _VLLM_ENGINE_CONFIG_KEYS}
            layers.append((1, vals))
            cfg.sources.append("engine config")
        elif _CMD.search(msg) and " --" in msg:
            from logdoctor.engines.config_dump import parse_command_line
            c = parse_command_line(msg, engine if engine in ("sglang", "vllm") else None)
            if c.args:
                layers.append((0, dict(c.args)))
                cfg.sources.append("command line")
                cfg.env.update(c.env)
                cfg.line = cfg.line or r.line
        elif engine == "sglang" and "max_total_num_tokens=" in msg:
            vals = dict(re.findall(r"(\w+)=(-?[\d.]+)", msg))
            resolved = {_RESOLVED[k]: _num(v) for k, v in vals.items() if k in _RESOLVED}
            layers.append((-1, resolved))   # only fills what nothing else set
        elif engine == "vllm":
            m = re.search(r"Using max model len (\d+)", msg)
            if m:
                layers.append((-1, {"max_model_len": int(m.group(1))}))
            m = re.search(r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)", msg)
            if m:
                layers.append((-1, {"max_num_batched_tokens": int(m.group(1))}))
    for _, vals in sorted(layers, key=lambda x: x[0]):
        for k, v in vals.items():
            if v is None and k in cfg.raw:
                continue
            cfg.raw[k] = v
    from logdoctor import levers
    cfg.levers = levers.levers_from_config(engine, version, cfg.raw, fill_defaults=engine == "vllm" and cfg.known)
    return cfg


# the fields of vLLM's "with config:" line that are flags a user sets
_VLLM_ENGINE_CONFIG_KEYS = {"max_seq_len", "tensor_parallel_size", "pipeline_parallel_size", "enforce_eager",
                            "kv_cache_dtype", "quantization", "dtype", "trust_remote_code", "disable_custom_all_reduce"}


def _num(v: str):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v
