"""More SGLang endings: old router-era pools, capture/JIT/watchdog failures, readiness waiters, NCCL set-up,
argument checks and devices that NVML cannot reach."""
from __future__ import annotations

from . import levers
from . import sglang_frames as sf
from .case import Outcome, Run
from .pyerr import DURING, F, cuda_error, frame_lines, traceback
from .sg_memory import _wrapper_lines
from .sglang_args import CLASSIC, NEW
from .sglang_frames import _bump

S = "sglang/srt"


# -- kv_cache_oom: router-era SGLang (0.1.x), the request pool runs dry -------------------------------------------
def router_req_pool(run: Run) -> Outcome:
    """sglang 0.1.x (managers/router/model_rpc.py): req_to_token_pool.alloc() returns None once the request slots
    (sized from the token pool and the context length) are used up; prepare_for_extend dereferences it."""
    d, log, rng = run.d, run.log, run.rng
    mf = d.args["mem_fraction_static"]
    site = d.site
    log.app(f"$ python3 -m sglang.launch_server --model-path {d.path} --port 30000 --mem-fraction-static {mf}")
    log.wait(6)
    log.app("Rank 0: load weight begin.")
    log.wait(2)
    log.app(f"INFO {log.t.strftime('%m-%d %H:%M:%S')} weight_utils.py:163] Using model weights format ['*.safetensors']")
    log.wait(9)
    log.app("Rank 0: load weight end.")
    tokens = 20608
    ctx = d.model.ctx
    log.app(f"Rank 0: max_total_num_token={tokens}, max_prefill_num_token={max(tokens // 6, 4096)}, "
            f"context_len={ctx}, ")
    log.app("server_args: disable_flashinfer=False, attention_reduce_in_fp32=False, disable_radix_cache=False, "
            "disable_regex_jump_forward=False, disable_disk_cache=False, ")
    log.wait(1.2)
    pid = log.pid
    for m in (f"INFO:     Started server process [{pid}]", "INFO:     Waiting for application startup.",
              "INFO:     Application startup complete.",
              "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)"):
        log.app(m)
    log.wait(1)
    log.app(f'INFO:     127.0.0.1:{rng.randint(40000, 60000)} - "GET /get_model_info HTTP/1.1" 200 OK')
    log.app("new fill batch. #seq: 1. #cached_token: 0. #new_token: 8. #remaining_req: 0. #running_req: 0. "
            "tree_cache_hit_rate: 0.00%.")
    log.app(f'INFO:     127.0.0.1:{rng.randint(40000, 60000)} - "POST /generate HTTP/1.1" 200 OK')
    log.app("The server is fired up and ready to roll!")
    slots = int(tokens / ctx * 256)
    running, used = 4, 900
    for k in range(10):
        log.wait(rng.uniform(2, 6))
        new = rng.randint(11, 17)
        log.app(f"new fill batch. #seq: {new}. #cached_token: {rng.randint(300, 4000)}. #new_token: "
                f"{rng.randint(2000, 9000)}. #remaining_req: {rng.randint(40, 160)}. #running_req: {running}. "
                f"tree_cache_hit_rate: {rng.uniform(2, 30):.2f}%.")
        running += new
        used = min(int(tokens * rng.uniform(0.55, 0.93)), tokens - 300)
        log.app(f"#running-req: {running}, #token: {used}, token usage: {used / tokens:.2f}, gen throughput "
                f"(token/s): {rng.uniform(700, 1900):.2f}, #queue-req: {rng.randint(60, 180)}")
        for _ in range(rng.randint(2, 5)):
            log.app(f'INFO:     10.{rng.randint(0, 40)}.{rng.randint(0, 255)}.{rng.randint(2, 250)}:'
                    f'{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK')
    rm = "sglang/srt/managers/router/model_rpc.py"
    fr = [F(rm, 176, "exposed_step", "self.forward_step()"),
          F("torch/utils/_contextlib.py", 115, "decorate_context", "return func(*args, **kwargs)",
            "           ^^^^^^^^^^^^^^^^^^^^^"),
          F(rm, 191, "forward_step", "self.forward_fill_batch(new_batch)"),
          F(rm, 398, "forward_fill_batch", "batch.prepare_for_extend("),
          F("sglang/srt/managers/router/infer_batch.py", 217, "prepare_for_extend",
            "req_pool_indices_cpu = req_pool_indices.cpu().numpy()",
            "                       ^^^^^^^^^^^^^^^^^^^^^")]
    err = "AttributeError: 'NoneType' object has no attribute 'cpu'"
    for k in range(2):
        log.wait(rng.uniform(0.5, 2))
        new = slots - running + rng.randint(3, 12)
        log.app(f"new fill batch. #seq: {new}. #cached_token: {rng.randint(300, 4000)}. #new_token: "
                f"{rng.randint(3000, 9000)}. #remaining_req: {rng.randint(90, 200)}. #running_req: {running}. "
                f"tree_cache_hit_rate: {rng.uniform(2, 30):.2f}%.")
        log.app("Exception in ModelRpcClient:", 3)
        for ln in traceback(fr, err, site, d.py_minor):
            log.app(ln, 3)
    return Outcome("serving", "kv_cache_oom", ["--mem-fraction-static 0.8"],
                   fix_other="or fewer concurrent requests per server",
                   must_not=[f"--mem-fraction-static {levers.fmt(mf)}", "--tp-size"], exit="none",
                   confidence="medium",
                   notes=f"Old router-era SGLang: the request pool has int({tokens}/{ctx}*256)={slots} slots because "
                         f"mem_fraction_static={mf} leaves a small token pool and the context is {ctx}; once "
                         "that many requests run, req_to_token_pool.alloc() returns None and prepare_for_extend "
                         "crashes on it (AttributeError on NoneType), step after step. A larger static fraction "
                         "gives the pools room.")


