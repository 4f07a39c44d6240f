"""SGLang endings about GPU memory: pool sizing, weights, activations, graph capture."""
from __future__ import annotations

from . import levers
from . import sglang_frames as sf
from .case import Outcome, Run
from .pyerr import DURING, F, cuda_error, frame_lines, oom

HINT_CLASSIC = [
    "Possible solutions:",
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
    "3. disable torch compile by not using --enable-torch-compile",
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ",
]
HINT_NEW = [
    "Possible solutions:",
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
    "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)",
    "3. disable torch compile by not using --enable-torch-compile",
    "4. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. (Not recommended. Huge performance loss)",
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose",
]


def _failing_ranks(run: Run, e, how: str = "some") -> list[str]:
    rs = list(e.ranks)
    run.rng.shuffle(rs)
    if how == "all" or len(rs) <= 2:
        return rs
    return rs[: run.rng.randint(1, min(3, len(rs)))]


def _oom_text(e, alloc: float, free_mib: float | None = None, torch_new: bool | None = None,
              other: tuple[int, float] | None = None) -> str:
    tot = e.d.gpu.total
    free = free_mib if free_mib is not None else e.rng.uniform(80, 900)
    used = tot - free / 1024 - (other[1] if other else 0)
    by_torch = used - e.rng.uniform(0.9, 2.2)
    new = torch_new if torch_new is not None else e.d.v >= (0, 5, 0)
    return oom(new, alloc, tot, free, used, by_torch, e.rng.uniform(20, 600), 0, other)


# -- KV / mamba pool -------------------------------------------------------
def kv_pool(run: Run, target: float | None = None, show_value: bool | None = None, notes: str = "") -> Outcome:
    e = run.sg()
    e.boot("memory_pool")
    e.hook("memory_pool")
    mf = e.cfg["mem_fraction_static"]
    msg = "Not enough memory. Please try to increase --mem-fraction-static."
    if show_value if show_value is not None else e.new_capture:
        msg += f" Current value: mem_fraction_static={mf}"
    for r in _failing_ranks(run, e):
        e.log.tick(0.001, 0.2)
        e.exception(r, e.tb(sf.memory_pool(e.d), "RuntimeError: " + msg))
    e.sigquit()
    t = target or levers.raise_mem(mf, e.d.gpu.total, min(e.avail.values()))
    return Outcome("memory_pool", "kv_cache_oom", [f"--mem-fraction-static {levers.fmt(t)}"],
                   must_not=[f"--mem-fraction-static {levers.fmt(mf)}"], exit="sigkill",
                   notes=notes or f"Dies between 'Load weight end' and 'Memory pool end' with 'Not enough memory' at "
                                  f"mem_fraction_static={mf}: the weights leave too little for the KV pool. Raise "
                                  "the static fraction (relative to the value in server_args).")


def mamba_pool(run: Run, ratio_to: float = 1.5) -> Outcome:
    e = run.sg()
    e.boot("memory_pool")
    e.hook("memory_pool")
    ratio = e.cfg.get("mamba_full_memory_ratio", 0.9)
    err = ("RuntimeError: Not enough space for mamba cache, try to increase --mamba-full-memory-ratio or "
           "--max-mamba-cache-size.")
    for r in _failing_ranks(run, e):
        e.log.tick(0.001, 0.2)
        e.exception(r, e.tb(sf.mamba_pool(e.d), err))
    e.sigquit()
    return Outcome("memory_pool", "kv_cache_oom", [f"--mamba-full-memory-ratio {levers.fmt(ratio_to)}"],
                   must_not=[f"--mamba-full-memory-ratio {levers.fmt(ratio)}", "--context-length"],
                   exit="sigkill", secondary=None,
                   notes="Hybrid GDN model: the linear-attention (mamba) state pool is what does not fit; the "
                         "engine names --mamba-full-memory-ratio. Shrinking --context-length does not touch it.")


