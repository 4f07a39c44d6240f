"""vLLM V1 start-up sequence (0.33 wording, with 0.8-0.11 variants) and its error reporting."""
from __future__ import annotations

import random
from typing import Callable

from . import vllm_frames as vf
from .deploy import Deploy
from .pyerr import F, traceback
from .sglang import tqdm_bar
from .timeline import Log

CYAN, RESET = "\x1b[1;36m", "\x1b[0;0m"


class Proc:
    def __init__(self, tag: str | None, pid: int):
        self.tag, self.pid = tag, pid


class VLLM:
    def __init__(self, log: Log, d: Deploy, rng: random.Random,
                 hooks: dict[str, list[Callable[["VLLM"], None]]] | None = None, ansi: bool = False):
        self.log, self.d, self.rng = log, d, rng
        self.hooks = hooks or {}
        self.ansi = ansi
        self.v0 = False          # VLLM_USE_V1=0 (0.8.x): the V0 engine runs in the API process
        v = d.v
        self.v033 = v >= (0, 30)
        api_pid = log.pid
        eng_pid = api_pid + rng.randint(140, 260)
        if v >= (0, 11):
            api_tag, eng_tag = "APIServer", "EngineCore_DP0"
            wtag = lambda i: f"Worker_TP{i}" if d.pp == 1 else f"Worker_PP{i // d.tp}_TP{i % d.tp}"  # noqa: E731
        elif v >= (0, 10):
            api_tag, eng_tag = "APIServer", "EngineCore_0"
            wtag = lambda i: f"VllmWorker TP{i}"  # noqa: E731
        else:
            api_tag, eng_tag = None, None
            wtag = lambda i: f"VllmWorker rank={i}"  # noqa: E731
        self.api = Proc(api_tag, api_pid)
        self.eng = Proc(eng_tag, eng_pid)
        n = d.tp * d.pp
        w0 = eng_pid + rng.randint(55, 70)
        self.workers = [Proc(wtag(i), w0 + i) for i in range(n)] if n > 1 else []
        self.dead: set[int] = set()
        a = d.args
        self.util = a.get("gpu_memory_utilization", 0.92 if self.v033 else 0.9)
        self.max_len = a.get("max_model_len", d.model.ctx)
        big = d.gpu.total >= 70 and "A100" not in d.gpu.name
        self.max_seqs = a.get("max_num_seqs", 1024 if (big and self.v033) else 256)
        self.mnbt = a.get("max_num_batched_tokens",
                          16384 if d.gpu.total >= 160 else 8192 if d.gpu.total >= 70 else 2048 if d.gpu.total < 30
                          else 4096)
        self.eager = bool(a.get("enforce_eager"))
        self.w = round(d.weights_gib() + rng.uniform(0.02, 0.3), 4)
        self.kv_gib = 0.0
        self.kv_tokens = 0

    # -- primitives -------------------------------------------------------
    def pre(self, p: Proc) -> str:
        if not p.tag:
            return ""
        t = f"({p.tag} pid={p.pid})"
        return f"{CYAN}{t}{RESET} " if self.ansi else f"{t} "

    def say(self, p: Proc, msg: str, file: str, line: int, level: str = "INFO") -> None:
        ts = self.log.et.strftime("%m-%d %H:%M:%S")
        prio = {"INFO": 6, "WARNING": 4, "ERROR": 3, "DEBUG": 7}[level]
        self.log.app(f"{self.pre(p)}{level} {ts} [{file}:{line}] {msg}", prio)

    def raw(self, p: Proc, msg: str, prio: int = 6) -> None:
        self.log.app(f"{self.pre(p)}{msg}" if msg or p.tag else msg, prio)

    def ranks(self) -> list[Proc]:
        return self.workers or [self.eng]

    def each(self, fn: Callable[[Proc, int], None], gap: float = 0.02, shuffle: bool = False) -> None:
        idx = [i for i in range(len(self.ranks())) if i not in self.dead]
        if shuffle:
            self.rng.shuffle(idx)
        for i in idx:
            self.log.tick(0, gap)
            fn(self.ranks()[i], i)

    def hook(self, phase: str) -> None:
        for fn in self.hooks.get(phase, []):
            fn(self)

    def tb(self, frames: list[F], error: str) -> list[str]:
        return traceback(frames, error, self.d.site, self.d.py_minor)

    def log_tb(self, p: Proc, head: str, lines: list[str], file: str, line: int) -> None:
        self.say(p, head, file, line, "ERROR")
        for ln in lines:
            self.say(p, ln, file, line, "ERROR")

    # -- phases -----------------------------------------------------------
    def nondefault(self) -> dict:
        d = self.d
        out: dict = {"model_tag": d.path} if d.v >= (0, 9) else {}
        if "host" in d.args or self.rng.random() < 0.6:
            out["host"] = d.args.get("host", "0.0.0.0")
        if d.port:
            out["port"] = d.port
        out["model"] = d.path
        if d.tp > 1:
            out["tensor_parallel_size"] = d.tp
        if d.pp > 1:
            out["pipeline_parallel_size"] = d.pp
        if d.dp > 1:
            out["data_parallel_size"] = d.dp
        for k, v in d.args.items():
            if k not in ("model", "host"):
                out[k] = v
        return out

    def launch(self) -> None:
        self.hook("launch")
        d, a = self.d, self.api
        if self.v033:
            self.say(a, f"vLLM server version {d.version}, serving model {d.path}", "startup.py", 112)
            self.say(a, f"non-default args: {self.nondefault()}", "utils.py", 253)
        elif d.v >= (0, 9):
            self.say(a, f"vLLM API server version {d.version}", "api_server.py", 1839 if d.v >= (0, 10) else 1287)
            self.say(a, f"non-default args: {self.nondefault()}", "cli_args.py" if d.v < (0, 10) else "utils.py",
                     358 if d.v < (0, 10) else 326)
        else:
            self.say(a, f"vLLM API server version {d.version}", "api_server.py", 1043)
            ns = ", ".join(f"{k}={v!r}" for k, v in {
                "subparser": "serve", "model_tag": d.path, "config": "", "host": d.args.get("host", "0.0.0.0"),
                "port": d.http_port, "uvicorn_log_level": "info", "allow_credentials": False,
                "api_key": None, "lora_modules": None, "chat_template": None, "response_role": "assistant",
                "model": d.path, "task": "auto", "tokenizer": None, "trust_remote_code":
                    d.args.get("trust_remote_code", False), "dtype": d.args.get("dtype", "auto"),
                "max_model_len": d.args.get("max_model_len"), "tensor_parallel_size": d.tp,
                "gpu_memory_utilization": self.util, "max_num_batched_tokens": d.args.get("max_num_batched_tokens"),
                "max_num_seqs": d.args.get("max_num_seqs"), "enforce_eager": self.eager,
                "disable_custom_all_reduce": d.args.get("disable_custom_all_reduce", False),
                "enable_chunked_prefill": d.args.get("enable_chunked_prefill"),
                "dispatch_function": "<function ServeSubcommand.cmd at 0x7f3a1c2b5e40>"}.items())
            self.say(a, f"args: Namespace({ns})", "api_server.py", 1044)
        self.log.wait(3.5)

    def config(self) -> None:
        self.hook("config")
        d, a = self.d, self.api
        if d.v >= (0, 10):
            self.say(a, f"Resolved architecture: {d.model.arch}", "model.py" if self.v033 else "config.py", 641)
            self.say(a, f"Using max model len {self.max_len}", "model.py" if self.v033 else "config.py", 1822)
        else:
            self.say(a, "This model supports multiple tasks: {'generate', 'classify', 'embed', 'reward', 'score'}. "
                        "Defaulting to 'generate'.", "config.py", 717 if d.v < (0, 9) else 793)
        if d.model.quant == "fp8" and not self.v033:
            self.say(a, "fp8 quantization is not fully optimized yet. The speed can be slower than non-quantized "
                        "models.", "config.py", 1150, "WARNING")
        if self.d.args.get("enable_chunked_prefill") is not False:
            self.say(a, f"Chunked prefill is enabled with max_num_batched_tokens={self.mnbt}.",
                     "scheduler.py" if d.v >= (0, 10) else "config.py", 231 if d.v >= (0, 10) else 2003)

    def engine_init(self) -> None:
        self.hook("engine_init")
        d = self.d
        self.log.wait(4.5)
        cudagraph = "NONE" if self.eager else "FULL_AND_PIECEWISE" if d.v >= (0, 11) else "PIECEWISE"
        cfg = (f"model='{d.path}', speculative_config=None, tokenizer='{d.path}', skip_tokenizer_init=False, "
               f"tokenizer_mode=auto, revision=None, tokenizer_revision=None, "
               f"trust_remote_code={d.args.get('trust_remote_code', False)}, dtype=torch.bfloat16, "
               f"max_seq_len={self.max_len}, download_dir=None, load_format=auto, tensor_parallel_size={d.tp}, "
               f"pipeline_parallel_size={d.pp}, data_parallel_size={d.dp}, "
               f"disable_custom_all_reduce={d.args.get('disable_custom_all_reduce', False)}, "
               f"quantization={d.model.quant}, enforce_eager={self.eager}, kv_cache_dtype=auto, "
               f"device_config=cuda, seed=0, served_model_name={d.path}, enable_prefix_caching=True, "
               f"enable_chunked_prefill=True, pooler_config=None, compilation_config="
               f"{{'level': None, 'mode': {0 if self.eager else 3}, 'backend': 'inductor', "
               f"'cudagraph_mode': '{cudagraph}', 'max_cudagraph_capture_size': "
               f"{d.args.get('max_cudagraph_capture_size', 512)}}}")
        if self.v0:
            self.say(self.api, f"Initializing a V0 LLM engine (v{d.version}) with config: {cfg}", "llm_engine.py", 240)
            return
        self.say(self.eng, f"Initializing a V1 LLM engine (v{d.version}) with config: {cfg}", "core.py",
                 94 if self.v033 else 77)
        if self.workers:
            buf = "psm_" + "".join(self.rng.choice("0123456789abcdef") for _ in range(8))
            self.say(self.eng, f"vLLM message queue communication handle: Handle(local_reader_ranks="
                               f"{list(range(len(self.workers)))}, buffer_handle=({len(self.workers)}, 16777216, 10, "
                               f"'{buf}'), local_subscribe_addr='ipc:///tmp/{self.rng.getrandbits(64):016x}', "
                               "remote_subscribe_addr=None, remote_addr_ipv6=False)", "shm_broadcast.py", 289)

    def dist_init(self) -> None:
        self.hook("dist_init")
        d = self.d
        self.log.wait(5.5)
        port = self.rng.randint(34000, 59999)
        self.dist_port = port
        n = len(self.ranks())
        self.each(lambda p, i: self.say(p, f"world_size={n} rank={i} local_rank={i} "
                                           f"distributed_init_method=tcp://127.0.0.1:{port} backend=nccl",
                                        "parallel_state.py", 1208), shuffle=True)
        if self.workers:
            self.say(self.workers[0], "vLLM is using nccl==2.27.5" if d.v >= (0, 10) else
                     "vLLM is using nccl==2.21.5", "pynccl.py", 70)
            self.hook("dist_init_nccl")
            if not d.gpu.nvlink and d.tp > 2 and not d.args.get("disable_custom_all_reduce"):
                self.each(lambda p, i: self.say(
                    p, "Custom allreduce is disabled because your platform lacks GPU P2P capability or P2P test "
                       "failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.",
                    "custom_all_reduce.py", 85, "WARNING"))
            self.hook("dist_init_ca")
        self.each(lambda p, i: self.say(
            p, f"rank {i} in world size {n} is assigned as DP rank 0, PP rank {i // d.tp}, TP rank {i % d.tp}"
               + (f", EP rank {i}" if d.v >= (0, 10) else ""), "parallel_state.py", 1394))

    def load_begin(self) -> None:
        self.hook("weight_load")
        self.load_t0 = self.log.t
        d = self.d
        self.each(lambda p, i: self.say(p, f"Starting to load model {d.path}...",
                                        "model_runner.py" if self.v0 else "gpu_model_runner.py",
                                        1110 if self.v0 else 2602 if self.v033 else 1879))
        be = self.d.args.get("attention_backend") or ("FLASHINFER" if d.gpu.sm >= 100 else "FLASH_ATTN")
        if self.v033:
            self.each(lambda p, i: self.say(
                p, f"Using {be} attention backend out of potential backends: "
                   "['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION'].", "cuda.py", 412))
        else:
            msg = "Using Flash Attention backend." if self.v0 else "Using Flash Attention backend on V1 engine."
            self.each(lambda p, i: self.say(p, msg, "cuda.py", 252))

    def load_bar(self, stop: float | None = None) -> None:
        p = self.ranks()[0]
        n = self.d.model.shards
        rate = self.rng.uniform(0.8, 2.4) * (2 if self.d.model.size_gb < 40 else 1)
        last = n if stop is None else max(1, int(n * stop))
        step = 1 if n <= 20 else max(1, n // 16)
        i = 0
        while True:
            self.log.tick(0.0, 2 / rate * step)
            self.raw(p, tqdm_bar("Loading safetensors checkpoint shards", i, n, i / rate, rate, style="completed"))
            self.hook(f"shard{i}")
            if i >= last:
                break
            i = min(i + step, last)
        if stop is None:
            self.raw(p, "")

    def load_end(self) -> None:
        took = round((self.log.t - self.load_t0).total_seconds() + self.rng.uniform(0.1, 1.2), 2)
        self.each(lambda p, i: self.say(p, f"Loading weights took {took:.2f} seconds", "default_loader.py", 267))
        tot = took + self.rng.uniform(0.8, 2.5)
        mem = "GiB memory" if self.v033 else "GiB"
        self.each(lambda p, i: self.say(p, f"Model loading took {self.w:.4f} {mem} and {tot:.6f} seconds",
                                        "gpu_model_runner.py", 2653 if self.v033 else 1892))

    def weight_load(self) -> None:
        self.load_begin()
        self.load_bar()
        self.load_end()

    def compile(self, slow: float | None = None) -> None:
        self.hook("compile")
        if self.eager:
            return
        h = f"{self.rng.getrandbits(40):010x}"
        self.each(lambda p, i: self.say(p, f"Using cache directory: /root/.cache/vllm/torch_compile_cache/{h}/"
                                           f"rank_{i}_0/backbone for vLLM's torch.compile", "backends.py", 548))
        self.log.wait(9)
        dyn = round(self.rng.uniform(6, 14), 2)
        self.each(lambda p, i: self.say(p, f"Dynamo bytecode transform time: {dyn:.2f} s", "backends.py", 559))
        ct = slow or round(self.rng.uniform(18, 45), 2)
        self.log.wait(ct)
        what = f"compile range (1, {self.mnbt})" if self.v033 else "dynamic shape"
        self.each(lambda p, i: self.say(p, f"Compiling a graph for {what} takes {ct:.2f} s", "backends.py", 194))
        verb = "took" if self.v033 else "takes"
        self.each(lambda p, i: self.say(p, f"torch.compile {verb} {ct + dyn:.2f} s in total", "monitor.py", 34))

    def profile(self) -> None:
        self.hook("profile")
        d = self.d
        act = self.rng.uniform(1.2, 5.5) * (self.mnbt / 8192) ** 0.5
        nt = 0.3 + 0.4 * (d.tp > 1)
        g = 0 if self.eager else round(self.rng.uniform(0.4, 1.6), 2)
        self.kv_gib = round(d.gpu.total * self.util - self.w - act - nt - (g if self.v033 else 0), 2)
        if self.v033 and not self.eager:
            self.each(lambda p, i: self.say(
                p, f"Estimated CUDA graph memory: {g:.2f} GiB total", "gpu_worker.py", 301))
        self.each(lambda p, i: self.say(p, f"Available KV cache memory: {self.kv_gib:.2f} GiB",
                                        "gpu_worker.py", 319))
        self.kv_tokens = int(max(self.kv_gib, 0) * 2**30 / self.d.model.kv_bytes_per_token(d.tp)) // 16 * 16

    def kv_size(self) -> None:
        self.hook("kv_size")
        conc = self.kv_tokens / self.max_len
        if self.v033:
            self.say(self.eng, f"GPU KV cache size: {self.kv_tokens:,} tokens, Maximum concurrency for "
                               f"{self.max_len:,} tokens per request: {conc:.2f}x", "kv_cache_utils.py", 1087)
        else:
            self.say(self.eng, f"GPU KV cache size: {self.kv_tokens:,} tokens", "kv_cache_utils.py", 716)
            self.say(self.eng, f"Maximum concurrency for {self.max_len:,} tokens per request: {conc:.2f}x",
                     "kv_cache_utils.py", 720)

    def capture_bar(self, desc: str, n: int, stop: int | None = None) -> None:
        p = self.ranks()[0]
        rate = self.rng.uniform(6, 14) if self.v033 else self.rng.uniform(1.8, 3.2)
        pts = sorted({0, n // 5, n // 3, n // 2, 2 * n // 3, 4 * n // 5, n} | ({stop} if stop else set()))
        for i in pts:
            if stop is not None and i > stop:
                break
            self.log.tick(0.05, max(0.3, (i / rate) / 6))
            self.raw(p, tqdm_bar(desc, i, n, i / rate, rate))

    def capture(self) -> None:
        self.hook("graph_capture")
        if self.eager:
            return
        if self.v033 or self.d.v >= (0, 11):
            self.capture_bar("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 67)
            self.capture_bar("Capturing CUDA graphs (decode, FULL)", 35)
        else:
            self.capture_bar("Capturing CUDA graph shapes", 67)
        secs = self.rng.randint(5, 40)
        took = round(self.rng.uniform(0.3, 1.4), 2)
        self.each(lambda p, i: self.say(p, f"Graph capturing finished in {secs} secs, took {took:.2f} GiB",
                                        "gpu_model_runner.py", 3480 if self.v033 else 2051))

    def engine_ready(self) -> None:
        t = round(self.rng.uniform(40, 160), 2)
        self.say(self.eng, f"init engine (profile, create kv cache, warmup model) took {t:.2f} seconds",
                 "core.py", 210 if self.v033 else 193)

    def api_up(self) -> None:
        self.hook("http")
        d, a = self.d, self.api
        self.log.wait(0.6)
        if self.v033:
            self.say(a, "Supported tasks: ['generate']", "api_server.py", 1634)
            self.say(a, f"Starting vLLM server on http://{d.args.get('host', '0.0.0.0')}:{d.http_port}",
                     "api_server.py", 1912)
        elif d.v >= (0, 10):
            self.say(a, "Supported_tasks: ['generate']", "api_server.py", 1611)
            self.say(a, f"Starting vLLM API server 0 on http://{d.args.get('host', '0.0.0.0')}:{d.http_port}",
                     "api_server.py", 1880)
        else:
            self.say(a, f"Starting vLLM API server on http://{d.args.get('host', '0.0.0.0')}:{d.http_port}",
                     "launcher.py", 26)
        self.say(a, "Available routes are:", "launcher.py", 29)
        for r, m in [("/openapi.json", "HEAD, GET"), ("/docs", "HEAD, GET"), ("/health", "GET"),
                     ("/load", "GET"), ("/tokenize", "POST"), ("/detokenize", "POST"), ("/v1/models", "GET"),
                     ("/version", "GET"), ("/v1/chat/completions", "POST"), ("/v1/completions", "POST"),
                     ("/v1/embeddings", "POST"), ("/metrics", "GET")]:
            self.say(a, f"Route: {r}, Methods: {m}", "launcher.py", 37)
        for m in (f"INFO:     Started server process [{a.pid}]", "INFO:     Waiting for application startup.",
                  "INFO:     Application startup complete."):
            self.raw(a, m)

    def serve(self, n: int = 8, preempt: bool = False) -> None:
        self.hook("serving")
        a = self.api
        run = self.rng.randint(1, 6)
        use = self.rng.uniform(1, 9)
        for i in range(n):
            self.log.wait(self.rng.uniform(3, 10))
            for _ in range(self.rng.randint(0, 3)):
                self.raw(a, f'INFO:     10.{self.rng.randint(0, 30)}.{self.rng.randint(0, 255)}.'
                            f'{self.rng.randint(2, 250)}:{self.rng.randint(30000, 65000)} - '
                            '"POST /v1/chat/completions HTTP/1.1" 200 OK')
            if preempt and i == n // 2:
                use = 99.6
                self.say(a, f"Engine 000: Avg prompt throughput: 9120.4 tokens/s, Avg generation throughput: "
                            f"1480.2 tokens/s, Running: {run + 60} reqs, Waiting: 44 reqs, GPU KV cache usage: "
                            f"{use:.1f}%, Prefix cache hit rate: 8.3%", "loggers.py", 127)
                continue
            pt, gt = self.rng.uniform(0, 4000), self.rng.uniform(50, 2000)
            self.say(a, f"Engine 000: Avg prompt throughput: {pt:.1f} tokens/s, Avg generation throughput: "
                        f"{gt:.1f} tokens/s, Running: {run} reqs, Waiting: 0 reqs, GPU KV cache usage: {use:.1f}%, "
                        f"Prefix cache hit rate: {self.rng.uniform(0, 60):.1f}%", "loggers.py", 127)
            run = max(0, run + self.rng.randint(-2, 3))
            use = max(0.1, min(90.0, use + self.rng.uniform(-3, 6)))

    def boot(self, until: str | None = None) -> None:
        steps = [("launch", self.launch), ("config", self.config), ("engine_init", self.engine_init),
                 ("dist_init", self.dist_init), ("weight_load", self.weight_load), ("compile", self.compile),
                 ("profile", self.profile), ("kv_size", self.kv_size), ("graph_capture", self.capture),
                 ("engine_ready", self.engine_ready), ("http", self.api_up)]
        for name, fn in steps:
            if name == until:
                return
            fn()

    # -- failure reporting ----------------------------------------------------
    def worker_error(self, i: int, frames: list[F], error: str, at_start: bool) -> None:
        p = self.ranks()[i]
        head = "WorkerProc failed to start." if at_start else "WorkerProc hit an exception."
        self.log_tb(p, head, self.tb(frames, error), "multiproc_executor.py", 597 if at_start else 666)
        self.dead.add(i)

    def engine_error(self, frames: list[F], error: str, fatal: bool = False) -> None:
        head = "EngineCore encountered a fatal error." if fatal else "EngineCore failed to start."
        line = 710 if self.v033 else 517
        if self.eng.tag is None and not fatal and self.d.v < (0, 10):
            self.log_tb(self.eng, head, self.tb(frames, error), "core.py", line)
            self.raw(self.eng, "Process EngineCore_0:")
            std = self.stdlib()
            mp = [F(f"{std}/multiprocessing/process.py", 315 if self.d.py_minor <= 10 else 314, "_bootstrap",
                    "self.run()"),
                  F(f"{std}/multiprocessing/process.py", 108, "run", "self._target(*self._args, **self._kwargs)"),
                  F("vllm/v1/engine/core.py", frames[0].line + 12, "run_engine_core", "raise e")]
            for ln in self.tb(mp + frames[1:], error):
                self.raw(self.eng, ln, 3)
            return
        self.log_tb(self.eng, head, self.tb(frames, error), "core.py", line)

    def stdlib(self) -> str:
        site = self.d.site
        if "/conda/" in site:
            return site.rsplit("/site-packages", 1)[0]
        return f"/usr/lib/python3.{self.d.py_minor}"

    def api_error(self) -> None:
        self.log.tick(0.2, 1.5)
        tail = ". Failed core proc(s): {}" if self.d.v >= (0, 10) else ""
        err = f"RuntimeError: Engine core initialization failed. See root cause above{tail}"
        for ln in self.tb(vf.api_server(self.d), err):
            self.raw(self.api, ln, 3)

    def shutdown_noise(self) -> None:
        if self.workers and self.rng.random() < 0.7:
            ts = self.log.et
            stamp = f"W{ts.strftime('%m%d %H:%M:%S')}.{ts.microsecond:06d}{self.rng.randint(100, 999)}"
            self.raw(self.eng, f"[rank0]:[{stamp} ProcessGroupNCCL.cpp:1538] Warning: WARNING: "
                               "destroy_process_group() was not called before program exit, which can leak "
                               "resources. For more info, please see https://pytorch.org/docs/stable/distributed."
                               "html#shutdown (function operator())", 4)
        if self.rng.random() < 0.6:
            self.raw(self.api, f"{self.stdlib()}/multiprocessing/resource_tracker.py:{279 if self.d.py_minor >= 12 else 254}: "
                               "UserWarning: resource_tracker: There appear to be 1 leaked shared_memory objects "
                               "to clean up at shutdown", 4)
            self.raw(self.api, "  warnings.warn('resource_tracker: There appear to be %d '", 4)

    def fail_in_worker(self, i: int, frames: list[F], error: str, stage: str, at_start: bool = False,
                       wrapper: str | None = None, entry: str = "self.worker.load_model()",
                       api: bool = True) -> None:
        """Rank `i` raises during `stage` (executor = worker start-up, profile, kv_init, capture);
        the worker, the engine core and the API server each report it, as vLLM does."""
        d = self.d
        if self.workers:
            wf = (vf.worker_main(d, entry) if at_start else vf.worker_rpc(d)) + frames
            self.worker_error(i, wf, error, at_start)
            self.log.tick(0.01, 0.3)
            last = error.strip().split("\n")[0]
            if at_start:
                ef = vf.engine_core(d, "executor") + [
                    F("vllm/v1/executor/multiproc_executor.py", 107, "_init_executor",
                      "self.workers = WorkerProc.wait_for_ready(unready_workers)",
                      "               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
                    F("vllm/v1/executor/multiproc_executor.py", 471, "wait_for_ready", "raise e from None")]
                err = ("Exception: WorkerProc initialization failed due to an exception in a background process. "
                       "See stack trace for root cause.")
            else:
                ef = vf.engine_core(d, stage) + vf.rpc_tail(d, True)
                msg = last.split(": ", 1)[1] if ": " in last else last
                err = wrapper or (f"RuntimeError: Worker failed with error '{msg}', please check the stack trace "
                                  "above for the root cause")
            self.engine_error(ef, err)
        else:
            ef = vf.engine_core(d, stage)
            if stage == "executor":
                ef += [F("vllm/executor/uniproc_executor.py", 54, "_init_executor",
                         "self.collective_rpc(\"init_device\")" if "init_device" in entry else
                         "self.collective_rpc(\"load_model\")")]
            if stage != "kv_check":
                ef += vf.rpc_tail(d, False)
            self.engine_error(ef + frames, error)
        if api:
            self.api_error()
        self.shutdown_noise()
