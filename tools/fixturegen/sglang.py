"""SGLang start-up sequence: classic (0.5.10) and 0.5.17+/0.5.22+ wording, per-rank interleaving."""
from __future__ import annotations

import random
from typing import Callable

from .deploy import Deploy
from .pyerr import F, traceback
from .sglang_args import auto_backend, resolved, server_args_line
from .timeline import Log

PHASES = ["launch", "dist_init", "weight_load", "memory_pool", "kernel_init", "graph_capture", "http",
          "warmup", "ready", "serving"]


def tqdm_bar(desc: str, i: int, n: int, elapsed: float, rate: float, width: int = 10, style: str = "bar",
             unit: str = "it/s") -> str:
    pct = int(100 * i / n)
    rem = (n - i) / rate if rate else 0
    fmt = lambda s: f"{int(s // 60):02d}:{int(s % 60):02d}"  # noqa: E731
    rate_s = f"{rate:5.2f}{unit}" if unit == "it/s" else f"{1 / rate:5.2f}s/it"
    if style == "completed":
        return f"{desc}: {pct:3d}% Completed | {i}/{n} [{fmt(elapsed)}<{fmt(rem)}, {rate_s}]"
    full = pct * width // 100
    frac = "▏▎▍▌▋▊▉"[(pct * width) % 100 * 7 // 100] if full < width and (pct * width) % 100 >= 15 else ""
    bar = ("█" * full + frac).ljust(width)
    return f"{desc}: {pct:3d}%|{bar}| {i}/{n} [{fmt(elapsed)}<{fmt(rem)}, {rate_s}]"


class SGLang:
    def __init__(self, log: Log, d: Deploy, rng: random.Random,
                 hooks: dict[str, list[Callable[["SGLang"], None]]] | None = None,
                 native_tb: bool = False, rank_style: str = "tp"):
        self.log, self.d, self.rng = log, d, rng
        self.hooks = hooks or {}
        self.native_tb = native_tb           # tracebacks as one multi-line journal record
        self.new_args = d.v >= (0, 5, 22)
        self.new_capture = d.v >= (0, 5, 17)
        self.new_par = d.v >= (0, 5, 22)
        self.cfg = resolved(d, self.new_args)
        n = d.tp * d.pp
        if rank_style == "dp" and d.dp > 1:
            per = max(d.tp // d.dp, 1)
            self.ranks = [f"DP{i // per} TP{i}" for i in range(n)]
        elif rank_style == "ep":
            self.ranks = [f"TP{i} EP{i}" for i in range(n)]
        elif rank_style == "node1":
            self.ranks = [f"TP{i + n}" for i in range(n)]
        elif d.pp > 1:
            self.ranks = [f"PP{i // d.tp} TP{i % d.tp}" for i in range(n)]
        else:
            self.ranks = [f"TP{i}" for i in range(n)] if n > 1 or d.v >= (0, 5, 0) else [""]
        total = d.gpu.total
        self.avail = {r: round(total - d.ctx_overhead() - rng.uniform(0.0, 0.35), 2) for r in self.ranks}
        self.capture_bs: list[int] = []
        self.died: set[str] = set()
        self.sched_pids = [d.tp * 0 + log.pid + 70 + 3 * i for i in range(n)]

    # -- primitives -------------------------------------------------------
    @property
    def r0(self) -> str:
        return self.ranks[0]

    def line(self, msg: str, rank: str | None = None, prio: int = 6) -> None:
        ts = self.log.et.strftime("%Y-%m-%d %H:%M:%S")
        tag = f" {rank}" if rank else ""
        self.log.app(f"[{ts}{tag}] {msg}", prio)

    def raw(self, msg: str) -> None:
        self.log.app(msg)

    def each(self, fn: Callable[[str], str], ranks: list[str] | None = None, gap: float = 0.03) -> None:
        rs = list(ranks if ranks is not None else self.ranks)
        rs = [r for r in rs if r not in self.died]
        self.rng.shuffle(rs)
        for r in rs:
            self.log.tick(0, gap)
            self.line(fn(r), r)

    def hook(self, phase: str) -> None:
        for fn in self.hooks.get(phase, []):
            fn(self)

    def exception(self, rank: str, tb: list[str], who: str = "Scheduler", trailing_blank: bool = True) -> None:
        ts = self.log.et.strftime("%Y-%m-%d %H:%M:%S")
        tag = f" {rank}" if rank else ""
        head = f"[{ts}{tag}] {who} hit an exception: {tb[0]}"
        body = tb[1:] + ([""] if trailing_blank and tb[-1] != "" else [])
        if self.native_tb:
            self.log.app("\n".join([head, *body]), 3)
        else:
            self.log.app(head, 3)
            for ln in body:
                self.log.app(ln, 3)
        self.died.add(rank)

    def tb(self, frames: list[F], error: str) -> list[str]:
        return traceback(frames, error, self.d.site, self.d.py_minor)

    def sigquit(self) -> None:
        self.log.tick(0.05, 0.4)
        self.line("Received sigquit from a child process. It usually means the child failed.", prio=3)

    # -- phases -----------------------------------------------------------
    def launch(self) -> None:
        self.hook("launch")
        d, c = self.d, self.cfg
        backend_msg = None
        if d.args.get("attention_backend") is None and d.model.kind != "gdn":
            word = "set" if self.new_args else "specified"
            backend_msg = f"Attention backend not {word}. Use {auto_backend(d)} backend by default."
        if backend_msg and not self.new_args:
            self.line(backend_msg, prio=4)
        if d.args.get("disable_cuda_graph") and self.new_args:
            self.line("--disable-cuda-graph is deprecated and will be removed in a future release; "
                      "use --cuda-graph-backend-decode=disabled instead.", prio=4)
        self.line(server_args_line(d, self.new_args))
        if backend_msg and self.new_args:
            self.line(backend_msg, prio=4)
        if d.model.kind == "gdn" and self.new_args:
            self.line("Using hybrid linear attention backend for hybrid GDN models.")
        if (0, 5, 0) <= d.v < (0, 5, 17) and not c.get("disable_piecewise_cuda_graph") and d.model.kind != "gdn":
            self.line("Piecewise CUDA Graph is enabled by default as an experimental feature. "
                      "Use --disable-piecewise-cuda-graph to turn it off if you hit issues.", prio=4)
        self.log.wait(self.rng.uniform(4, 8))

    def dist_init(self) -> None:
        self.hook("dist_init")
        self.each(lambda r: "Init parallel begin." if self.new_par else "Init torch distributed begin.")
        self.log.wait(0.6)
        if len(self.ranks) > 1 or self.new_par:
            self.line("sglang is using nccl==2.27.5" if self.new_par else "sglang is using nccl==2.21.5", self.r0)
        self.hook("dist_init_nccl")
        self.log.wait(0.8)
        el = round(self.rng.uniform(0.8, 2.4), 2)
        if self.new_par:
            self.each(lambda r: f"Init parallel ends. elapsed={el:.2f} s")
        else:
            mu = round(0.1 + 0.18 * (len(self.ranks) > 1) + self.rng.uniform(0, 0.4), 2)
            self.each(lambda r: f"Init torch distributed ends. elapsed={el:.2f} s, mem usage={mu:.2f} GB")
            for r in self.ranks:
                self.avail[r] = round(self.avail[r] - mu, 2)

    def load_begin(self) -> None:
        self.hook("weight_load")
        self.log.wait(0.7)
        self.load_t0 = self.log.t
        self.each(lambda r: f"Load weight begin. avail mem={self.avail[r]:.2f} GB")
        if self.d.model.kind == "moe" and self.d.v < (0, 5, 17):
            e = 128
            self.line(f"Using default MoE kernel config. Performance might be sub-optimal! Config file not found "
                      f"at {self.d.site}/sglang/srt/layers/moe/fused_moe_triton/configs/triton_3_4_0/"
                      f"E={e},N={768 // max(self.d.tp, 1)},device_name={self.d.gpu.name.replace(' ', '_')}.json, "
                      "you can create them with https://github.com/sgl-project/sglang/tree/main/benchmark/kernels/"
                      "fused_moe_triton", self.r0, prio=4)

    def load_bar(self, stop: float | None = None) -> None:
        n = self.d.model.shards
        rate = self.rng.uniform(0.9, 2.6) * (2 if self.d.model.size_gb < 40 else 1)
        last = n if stop is None else max(1, int(n * stop))
        step = 1 if n <= 24 else max(1, n // 18)
        i = 0
        while True:
            self.log.tick(0.0, 2 / rate * step)
            self.raw(tqdm_bar("Loading safetensors checkpoint shards", i, n, i / rate, rate, style="completed"))
            self.hook(f"shard{i}")
            if i >= last:
                break
            i = min(i + step, last)
        if stop is None:
            self.raw("")

    def load_end(self) -> None:
        w = round(self.d.weights_gib() + self.rng.uniform(0.05, 0.4), 2)
        el = round((self.log.t - self.load_t0).total_seconds() + self.rng.uniform(0.3, 2.5), 2)
        arch = self.d.model.arch
        for r in self.ranks:
            self.avail[r] = round(self.avail[r] - w, 2)
        if self.new_capture:
            self.each(lambda r: f"Load weight end. elapsed={el:.2f} s, type={arch}, dtype=torch.bfloat16, "
                                f"avail mem={self.avail[r]:.2f} GB, mem usage={w:.2f} GB.")
        else:
            self.each(lambda r: f"Load weight end. type={arch}, dtype=torch.bfloat16, "
                                f"avail mem={self.avail[r]:.2f} GB, mem usage={w:.2f} GB.")
        if self.d.draft:
            self.each(lambda r: f"Load weight begin. avail mem={self.avail[r]:.2f} GB")
            self.log.wait(3)
            dw = 1.87
            for r in self.ranks:
                self.avail[r] = round(self.avail[r] - dw, 2)
            self.each(lambda r: f"Load weight end. elapsed=2.91 s, type=DFlashDraftModel, dtype=torch.bfloat16, "
                                f"avail mem={self.avail[r]:.2f} GB, mem usage={dw:.2f} GB.")

    def weight_load(self) -> None:
        self.load_begin()
        self.load_bar()
        self.load_end()

    def pool_sizes(self) -> tuple[int, float]:
        d = self.d
        mf = self.cfg["mem_fraction_static"]
        rest = min(self.avail.values()) - d.gpu.total * (1 - mf)
        rest = max(rest, 1.3)
        per_tok = d.model.kv_bytes_per_token(d.tp)
        tokens = int(rest * 0.82 * 2**30 / per_tok) // 64 * 64
        return tokens, rest

    def memory_pool(self) -> None:
        self.hook("memory_pool")
        d = self.d
        tokens, rest = self.pool_sizes()
        self.tokens = tokens
        kv = tokens * d.model.kv_bytes_per_token(d.tp) / 2**30
        if d.model.kind == "swa":
            swa = int(tokens * 1.6) // 64 * 64
            self.each(lambda r: f"Use sliding window memory pool. full_layer_tokens={tokens}, "
                                f"swa_layer_tokens={swa}")
        if d.model.kind == "gdn":
            mc = self.cfg.get("max_mamba_cache_size") or (512 if d.draft else 1024)
            ssm = round(36 * (32 // d.tp) * 128 * 128 * 4 * mc / 2**30, 2)
            conv = round(ssm * 0.024, 2)
            extra = ""
            if d.draft:
                extra = (f", intermediate_ssm_state_cache size: {ssm * 0.5:.2f}GB, "
                         f"intermediate_conv_window_cache size: {conv * 0.5:.2f}GB")
            self.each(lambda r: f"Mamba Cache is allocated. max_mamba_cache_size: {mc}, conv_state size: "
                                f"{conv:.2f}GB, ssm_state size: {ssm:.2f}GB{extra}")
            kv = max(rest * 0.8 - ssm * (1.5 if d.draft else 1), 1.1)
            tokens = self.tokens = int(kv * 2**30 / d.model.kv_bytes_per_token(d.tp)) // 64 * 64
        name = "KV Cache"
        if self.new_args:
            name = "MLA KV Cache" if d.model.kind == "mla" else "MHA KV Cache"
        dtype = "dtype: torch.bfloat16, " if self.new_capture else ""
        if d.model.kind == "mla":
            self.each(lambda r: f"{name} is allocated. {dtype}#tokens: {tokens}, KV size: {kv:.2f} GB")
        else:
            self.each(lambda r: f"{name} is allocated. {dtype}#tokens: {tokens}, K size: {kv / 2:.2f} GB, "
                                f"V size: {kv / 2:.2f} GB")
        for r in self.ranks:
            self.avail[r] = round(self.avail[r] - rest * 0.97, 2)
        self.log.wait(0.4)
        self.each(lambda r: f"Memory pool end. avail mem={self.avail[r]:.2f} GB")

    def kernel_init(self) -> None:
        self.hook("kernel_init")
        d = self.d
        if d.model.kind == "gdn" and self.new_capture:
            dec = "FlashInferGDNKernel" if d.gpu.sm >= 100 else "TritonGDNKernel"
            self.each(lambda r: f"GDN kernel dispatcher: decode={dec}, extend=TritonGDNKernel, "
                                f"verify=TritonGDNKernel")
        if self.cfg.get("speculative_algorithm") == "DFLASH":
            ab = auto_backend(d)
            bs = self.cfg.get("speculative_dflash_block_size") or 16
            self.each(lambda r: f"Initialized DFLASH draft runner. attention_backend={ab}, block_size={bs}")
        if d.args.get("prefill_attention_backend") or d.args.get("decode_attention_backend"):
            self.line("Using hybrid attention backend for decode and prefill: decode_backend="
                      f"{d.args.get('decode_attention_backend') or auto_backend(d)}, prefill_backend="
                      f"{d.args.get('prefill_attention_backend') or auto_backend(d)}", self.r0)

    def graph_bs(self) -> list[int]:
        mx = self.cfg.get("cuda_graph_max_bs") or self.cfg.get("cuda_graph_max_bs_decode") or (
            256 if self.d.gpu.total < 120 else 512)
        if self.cfg.get("max_running_requests"):
            mx = min(mx, self.cfg["max_running_requests"])
        bs = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 513, 16))
        return [b for b in bs if b <= mx]

    def graphs_off(self) -> bool:
        return bool(self.cfg.get("disable_cuda_graph")) or self.cfg.get("cuda_graph_backend_decode") == "disabled"

    def capture_begin(self, kind: str = "decode") -> None:
        self.hook("graph_capture")
        self.cap_t0 = self.log.t
        self.capture_bs = self.graph_bs()
        if self.new_capture:
            ntok = (self.cfg.get("speculative_dflash_block_size") or 16) if kind == "verify" else 1
            self.each(lambda r: f"Capture target {kind} CUDA graph begin. backend=full, num_tokens_per_req={ntok}, "
                                f"avail mem={self.avail[r] - 0.02:.2f} GB")
        else:
            self.each(lambda r: "Capture cuda graph begin. This can take up to several minutes. "
                                f"avail mem={self.avail[r] - 0.02:.2f} GB")
            self.line(f"Capture cuda graph bs {self.capture_bs}", self.r0)

    def capture_bar(self, stop_bs: int | None = None) -> int:
        """Print the tqdm bar from the largest bs down; returns the bs it stopped at."""
        bss = sorted(self.capture_bs, reverse=True)
        n = len(bss)
        av = min(self.avail.values())
        rate = self.rng.uniform(2.2, 4.5)
        for i, bs in enumerate(bss):
            self.log.tick(0.05, 1.8 / rate)
            cur = av - 0.015 * i
            self.raw(tqdm_bar(f"Capturing batches (bs={bs} avail_mem={cur:.2f} GB)", i, n, i / rate, rate))
            if stop_bs is not None and bs <= stop_bs:
                return bs
        self.raw(tqdm_bar(f"Capturing batches (bs=1 avail_mem={av - 0.015 * n:.2f} GB)", n, n, n / rate, rate))
        return 1

    def capture_end(self, kind: str = "decode") -> None:
        mu = round(self.rng.uniform(0.4, 2.2), 2)
        el = round((self.log.t - self.cap_t0).total_seconds() + self.rng.uniform(0.2, 1.5), 2)
        for r in self.ranks:
            self.avail[r] = round(self.avail[r] - mu, 2)
        if self.new_capture:
            bs = self.capture_bs
            self.each(lambda r: f"Capture target {kind} CUDA graph end. bs={bs}, elapsed={el:.2f} s, "
                                f"mem usage={mu:.2f} GB, avail mem={self.avail[r]:.2f} GB")
        else:
            self.each(lambda r: f"Capture cuda graph end. Time elapsed: {el:.2f} s. mem usage={mu:.2f} GB. "
                                f"avail mem={self.avail[r]:.2f} GB.")

    def graph_capture(self) -> None:
        if self.graphs_off():
            self.hook("graph_capture")
            return
        kind = "verify" if self.cfg.get("speculative_algorithm") == "DFLASH" else "decode"
        self.capture_begin(kind)
        self.capture_bar()
        self.capture_end(kind)
        if self.new_capture and self.cfg.get("cuda_graph_backend_prefill", "full") != "disabled" \
                and self.d.model.kind not in ("mla",):
            self.each(lambda r: f"Capture target prefill CUDA graph begin. backend=full, "
                                f"avail mem={self.avail[r]:.2f} GB")
            for nt in (2048, 1024, 512, 256):
                self.log.wait(1.6)
                self.line(f"Compiling num tokens (num_tokens={nt})", self.r0)
            self.each(lambda r: f"Capture target prefill CUDA graph end. elapsed=9.87 s, mem usage=0.61 GB, "
                                f"avail mem={self.avail[r] - 0.61:.2f} GB")
        if self.cfg.get("speculative_algorithm") == "DFLASH":
            self.each(lambda r: "DFLASH draft runner ready.")

    def summary(self) -> None:
        c = self.cfg
        ctx = c.get("context_length") or self.d.model.ctx
        mrr = c.get("max_running_requests") or min(4096, max(self.tokens // 512, 48))
        self.line(f"max_total_num_tokens={self.tokens}, chunked_prefill_size={c['chunked_prefill_size']}, "
                  f"max_prefill_tokens={c['max_prefill_tokens']}, max_running_requests={mrr}, context_len={ctx}, "
                  f"available_gpu_mem={min(self.avail.values()):.2f} GB", self.r0)

    def http(self) -> None:
        self.hook("http")
        self.log.wait(0.8)
        p = self.log.pid
        for m in (f"INFO:     Started server process [{p}]", "INFO:     Waiting for application startup.",
                  "INFO:     Application startup complete.",
                  f"INFO:     Uvicorn running on http://{self.cfg['host']}:{self.d.http_port} (Press CTRL+C to quit)"):
            self.line(m)

    def warmup(self) -> None:
        self.hook("warmup")
        self.log.wait(0.9)
        self.line(f'INFO:     127.0.0.1:{self.rng.randint(33000, 60999)} - "GET /get_model_info HTTP/1.1" 200 OK')
        self.line("Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
                  "#running-req: 0, #queue-req: 0, ", self.r0)

    def ready(self) -> None:
        self.log.wait(0.6)
        self.line(f'INFO:     127.0.0.1:{self.rng.randint(33000, 60999)} - "POST /generate HTTP/1.1" 200 OK')
        self.line("The server is fired up and ready to roll!")

    def serve(self, n: int = 8, pressure: bool = False) -> None:
        self.hook("serving")
        run = self.rng.randint(2, 9)
        tok = self.rng.randint(2000, 9000)
        cap = max(self.tokens, 1)
        for i in range(n):
            self.log.wait(self.rng.uniform(2, 12))
            if self.rng.random() < 0.35:
                nt = self.rng.randint(200, 8000)
                self.line(f"Prefill batch. #new-seq: 1, #new-token: {nt}, #cached-token: "
                          f"{self.rng.randint(0, 4000)}, token usage: {tok / cap:.2f}, #running-req: {run}, "
                          "#queue-req: 0, ", self.r0)
                run += 1
                tok += nt
            if pressure and i == n // 2:
                tok = int(cap * 0.985)
                self.line(f"Decode batch. #running-req: {run + 40}, #token: {tok}, token usage: 0.99, "
                          f"cuda graph: {not self.graphs_off()}, gen throughput (token/s): 2210.37, "
                          "#queue-req: 31, ", self.r0)
                self.line(f"KV cache pool is full. Retract requests. #retracted_reqs: {self.rng.randint(1, 6)}, "
                          f"#new_token_ratio: 0.{self.rng.randint(3000, 6000)} -> 0.7000", self.r0, prio=4)
                tok = int(cap * 0.9)
                continue
            thr = self.rng.uniform(300, 2400)
            self.line(f"Decode batch. #running-req: {run}, #token: {tok}, token usage: {tok / cap:.2f}, "
                      f"cuda graph: {not self.graphs_off()}, gen throughput (token/s): {thr:.2f}, #queue-req: 0, ",
                      self.r0)
            if self.rng.random() < 0.5:
                self.line(f'INFO:     10.{self.rng.randint(0, 40)}.{self.rng.randint(0, 255)}.'
                          f'{self.rng.randint(2, 250)}:{self.rng.randint(30000, 60000)} - '
                          '"POST /v1/chat/completions HTTP/1.1" 200 OK')
            tok += self.rng.randint(-500, 900)

    # -- drive ------------------------------------------------------------
    def boot(self, until: str | None = None) -> None:
        """Run the start-up phases before `until` (all of them, up to ready, when None)."""
        steps = [("launch", self.launch), ("dist_init", self.dist_init), ("weight_load", self.weight_load),
                 ("memory_pool", self.memory_pool), ("kernel_init", self.kernel_init),
                 ("graph_capture", self.graph_capture), ("summary", self.summary), ("http", self.http),
                 ("warmup", self.warmup), ("ready", self.ready)]
        for name, fn in steps:
            if name == until:
                return
            fn()