def runtime_pool(run: Run, which: str = "Decode") -> Outcome:
    """'Prefill/Decode out of memory' while serving: the token pool ran dry under load."""
    e = run.sg()
    e.boot()
    e.serve(run.rng.randint(4, 8), pressure=True)
    e.log.wait(3)
    mode = "decode" if which == "Decode" else "extend"
    fr = sf.forward_batch(e.d, mode)[:3] + [
        F("sglang/srt/managers/scheduler.py", 1391, "get_next_batch_to_run" if which == "Prefill" else
          "update_running_batch", "new_batch = self.get_new_batch_prefill()" if which == "Prefill" else
          "batch.prepare_for_decode()"),
        F("sglang/srt/managers/schedule_batch.py", 1702 if which == "Decode" else 1288,
          "prepare_for_decode" if which == "Decode" else "prepare_for_extend",
          "self.out_cache_loc = alloc_token_slots(self.tree_cache, bs)" if which == "Decode" else
          "out_cache_loc = alloc_for_extend(self)"),
        F("sglang/srt/mem_cache/common.py", 311, "alloc_token_slots", "raise RuntimeError(error_msg)")]
    avail = run.rng.randint(0, 30)
    err = (f"RuntimeError: {which} out of memory. Try to lower your batch size.\n"
           f"Try to allocate {run.rng.randint(40, 900)} tokens.\n"
           f"Available tokens: {avail}\n"
           f"self.token_to_kv_pool_allocator.available_size()={avail}\n"
           "self.tree_cache.evictable_size()=0\n")
    e.exception(e.r0, e.tb(fr, err))
    e.sigquit()
    mrr = e.cfg.get("max_running_requests")
    fixes = [f"--max-running-requests {levers.halve(mrr, 8) if mrr else 128}"]
    mf = e.cfg["mem_fraction_static"]
    return Outcome("serving", "kv_cache_oom", fixes, must_not=[f"--mem-fraction-static {levers.fmt(mf)}"]
                   if mf >= 0.9 else [], exit="sigkill",
                   notes=f"'{which} out of memory. Try to lower your batch size.' after the server was serving with "
                         "'KV cache pool is full. Retract requests.' pressure: the token pool ran out at runtime. "
                         "Cap concurrency.")


# -- weights ------------------------------------------------------------------
def weights(run: Run, where: str = "create", stop: float = 0.0, fix_tp: int | None = None,
            other_proc: tuple[int, float] | None = None, waiting_ranks: bool = False) -> Outcome:
    e = run.sg()
    e.boot("weight_load")
    e.load_begin()
    if where != "create":
        e.load_bar(stop=stop or 0.5)
    failing = [e.r0] if other_proc else _failing_ranks(run, e)
    if waiting_ranks:
        ok = [r for r in e.ranks if r not in failing]
        e.log.wait(4)
        e.each(lambda r: f"TP rank {r[2:]} could finish the model loading, but there are other ranks that didn't "
                         "finish loading. It is likely due to unexpected failures (e.g., OOM) or a slow node.",
               ranks=ok)
    alloc = e.rng.choice([0.43, 0.87, 1.75, 3.5, 1.12])
    text = _oom_text(e, alloc, other=other_proc)
    for r in failing:
        e.log.tick(0.001, 0.3)
        e.exception(r, e.tb(sf.load_model(e.d, where), text))
    e.sigquit()
    d = e.d
    if other_proc:
        return Outcome("weight_load", "weights_oom", [],
                       fix_other=f"another process (pid {other_proc[0]}) holds {other_proc[1]:.0f} GiB on GPU 0: stop "
                                 "it or start on free GPUs",
                       must_not=["--mem-fraction-static", "--context-length"], exit="sigkill",
                       notes="CUDA OOM while creating the weights on one rank only; the OOM text shows another "
                             "process holding memory on that GPU. The model fits: the GPU was not free.")
    tp = fix_tp or levers.next_tp(d.tp, d.weights_gib(), d.gpu.total, d.model.heads)
    return Outcome("weight_load", "weights_oom", [f"--tp-size {tp}"],
                   fix_other="or a quantized checkpoint (FP8) of the same model",
                   must_not=["--mem-fraction-static", "--context-length", "--disable-cuda-graph",
                             f"--tp-size {d.tp}"], exit="sigkill",
                   notes=f"torch.OutOfMemoryError inside load_model (after 'Load weight begin', no 'Load weight "
                         f"end'): {d.model.name} needs ~{d.weights_gib():.0f} GiB per rank at TP{d.tp} on "
                         f"{d.gpu.label}. Only more GPUs (or a smaller/quantized model) help.")


