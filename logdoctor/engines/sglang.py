"""SGLang phase markers, both wordings (classic ≤0.5.16/0.5.21 and 0.5.17+/0.5.22+/0.5.23); engines.md §A."""
from __future__ import annotations

from logdoctor.engines.markers import COMMON_DEATHS, Marker

NAME = "sglang"
# strings that identify SGLang output even without its line prefix (traceback paths, launcher names)
SIGNATURES = ("sglang.launch_server", "sglang serve ", "--mem-fraction-static", "mem_fraction_static", "/sglang/srt/", "sglang/srt/", "server_args=ServerArgs(", "sglang is using nccl",
              "The server is fired up and ready to roll", "Scheduler hit an exception")

MARKERS: tuple[Marker, ...] = (
    Marker("server_args", r"^server_args=", "launch", "config", keyword="server_args="),
    Marker("attn_backend_default", r"Attention backend not (?:specified|set)\. Use (?P<attention_backend>\w+) backend by default",
           "launch", keyword="Attention backend not"),
    Marker("dist_begin", r"^Init (?:torch distributed|parallel) begin\.", "dist_init", "begin", keyword="Init "),
    Marker("dist_end", r"^Init (?:torch distributed|parallel) ends\. elapsed=(?P<elapsed_s>[\d.]+) s(?:, mem usage=(?P<mem_usage_gb>[\d.]+) GB)?",
           "dist_init", "end", then="weight_load", keyword="Init "),
    Marker("nccl_version", r"sglang is using nccl==(?P<nccl>\S+)", "dist_init", keyword="nccl=="),
    Marker("load_begin", r"^Load weight begin\. avail mem=(?P<free_before_load_gb>[\d.]+) GB", "weight_load", "begin",
           keyword="Load weight begin"),
    Marker("load_end_deferred", r"^Load weight end\. Committed real weights", "graph_capture", "end", then="warmup", keyword="Load weight end"),
    Marker("load_end", r"^Load weight end\. (?:elapsed=(?P<elapsed_s>[\d.]+) s, )?type=(?P<model_type>\w+),.*?avail mem=(?P<avail_mem_gb>[\d.]+) GB, mem usage=(?P<weights_gb>[\d.]+) GB",
           "weight_load", "end", then="memory_pool", keyword="Load weight end", sums=("weights_gb",)),
    Marker("swa_pool", r"Use sliding window memory pool.*?(?:full_layer_tokens=(?P<full_layer_tokens>\d+), )?swa_layer_tokens=(?P<swa_layer_tokens>\d+)",
           "memory_pool", keyword="sliding window memory pool"),
    Marker("mamba_pool", r"Mamba Cache is allocated\. max_mamba_cache_size: (?P<max_mamba_cache_size>\d+), conv_state size: (?P<conv_state_gb>[\d.]+)\s*GB, ssm_state size: (?P<ssm_state_gb>[\d.]+)\s*GB",
           "memory_pool", keyword="Mamba Cache is allocated"),
    Marker("kv_pool", r"\w +is allocated\. (?:dtype: \S+, )?#tokens: (?P<kv_tokens>\d+), (?:K size: (?P<k_size_gb>[\d.]+) GB, V size: (?P<v_size_gb>[\d.]+) GB|KV size: (?P<kv_size_gb>[\d.]+) GB)",
           "memory_pool", keyword="is allocated. "),
    Marker("pool_end", r"^Memory pool end\. avail mem=(?P<avail_mem_gb>[\d.]+) GB", "memory_pool", "end", then="kernel_init",
           keyword="Memory pool end"),
    Marker("hybrid_backend", r"Using hybrid attention backend for decode and prefill: decode_backend=(?P<decode_backend>\S+), prefill_backend=(?P<prefill_backend>\S+)",
           "kernel_init", keyword="hybrid attention backend"),
    Marker("gdn_backend", r"Using hybrid linear attention backend for hybrid GDN models|GDN kernel dispatcher: decode=(?P<gdn_decode>\w+)|Using FlashInfer GDN kernels",
           "kernel_init", keyword="GDN"),
    Marker("draft_backend", r"Overriding draft attention backend to (?P<draft_backend>\S+)", "kernel_init", keyword="draft attention backend"),
    Marker("graph_begin", r"^Capture (?:cuda graph|(?:target|draft) (?:decode|verify|extend) CUDA graph) begin\.(?: This can take up to several minutes\.)?(?:.*?backend=(?P<graph_backend>\w+))?.*?(?:avail mem=(?P<avail_mem_gb>[\d.]+) GB)?",
           "graph_capture", "begin", keyword="Capture "),
    Marker("graph_end", r"^Capture cuda graph end\. Time elapsed: (?P<elapsed_s>[\d.]+) s\. mem usage=(?P<graph_mem_gb>[\d.]+) GB\. avail mem=(?P<avail_mem_gb>[\d.]+) GB",
           "graph_capture", "point", keyword="Capture cuda graph end"),
    Marker("graph_end_new", r"^Capture (?:target|draft) (?:decode|verify|extend) CUDA graph end\..*?elapsed=(?P<elapsed_s>[\d.]+) s, mem usage=(?P<graph_mem_gb>[\d.]+) GB, avail mem=(?P<avail_mem_gb>[\d.]+) GB",
           "graph_capture", "point", keyword="CUDA graph end"),
    Marker("draft_graph", r"^Capture draft (?:extend )?cuda graph (?:begin|end)\.", "graph_capture", keyword="Capture draft"),
    Marker("piecewise", r"^Capture (?:piecewise CUDA graph|(?:target|draft) prefill CUDA graph) (?:begin|end)\.", "graph_capture",
           keyword="Capture "),
    Marker("capture_bar", r"^Capturing batches \(bs=(?P<capture_bs>\d+) avail_mem=(?P<avail_mem_gb>[\d.]+) GB\)", "graph_capture", "begin",
           keyword="Capturing batches"),
    Marker("graph_generic", r"^Capture .*[Gg]raph begin", "graph_capture", "begin", keyword="raph begin"),
    Marker("graph_disabled", r"^Disable (?:piecewise|prefill) CUDA graph because|Disable DFLASH draft cuda graph because", "graph_capture",
           keyword="Disable "),
    Marker("dflash_draft", r"Initialized DFLASH draft runner\.|DFLASH draft runner ready\.", "graph_capture", keyword="DFLASH draft runner"),
    Marker("compile", r"Compiling a graph for (?:dynamic shape|shape .*) takes (?P<compile_s>[\d.]+) s|Compiling num tokens", "graph_capture",
           keyword="Compiling"),
    Marker("summary", r"max_total_num_tokens=(?P<max_total_num_tokens>\d+), chunked_prefill_size=(?P<chunked_prefill_size>-?\d+|None), max_prefill_tokens=(?P<max_prefill_tokens>\d+), max_running_requests=(?P<max_running_requests>\d+), context_len=(?P<context_len>\d+)(?:, available_gpu_mem=(?P<available_gpu_mem_gb>[\d.]+) GB)?",
           "warmup", "point", keyword="max_total_num_tokens="),
    Marker("uvicorn", r"Uvicorn running on (?P<url>\S+)", "warmup", keyword="Uvicorn running"),
    Marker("ready", r"The server is fired up and ready to roll", "serving", "ready", keyword="fired up"),
    # (no "serving" evidence from batch/HTTP lines: SGLang's own warm-up request prints both before it is ready)
)

