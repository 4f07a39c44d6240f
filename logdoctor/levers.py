"""Canonical levers <-> engine flags, defaults, and the value arithmetic of the fix planner.

Why: rules and the planner speak of levers (``mem_fraction``, ``graphs_off``, ...; design.md "Levers") so that one
rule serves SGLang and vLLM and survives flag renames. This module is the single table that maps each lever to the
engine's own flag (by version: SGLang renamed its CUDA-graph flags in 0.5.17), its python field names (to read a
config dump or a command line back), its default, and the bounds that ``step`` respects. Facts:
``shared/reference/engines.md`` section D (SGLang 0.5.10/0.5.23, vLLM 0.33). Pure: no I/O, the table is immutable.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from logdoctor.vocab import OPS

__all__ = [
    "Spelling", "Field", "Side", "Lever", "LEVERS", "ENGINES", "OPS",
    "flag_for", "render", "default_for", "lever_for_field", "levers_from_config", "step", "version_tuple",
]

ENGINES = ("sglang", "vllm")


@dataclass(frozen=True)
class Spelling:
    """One way an engine spells a lever on its command line.

    ``since``/``until``: version range [since, until). ``switch``: a flag without value (present = on).
    ``values``: lever value -> flag value, for flags that take a word (``--cuda-graph-backend-decode disabled``);
    a lever value missing from it is not expressible. ``attach``: written as one token (``-O0``).
    ``needs_field``: used only when the config shows that field (SGLang 0.5.17+ graph backends).
    ``hint_field``: with the version unknown, that field in the config shows this spelling is the current one."""

    flag: str
    since: str | None = None
    until: str | None = None
    switch: bool = False
    values: tuple[tuple[object, str], ...] = ()
    attach: bool = False
    needs_field: str | None = None
    hint_field: str | None = None


@dataclass(frozen=True)
class Field:
    """A python field (dotted path into nested dicts) holding the lever, and how to read it as the lever value
    (``read`` returns None when the field says nothing about the lever)."""

    path: str
    read: Callable[[object], object] | None = None


@dataclass(frozen=True)
class Side:
    """A lever on one engine: spellings (oldest first), fields (canonical first) and version-dependent defaults
    as ``(since, value)`` pairs, oldest first (None = resolved at start-up)."""

    flags: tuple[Spelling, ...]
    fields: tuple[Field, ...]
    defaults: tuple[tuple[str | None, object], ...] = ((None, None),)


@dataclass(frozen=True)
class Lever:
    """A canonical knob. ``kind``: fraction | float | int | bool | str | enum. ``growth`` (ints): how ``raise``
    moves -- double, pow2 (parallel sizes) or increment (ports). ``align``: large results of int arithmetic are
    multiples of it. ``up``/``down``: additive steps for fractions, factor for floats."""

    name: str
    kind: str
    sglang: Side | None
    vllm: Side | None
    bounds: tuple[float | None, float | None] = (None, None)
    growth: str = "double"
    align: int = 1
    up: float = 0.0
    down: float = 0.0
    choices: tuple[str, ...] = ()
    note: str = ""

    def side(self, engine: str | None) -> Side | None:
        return {"sglang": self.sglang, "vllm": self.vllm}.get((engine or "").lower())


# --------------------------------------------------------------------------------------------------------------------
# readers for fields that encode a lever indirectly

def _equals(word: str) -> Callable[[object], object]:
    return lambda v: (str(v).lower() == word) if v is not None else None


def _negate(v: object) -> object:
    return (not v) if isinstance(v, bool) else None


def _nonzero(v: object) -> object:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return v != 0
    m = re.fullmatch(r"O?(\d)", str(v).strip())
    return int(m.group(1)) != 0 if m else None


def _spec_method(v: object) -> object:
    """vLLM ``speculative_config``: a dict, a JSON string, or a raw ``SpeculativeConfig(method='eagle3', ...)``."""
    if isinstance(v, dict):
        return v.get("method")
    if isinstance(v, str):
        m = re.search(r"""["']?method["']?\s*[:=]\s*["']([\w.-]+)""", v)
        return m.group(1) if m else None
    return None


def _S(flag: str, **kw) -> Spelling:  # table shorthand
    return Spelling(flag, **kw)


def _F(*paths: str, read: Callable[[object], object] | None = None) -> tuple[Field, ...]:
    return tuple(Field(p, read) for p in paths)


def _side(flags: Spelling | tuple[Spelling, ...], fields: tuple[Field, ...], default: object = None,
          defaults: tuple[tuple[str | None, object], ...] | None = None) -> Side:
    return Side(flags if isinstance(flags, tuple) else (flags,), fields, defaults or ((None, default),))


_NEW_GRAPHS = "0.5.17"  # SGLang: cuda_graph_{backend,max_bs,bs}_{decode,prefill}

_TABLE: tuple[Lever, ...] = (
    Lever("mem_fraction", "fraction",
          _side(_S("--mem-fraction-static"), _F("mem_fraction_static")),  # None: auto ~0.8-0.9 by GPU and TP
          _side(_S("--gpu-memory-utilization"), _F("gpu_memory_utilization"),
                defaults=((None, 0.9), ("0.33", 0.92))),
          bounds=(0.05, 0.95), up=0.04, down=0.05),
    Lever("context_length", "int",
          _side(_S("--context-length"), _F("context_length", "context_len")),
          _side(_S("--max-model-len"), _F("max_model_len", "max_seq_len")),
          bounds=(1, None), align=1024),
    Lever("max_running", "int",
          _side(_S("--max-running-requests"), _F("max_running_requests")),
          _side(_S("--max-num-seqs"), _F("max_num_seqs")),  # 1024 on >=70 GB non-A100 GPUs, else 256
          bounds=(1, None)),
    Lever("prefill_chunk", "int",
          _side(_S("--chunked-prefill-size"), _F("chunked_prefill_size")),  # -1 disables chunking
          _side(_S("--max-num-batched-tokens"), _F("max_num_batched_tokens")),  # 2048..16384 by GPU
          bounds=(1, None), align=256),
    Lever("max_prefill_tokens", "int",
          _side(_S("--max-prefill-tokens"), _F("max_prefill_tokens"), 16384), None, bounds=(1, None)),
    Lever("max_total_tokens", "int",
          _side(_S("--max-total-tokens"), _F("max_total_tokens")), None, bounds=(1, None)),
    Lever("graph_max_bs", "int",
          _side((_S("--cuda-graph-max-bs", until=_NEW_GRAPHS),
                 _S("--cuda-graph-max-bs-decode", since=_NEW_GRAPHS, hint_field="cuda_graph_max_bs_decode")),
                _F("cuda_graph_max_bs_decode", "cuda_graph_max_bs")),
          _side(_S("--max-cudagraph-capture-size"),
                _F("max_cudagraph_capture_size", "compilation_config.max_cudagraph_capture_size",
                  "compilation_config.max_capture_size")),
          bounds=(1, None), growth="pow2"),
    Lever("graphs_off", "bool",
          # the classic flag stays a deprecated alias in 0.5.17+, so it is the safe rendering unless the config
          # shows the new backend field
          _side((_S("--disable-cuda-graph", switch=True),
                 _S("--cuda-graph-backend-decode", since=_NEW_GRAPHS, values=((True, "disabled"), (False, "full")),
                   needs_field="cuda_graph_backend_decode", hint_field="cuda_graph_backend_decode")),
                _F("disable_cuda_graph", "disable_decode_cuda_graph")
                + _F("cuda_graph_backend_decode", read=_equals("disabled")), False),
          _side(_S("--enforce-eager", switch=True),
                _F("enforce_eager") + _F("compilation_config.cudagraph_mode", read=_equals("none")), False)),
    Lever("piecewise_graph_off", "bool",
          _side((_S("--disable-piecewise-cuda-graph", switch=True, until=_NEW_GRAPHS),
                 _S("--cuda-graph-backend-prefill", since=_NEW_GRAPHS, values=((True, "disabled"), (False, "full")),
                   hint_field="cuda_graph_backend_prefill")),
                _F("disable_piecewise_cuda_graph", "disable_prefill_cuda_graph")
                + _F("cuda_graph_backend_prefill", read=_equals("disabled")), False),
          None, note="vLLM: piecewise is part of cudagraph_mode (-cc), no single flag"),
    Lever("prefill_graph_max", "int",
          _side((_S("--piecewise-cuda-graph-max-tokens", until=_NEW_GRAPHS),
                 _S("--cuda-graph-max-bs-prefill", since=_NEW_GRAPHS, hint_field="cuda_graph_max_bs_prefill")),
                _F("cuda_graph_max_bs_prefill", "piecewise_cuda_graph_max_tokens"),
                defaults=((None, None), (_NEW_GRAPHS, 2048))),
          None, bounds=(1, None), growth="pow2"),
    Lever("torch_compile", "bool",
          _side(_S("--enable-torch-compile", switch=True), _F("enable_torch_compile"), False),
          # vLLM compiles by default (V1, 0.8+); only "off" has a flag: -O0
          _side(_S("-O", attach=True, values=((False, "0"),)),
                _F("optimization_level", "compilation_config.mode", "compilation_config.level", read=_nonzero),
                defaults=((None, False), ("0.8", True)))),
    Lever("torch_compile_max_bs", "int",
          _side(_S("--torch-compile-max-bs"), _F("torch_compile_max_bs"), 32), None, bounds=(1, None), growth="pow2"),
    Lever("tp_size", "int",
          _side(_S("--tp-size"), _F("tp_size", "tensor_parallel_size"), 1),
          _side(_S("--tensor-parallel-size"), _F("tensor_parallel_size"), 1),
          bounds=(1, None), growth="pow2"),
    Lever("pp_size", "int",
          _side(_S("--pp-size"), _F("pp_size", "pipeline_parallel_size"), 1),
          _side(_S("--pipeline-parallel-size"), _F("pipeline_parallel_size"), 1),
          bounds=(1, None), growth="pow2"),
    Lever("dp_size", "int",
          _side(_S("--dp-size"), _F("dp_size", "data_parallel_size"), 1),
          _side(_S("--data-parallel-size"), _F("data_parallel_size"), 1),
          bounds=(1, None), growth="pow2"),
    Lever("ep_size", "int",
          _side(_S("--ep-size"), _F("ep_size", "expert_parallel_size"), 1), None, bounds=(1, None), growth="pow2"),
    Lever("expert_parallel", "bool",
          None, _side(_S("--enable-expert-parallel", switch=True), _F("enable_expert_parallel"), False)),
    Lever("attention_backend", "str",
          _side(_S("--attention-backend"), _F("attention_backend")),
          _side(_S("--attention-backend"), _F("attention_backend")),
          note="older vLLM: env VLLM_ATTENTION_BACKEND"),
    Lever("custom_all_reduce_off", "bool",
          _side(_S("--disable-custom-all-reduce", switch=True), _F("disable_custom_all_reduce"), False),
          _side(_S("--disable-custom-all-reduce", switch=True), _F("disable_custom_all_reduce"), False)),
    Lever("prefix_cache_off", "bool",
          _side(_S("--disable-radix-cache", switch=True), _F("disable_radix_cache"), False),
          _side(_S("--no-enable-prefix-caching", switch=True),
                _F("no_enable_prefix_caching") + _F("enable_prefix_caching", read=_negate), False)),
    Lever("mamba_ratio", "float",
          _side(_S("--mamba-full-memory-ratio"), _F("mamba_full_memory_ratio"), 0.9), None,
          bounds=(0.05, 4.0), up=1.5, down=1.5, note="mamba-state memory / full-KV memory"),
    Lever("max_mamba_cache", "int",
          _side(_S("--max-mamba-cache-size"), _F("max_mamba_cache_size")), None, bounds=(1, None)),
    Lever("mamba_strategy", "enum",
          _side(_S("--mamba-scheduler-strategy"), _F("mamba_scheduler_strategy"), "auto"), None,
          choices=("auto", "no_buffer", "extra_buffer")),
    Lever("port", "int",
          _side(_S("--port"), _F("port"), 30000), _side(_S("--port"), _F("port"), 8000),
          bounds=(1, 65535), growth="increment"),
    Lever("nccl_port", "int",
          _side(_S("--nccl-port"), _F("nccl_port")), None, bounds=(1, 65535), growth="increment"),
    Lever("dist_init_addr", "str", _side(_S("--dist-init-addr"), _F("dist_init_addr")), None),
    Lever("kv_cache_dtype", "enum",
          _side(_S("--kv-cache-dtype"), _F("kv_cache_dtype"), "auto"),
          _side(_S("--kv-cache-dtype"), _F("kv_cache_dtype"), "auto"),
          choices=("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16")),
    Lever("quantization", "str",
          _side(_S("--quantization"), _F("quantization")), _side(_S("--quantization"), _F("quantization"))),
    Lever("dtype", "enum",
          _side(_S("--dtype"), _F("dtype"), "auto"), _side(_S("--dtype"), _F("dtype"), "auto"),
          choices=("auto", "half", "float16", "bfloat16", "float", "float32")),
    Lever("trust_remote_code", "bool",
          _side(_S("--trust-remote-code", switch=True), _F("trust_remote_code"), False),
          _side(_S("--trust-remote-code", switch=True), _F("trust_remote_code"), False)),
    Lever("speculative_algorithm", "str",
          _side(_S("--speculative-algorithm"), _F("speculative_algorithm")),
          _side(_S("--spec-method", since="0.33"), _F("spec_method") + _F("speculative_config", read=_spec_method)),
          note="vLLM before 0.33: only --speculative-config JSON (not rendered)"),
    Lever("max_seq_len_to_capture", "int",
          None, _side(_S("--max-seq-len-to-capture", until="0.11"), _F("max_seq_len_to_capture"),
                      defaults=((None, 8192), ("0.11", None))),
          bounds=(1, None), align=1024, note="vLLM only; gone from current builds (not in 0.33)"),
    Lever("swap_space", "int", None, _side(_S("--swap-space"), _F("swap_space"), 4), bounds=(0, None),
          note="GiB of CPU swap per GPU"),
    Lever("cpu_offload", "int",
          _side(_S("--cpu-offload-gb"), _F("cpu_offload_gb"), 0), _side(_S("--cpu-offload-gb"), _F("cpu_offload_gb"), 0),
          bounds=(0, None), note="GiB of weights kept in host RAM per GPU; host memory, not GPU memory"),
    Lever("watchdog_timeout", "int",
          _side(_S("--watchdog-timeout"), _F("watchdog_timeout"), 300), None, bounds=(1, None)),
    Lever("dist_timeout", "int",
          _side(_S("--dist-timeout"), _F("dist_timeout")),
          _side(_S("--distributed-timeout-seconds"), _F("distributed_timeout_seconds")), bounds=(1, None)),
    Lever("shm", "str",
          _side((), _F("shm_size")), _side((), _F("shm_size")),
          note="no engine flag: docker --shm-size / the host's /dev/shm (CommandLine.launcher['shm_size'])"),
)

LEVERS: Mapping[str, Lever] = MappingProxyType({lv.name: lv for lv in _TABLE})


def _field_index() -> Mapping[tuple[str, str], str]:
    """(engine, field-or-flag name) -> lever; flags are indexed by their dest name (``--enforce-eager`` ->
    ``enforce_eager``) so a command line's keys resolve even where no dump shows the field."""
    idx: dict[tuple[str, str], str] = {}
    for lv in _TABLE:
        for eng in ENGINES:
            side = lv.side(eng)
            if side is None:
                continue
            names = [f.path for f in side.fields] + [_dest(sp.flag) for sp in side.flags]
            for n in names:
                idx.setdefault((eng, n), lv.name)
    return MappingProxyType(idx)


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