# -- activations ----------------------------------------------------------------
def activation(run: Run, when: str = "serving", fix: list[str] | None = None, must_not: list[str] | None = None,
               site: str = "moe") -> Outcome:
    e = run.sg()
    d = e.d
    if when == "serving":
        e.boot()
        e.serve(run.rng.randint(3, 7))
        e.log.wait(2)
        e.line(f"Prefill batch. #new-seq: 1, #new-token: {e.cfg['chunked_prefill_size'] if e.cfg['chunked_prefill_size'] > 0 else 118730}, "
               f"#cached-token: 0, token usage: 0.{run.rng.randint(10, 40)}, #running-req: {run.rng.randint(2, 9)}, "
               "#queue-req: 0, ", e.r0)
    else:  # warmup request
        e.boot("warmup")
        e.hook("warmup")
        e.line(f'INFO:     127.0.0.1:{run.rng.randint(33000, 60999)} - "GET /get_model_info HTTP/1.1" 200 OK')
    fr = sf.forward_batch(d, "extend")
    if site == "moe":
        fr += [F(f"sglang/srt/models/{d.model.sg_module}.py", 702, "forward", "hidden_states = self.model("),
               F(f"sglang/srt/models/{d.model.sg_module}.py", 411, "forward",
                 "hidden_states = self.mlp(hidden_states, forward_batch)"),
               F("sglang/srt/layers/moe/fused_moe_triton/layer.py", 839, "forward",
                 "final_hidden_states = self.quant_method.apply("),
               F("sglang/srt/layers/moe/fused_moe_triton/fused_moe.py", 1297, "fused_experts_impl",
                 "intermediate_cache1 = torch.empty(")]
    elif site == "logits":
        fr += [F(f"sglang/srt/models/{d.model.sg_module}.py", 466, "forward", "return self.logits_processor("),
               F("sglang/srt/layers/logits_processor.py", 330, "forward",
                 "logits = self._get_logits(pruned_states, lm_head, logits_metadata)"),
               F("sglang/srt/layers/logits_processor.py", 512, "_get_logits",
                 "logits = torch.matmul(hidden_states.to(lm_head.weight.dtype), lm_head.weight.T)")]
    else:  # attention
        fr += [F(f"sglang/srt/models/{d.model.sg_module}.py", 392, "forward",
                 "hidden_states, residual = layer("),
               F("sglang/srt/layers/attention/flashinfer_backend.py", 684, "forward_extend",
                 "o1, s1 = self.prefill_wrapper_ragged.forward_return_lse(")]
    alloc = run.rng.choice([2.31, 4.64, 7.5, 9.79])
    text = _oom_text(e, alloc)
    e.exception(e.r0, e.tb(fr, text))
    if when == "warmup":
        e.log.tick(0.5, 2)
        e.line(f"Initialization failed. warmup error: {text.split(': ', 1)[0]}: "
               f"{text.split(': ', 1)[1][:120]}...", prio=3)
    e.sigquit()
    chunk = e.cfg["chunked_prefill_size"]
    if fix is None:
        fix = [f"--chunked-prefill-size {8192 if chunk <= 0 or chunk > 8192 else levers.halve(chunk, 1024)}"]
    if must_not is None:
        must_not = [f"--chunked-prefill-size {chunk}", "--context-length"]
    phase = "serving" if when == "serving" else "warmup"
    return Outcome(phase, "activation_oom", fix, must_not=must_not, exit="sigkill",
                   notes=f"CUDA OOM in a forward pass ({site}) {'while serving' if phase == 'serving' else 'on the warm-up request'}, "
                         "after the pool and graphs were set up: activation memory, not weights or KV sizing.")


