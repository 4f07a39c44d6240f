"""SGLang phase markers, both wordings (classic ≤0.5.16/0.5.21 and 0.5.17+/0.5.22+/0.5.23); engines.md §A."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from logdoctor.core import rxcache
from logdoctor.engines.engine import Engine
from logdoctor.engines.markers import COMMON_DEATHS, Marker
from logdoctor.engines.spelling import F as _F
from logdoctor.engines.spelling import S as _S
from logdoctor.engines.spelling import Side
from logdoctor.engines.spelling import equals as _equals
from logdoctor.engines.spelling import side as _side

NAME = "sglang"
# strings that identify SGLang output even without its line prefix (traceback paths, launcher names)
SIGNATURES = (
    "sglang.launch_server",
    "sglang serve ",
    "--mem-fraction-static",
    "mem_fraction_static",
    "/sglang/srt/",
    "sglang/srt/",
    "server_args=ServerArgs(",
    "sglang is using nccl",
    "The server is fired up and ready to roll",
    "Scheduler hit an exception",
)

MARKERS: tuple[Marker, ...] = (
    Marker("server_args", r"^server_args=", "launch", "config", keyword="server_args="),
    Marker(
        "attn_backend_default",
        r"Attention backend not (?:specified|set)\. Use (?P<attention_backend>\w+) backend by default",
        "launch",
        keyword="Attention backend not",
    ),
    Marker("dist_begin", r"^Init (?:torch distributed|parallel) begin\.", "dist_init", "begin", keyword="Init "),
    Marker(
        "dist_end",
        r"^Init (?:torch distributed|parallel) ends\. elapsed=(?P<elapsed_s>[\d.]+) s(?:, mem usage=(?P<mem_usage_gb>[\d.]+) GB)?",
        "dist_init",
        "end",
        then="weight_load",
        keyword="Init ",
    ),
    Marker("nccl_version", r"sglang is using nccl==(?P<nccl>\S+)", "dist_init", keyword="nccl=="),
    Marker(
        "load_begin",
        r"^Load weight begin\. avail mem=(?P<free_before_load_gb>[\d.]+) GB",
        "weight_load",
        "begin",
        keyword="Load weight begin",
    ),
    Marker(
        "load_end_deferred",
        r"^Load weight end\. Committed real weights",
        "graph_capture",
        "end",
        then="warmup",
        keyword="Load weight end",
    ),
    Marker(
        "load_end",
        r"^Load weight end\. (?:elapsed=(?P<elapsed_s>[\d.]+) s, )?type=(?P<model_type>\w+),.*?avail mem=(?P<avail_mem_gb>[\d.]+) GB, mem usage=(?P<weights_gb>[\d.]+) GB",
        "weight_load",
        "end",
        then="memory_pool",
        keyword="Load weight end",
        sums=("weights_gb",),
    ),
    Marker(
        "swa_pool",
        r"Use sliding window memory pool.*?(?:full_layer_tokens=(?P<full_layer_tokens>\d+), )?swa_layer_tokens=(?P<swa_layer_tokens>\d+)",
        "memory_pool",
        keyword="sliding window memory pool",
    ),
    Marker(
        "mamba_pool",
        r"Mamba Cache is allocated\. max_mamba_cache_size: (?P<max_mamba_cache_size>\d+), conv_state size: (?P<conv_state_gb>[\d.]+)\s*GB, ssm_state size: (?P<ssm_state_gb>[\d.]+)\s*GB",
        "memory_pool",
        keyword="Mamba Cache is allocated",
    ),
    Marker(
        "kv_pool",
        r"\w +is allocated\. (?:dtype: \S+, )?#tokens: (?P<kv_tokens>\d+), (?:K size: (?P<k_size_gb>[\d.]+) GB, V size: (?P<v_size_gb>[\d.]+) GB|KV size: (?P<kv_size_gb>[\d.]+) GB)",
        "memory_pool",
        keyword="is allocated. ",
    ),
    Marker(
        "pool_end",
        r"^Memory pool end\. avail mem=(?P<avail_mem_gb>[\d.]+) GB",
        "memory_pool",
        "end",
        then="kernel_init",
        keyword="Memory pool end",
    ),
    Marker(
        "hybrid_backend",
        r"Using hybrid attention backend for decode and prefill: decode_backend=(?P<decode_backend>\S+), prefill_backend=(?P<prefill_backend>\S+)",
        "kernel_init",
        keyword="hybrid attention backend",
    ),
    Marker(
        "gdn_backend",
        r"Using hybrid linear attention backend for hybrid GDN models|GDN kernel dispatcher: decode=(?P<gdn_decode>\w+)|Using FlashInfer GDN kernels",
        "kernel_init",
        keyword="GDN",
    ),
    Marker(
        "draft_backend",
        r"Overriding draft attention backend to (?P<draft_backend>\S+)",
        "kernel_init",
        keyword="draft attention backend",
    ),
    Marker(
        "graph_begin",
        r"^Capture (?:cuda graph|(?:target|draft) (?:decode|verify|extend) CUDA graph) begin\.(?: This can take up to several minutes\.)?(?:.*?backend=(?P<graph_backend>\w+))?.*?(?:avail mem=(?P<avail_mem_gb>[\d.]+) GB)?",
        "graph_capture",
        "begin",
        keyword="Capture ",
    ),
    Marker(
        "graph_end",
        r"^Capture cuda graph end\. Time elapsed: (?P<elapsed_s>[\d.]+) s\. mem usage=(?P<graph_mem_gb>[\d.]+) GB\. avail mem=(?P<avail_mem_gb>[\d.]+) GB",
        "graph_capture",
        "point",
        keyword="Capture cuda graph end",
    ),
    Marker(
        "graph_end_new",
        r"^Capture (?:target|draft) (?:decode|verify|extend) CUDA graph end\..*?elapsed=(?P<elapsed_s>[\d.]+) s, mem usage=(?P<graph_mem_gb>[\d.]+) GB, avail mem=(?P<avail_mem_gb>[\d.]+) GB",
        "graph_capture",
        "point",
        keyword="CUDA graph end",
    ),
    Marker(
        "draft_graph",
        r"^Capture draft (?:extend )?cuda graph (?:begin|end)\.",
        "graph_capture",
        keyword="Capture draft",
    ),
    Marker(
        "piecewise",
        r"^Capture (?:piecewise CUDA graph|(?:target|draft) prefill CUDA graph) (?:begin|end)\.",
        "graph_capture",
        keyword="Capture ",
    ),
    Marker(
        "capture_bar",
        r"^Capturing batches \(bs=(?P<capture_bs>\d+) avail_mem=(?P<avail_mem_gb>[\d.]+) GB\)",
        "graph_capture",
        "begin",
        keyword="Capturing batches",
    ),
    Marker("graph_generic", r"^Capture .*[Gg]raph begin", "graph_capture", "begin", keyword="raph begin"),
    Marker(
        "graph_disabled",
        r"^Disable (?:piecewise|prefill) CUDA graph because|Disable DFLASH draft cuda graph because",
        "graph_capture",
        keyword="Disable ",
    ),
    Marker(
        "dflash_draft",
        r"Initialized DFLASH draft runner\.|DFLASH draft runner ready\.",
        "graph_capture",
        keyword="DFLASH draft runner",
    ),
    Marker(
        "compile",
        r"Compiling a graph for (?:dynamic shape|shape .*) takes (?P<compile_s>[\d.]+) s|Compiling num tokens",
        "graph_capture",
        keyword="Compiling",
    ),
    Marker(
        "summary",
        r"max_total_num_tokens=(?P<max_total_num_tokens>\d+), chunked_prefill_size=(?P<chunked_prefill_size>-?\d+|None), max_prefill_tokens=(?P<max_prefill_tokens>\d+), max_running_requests=(?P<max_running_requests>\d+), context_len=(?P<context_len>\d+)(?:, available_gpu_mem=(?P<available_gpu_mem_gb>[\d.]+) GB)?",
        "warmup",
        "point",
        keyword="max_total_num_tokens=",
    ),
    Marker("uvicorn", r"Uvicorn running on (?P<url>\S+)", "warmup", keyword="Uvicorn running"),
    Marker("ready", r"The server is fired up and ready to roll", "serving", "ready", keyword="fired up"),
    # (no "serving" evidence from batch/HTTP lines: SGLang's own warm-up request prints both before it is ready)
)

# lines that say the engine (or a child) is going down; the cause is usually above them
DEATHS: tuple[Marker, ...] = (
    Marker(
        "scheduler_exception",
        r"(?:Scheduler|TokenizerManager|DetokenizerManager|DataParallelController) hit an exception",
        "launch",
        "death",
        keyword="hit an exception",
    ),
    Marker("sigquit", r"Received sigquit from a child process", "launch", "death", keyword="sigquit"),
    Marker(
        "scheduler_died",
        r"Rank (?P<dead_rank>\d+) scheduler (?:died during initialization \(exit code: (?P<exit_code>-?\d+)\)|is dead)",
        "launch",
        "death",
        keyword="scheduler",
    ),
    Marker(
        "init_failed",
        r"Initialization failed\.(?: warmup error: (?P<warmup_error>.*))?",
        "launch",
        "death",
        keyword="Initialization failed",
    ),
    Marker(
        "subprocess_crashed",
        r"Subprocess (?P<subprocess>\S+) \(pid=\d+\) crashed with exit code (?P<exit_code>-?\d+)",
        "launch",
        "death",
        keyword="crashed with exit code",
    ),
    Marker(
        "watchdog",
        r"\b(?P<watchdog>\w+) watchdog timeout \(self\.watchdog_timeout=(?P<watchdog_timeout>[\d.]+)",
        "launch",
        "death",
        keyword="watchdog timeout",
    ),
) + COMMON_DEATHS


# ---- version: SGLang often prints no version; its wording dates it (engines.md §A)
_VERSION = rxcache.compile(r"sglang(?:==|\s+version\s+|-)(?P<v>\d+\.\d+\.\d+[\w.]*)")
# wordings SGLang introduced in 0.5.17 (engines.md §A, §C): per-runner graph lines and the renamed graph flags
_SGL_017 = rxcache.compile(
    r"CUDA graph begin\. backend=|Capture (?:target|draft) (?:decode|verify|extend|prefill) CUDA graph|"
    r"--cuda-graph-max-bs-decode|--cuda-graph-backend-(?:decode|prefill)|Initialized DFLASH draft runner"
)


def infer_version(records) -> str | None:
    """Date a build that printed no version from the wordings it introduced."""
    best = None
    for r in records:
        m = r.msg
        if m.startswith("server_args={"):
            return ">=0.5.23"
        if m.startswith("Init parallel "):
            best = ">=0.5.22"
        elif best is None and (_SGL_017.search(m)):
            best = ">=0.5.17"
    return best


# ---- config: what the scheduler resolved at start-up ("max_total_num_tokens=..., chunked_prefill_size=...")
_RESOLVED = {
    "max_running_requests": "max_running_requests",
    "context_len": "context_length",
    "chunked_prefill_size": "chunked_prefill_size",
    "max_total_num_tokens": "max_total_tokens",
}


def resolved_config(msg: str) -> dict:
    if "max_total_num_tokens=" not in msg:
        return {}
    vals = dict(re.findall(r"(\w+)=(-?[\d.]+)", msg))
    return {_RESOLVED[k]: _num(v) for k, v in vals.items() if k in _RESOLVED}


def _num(v: str):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


# ---- flags: aliases (argparse dest names), multi-value flags, flags only SGLang has
FLAG_ALIASES = MappingProxyType(
    {
        "tp": "tp_size",
        "tensor_parallel_size": "tp_size",
        "dp": "dp_size",
        "data_parallel_size": "dp_size",
        "ep": "ep_size",
        "expert_parallel_size": "ep_size",
        "pp": "pp_size",
        "pipeline_parallel_size": "pp_size",
        "model": "model_path",
        "tokenizer": "tokenizer_path",
    }
)
NARGS_FLAGS = frozenset(
    {"cuda_graph_bs", "cuda_graph_bs_decode", "cuda_graph_bs_prefill", "lora_paths", "piecewise_cuda_graph_tokens"}
)
HINT_FLAGS = frozenset(
    {
        "model_path",
        "mem_fraction_static",
        "tp_size",
        "tp",
        "context_length",
        "chunked_prefill_size",
        "disable_cuda_graph",
        "max_running_requests",
        "cuda_graph_max_bs",
    }
)

# ---- levers: how SGLang spells each canonical lever (levers.py; engines.md §D)
_NEW_GRAPHS = "0.5.17"  # SGLang: cuda_graph_{backend,max_bs,bs}_{decode,prefill}
LEVER_SIDES: MappingProxyType[str, Side] = MappingProxyType(
    {
        "mem_fraction": _side(
            _S("--mem-fraction-static"), _F("mem_fraction_static")
        ),  # None: auto ~0.8-0.9 by GPU and TP
        "context_length": _side(_S("--context-length"), _F("context_length", "context_len")),
        "max_running": _side(_S("--max-running-requests"), _F("max_running_requests")),
        "prefill_chunk": _side(_S("--chunked-prefill-size"), _F("chunked_prefill_size")),  # -1 disables chunking
        "max_prefill_tokens": _side(_S("--max-prefill-tokens"), _F("max_prefill_tokens"), 16384),
        "max_total_tokens": _side(_S("--max-total-tokens"), _F("max_total_tokens")),
        "graph_max_bs": _side(
            (
                _S("--cuda-graph-max-bs", until=_NEW_GRAPHS),
                _S("--cuda-graph-max-bs-decode", since=_NEW_GRAPHS, hint_field="cuda_graph_max_bs_decode"),
            ),
            _F("cuda_graph_max_bs_decode", "cuda_graph_max_bs"),
        ),
        # the classic flag stays a deprecated alias in 0.5.17+, so it is the safe rendering unless the config
        # shows the new backend field
        "graphs_off": _side(
            (
                _S("--disable-cuda-graph", switch=True),
                _S(
                    "--cuda-graph-backend-decode",
                    since=_NEW_GRAPHS,
                    values=((True, "disabled"), (False, "full")),
                    needs_field="cuda_graph_backend_decode",
                    hint_field="cuda_graph_backend_decode",
                ),
            ),
            _F("disable_cuda_graph", "disable_decode_cuda_graph")
            + _F("cuda_graph_backend_decode", read=_equals("disabled")),
            False,
        ),
        "piecewise_graph_off": _side(
            (
                _S("--disable-piecewise-cuda-graph", switch=True, until=_NEW_GRAPHS),
                _S(
                    "--cuda-graph-backend-prefill",
                    since=_NEW_GRAPHS,
                    values=((True, "disabled"), (False, "full")),
                    hint_field="cuda_graph_backend_prefill",
                ),
            ),
            _F("disable_piecewise_cuda_graph", "disable_prefill_cuda_graph")
            + _F("cuda_graph_backend_prefill", read=_equals("disabled")),
            False,
        ),
        "prefill_graph_max": _side(
            (
                _S("--piecewise-cuda-graph-max-tokens", until=_NEW_GRAPHS),
                _S("--cuda-graph-max-bs-prefill", since=_NEW_GRAPHS, hint_field="cuda_graph_max_bs_prefill"),
            ),
            _F("cuda_graph_max_bs_prefill", "piecewise_cuda_graph_max_tokens"),
            defaults=((None, None), (_NEW_GRAPHS, 2048)),
        ),
        "torch_compile": _side(_S("--enable-torch-compile", switch=True), _F("enable_torch_compile"), False),
        "torch_compile_max_bs": _side(_S("--torch-compile-max-bs"), _F("torch_compile_max_bs"), 32),
        "tp_size": _side(_S("--tp-size"), _F("tp_size", "tensor_parallel_size"), 1),
        "pp_size": _side(_S("--pp-size"), _F("pp_size", "pipeline_parallel_size"), 1),
        "dp_size": _side(_S("--dp-size"), _F("dp_size", "data_parallel_size"), 1),
        "ep_size": _side(_S("--ep-size"), _F("ep_size", "expert_parallel_size"), 1),
        "attention_backend": _side(_S("--attention-backend"), _F("attention_backend")),
        "custom_all_reduce_off": _side(
            _S("--disable-custom-all-reduce", switch=True), _F("disable_custom_all_reduce"), False
        ),
        "prefix_cache_off": _side(_S("--disable-radix-cache", switch=True), _F("disable_radix_cache"), False),
        "mamba_ratio": _side(_S("--mamba-full-memory-ratio"), _F("mamba_full_memory_ratio"), 0.9),
        "max_mamba_cache": _side(_S("--max-mamba-cache-size"), _F("max_mamba_cache_size")),
        "mamba_strategy": _side(_S("--mamba-scheduler-strategy"), _F("mamba_scheduler_strategy"), "auto"),
        "port": _side(_S("--port"), _F("port"), 30000),
        "nccl_port": _side(_S("--nccl-port"), _F("nccl_port")),
        "dist_init_addr": _side(_S("--dist-init-addr"), _F("dist_init_addr")),
        "kv_cache_dtype": _side(_S("--kv-cache-dtype"), _F("kv_cache_dtype"), "auto"),
        "quantization": _side(_S("--quantization"), _F("quantization")),
        "dtype": _side(_S("--dtype"), _F("dtype"), "auto"),
        "trust_remote_code": _side(_S("--trust-remote-code", switch=True), _F("trust_remote_code"), False),
        "speculative_algorithm": _side(_S("--speculative-algorithm"), _F("speculative_algorithm")),
        "spec_topk": _side(_S("--speculative-eagle-topk"), _F("speculative_eagle_topk")),
        "page_size": _side(_S("--page-size"), _F("page_size"), 1),
        "max_lora_rank": _side(_S("--max-lora-rank"), _F("max_lora_rank")),
        "cpu_offload": _side(_S("--cpu-offload-gb"), _F("cpu_offload_gb"), 0),
        "watchdog_timeout": _side(_S("--watchdog-timeout"), _F("watchdog_timeout"), 300),
        "dist_timeout": _side(_S("--dist-timeout"), _F("dist_timeout")),
        "shm": _side((), _F("shm_size")),
    }
)


def _as_int(v, default: int) -> int:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else default
    except (TypeError, ValueError):
        return default


def auto_static_fraction(
    gpu_mib: float, raw: Mapping[str, object], tp: int, pp: int, mla: bool
) -> tuple[float, int, int]:
    """SGLang's default mem_fraction_static (server_args._handle_gpu_memory_settings, 0.5.x): reserve MB for the
    chunked prefill (x1.5), CUDA graphs (x2 per batch size), TP ranks and piecewise graphs; at least 10 GB on
    cards over 60 GB. Returns (fraction, chunked_prefill_size, cuda_graph_max_bs)."""
    small = gpu_mib < 35 * 1024
    chunk = _as_int(
        raw.get("chunked_prefill_size"),
        2048 if small else 4096 if gpu_mib < 60 * 1024 else 8192 if gpu_mib < 160 * 1024 else 16384,
    )
    bs = _as_int(
        raw.get("cuda_graph_max_bs") or raw.get("cuda_graph_max_bs_decode"),
        8
        if gpu_mib < 20 * 1024
        else (24 if tp < 4 else 80)
        if small
        else (32 if tp < 4 else 160)
        if gpu_mib < 60 * 1024
        else (256 if tp < 4 else 512),
    )
    reserved = 512 + max(chunk if chunk > 0 else _as_int(raw.get("max_prefill_tokens"), 16384), 2048) * 1.5
    reserved += bs * 2 + tp * pp / 8 * 1024
    if not raw.get("disable_piecewise_cuda_graph"):
        reserved += 1.5 * 1024 if mla else 58 * 8  # ~58 piecewise token sizes by default
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    spec = raw.get("speculative_algorithm")
    if spec:
        reserved += 6 * 1024 if str(spec).upper() == "STANDALONE" else 0 if str(spec).upper() == "NGRAM" else 4096
    return round((gpu_mib - reserved) / gpu_mib, 3), chunk, bs


ENGINE = Engine(
    name=NAME,
    title="SGLang",
    signatures=SIGNATURES,
    markers=MARKERS,
    deaths=DEATHS,
    version_pattern=_VERSION,
    version_keywords=("sglang",),
    version_lower=True,
    banner_names=("sglang",),
    infer_version=infer_version,
    launch_pattern=r"sglang\.launch_server",
    command_words=("sglang", "launch_server"),
    command_line=True,
    flag_aliases=FLAG_ALIASES,
    nargs_flags=NARGS_FLAGS,
    hint_flags=HINT_FLAGS,
    resolved_config=resolved_config,
    unknown_fallback=True,
    lever_sides=LEVER_SIDES,
    package_dirs=("sglang",),
    compile_dirs=("sglang/srt/compilation",),
    process_names=("sglang", r"[Ss]chedul", r"[Dd]etoken", r"[Tt]okenizer"),
    unit_words=("sglang",),
    config_dump=(r"^server_args=",),
    config_dump_words=("server_args=",),
    env_prefixes=("SGLANG_",),
    source_phases=(("launch", ("sglang/cli/",)),),
    in_atlas=True,
    auto_static_fraction=auto_static_fraction,
)