_FIELDS = _field_index()


# --------------------------------------------------------------------------------------------------------------------
# versions and rendering

def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """``"v0.5.10.post1"`` -> (0, 5, 10, 0); None when absent or unreadable. Padded so that 0.33 == 0.33.0.

    Bounds as a timeline may report them count too: ``>=0.5.23`` / ``==`` / ``~=`` -> that version; ``<0.5.17`` ->
    just below it (every 0.5.16.x), which is all a version range here needs."""
    if not version:
        return None
    m = re.match(r"\s*(<=|>=|==|~=|<|>)?\s*v?(\d+(?:\.\d+)*)", str(version))
    if not m:
        return None
    t = list(int(x) for x in m.group(2).split("."))[:4]
    t += [0] * (4 - len(t))
    if m.group(1) == "<":
        i = max((k for k, x in enumerate(t) if x), default=None)
        if i is None:
            return None
        t[i] -= 1
        t[i + 1:] = [10**6] * (3 - i)
    return tuple(t)


def _in_range(sp: Spelling, vt: tuple[int, ...]) -> bool:
    lo, hi = version_tuple(sp.since), version_tuple(sp.until)
    return (lo is None or vt >= lo) and (hi is None or vt < hi)


def _lever(name: str) -> Lever:
    try:
        return LEVERS[name]
    except KeyError:
        raise ValueError(f"unknown lever {name!r}") from None