# -- graph capture ---------------------------------------------------------------
def _wrapper_lines(e, inner_error: str, prefill: bool = False) -> list[str]:
    first, *rest = inner_error.split("\n")
    body = first.split(": ", 1)[1] if ": " in first else first
    if prefill:
        return [f"Exception: Fail when using backend: full for prefill runner. {body}", *rest,
                "Possible suggestions:",
                "1. set --cuda-graph-backend-prefill=breakable to allow graph breaks, or "
                "--cuda-graph-backend-prefill=disabled",
                "2. if it is an out-of-memory error, lower --mem-fraction-static or --cuda-graph-max-bs-prefill "
                "(default 2048)"]
    hint = HINT_NEW if e.new_capture else HINT_CLASSIC
    rest = [r for r in rest if r != ""] + [""] if rest else []
    return [f"Exception: Capture cuda graph failed: {body}", *rest, *hint]


def capture(run: Run, inner_error: str, tail: list[F] | None = None, stop_bs: int | None = None,
            ranks: str = "all", prefill: bool = False) -> tuple:
    """Drive to the capture, fail inside it; returns (emitter, bs it died at)."""
    e = run.sg()
    e.boot("graph_capture")
    kind = "verify" if e.cfg.get("speculative_algorithm") == "DFLASH" else "decode"
    if prefill:
        e.capture_begin(kind)
        e.capture_bar()
        e.capture_end(kind)
        e.each(lambda r: f"Capture target prefill CUDA graph begin. backend=full, avail mem={e.avail[r]:.2f} GB")
        e.line("Compiling num tokens (num_tokens=2048)", e.r0)
        bs = 2048
    else:
        e.capture_begin(kind)
        bs = e.capture_bar(stop_bs)
    inner, outer = sf.graph_capture(e.d, tail)
    site, py = e.d.site, e.d.py_minor
    fails = list(e.ranks) if ranks == "all" else [ranks] if ranks in e.ranks else _failing_ranks(run, e)
    for r in fails:
        e.log.tick(0.001, 0.2)
        tb = (["Traceback (most recent call last):", *frame_lines(inner, site, py), *inner_error.split("\n")]
              + DURING + ["Traceback (most recent call last):", *frame_lines(outer, site, py)]
              + _wrapper_lines(e, inner_error, prefill))
        e.exception(r, tb)
    e.sigquit()
    return e, bs


def capture_oom(run: Run, stop_bs: int | None = None, fix: list[str] | None = None) -> Outcome:
    e0 = run.sg()  # peek at config for the OOM size
    alloc = run.rng.choice([0.5, 1.0, 1.25, 2.0])
    inner = _oom_text(e0, alloc, free_mib=run.rng.uniform(60, 500))
    e, bs = capture(run, inner, stop_bs=stop_bs)
    mx = max(e.capture_bs) if e.capture_bs else 256
    mf = e.cfg["mem_fraction_static"]
    flag = "--cuda-graph-max-bs-decode" if e.new_capture else "--cuda-graph-max-bs"
    fix = fix or [f"{flag} {levers.halve(min(mx, bs) if bs > 1 else mx)}",
                  f"--mem-fraction-static {levers.fmt(levers.lower_mem(mf, 0.03))}"]
    return Outcome("graph_capture", "graph_capture_fault", fix,
                   must_not=[f"--mem-fraction-static {levers.fmt(mf)}", f"{flag} {mx}"], exit="sigkill",
                   notes=f"'Capture cuda graph failed: CUDA out of memory' at bs={bs}: the OOM happens inside CUDA "
                         "graph capture (after 'Memory pool end'), so it is a capture fault, not KV sizing. Capture "
                         "fewer/smaller batch sizes or leave more headroom.")