# lines that say the engine (or a child) is going down; the cause is usually above them
DEATHS: tuple[Marker, ...] = (
    Marker("scheduler_exception", r"(?:Scheduler|TokenizerManager|DetokenizerManager|DataParallelController) hit an exception",
           "launch", "death", keyword="hit an exception"),
    Marker("sigquit", r"Received sigquit from a child process", "launch", "death", keyword="sigquit"),
    Marker("scheduler_died", r"Rank (?P<dead_rank>\d+) scheduler (?:died during initialization \(exit code: (?P<exit_code>-?\d+)\)|is dead)",
           "launch", "death", keyword="scheduler"),
    Marker("init_failed", r"Initialization failed\.(?: warmup error: (?P<warmup_error>.*))?", "launch", "death", keyword="Initialization failed"),
    Marker("subprocess_crashed", r"Subprocess (?P<subprocess>\S+) \(pid=\d+\) crashed with exit code (?P<exit_code>-?\d+)", "launch", "death",
           keyword="crashed with exit code"),
    Marker("watchdog", r"\b(?P<watchdog>\w+) watchdog timeout \(self\.watchdog_timeout=(?P<watchdog_timeout>[\d.]+)", "launch", "death",
           keyword="watchdog timeout"),
) + COMMON_DEATHS