def _pick(side: Side, version: str | None, config: Mapping[str, object] | None) -> Spelling | None:
    """The spelling in force: by version when known; else the classic one, unless the config's fields show a
    newer one (a field only newer builds print is as good as a version number)."""
    cfg = config or {}
    vt = version_tuple(version)
    chosen = None
    for sp in side.flags:
        if sp.needs_field and sp.needs_field not in cfg:
            continue
        if vt is not None:
            ok = _in_range(sp, vt)
        else:
            ok = sp.since is None or bool(sp.hint_field and sp.hint_field in cfg)
        if ok:
            chosen = sp  # later spellings are newer: the last that applies wins
    return chosen


def flag_for(lever: str, engine: str, version: str | None = None,
             config: Mapping[str, object] | None = None) -> str | None:
    """The engine's own spelling of ``lever`` (``--mem-fraction-static``), or None where it has no flag.

    For a switch-like lever the text is what turns it away from its default, as a store-true switch would:
    ``--disable-cuda-graph``; SGLang 0.5.17+ ``--cuda-graph-backend-decode disabled`` (chosen only when ``config``,
    the service's raw field map, shows that field in use, since the classic flag stays a deprecated alias);
    vLLM ``-O0`` for torch_compile. ``render`` gives the exact tokens for any value."""
    lv = _lever(lever)
    side = lv.side(engine)
    sp = _pick(side, version, config) if side else None
    if sp is None:
        return None
    if sp.values:
        default = default_for(lever, engine, version)
        flip = (not default) if isinstance(default, bool) else True
        word = next((w for v, w in sp.values if v is flip), None)
        if word is not None:
            return sp.flag + word if sp.attach else f"{sp.flag} {word}"
    return sp.flag