# -- graph_capture_fault: FlashInfer's fixed workspace overflows while capturing the largest batch --------------
def capture_workspace(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    b = lambda n: _bump(d, n)  # noqa: E731
    e.boot("graph_capture")
    e.capture_begin()
    bs = e.capture_bar(max(e.graph_bs()))
    ntok = e.cfg.get("speculative_num_draft_tokens") or 1
    have = 402653184
    need = bs * ntok * 32 * 128 * 4 * 18
    err = (f"RuntimeError: Error in function 'aligned_alloc' at /workspace/include/flashinfer/allocator.h:49: "
           f"Buffer overflow when allocating memory for batch_prefill_tmp_v with size {need} and alignment 16, but "
           f"only {have} bytes available in AlignedAllocator. Increase the workspace buffer size.")
    cg = f"{S}/model_executor/cuda_graph_runner.py"
    fb = f"{S}/layers/attention/flashinfer_backend.py"
    inner = [F(cg, b(391), "__init__", "self.capture()"),
             F(cg, b(503), "capture", ") = self.capture_one_batch_size(bs, forward)"),
             F(cg, b(631), "capture_one_batch_size",
               "self.model_runner.attn_backend.init_forward_metadata_capture_cuda_graph("),
             F(fb, b(452), "init_forward_metadata_capture_cuda_graph", "self.indices_updater_prefill.update("),
             F(fb, b(1097), "update_single_wrapper", "self.call_begin_forward("),
             F(fb, b(1239), "call_begin_forward", "wrapper.begin_forward("),
             F("flashinfer/prefill.py", 1583, "plan", "self._plan_info = self._cached_module.plan("),
             F("flashinfer/prefill.py", 265, "plan", "return module.plan(")]
    _, outer = sf.graph_capture(d)
    for r in e.ranks:
        e.log.tick(0.001, 0.2)
        tb = (["Traceback (most recent call last):", *frame_lines(inner, d.site, d.py_minor), err]
              + DURING + ["Traceback (most recent call last):", *frame_lines(outer, d.site, d.py_minor)]
              + _wrapper_lines(e, err))
        e.exception(r, tb)
    e.sigquit()
    return Outcome("graph_capture", "graph_capture_fault", [f"--cuda-graph-max-bs {levers.halve(bs)}"],
                   fix_other="or give FlashInfer a larger workspace buffer (384 MiB by default)",
                   must_not=["--mem-fraction-static", f"--cuda-graph-max-bs {bs}"], exit="sigkill",
                   notes=f"'Capture cuda graph failed' at the first batch size (bs={bs}, {ntok} draft tokens per "
                         "request for EAGLE verify): planning the FlashInfer prefill wrapper needs more than its "
                         "fixed workspace buffer. Not GPU memory (the fraction is irrelevant) and not a capture-"
                         "unsafe op: capture a smaller batch range.")


# -- startup_timeout: the hang watchdog fires while the first prefill JIT-compiles DeepGEMM kernels -------------
def _watchdog(run: Run, top: list[str], outcome) -> Outcome:
    """The warm-up prefill stalls in a JIT compile; the scheduler's hang watchdog dumps the stack and kills the
    server (0.5.17+: "Scheduler watchdog timeout (..., self.soft=False)"; classic: "Watchdog timeout (...)")."""
    e = run.sg()
    d = e.d
    e.boot("warmup")
    e.hook("warmup")
    e.log.wait(0.9)
    e.line(f'INFO:     127.0.0.1:{run.rng.randint(33000, 60999)} - "GET /get_model_info HTTP/1.1" 200 OK')
    e.line("Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, "
           "#queue-req: 0, ", e.r0)
    wd = e.cfg.get("watchdog_timeout") or 300
    e.log.wait(wd + run.rng.uniform(60, 140))
    spid = e.sched_pids[0]
    avail = e.tokens - 7
    e.line(f"self.cur_batch.batch_size()=1, self.cur_batch.reqs=[Req(rid={run.rng.getrandbits(128):032x}, "
           "input_ids=[0, 7371, 2003, 1362, 6640, 314, 3259], output_ids=[])], "
           f"self.token_to_kv_pool_allocator.available_size()={avail}, self.tree_cache.evictable_size()=0, ",
           e.r0, prio=3)
    e.line(f"Pyspy dump for PID {spid}:", e.r0, prio=3)
    new = e.new_capture
    mr = "sglang/srt/model_executor/model_runner.py"
    sc = "sglang/srt/managers/scheduler.py"
    loop = "event_loop_normal" if new else "event_loop_overlap"
    py = f"3.{d.py_minor}"
    stack = [f"Process {spid}: sglang::scheduler_TP0", f"Python v{py}.3 (/usr/bin/python{py})", "",
             f'Thread {spid} (active): "MainThread"', *top,
             f"    forward_extend ({mr}:{2402 if new else 1893})", f"    _forward_raw ({mr}:{2371 if new else 1932})",
             f"    forward ({mr}:{2318 if new else 1901})",
             f"    forward_batch_generation (sglang/srt/managers/tp_worker.py:{262 if new else 247})",
             f"    run_batch ({sc}:{2195 if new else 1860})", f"    {loop} ({sc}:{1019 if new else 891})",
             "    decorate_context (torch/utils/_contextlib.py:120)",
             f"    run_scheduler_process ({sc}:{3118 if new else 2695})",
             "    run (multiprocessing/process.py:108)", "    _bootstrap (multiprocessing/process.py:314)",
             "    _main (multiprocessing/spawn.py:135)", "    spawn_main (multiprocessing/spawn.py:122)",
             "    <module> (<string>:1)",
             f'Thread {spid + 211} (idle): "Thread-1 ({"_watchdog_thread" if new else "watchdog_thread"})"',
             "    _try_wait (subprocess.py:2011)", "    _wait (subprocess.py:2053)", "    wait (subprocess.py:1264)",
             "    communicate (subprocess.py:1209)", "    run (subprocess.py:550)",
             f"    pyspy_dump_schedulers ({'sglang/srt/utils/common.py:2321' if new else 'sglang/srt/utils.py:2052'})",
             *(["    _watchdog_once (sglang/srt/utils/watchdog.py:97)",
                "    _watchdog_thread (sglang/srt/utils/watchdog.py:74)"] if new else
               [f"    watchdog_thread ({sc}:2334)"]),
             "    run (threading.py:1012)", "    _bootstrap_inner (threading.py:1075)",
             "    _bootstrap (threading.py:1032)", ""]
    for ln in stack:
        e.raw(ln)
    if new:
        e.line(f"Scheduler watchdog timeout (self.watchdog_timeout={wd}, self.soft=False)", e.r0, prio=3)
    else:
        e.line(f"Watchdog timeout (self.watchdog_timeout={wd})", e.r0, prio=3)
    e.raw("")
    e.raw("")
    e.log.wait(5)
    e.sigquit()
    return outcome(wd)


def watchdog_first_use_jit(run: Run) -> Outcome:
    m = run.d.model.sg_module
    top = ["    gemm_nt_f8f8bf16 (sglang/srt/layers/deep_gemm_wrapper/entrypoint.py:84)",
           "    w8a8_block_fp8_matmul_deepgemm (sglang/srt/layers/quantization/fp8_kernel.py:1020)",
           "    deepgemm_w8a8_block_fp8_linear_with_fallback (sglang/srt/layers/quantization/fp8_utils.py:271)",
           "    apply (sglang/srt/layers/quantization/fp8.py:581)", "    forward (sglang/srt/layers/linear.py:1345)",
           "    _call_impl (torch/nn/modules/module.py:1786)", "    _wrapped_call_impl (torch/nn/modules/module.py:1775)",
           f"    forward_normal (sglang/srt/models/{m}.py:1068)", f"    forward (sglang/srt/models/{m}.py:1011)",
           f"    forward (sglang/srt/models/{m}.py:2117)", f"    forward (sglang/srt/models/{m}.py:2291)",
           f"    forward (sglang/srt/models/{m}.py:2453)", "    decorate_context (torch/utils/_contextlib.py:120)"]
    return _watchdog(run, top, lambda wd: Outcome(
        "warmup", "startup_timeout", [f"--watchdog-timeout {wd * 2}"],
        fix_other="or pre-compile the DeepGEMM kernels once (python3 -m sglang.compile_deep_gemm with the server's "
                  "arguments) so the first request does not JIT-compile them",
        must_not=["--mem-fraction-static", "--cuda-graph-max-bs-decode", "--chunked-prefill-size"], exit="sigkill",
        notes=f"The server came up; its 7-token warm-up prefill sits for over {wd} s in the FP8 GEMM (the py-spy dump "
              "shows the DeepGEMM entry point: the kernels are JIT-compiled on first use because pre-compilation was "
              "skipped) and the scheduler's hang watchdog kills the server. Slow first step, nothing broken."))


def watchdog_flashinfer_jit(run: Run) -> Outcome:
    fb = "sglang/srt/layers/attention/flashinfer_backend.py"
    top = ["    _try_wait (subprocess.py:2011)", "    _wait (subprocess.py:2053)", "    wait (subprocess.py:1264)",
           "    communicate (subprocess.py:1209)", "    run (subprocess.py:550)",
           "    run_ninja (flashinfer/jit/cpp_ext.py:232)", "    build (flashinfer/jit/core.py:121)",
           "    build_and_load (flashinfer/jit/core.py:138)",
           "    get_batch_prefill_module (flashinfer/prefill.py:246)", "    plan (flashinfer/prefill.py:2302)",
           f"    call_begin_forward ({fb}:1304)", f"    update_sliding_window ({fb}:1195)",
           f"    init_forward_metadata ({fb}:398)"]
    return _watchdog(run, top, lambda wd: Outcome(
        "warmup", "startup_timeout", [f"--watchdog-timeout {wd * 2}"],
        fix_other="or install FlashInfer's ahead-of-time kernels (flashinfer-jit-cache) / keep its JIT cache "
                  "(~/.cache/flashinfer) on a persistent path",
        must_not=["--mem-fraction-static", "--cuda-graph-max-bs", "--chunked-prefill-size"], exit="sigkill",
        notes=f"The first (warm-up) prefill needs a FlashInfer prefill kernel variant that is not in the wheel; "
              f"FlashInfer builds it with ninja at first use, the step runs past --watchdog-timeout {wd} and the hang "
              "watchdog kills the server (the py-spy dump shows run_ninja). Slow, not broken."))


# -- startup_timeout: an ExecStartPost readiness waiter gives up while the weights stream from NFS --------------
def waiter_gives_up(run: Run, waiter: str = "sglang-wait", limit: int = 600) -> Outcome:
    e = run.sg()
    d = e.d
    e.boot("weight_load")
    e.load_begin()
    n = d.model.shards
    pid = e.log.pid + 1
    url = f"http://127.0.0.1:{d.http_port}/health"
    t0 = e.log.t
    rate = 1 / run.rng.uniform(24, 34)
    i, waited = 0, 0
    while True:
        e.log.wait(1 / rate)
        i += 1
        el = (e.log.t - t0).total_seconds()
        e.raw(f"Loading safetensors checkpoint shards: {int(100 * i / n):3d}% Completed | {i}/{n} "
              f"[{int(el // 60):02d}:{int(el % 60):02d}<{int((n - i) / rate // 60):02d}:{int((n - i) / rate % 60):02d}, "
              f"{1 / rate:5.2f}s/it]")
        w = int((e.log.t - t0).total_seconds()) // 60 * 60
        if w > waited and w < limit:
            waited = w
            e.log.other_unit(waiter, pid, f"waiting for {url} ({w}s/{limit}s)")
        if (e.log.t - t0).total_seconds() > limit - 20:
            break
    e.log.wait(18)
    e.log.other_unit(waiter, pid, f"timed out after {limit}s waiting for {url}", 3)
    u = e.log.unit
    e.log.systemd(f"{u}: Control process exited, code=exited, status=1/FAILURE", 5)
    e.log.wait(0.3)
    e.log.systemd(f"{u}: Main process exited, code=killed, status=15/TERM", 5)
    e.log.systemd(f"{u}: Failed with result 'exit-code'.", 4)
    e.log.systemd(f"Failed to start {u} - SGLang {d.model.name}.", 3)
    e.log.systemd(f"{u}: Consumed 41min 12.409s CPU time.")
    return Outcome("weight_load", "startup_timeout", [],
                   fix_other=f"raise the ExecStartPost waiter's limit ({limit}s) above the real start time, or copy "
                             "the weights to local NVMe so loading takes minutes, not tens of minutes",
                   must_not=["--mem-fraction-static", "--tp-size", "--context-length"], exit="none",
                   notes=f"The weights stream from network storage at ~{1 / rate:.0f} s per shard; the unit's "
                         f"ExecStartPost readiness waiter gives up after {limit}s, systemd marks the start failed and "
                         "stops the still-loading server. Nothing in the engine failed.")


# -- hardware_fault: NVML cannot reach one GPU (the entrypoint's nvidia-smi says so), its rank fails ------------
def nvsmi_lost(pci_bus: str, good: int = 7):
    def hook(e) -> None:
        e.raw("+ nvidia-smi -L")
        for i in range(good):
            uid = "".join(e.rng.choice("0123456789abcdef") for _ in range(32))
            e.raw(f"GPU {i}: {e.d.gpu.name} (UUID: GPU-{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]})")
        e.raw(f"Unable to determine the device handle for GPU{pci_bus}: Unknown Error")
        e.raw("+ exec python3 -m sglang.launch_server \"$@\"")
    return hook


# -- hardware_fault: NVLink fault during serving (no kernel lines in the unit view) -----------------------------
def nvlink_serving(run: Run, ranks: tuple[int, ...] = (2, 3, 6)) -> Outcome:
    e = run.sg()
    d = e.d
    e.boot()
    e.serve(run.rng.randint(5, 9))
    err = cuda_error("uncorrectable NVLink error detected during the execution", d.v >= (0, 5, 0))
    fr = sf.forward_batch(d, "decode")[:4] + [
        F(f"{S}/managers/tp_worker.py", _bump(d, 281), "forward_batch_generation",
          "next_token_ids = self.model_runner.sample(logits_output, model_worker_batch)"),
        F(f"{S}/layers/sampler.py", _bump(d, 139), "forward",
          "batch_next_token_ids = self._sample_from_probs(probs, sampling_info, batch_next_token_ids)"),
        F(f"{S}/layers/sampler.py", _bump(d, 171), "_sample_from_probs",
          "if not torch.all(success):")]
    for i in ranks:
        e.log.tick(0.001, 0.3)
        e.exception(e.ranks[i], e.tb(fr, err))
    e.sigquit()
    return Outcome("serving", "hardware_fault", [],
                   fix_other="check the NVLink fabric: nvidia-smi nvlink -e / -s, the NVSwitch fabric manager log; "
                             "drain the node",
                   must_not=["--mem-fraction-static", "--disable-cuda-graph", "--tp-size"], exit="sigkill",
                   notes="Several ranks hit 'uncorrectable NVLink error detected during the execution' at the same "
                         "step while serving: the GPU interconnect, not the engine or its flags.")


# -- config_invalid: FP8 block quantization and the TP split of a MoE's intermediate size ----------------------
def fp8_block_not_divisible(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    b = lambda n: _bump(d, n)  # noqa: E731
    e.launch()
    e.dist_init()
    e.load_begin()
    inter = 1536 // d.tp
    m = d.model.sg_module
    fr = sf.load_model(d, "create")[:-4] + [
        F(f"{S}/models/{m}.py", b(342), "__init__", "self.mlp = Qwen3MoeSparseMoeBlock("),
        F(f"{S}/models/{m}.py", b(121), "__init__", "self.experts = get_moe_impl_class(quant_config)("),
        F(f"{S}/layers/moe/fused_moe_triton/layer.py", b(226), "__init__", "self.quant_method.create_weights("),
        F(f"{S}/layers/quantization/fp8.py", b(664), "create_weights", "raise ValueError(")]
    err = (f"ValueError: The output_size of gate's and up's weight = {inter} is not divisible by weight "
           "quantization block_n = 128.")
    for r in e.ranks:
        e.log.tick(0.001, 0.2)
        e.exception(r, e.tb(fr, err))
    e.sigquit()
    return Outcome("weight_load", "config_invalid", [f"--ep-size {d.tp}"],
                   fix_other=f"or a TP size that keeps 1536/TP a multiple of 128 (--tp-size 4)",
                   must_not=["--mem-fraction-static", f"--tp-size {d.tp}"], exit="sigkill",
                   notes=f"The FP8 checkpoint is block-quantized in 128-wide blocks; at TP{d.tp} each rank's slice of "
                         f"the experts' intermediate size (1536/{d.tp}={inter}) cuts a block. Expert parallelism "
                         "keeps whole experts per rank.")


# -- config_invalid: a server-args assertion (multi-node DP without DP attention) ------------------------------
def multinode_dp_assert(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    b = lambda n: _bump(d, n)  # noqa: E731
    fr = sf.launch_main(d)[:4] + [
        F(f"{S}/entrypoints/http_server.py", b(1544), "launch_server",
          "tokenizer_manager, template_manager, scheduler_info, *_ = _launch_subprocesses("),
        F(f"{S}/entrypoints/engine.py", b(752), "_launch_subprocesses", "server_args.check_server_args()"),
        F(f"{S}/server_args.py", b(2431), "check_server_args", "assert not (")]
    err = "AssertionError: multi-node data parallel is not supported unless dp attention!"
    for ln in traceback(fr, err, d.site, d.py_minor):
        e.raw(ln)
    return Outcome("launch", "config_invalid", ["--enable-dp-attention"],
                   fix_other="or run one server per node behind a router",
                   must_not=["--mem-fraction-static", "--dist-init-addr", "--tp-size"], exit="exit1",
                   notes=f"--dp-size {d.dp} across --nnodes {d.args.get('nnodes')} without DP attention: SGLang's "
                         "argument check refuses it before anything starts.")


# -- config_invalid: a vLLM flag handed to SGLang -------------------------------------------------------------------
def _usage(prog: str, fields, width: int = 80) -> list[str]:
    items = ["[-h]", "--model-path MODEL_PATH"]
    for k, v in fields:
        if k in ("model_path",):
            continue
        flag = "--" + k.replace("_", "-")
        items.append(f"[{flag}]" if isinstance(v, bool) else f"[{flag} {k.upper()}]")
    head = f"usage: {prog} "
    out, cur = [], head
    for it in items:
        if len(cur) + len(it) + 1 > width and cur.strip() != head.strip():
            out.append(cur.rstrip())
            cur = " " * len(head)
        cur += it + " "
    out.append(cur.rstrip())
    return out


def foreign_flags(run: Run, flags: str = "--gpu-memory-utilization 0.9 --max-model-len 32768") -> Outcome:
    e = run.sg()
    d = e.d
    prog = "launch_server.py"
    for ln in _usage(prog, NEW if d.v >= (0, 5, 22) else CLASSIC):
        e.raw(ln)
    e.raw(f"{prog}: error: unrecognized arguments: {flags}")
    u = e.log.unit
    e.log.tick(0.05, 0.3)
    e.log.systemd(f"{u}: Main process exited, code=exited, status=2/INVALIDARGUMENT", 5)
    e.log.systemd(f"{u}: Failed with result 'exit-code'.", 4)
    return Outcome("launch", "config_invalid", ["--mem-fraction-static 0.9", "--context-length 32768"],
                   must_not=["--gpu-memory-utilization", "--max-model-len"], exit="none",
                   notes="The unit passes vLLM's --gpu-memory-utilization / --max-model-len to SGLang; its argument "
                         "parser rejects them. SGLang's names are --mem-fraction-static and --context-length.")


# -- distributed_init: node 1 cannot reach node 0's rendezvous at all (no route) ---------------------------------
def dist_no_route(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    host, port = d.args["dist_init_addr"].split(":")
    e.boot("dist_init")
    e.each(lambda r: "Init parallel begin." if e.new_par else "Init torch distributed begin.")
    for k in range(2):
        e.log.wait(3.1)
        e.raw(f"[W{e.log.et.strftime('%m%d %H:%M:%S')}.{run.rng.randint(100000000, 999999999)} socket.cpp:"
              f"{run.rng.choice([755, 767])}] [c10d] The client socket has failed to connect to [{host}]:{port} "
              "(errno: 113 - No route to host).")
    err = f"torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of ({host}, {port})."
    frames = sf.dist_init(d) + [
        F("torch/distributed/distributed_c10d.py", 1689, "init_process_group",
          "store, rank, world_size = next(rendezvous_iterator)",
          "                          ^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        F("torch/distributed/rendezvous.py", 205, "_tcp_rendezvous_handler", "store = _create_c10d_store("),
        F("torch/distributed/rendezvous.py", 176, "_create_c10d_store", "return TCPStore(",
          "       ^^^^^^^^^")]
    for r in e.ranks:
        e.log.tick(0.001, 0.1)
        e.exception(r, e.tb(frames, err))
    e.sigquit()
    return Outcome("dist_init", "distributed_init", [],
                   fix_other=f"node 0 ({host}) is unreachable from this node (errno 113, no route to host): fix routing "
                             f"or the firewall between the nodes, or the address in --dist-init-addr",
                   must_not=["--mem-fraction-static", "--port", "--dist-init-addr"], exit="sigkill",
                   notes="Multi-node start, node_rank 1: the TCP rendezvous with node 0 fails at once with 'No route "
                         "to host'. The network between the nodes, not a busy port and not a slow peer.")


# -- distributed_init: NCCL bootstraps over virbr0 on a two-node run ----------------------------------------------
def nccl_virbr(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    host, rng = e.log.host, run.rng
    base = e.log.pid + 70

    def hook(em) -> None:
        def say(r: int, msg: str, tid: int = 0) -> None:
            em.log.app(f"{host}:{base + 3 * r}:{base + 3 * r + tid} [{r}] {msg}")
        say(0, "NCCL INFO Bootstrap : Using virbr0:192.168.122.1<0>")
        say(0, "NCCL INFO cudaDriverVersion 12080")
        say(0, "NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.")
        say(0, "NCCL INFO NET/IB : No device found.")
        say(0, "NCCL INFO NET/Socket : Using [0]virbr0:192.168.122.1<0> [1]ens21np0:10.20.0.11<0>")
        say(0, "NCCL INFO Using network Socket")
        for r in (0, 3, 5):
            say(r, f"misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 192.168.122.1<{rng.randint(33000, 60000)}> "
                   "failed : Connection refused", 37)
        say(0, "bootstrap.cc:77 NCCL WARN Bootstrap : Unexpected connection reply from peer", 37)
    e.hooks.setdefault("dist_init_nccl", []).append(hook)
    e.boot("dist_init")
    e.each(lambda r: "Init parallel begin." if e.new_par else "Init torch distributed begin.")
    e.log.wait(0.6)
    e.line("sglang is using nccl==2.27.5" if e.new_par else "sglang is using nccl==2.21.5", e.r0)
    e.hook("dist_init_nccl")
    port = rng.randint(33000, 60000)
    err = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, "
           "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
           "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \n"
           f"Last error:\nsocketStartConnect: Connect to 192.168.122.1<{port}> failed : Connection refused")
    frames = sf.dist_init(d)[:-2] + [
        F(f"{S}/distributed/parallel_state.py", _bump(d, 1340), "init_distributed_environment",
          "get_world_group().barrier()"),
        F("torch/distributed/distributed_c10d.py", 4789, "barrier", "work = group.barrier(opts=opts)",
          "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]
    for r in e.ranks[:3]:
        e.log.tick(0.001, 0.2)
        e.exception(r, e.tb(frames, err))
    e.sigquit()
    return Outcome("dist_init", "distributed_init", [],
                   fix_other="pin NCCL (and gloo) to the cluster interface on every node: NCCL_SOCKET_IFNAME=ens21np0 "
                             "GLOO_SOCKET_IFNAME=ens21np0",
                   must_not=["--mem-fraction-static", "--dist-init-addr", "--disable-custom-all-reduce"],
                   exit="sigkill",
                   notes="Two-node run with NCCL_DEBUG=INFO: NCCL bootstraps over virbr0 (libvirt's bridge, "
                         "192.168.122.1 on every host), so peers connect to their own host and are refused. The TCP "
                         "rendezvous works (it uses --dist-init-addr); NCCL's interface choice does not.")


# -- distributed_init: an InfiniBand completion error kills a collective while serving ---------------------------
def nccl_ib_remote(run: Run, bad: int = 3) -> Outcome:
    e = run.sg()
    d = e.d
    rng = run.rng
    e.boot()
    e.serve(rng.randint(5, 9))
    peer = "10.20.0.12"
    port = rng.randint(40000, 60000)
    host = e.log.host
    pid = e.sched_pids[bad]
    last = (f"NET/IB : Got completion from peer {peer}<{port}> with status=12 opcode=0 len=0 vendor err 129 (Recv) "
            f"localGid ::ffff:10.20.0.11 remoteGidsffff:{peer} hca mlx5_{bad}")
    e.log.app(f"{host}:{pid}:{pid + 512} [{bad}] transport/net_ib.cc:2287 NCCL WARN {last}", 4)
    e.log.app(f"{host}:{pid}:{pid + 512} [{bad}] NCCL INFO transport/net.cc:1390 -> 6", 6)
    e.log.app(f"{host}:{pid}:{pid + 512} [{bad}] NCCL INFO proxy.cc:698 -> 6", 6)
    e.log.app(f"{host}:{pid}:{pid + 512} [{bad}] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]", 6)
    ts = e.log.et
    stamp = f"E{ts.strftime('%m%d %H:%M:%S')}.{rng.randint(100000000, 999999999)}"
    what = (f"[PG ID 2 PG GUID 3(TP) Rank {bad}] Process group watchdog thread terminated with exception: NCCL error: "
            "remote process exited or there was a network error, NCCL version 2.27.5")
    lib = f"{d.site}/torch/lib"
    frames = [f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f{rng.randint(16, 250):02x}"
              f"2c16b5e8 in {lib}/libc10.so)",
              "frame #1: c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::NCCLComm>&) + 0x220 "
              f"(0x7f3b2d4a1c40 in {lib}/libtorch_cuda.so)",
              "frame #2: c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException() + 0x7c (0x7f3b2d4a1e8c in "
              f"{lib}/libtorch_cuda.so)",
              "frame #3: c10d::ProcessGroupNCCL::watchdogHandler() + 0x213 (0x7f3b2d4a93f3 in "
              f"{lib}/libtorch_cuda.so)",
              "frame #4: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f3b2d4aa86d in "
              f"{lib}/libtorch_cuda.so)",
              "frame #5: <unknown function> + 0xecdb4 (0x7f3c1d2ecdb4 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
              "frame #6: <unknown function> + 0x9caa4 (0x7f3c1f49caa4 in /lib/x86_64-linux-gnu/libc.so.6)",
              "frame #7: <unknown function> + 0x129c3c (0x7f3c1f529c3c in /lib/x86_64-linux-gnu/libc.so.6)",
              ""]
    body = ["ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
            "prematurely.", "Last error:", last,
            "Exception raised from checkForNCCLErrorsInternal at /pytorch/torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:2433 (most recent call first):"]
    e.raw(f"[rank{bad}]:[{stamp} ProcessGroupNCCL.cpp:1895] {what}")
    for ln in body + frames:
        e.raw(ln)
    e.raw("terminate called after throwing an instance of 'c10::DistBackendError'")
    e.raw(f"  what():  {what}")
    for ln in body + frames:
        e.raw(ln)
    e.log.tick(0.3, 1.2)
    e.line(f"Subprocess scheduler_{bad} (pid={pid}) crashed with exit code -6. Triggering SIGQUIT for cleanup...",
           prio=3)
    e.sigquit()
    return Outcome("serving", "distributed_init", [],
                   fix_other=f"check the InfiniBand path to {peer} (ibstat, port error counters, the switch); "
                             "NCCL_IB_DISABLE=1 confirms it over TCP",
                   must_not=["--mem-fraction-static", "--chunked-prefill-size", "--cuda-graph-max-bs-decode"],
                   exit="sigkill", secondary="hardware_fault",
                   notes="Two-node run serving: an IB work completion fails with status 12 (transport retry counter "
                         "exceeded) and NCCL reports 'remote process exited or there was a network error'; torch's "
                         "watchdog aborts the rank. A collective failure on the network.")


# -- distributed_init: NCCL cannot enable peer access between the two PCIe GPUs ---------------------------------
def nccl_peer_access(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    e.boot("dist_init")
    e.each(lambda r: "Init parallel begin." if e.new_par else "Init torch distributed begin.")
    e.log.wait(0.5)
    e.line("sglang is using nccl==2.27.5" if e.new_par else "sglang is using nccl==2.21.5", e.r0)
    host = e.log.host
    for i in range(2):
        pid = e.sched_pids[i]
        e.log.app(f"{host}:{pid}:{pid + 88} [{i}] transport/p2p.cc:{run.rng.choice([275, 282])} NCCL WARN Cuda failure "
                  "'peer access is not supported between these two devices'", 4)
    err = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, "
           "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
           "ncclUnhandledCudaError: Call to CUDA function failed.\n"
           "Last error:\nCuda failure 'peer access is not supported between these two devices'")
    frames = sf.dist_init(d)[:-2] + [
        F(f"{S}/distributed/parallel_state.py", _bump(d, 1340), "init_distributed_environment",
          "get_world_group().barrier()"),
        F("torch/distributed/distributed_c10d.py", 4789, "barrier", "work = group.barrier(opts=opts)",
          "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]
    for r in e.ranks:
        e.log.tick(0.001, 0.2)
        e.exception(r, e.tb(frames, err))
    e.sigquit()
    return Outcome("dist_init", "distributed_init", [],
                   fix_other="NCCL_P2P_DISABLE=1 (peer access between these PCIe GPUs is refused: platform/IOMMU/ACS)",
                   must_not=["--mem-fraction-static", "--tp-size", "--disable-custom-all-reduce"], exit="sigkill",
                   notes="NCCL's P2P transport cannot enable peer access between the two GPUs at the first "
                         "collective; NCCL itself fails, so turning custom all-reduce off does not help.")


# -- kernel_arch_mismatch: a Triton kernel sized for Hopper exceeds sm_120's shared memory -----------------------
def triton_smem(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    b = lambda n: _bump(d, n)  # noqa: E731
    e.boot("warmup")
    e.hook("warmup")
    e.log.wait(0.9)
    e.line(f'INFO:     127.0.0.1:{run.rng.randint(33000, 60999)} - "GET /get_model_info HTTP/1.1" 200 OK')
    e.line("Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, "
           "#queue-req: 0, ", e.r0)
    m = d.model.sg_module
    fr = sf.forward_batch(d, "extend") + [
        F(f"{S}/models/{m}.py", b(466), "forward", "hidden_states = self.model("),
        F(f"{S}/models/{m}.py", b(392), "forward", "hidden_states, residual = layer("),
        F(f"{S}/models/{m}.py", b(281), "forward", "attn_output = self.attn(q, k, v, forward_batch)"),
        F(f"{S}/layers/radix_attention.py", b(108), "forward", "return forward_batch.attn_backend.forward("),
        F(f"{S}/layers/attention/base_attn_backend.py", b(93), "forward", "return self.forward_extend("),
        F(f"{S}/layers/attention/triton_backend.py", b(813), "forward_extend", "self.extend_attention_fwd("),
        F(f"{S}/layers/attention/triton_ops/extend_attention.py", b(512), "extend_attention_fwd", "_fwd_kernel[grid]("),
        F("triton/runtime/jit.py", 390, "<lambda>",
          "return lambda *args, **kwargs: self.run(grid=grid, warmup=False, *args, **kwargs)"),
        F("triton/runtime/jit.py", 617, "run", "kernel.run(grid_0, grid_1, grid_2, stream, kernel.function, "
          "kernel.packed_metadata, launch_metadata,"),
        F("triton/compiler/compiler.py", 498, "__getattribute__", "self._init_handles()"),
        F("triton/compiler/compiler.py", 483, "_init_handles",
          "raise OutOfResources(self.metadata.shared, max_shared, \"shared memory\")")]
    err = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 114688, Hardware limit: "
           "101376. Reducing block sizes or `num_stages` may help.")
    e.exception(e.r0, e.tb(fr, err))
    e.log.tick(0.5, 2)
    e.line(f"Initialization failed. warmup error: {err.split(': ', 1)[1][:110]}", prio=3)
    e.sigquit()
    return Outcome("warmup", "kernel_arch_mismatch", [],
                   fix_other="upgrade SGLang (its Triton extend-attention kernel picks Hopper-sized tiles on sm_120, "
                             "which has 99 KB of shared memory per block) or select another attention backend",
                   must_not=["--mem-fraction-static", "--chunked-prefill-size", "--disable-cuda-graph"],
                   exit="sigkill",
                   notes=f"The first prefill launches the Triton extend-attention kernel with tiles sized for "
                         f"Hopper's 228 KB of shared memory; the {d.gpu.name} (sm_{d.gpu.sm}) allows 99 KB and Triton "
                         "refuses to launch it. A kernel/arch mismatch, not memory sizing.")


# -- model_load_error: a fine-tune exported without tokenizer.json on an image without sentencepiece -------------------
def tokenizer_no_sentencepiece(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    b = lambda n: _bump(d, n)  # noqa: E731
    e.launch()
    e.log.wait(2)
    T = "transformers"
    fr = [F(f"{S}/managers/scheduler.py", b(2671), "run_scheduler_process", "scheduler = Scheduler("),
          F(f"{S}/managers/scheduler.py", b(296), "__init__", "self.init_tokenizer()"),
          F(f"{S}/managers/scheduler.py", b(472), "init_tokenizer", "self.tokenizer = get_tokenizer("),
          F(f"{S}/hf_transformers_utils.py", b(248), "get_tokenizer", "tokenizer = AutoTokenizer.from_pretrained("),
          F(f"{T}/models/auto/tokenization_auto.py", 1139, "from_pretrained",
            "return tokenizer_class_fast.from_pretrained(pretrained_model_name_or_path, *inputs, **kwargs)"),
          F(f"{T}/tokenization_utils_base.py", 2069, "from_pretrained", "return cls._from_pretrained("),
          F(f"{T}/tokenization_utils_base.py", 2315, "_from_pretrained", "tokenizer = cls(*init_inputs, **init_kwargs)"),
          F(f"{T}/models/llama/tokenization_llama_fast.py", 154, "__init__", "super().__init__("),
          F(f"{T}/tokenization_utils_fast.py", 139, "__init__", "raise ValueError(")]
    err = ("ValueError: Couldn't instantiate the backend tokenizer from one of: \n"
           "(1) a `tokenizers` library serialization file, \n"
           "(2) a slow tokenizer instance to convert or \n"
           "(3) an equivalent slow tokenizer class to instantiate and convert. \n"
           "You need to have sentencepiece installed to convert a slow tokenizer to a fast one.")
    for r in e.ranks:
        e.log.tick(0.001, 0.2)
        e.exception(r, e.tb(fr, err))
    e.sigquit()
    return Outcome("launch", "model_load_error", [],
                   fix_other=f"add the tokenizer.json of the base model to {d.path} (the export saved only "
                             "tokenizer.model), or pip install sentencepiece so transformers can convert it",
                   must_not=["--mem-fraction-static", "--trust-remote-code", "--tp-size"], exit="sigkill",
                   notes="The fine-tuned checkpoint ships only the SentencePiece tokenizer.model; without "
                         "tokenizer.json transformers must convert it, and the image has no sentencepiece. The "
                         "tokenizer cannot be built, so no scheduler starts.")
