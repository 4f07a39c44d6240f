"""The effective configuration of one attempt: the raw field map the engine printed (or the command line the
service ran) and the canonical levers it implies (levers.py). Later sources win over earlier ones in this order:
command line < vLLM engine-config line < non-default args / server_args (the engine's own resolved view)."""

from __future__ import annotations

from functools import lru_cache

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass, field
from logdoctor.core.records import SERVICE, Record
from logdoctor.engines import ENGINES, each

# an engine's launch command (engines/<name>.py launch_pattern)
_CMD = rxcache.compile("(?:" + "|".join(e.launch_pattern for e in ENGINES.values() if e.launch_pattern) + ")")
# the environment a log states: CUDA/NCCL/torch, proxies, and each engine's own prefix (Engine.env_prefixes)
_ENGINE_ENV = "".join(f"{p}[A-Z_]+|" for p in each("env_prefixes"))
_ENV = rxcache.compile(
    r"\b(CUDA_VISIBLE_DEVICES|NCCL_[A-Z_]+|"
    + _ENGINE_ENV
    + r"TORCH_[A-Z_]+|PYTORCH_[A-Z_]+|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY)=(\S*)"
)


@dataclass
class Config:
    """The engine's configuration as logged: raw flags, the levers they set, the environment."""

    engine: str
    raw: dict[str, object] = field(default_factory=dict)
    levers: dict[str, object] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)  # "server_args", "non-default args", "command line", ...
    truncated: bool = False
    line: int = 0  # the input line of the main dump (for evidence)
    layers: list[tuple[int, str, dict]] = field(default_factory=list, repr=False)  # each source's own fields
    version: str | None = None

    @property
    def known(self) -> bool:
        return bool(self.sources)


def extract_config(records: list[Record], engine: str, version: str | None) -> Config:
    cfg = Config(engine=engine)
    eng = ENGINES.get(engine)  # its resolved-config hook, command-line grammar and whether its dump is complete
    layers: list[tuple[int, str, dict]] = []  # (rank: later wins, source, values)
    for r in records:
        if r.transport != SERVICE or not r.msg:
            continue
        msg = r.msg
        for k, v in _ENV.findall(msg):
            cfg.env.setdefault(k, v)
        if msg.startswith("server_args="):
            values, truncated = _dump("server_args", msg)
            layers.append((3, "server_args", values))
            cfg.sources.append("server_args")
            cfg.truncated |= truncated
            cfg.line = r.line
        elif "non-default args:" in msg:
            values, truncated = _dump("non-default args", msg)
            layers.append((3, "non-default args", values))
            cfg.sources.append("non-default args")
            cfg.truncated |= truncated
            cfg.line = r.line
        elif "Namespace(" in msg and ("args" in msg[:40]):
            from logdoctor.engines.config_dump import parse_namespace

            d = parse_namespace(msg)
            layers.append((2, "Namespace", d.values))
            cfg.sources.append("Namespace")
            cfg.line = cfg.line or r.line
        elif "with config:" in msg and "LLM engine" in msg:
            layers.append((1, "engine config", dict(_vllm_engine_config(msg))))
            cfg.sources.append("engine config")
        elif _CMD.search(msg) and " --" in msg:
            from logdoctor.engines.config_dump import parse_command_line

            c = parse_command_line(msg, engine if eng is not None and eng.command_line else None)
            if c.args:
                layers.append((0, "command line", dict(c.args)))
                cfg.sources.append("command line")
                cfg.env.update(c.env)
                cfg.line = cfg.line or r.line
        elif eng is not None and eng.resolved_config is not None:
            resolved = eng.resolved_config(msg)
            if resolved:
                layers.append((-1, "resolved", resolved))  # only fills what nothing else set
    cfg.layers = sorted(layers, key=lambda x: x[0])
    cfg.version = version
    cfg.raw = _merge(cfg.layers)
    from logdoctor.engines import levers

    cfg.levers = levers.levers_from_config(engine, version, cfg.raw, fill_defaults=_fill(cfg))
    return cfg


def _merge(layers: list[tuple[int, str, dict]], only: set[str] | None = None) -> dict[str, object]:
    raw: dict[str, object] = {}
    for _, source, vals in layers:
        if only is not None and source not in only:
            continue
        for k, v in vals.items():
            if v is None and k in raw:
                continue
            raw[k] = v
    return raw


def _fill(cfg: Config) -> bool:
    eng = ENGINES.get(cfg.engine)
    return eng is not None and eng.config_complete and cfg.known


def comparable_levers(configs: list[Config]) -> list[dict[str, object]] | None:
    """The levers of several attempts' configs, read from the sources they all logged, so that a difference is a
    change of configuration and not of what was logged: vLLM's "with config:" line states the resolved dtype
    (torch.bfloat16) where an attempt cut before it only has its non-default args, whose missing dtype means the
    default, auto. The values an engine computes at start-up (SGLang's "max_total_num_tokens=..., max_running_requests
    =..." line: the `resolved` layer) are not configuration: they follow the free memory, so they are left out.
    None when the attempts share no source (nothing can be compared)."""
    if not configs:
        return []
    common = set.intersection(*({src for _, src, _ in c.layers} for c in configs)) - {"resolved"}
    if not common:
        return None
    if all({src for _, src, _ in c.layers} == common for c in configs):
        return [c.levers for c in configs]
    from logdoctor.engines import levers

    return [
        levers.levers_from_config(c.engine, c.version, _merge(c.layers, common), fill_defaults=_fill(c))
        for c in configs
    ]


def _dump(kind: str, msg: str) -> tuple[dict[str, object], bool]:
    """A config dump's fields and whether it was cut, as a fresh copy (callers may change what they are given)."""
    values, truncated = _parsed_dump(kind, msg)
    return _copy(values), truncated


@lru_cache(maxsize=256)
def _parsed_dump(kind: str, msg: str) -> tuple[dict[str, object], bool]:
    """SGLang's server_args / vLLM's non-default args, parsed once per text: the same dump comes back for every
    restart and every host of a deploy (triage, eval, a history), and a repr that is not a plain literal needs the
    pyparsing grammar (~1-2 ms)."""
    from logdoctor.engines.config_fast import parse_py_dict, parse_server_args

    d = parse_server_args(msg) if kind == "server_args" else parse_py_dict(msg)
    return d.values, d.truncated


def _copy(v):
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    if isinstance(v, set):
        return set(v)
    return v  # str, numbers, bools, None, tuples: immutable


@lru_cache(maxsize=256)
def _vllm_engine_config(msg: str) -> tuple[tuple[str, object], ...]:
    """The flag fields of vLLM's "with config:" line (scalars only). Its grammar needs pyparsing (~2 ms a line), and
    the same line comes back for every restart and every host of a deploy, so the parse is remembered per text."""
    from logdoctor.engines.config_dump import parse_vllm_engine_config

    d = parse_vllm_engine_config(msg)
    return tuple(
        (("max_model_len" if k == "max_seq_len" else k), v)
        for k, v in d.values.items()
        if k in _VLLM_ENGINE_CONFIG_KEYS
    )


# the fields of vLLM's "with config:" line that are flags a user sets
_VLLM_ENGINE_CONFIG_KEYS = {
    "max_seq_len",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "enforce_eager",
    "kv_cache_dtype",
    "quantization",
    "dtype",
    "trust_remote_code",
    "disable_custom_all_reduce",
}