def gdn_item_tail(d) -> list[F]:
    m = d.model.sg_module
    A = "sglang/srt/layers/attention"
    return [F(f"sglang/srt/models/{m}.py", 876, "forward", "hidden_states = self.model("),
            F("torch/nn/modules/module.py", 1775, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)",
              "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
            F("torch/nn/modules/module.py", 1786, "_call_impl", "return forward_call(*args, **kwargs)",
              "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
            F(f"sglang/srt/models/{m}.py", 791, "forward", "hidden_states, residual = layer("),
            F(f"sglang/srt/models/{m}.py", 548, "forward", "hidden_states = self.linear_attn("),
            F(f"sglang/srt/models/{m}.py", 409, "forward", "core_attn_out = self.attn("),
            F("sglang/srt/layers/radix_linear_attention.py", 91, "forward",
              "return forward_batch.attn_backend.forward("),
            F(f"{A}/hybrid_linear_attn_backend.py", 734, "forward", "return self.forward_decode("),
            F(f"{A}/hybrid_linear_attn_backend.py", 668, "forward_decode",
              "return self.linear_attn_backend.forward_decode("),
            F(f"{A}/linear/gdn_backend.py", 187, "forward_decode", "core_attn_out = self.decode("),
            F(f"{A}/linear/gdn_backend.py", 213, "decode", "num_accepted = int(spec_info.accept_length.max().item())",
              "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]


def moe_sync_tail(d) -> list[F]:
    m = d.model.sg_module
    return [F(f"sglang/srt/models/{m}.py", 1641, "forward", "hidden_states = self.model("),
            F(f"sglang/srt/models/{m}.py", 1522, "forward", "hidden_states, residual = layer("),
            F(f"sglang/srt/models/{m}.py", 1287, "forward", "hidden_states = self.mlp("),
            F(f"sglang/srt/models/{m}.py", 598, "forward_deepep", "topk_output = self.topk("),
            F("sglang/srt/layers/moe/token_dispatcher/deepep.py", 402, "dispatch_a",
              "num_tokens = int(topk_idx.ne(-1).sum().item())",
              "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]


def capture_unsafe(run: Run, tail_fn=gdn_item_tail, fix: list[str] | None = None, notes: str = "",
                   stop_bs: int | None = None, ranks: str = "all") -> Outcome:
    err = cuda_error("operation not permitted when stream is capturing", run.d.v >= (0, 5, 0))
    e, bs = capture(run, err, tail=tail_fn(run.d), stop_bs=stop_bs or run.rng.choice([4, 8, 16, 24]), ranks=ranks)
    flag = "--disable-cuda-graph"
    return Outcome("graph_capture", "graph_capture_fault", fix or [flag],
                   must_not=["--mem-fraction-static", "--cuda-graph-max-bs-decode" if e.new_capture else
                             "--cuda-graph-max-bs"], exit="sigkill",
                   notes=notes or f"Capture fails at bs={bs} with 'operation not permitted when stream is "
                                  "capturing': a host sync (.item()) inside the captured forward. The engine's "
                                  "hint lists memory levers first, but this is a capture-unsafe op, not a memory "
                                  "shortage; run decode eagerly.")


def prefill_graph(run: Run) -> Outcome:
    err = ("torch._dynamo.exc.Unsupported: Dynamic shape operator\n"
           "  Explanation: Operator `aten.nonzero.default`'s output shape depends on input Tensor data.\n"
           "  Hint: Enable tracing of dynamic shape operators with "
           "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`\n\n"
           "  Developer debug context: aten.nonzero.default\n")
    e, _ = capture(run, err, prefill=True, tail=[
        F(f"sglang/srt/models/{run.d.model.sg_module}.py", 467, "forward", "hidden_states = self.model("),
        F("torch/_dynamo/eval_frame.py", 845, "compile_wrapper", "raise e.with_traceback(None) from e.__cause__",
          "  # User compiler error")])
    return Outcome("graph_capture", "graph_capture_fault", ["--cuda-graph-backend-prefill breakable"],
                   must_not=["--mem-fraction-static", "--cuda-graph-max-bs-decode"], exit="sigkill",
                   notes="The decode graph captured fine; the prefill CUDA graph (full backend) fails because the "
                         "model's forward has a data-dependent op torch.compile cannot trace. The engine suggests "
                         "the breakable prefill backend.")