def _fmt(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(round(v, 6))
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def render(lever: str, engine: str, value: object, *, version: str | None = None,
           config: Mapping[str, object] | None = None) -> list[str] | None:
    """Command-line tokens that put ``lever`` at ``value``: ``["--mem-fraction-static", "0.85"]``,
    ``["--disable-cuda-graph"]``, ``["-O0"]``; ``[]`` = drop the switch (a switch turned off); None = this engine
    cannot express it with a flag."""
    side = _lever(lever).side(engine)
    sp = _pick(side, version, config) if side else None
    if sp is None:
        return None
    if sp.switch:
        return [sp.flag] if value is True else []
    if sp.values:
        word = next((w for v, w in sp.values if v == value and type(v) is type(value)), None)
        if word is None:
            return None
        return [sp.flag + word] if sp.attach else [sp.flag, word]
    if value is None:
        return []
    return [sp.flag + _fmt(value)] if sp.attach else [sp.flag, _fmt(value)]


def default_for(lever: str, engine: str, version: str | None = None) -> object:
    """The engine's default for ``lever`` at ``version`` (latest known when None); None = resolved at start-up
    from GPU, model and TP (the log's own summary lines then hold the value) or no such lever on that engine."""
    side = _lever(lever).side(engine)
    if side is None:
        return None
    vt = version_tuple(version)
    value = side.defaults[-1][1]
    if vt is not None:
        for since, v in side.defaults:
            lo = version_tuple(since)
            if lo is None or vt >= lo:
                value = v
    return value


def lever_for_field(engine: str, field: str) -> str | None:
    """The lever a python field (``gpu_memory_utilization``, ``compilation_config.mode``) or flag
    (``--tp-size``) of ``engine`` sets, or None."""
    return _FIELDS.get(((engine or "").lower(), _dest(field)))


# --------------------------------------------------------------------------------------------------------------------
# reading a config

_MISSING = object()


def _get(raw: Mapping[str, object], path: str) -> object:
    cur: object = raw
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _as_kind(lv: Lever, v: object) -> object:
    """Lenient coercion of a read value to the lever's kind (command lines give strings); unreadable -> as is."""
    if v is None or isinstance(v, bool) and lv.kind == "bool":
        return v
    try:
        if lv.kind == "bool":
            if isinstance(v, str) and v.lower() in ("true", "false", "1", "0"):
                return v.lower() in ("true", "1")
            return bool(v) if isinstance(v, (int, float)) else v
        if lv.kind == "int" and not isinstance(v, bool):
            if isinstance(v, float) and v.is_integer():
                return int(v)
            return int(v) if isinstance(v, str) and re.fullmatch(r"[-+]?\d+", v.strip()) else v
        if lv.kind in ("fraction", "float") and isinstance(v, (str, int)) and not isinstance(v, bool):
            return float(v)
    except (TypeError, ValueError):
        return v
    return v


def _read(lv: Lever, side: Side, raw: Mapping[str, object]) -> object:
    """Value of the lever in ``raw``: the first field holding information (for switches: on if any field says
    on, since every spelling turns the same thing off); ``_MISSING`` when no field is present."""
    seen = False
    found: list[object] = []
    for f in side.fields:
        v = _get(raw, f.path)
        if v is _MISSING:
            continue
        seen = True
        if f.read is not None:
            v = f.read(v)
        v = _as_kind(lv, v)
        if v is not None:
            found.append(v)
    if not seen:
        return _MISSING
    if not found:
        return None
    if lv.kind == "bool" and any(x is True for x in found):
        return True
    return found[0]


def levers_from_config(engine: str, version: str | None, raw: Mapping[str, object], *,
                       fill_defaults: bool = False) -> dict[str, object]:
    """Canonical lever values from a raw field map (a config dump's ``values`` or a ``CommandLine.args``).

    A field present with None (SGLang ``context_length=None``) maps to None: set to "auto". With
    ``fill_defaults``, absent levers get the engine's default where one is fixed -- needed for vLLM, whose
    ``non-default args`` omits every flag left at its default, and for command lines."""
    norm = {str(k).replace("-", "_"): v for k, v in raw.items()}
    out: dict[str, object] = {}
    for lv in _TABLE:
        side = lv.side(engine)
        if side is None:
            continue
        v = _read(lv, side, norm)
        if v is not _MISSING:
            out[lv.name] = v
        elif fill_defaults:
            d = default_for(lv.name, engine, version)
            if d is not None:
                out[lv.name] = d
    return out


# --------------------------------------------------------------------------------------------------------------------
# value arithmetic

def _key(v: object) -> object:
    """Comparison key: floats to 6 places, words case-insensitive (FLASHINFER == flashinfer)."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, str):
        return v.strip().lower()
    return v


def _number(v: object) -> float | int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return v


def _align(lv: Lever, v: float, up: bool) -> int:
    n = int(v)
    a = lv.align
    if a > 1 and n >= 4 * a:
        n = (math.ceil(v / a) if up else math.floor(v / a)) * a
    return n


def _candidates(lv: Lever, cur: float, op: str, lo: float, hi: float) -> Iterable[float]:
    """Successive values in the direction of ``op`` from ``cur``; the last one is the bound itself."""
    up = op in ("raise", "double")
    x = cur
    for _ in range(64):
        if lv.kind == "int":
            if op == "double" or (op == "raise" and lv.growth == "double"):
                nx = x * 2
            elif op == "halve" or (op == "lower" and lv.growth == "double"):
                nx = x // 2
            elif lv.growth == "pow2":
                p = 1 << max(int(x), 1).bit_length()  # next power of two above x
                nx = p if up else (p >> 2 if p >> 1 == x else p >> 1)
            else:  # increment
                nx = x + 1 if up else x - 1
            nx = _align(lv, nx, up)
        elif op == "halve":
            nx = x / 2
        elif op == "double":
            nx = x * 2
        elif lv.kind == "fraction":
            nx = x + lv.up if up else x - lv.down
        else:  # float: multiplicative steps
            nx = x * lv.up if up else x / lv.down
        if lv.kind != "int":
            nx = round(nx, 2)
        if (up and nx >= hi) or (not up and nx <= lo) or nx == x:
            edge = hi if up else lo
            if math.isfinite(edge):
                yield edge
            return
        yield nx
        x = nx


def step(lever: str, current: object, op: str, *, avoid: Iterable[object] = (), bound: float | int | None = None,
         value: object = None) -> object | None:
    """The next value for ``lever`` under ``op`` (``set`` takes ``value``), or None when no new value is possible.

    Never returns ``current`` or a value in ``avoid`` (values already tried on this service): it keeps stepping
    in the same direction until the lever's bounds, further limited by ``bound`` (a cap for raise/double, a
    floor for lower/halve), run out. Relative ops need a numeric ``current`` (None, "auto", or SGLang's -1 =
    disabled give None). Examples: raise mem_fraction 0.88 -> 0.92 (cap 0.95); lower 0.9 -> 0.85; halve
    context_length 131072 -> 65536 (multiples of 1024 when large); raise tp_size 2 -> 4 (powers of two)."""
    lv = _lever(lever)
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; expected one of {', '.join(OPS)}")
    banned = {_key(a) for a in avoid}
    lo = lv.bounds[0] if lv.bounds[0] is not None else -math.inf
    hi = lv.bounds[1] if lv.bounds[1] is not None else math.inf
    if bound is not None:
        if op in ("raise", "double"):
            hi = min(hi, bound)
        elif op in ("lower", "halve"):
            lo = max(lo, bound)

    def fresh(v: object) -> bool:
        if v is None or _key(v) == _key(current) or _key(v) in banned:
            return False
        n = _number(v)
        return n is None or lo <= n <= hi

    if op == "set":
        v = _as_kind(lv, value)
        return v if fresh(v) else None
    if op in ("enable", "disable"):
        if lv.kind != "bool":
            raise ValueError(f"{op} applies to switches; {lever} is {lv.kind}")
        v = op == "enable"
        return v if _key(v) != _key(current) and v not in banned else None
    cur = _number(current)
    if lv.kind not in ("int", "fraction", "float") or cur is None or cur <= 0:
        return None
    if lv.kind == "int":
        if cur != int(cur):  # 0.5 requests is no value an engine accepts
            return None
        cur = int(cur)
    up = op in ("raise", "double")
    for v in _candidates(lv, cur, op, lo, hi):
        v = int(v) if lv.kind == "int" else float(v)
        if (v > cur if up else v < cur) and fresh(v):  # a cap below current is no "raise"
            return v
    return None
