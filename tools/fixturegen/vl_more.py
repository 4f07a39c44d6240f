"""More vLLM endings: KV checks without an estimate, a GPU shared with another process, start-up waits that time
out, host RAM under Ray and torchrun, devices CUDA/NVML cannot use, imports, argument checks, weight shapes,
internal ports."""
from __future__ import annotations

from datetime import timedelta

from . import levers
from . import system
from . import vllm_frames as vf
from .case import Outcome, Run
from .pyerr import F, cuda_error, traceback
from .vl_config import _pyd
from .vl_env import _api_tb, _config_frames

GiB = 2 ** 30


# -- kv_cache_oom -------------------------------------------------------------------------------------------------
def kv_no_estimate(run: Run) -> Outcome:
    """V1 before the estimate was added (0.9.0): 'To serve at least one request ... KV cache is needed, which is larger
    than the available KV cache memory (X GiB).' with no estimated maximum model length."""
    v = run.vl()
    v.boot("profile")
    v.profile()
    d = v.d
    per_tok = d.model.kv_bytes_per_token(d.tp)
    need = v.max_len * per_tok / GiB
    avail = v.kv_gib
    err = (f"ValueError: To serve at least one request with the models's max seq len ({v.max_len}), ({need:.2f} GiB "
           f"KV cache is needed, which is larger than the available KV cache memory ({avail:.2f} GiB). Try "
           "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
    v.engine_error(vf.engine_core(d, "kv_check"), err)
    v.api_error()
    v.shutdown_noise()
    fits = int(avail * GiB / per_tok)
    fix_len = max(2048, fits // 4096 * 4096)
    return Outcome("memory_pool", "kv_cache_oom", [f"--max-model-len {fix_len}"],
                   fix_other=f"or --tensor-parallel-size {d.tp * 2} to keep the {v.max_len}-token context",
                   must_not=[f"--max-model-len {v.max_len}", "--enforce-eager"], exit="exit1",
                   notes=f"vLLM {d.version} (V1) checks that one request of max_model_len={v.max_len} fits in the KV "
                         f"cache: it needs {need:.1f} GiB, {avail:.2f} GiB are left after {d.model.name}'s weights on "
                         f"TP{d.tp}. This build prints no estimated length; about {fits} tokens fit, so cap the "
                         "context (or add GPUs).")


def free_memory_low(run: Run, other_gib: float = 31.4, other_pid: int = 0) -> Outcome:
    """Worker start: another process holds part of the GPU, so free memory < gpu_memory_utilization x total."""
    v = run.vl()
    v.boot("dist_init")
    v.hook("dist_init")
    d = v.d
    total = d.gpu.total
    free = round(total - other_gib - 0.53, 2)
    want = round(total * v.util, 2)
    dev = "cuda:0 " if v.v033 else ""
    err = (f"ValueError: Free memory on device {dev}({free}/{total} GiB) on startup is less than desired GPU memory "
           f"utilization ({v.util}, {want} GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
           "processes.")
    fr = [F("vllm/v1/worker/gpu_worker.py", 178, "init_device", "raise ValueError(")]
    v.fail_in_worker(0, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    fit = int((free / total - 0.02) * 20) / 20
    return Outcome("launch", "kv_cache_oom", [f"--gpu-memory-utilization {levers.fmt(fit)}"],
                   fix_other=f"or stop the other process that holds ~{other_gib:.0f} GiB on this GPU (nvidia-smi "
                             "--query-compute-apps=pid,used_memory --format=csv)",
                   must_not=[f"--gpu-memory-utilization {levers.fmt(v.util)}", "--max-model-len",
                             "--tensor-parallel-size"], exit="exit1",
                   notes=f"Only {free} of {total} GiB are free when the worker starts (another process holds the "
                         f"rest), but gpu_memory_utilization={v.util} asks for {want} GiB: the budget must come DOWN "
                         f"to what is free (<= {free / total:.2f}), or the other process must go.")


# -- startup_timeout ------------------------------------------------------------------------------------------------
def engine_ready_timeout(run: Run, limit: int = 600) -> Outcome:
    """The front end waits VLLM_ENGINE_READY_TIMEOUT_S for the engine cores; a slow weight load outlasts it."""
    v = run.vl()
    v.boot("weight_load")
    v.load_begin()
    d = v.d
    p = v.ranks()[0]
    n = d.model.shards
    rate = 1 / run.rng.uniform(5.8, 7.4)
    t0 = v.log.t
    i = 0
    step = max(1, n // 16)
    while (v.log.t - t0).total_seconds() < limit - 45:
        v.log.wait(step / rate)
        i = min(n - 1, i + step)
        el = (v.log.t - t0).total_seconds()
        rem = (n - i) / rate
        v.raw(p, f"Loading safetensors checkpoint shards: {int(100 * i / n):3d}% Completed | {i}/{n} "
                 f"[{int(el // 60):02d}:{int(el % 60):02d}<{int(rem // 60):02d}:{int(rem % 60):02d}, "
                 f"{1 / rate:5.2f}s/it]")
    v.log.wait(45)
    full = vf.api_server(d)
    idx = next(k for k, f in enumerate(full) if f.path.endswith("core_client.py") and "launch_core_engines" in (f.code or ""))
    f0 = full[idx]
    fr = full[:idx] + [F(f0.path, f0.line + 61, "__init__", "raise TimeoutError(")]
    err = ("TimeoutError: Timed out waiting for engine core processes to start. This is often caused by slow weight "
           f"loading for large models. Waited {limit} seconds (configured by VLLM_ENGINE_READY_TIMEOUT_S). To increase "
           "the timeout, set the environment variable: VLLM_ENGINE_READY_TIMEOUT_S=<seconds>")
    for ln in v.tb(fr, err):
        v.raw(v.api, ln, 3)
    v.shutdown_noise()
    return Outcome("weight_load", "startup_timeout", [],
                   fix_other="set VLLM_ENGINE_READY_TIMEOUT_S=1800 (and TimeoutStartSec) in the unit, or load the "
                             "weights from local NVMe",
                   must_not=["--gpu-memory-utilization", "--tensor-parallel-size", "--max-model-len"], exit="exit1",
                   notes=f"{d.model.name} ({n} shards) streams at ~{1 / rate:.0f} s per shard; after {limit} s the API "
                         "server stops waiting for the engine core and exits while the workers are still loading. "
                         "No engine error: the wait is too short for this load.")


def timeout_compile_debris(run: Run) -> Outcome:
    """systemd's start timeout hits during torch.compile; SIGTERM kills inductor's compile workers first, so the
    engine core prints a BrokenProcessPool traceback on its way down (debris of the stop, not a cause)."""
    v = run.vl()
    d = v.d
    v.boot("compile")
    v.hook("compile")
    h = f"{run.rng.getrandbits(40):010x}"
    v.each(lambda p, i: v.say(p, f"Using cache directory: /root/.cache/vllm/torch_compile_cache/{h}/rank_{i}_0/"
                                 "backbone for vLLM's torch.compile", "backends.py", 548))
    v.log.wait(11)
    v.each(lambda p, i: v.say(p, f"Dynamo bytecode transform time: {run.rng.uniform(9, 15):.2f} s", "backends.py", 559))
    for rng_ in (1, 2, 4, 8):
        v.log.wait(105)
        v.say(v.ranks()[0], f"Compiling a graph for {'compile range' if d.v >= (0, 30) else 'shape'} ({rng_}, {rng_}) "
                            f"takes {run.rng.uniform(92, 118):.2f} s", "backends.py", 194)
    v.log.wait(70)
    system.timed_out(v.log)
    v.log.wait(0.8)
    m = d.model.vl_module
    tail = vf.profile(d) + [
        F(f"vllm/model_executor/models/{m}.py", 612, "forward",
          "hidden_states = self.model(input_ids, positions, intermediate_tensors,"),
        F("vllm/compilation/decorators.py", 305, "__call__", "output = self.compiled_callable(*args, **kwargs)",
          "         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        F("torch/_dynamo/eval_frame.py", 841, "compile_wrapper", "raise e.with_traceback(None) from e.__cause__  "
          "# User compiler error"),
        F("vllm/compilation/backends.py", 633, "__call__", "self.split_gm, self.piecewise_graphs = split_graph("),
        F("vllm/compilation/backends.py", 315, "compile", "compiled_graph, handle = self.compiler.compile("),
        F("vllm/compilation/compiler_interface.py", 486, "compile", "compiled_graph = compile_fx(",
          "                 ^^^^^^^^^^^"),
        F("torch/_inductor/compile_fx.py", 2417, "compile_fx", "return _maybe_wrap_and_compile_fx_main("),
        F("torch/_inductor/async_compile.py", 450, "wait", "scope[key] = result.result()",
          "                 ^^^^^^^^^^^^^^^"),
        F("/usr/lib/python3.12/concurrent/futures/_base.py", 456, "result", "return self.__get_result()",
          "       ^^^^^^^^^^^^^^^^^^^"),
        F("/usr/lib/python3.12/concurrent/futures/_base.py", 401, "__get_result", "raise self._exception")]
    err = ("torch._inductor.exc.InductorError: BrokenProcessPool: A process in the process pool was terminated "
           "abruptly while the future was running or pending.\n\n"
           "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if you're reporting a "
           "bug to PyTorch). For even more developer context, set TORCH_LOGS=\"+dynamo\"\n")
    v.fail_in_worker(0, tail, err, "profile")
    u = v.log.unit
    v.log.tick(0.1, 0.6)
    v.log.systemd(f"{u}: Main process exited, code=exited, status=1/FAILURE", 5)
    v.log.systemd(f"{u}: Failed with result 'timeout'.", 4)
    v.log.systemd(f"{u}: Consumed {system.cpu_time(run.rng, 1500, 2600)} CPU time.")
    return Outcome("graph_capture", "startup_timeout", [],
                   fix_other="raise TimeoutStartSec (e.g. 1800) and keep ~/.cache/vllm/torch_compile_cache on a "
                             "persistent path (or -O0 for an uncompiled, faster start)",
                   must_not=["--gpu-memory-utilization", "--max-model-len", "--enforce-eager"], exit="none",
                   notes="torch.compile on a cold cache takes ~100 s per range; systemd's start timeout fires and its "
                         "SIGTERM reaches inductor's compile worker pool first, so the compile in progress raises "
                         "BrokenProcessPool and the engine core reports a failed start. That traceback is debris "
                         "of the stop; the start simply took longer than TimeoutStartSec.")


# -- host_oom -----------------------------------------------------------------------------------------------------
def ray_memory_monitor(run: Run, victim: int = 2) -> Outcome:
    v = run.vl()
    d = v.d
    rng = run.rng
    for w in v.workers:
        w.tag = "RayWorkerWrapper"
    ip = "10.20.0.21"
    node = f"{rng.getrandbits(224):056x}"

    def ray_head(vv) -> None:
        ts = vv.log.et
        vv.raw(vv.eng, f"{ts.strftime('%Y-%m-%d %H:%M:%S')},{ts.microsecond // 1000:03d}\tINFO worker.py:1660 -- "
                       f"Connecting to existing Ray cluster at address: {ip}:6379...")
        vv.log.tick(0.05, 0.4)
        ts = vv.log.et
        vv.raw(vv.eng, f"{ts.strftime('%Y-%m-%d %H:%M:%S')},{ts.microsecond // 1000:03d}\tINFO worker.py:1879 -- "
                       f"Connected to Ray cluster. View the dashboard at 127.0.0.1:8265 ")
        vv.say(vv.eng, "No current placement group found. Creating a new placement group.", "ray_utils.py", 345)
        vv.say(vv.eng, f"Using ray runtime env: {{'env_vars': {{'VLLM_USE_RAY_SPMD_WORKER': '1'}}}}", "ray_utils.py", 382)
        vv.say(vv.eng, "non_carry_over_env_vars from config: set()", "ray_env.py", 63)
    v.hooks.setdefault("dist_init", []).insert(0, ray_head)
    v.boot("weight_load")
    # the Ray executor has no shared-memory broadcast queue (that is the multiproc executor's)
    v.log.records[:] = [r for r in v.log.records if "message queue communication handle" not in r.msg]
    v.load_begin()
    v.load_bar(stop=rng.uniform(0.35, 0.6))
    v.log.wait(rng.uniform(6, 14))
    vp = v.workers[victim].pid
    ts = v.log.et
    v.log.app(f"(raylet) [{ts.strftime('%Y-%m-%d %H:%M:%S')},{ts.microsecond // 1000:03d} E {rng.randint(30000, 60000)} "
              f"{rng.randint(30000, 60000)}] (raylet) node_manager.cc:3219: 1 Workers (tasks / actors) killed due to "
              f"memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: {node}, IP: {ip}) over the "
              f"last time period. To see more information about the Workers killed on this node, use `ray logs "
              f"raylet.out -ip {ip}`", 3)
    v.log.wait(0.8)
    used, tot = 239.84, 251.55
    actor = f"{rng.getrandbits(96):024x}"
    wid = f"{rng.getrandbits(224):056x}"
    err = (f"ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
           f"\tclass_name: RayWorkerWrapper\n\tactor_id: {actor}\n\tpid: {vp}\n"
           f"\tnamespace: {rng.getrandbits(128):032x}\n\tip: {ip}\n"
           "The actor is dead because its worker process has died. Worker exit type: NODE_OUT_OF_MEMORY Worker exit "
           "detail: Task was killed due to the node running low on memory.\n"
           f"Memory on the node (IP: {ip}, ID: {node}) where the task (actor ID: {actor}, name=RayWorkerWrapper.__init__, "
           f"pid={vp}, memory used=41.86GB) was running was {used}GB / {tot}GB ({used / tot:.6f}), which exceeds the "
           f"memory usage threshold of 0.95. Ray killed this worker (ID: {wid}) because it was the most recently "
           f"scheduled task; to see more information about memory usage on this node, use `ray logs raylet.out -ip "
           f"{ip}`. To see the logs of the worker, use `ray logs worker-{wid}*out -ip {ip}. Top 10 memory users:\n"
           "PID\tMEM(GB)\tCOMMAND\n"
           + "".join(f"{w.pid}\t{rng.uniform(38, 44):.2f}\tray::RayWorkerWrapper.execute_method\n" for w in v.workers)
           + f"{v.eng.pid}\t{rng.uniform(3, 6):.2f}\tVLLM::EngineCore\n"
           "Refer to the documentation on how to address the out of memory issue: "
           "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more "
           "memory on this node or reducing task parallelism by requesting more CPUs per task. To adjust the kill "
           "threshold, set the environment variable `RAY_memory_usage_threshold` when starting Ray. To disable worker "
           "killing, set the environment variable `RAY_memory_monitor_refresh_ms` to zero.")
    fr = vf.engine_core(d, "executor") + [
        F("vllm/v1/executor/ray_distributed_executor.py", 108, "_init_executor",
          "self._init_workers_ray(placement_group)"),
        F("vllm/executor/ray_distributed_executor.py", 401, "_init_workers_ray",
          "self._run_workers(\"load_model\","),
        F("vllm/executor/ray_distributed_executor.py", 521, "_run_workers",
          "ray_worker_outputs = ray.get(ray_worker_outputs)",
          "                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        F("ray/_private/auto_init_hook.py", 22, "auto_init_wrapper", "return fn(*args, **kwargs)",
          "       ^^^^^^^^^^^^^^^^^^^"),
        F("ray/_private/client_mode_hook.py", 104, "wrapper", "return func(*args, **kwargs)",
          "       ^^^^^^^^^^^^^^^^^^^^^"),
        F("ray/_private/worker.py", 2882, "get", "values, debugger_breakpoint = worker.get_objects(object_refs, "
          "timeout=timeout)"),
        F("ray/_private/worker.py", 970, "get_objects", "raise value")]
    v.dead = set(range(len(v.workers)))
    v.engine_error(fr, err)
    v.api_error()
    return Outcome("weight_load", "host_oom", [],
                   fix_other="more RAM on the node (Ray's memory monitor killed a worker at 95% host memory), or fewer "
                             "engines per node",
                   must_not=["--gpu-memory-utilization", "--max-model-len", "--enforce-eager"], exit="exit1",
                   notes="Ray executor: while the four workers read their checkpoint shards, host memory on the node "
                         "crosses Ray's 0.95 threshold and the raylet's memory monitor kills a worker actor "
                         "(NODE_OUT_OF_MEMORY). Host RAM, not GPU memory.")


def torchrun_sigkill(run: Run) -> Outcome:
    """An offline batch job: torchrun starts one vLLM (external_launcher) per GPU; the kernel kills a rank while both
    read their shards, and the elastic agent reports 'Signal 9 (SIGKILL) received by PID'."""
    d, log, rng = run.d, run.log, run.rng
    n = d.tp
    agent = log.pid
    kids = [agent + 67 + i for i in range(n)]
    script = "batch_infer.py"
    log.app(f"$ torchrun --nproc-per-node={n} {script} --model {d.path} --tp {n} --input prompts.jsonl")

    def tw(msg: str, lvl: str = "W", src: str = "torch/distributed/run.py:766") -> None:
        ts = log.et
        log.app(f"{lvl}{ts.strftime('%m%d %H:%M:%S')}.{ts.microsecond // 1000:03d}000 {agent} {src}] {msg}", 4)
    tw("")
    tw("*****************************************")
    tw("Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being "
       "overloaded, please further tune the variable for optimal performance in your application as needed. ")
    tw("*****************************************")
    log.wait(7)

    def vl(msg: str, src: str, level: str = "INFO", both: bool = True) -> None:
        for _ in range(n if both else 1):
            log.tick(0, 0.05)
            log.app(f"{level} {log.et.strftime('%m-%d %H:%M:%S')} [{src}] {msg}", 6 if level == "INFO" else 4)
    vl("Automatically detected platform cuda.", "__init__.py:241")
    log.wait(3)
    args = {"model": d.path, "tensor_parallel_size": n, "distributed_executor_backend": "external_launcher",
            "max_model_len": 8192, "disable_log_stats": True, "seed": 0}
    vl(f"non-default args: {args}", "utils.py:326")
    log.wait(4)
    vl("Using max model len 8192", "config.py:1604")
    vl("Chunked prefill is enabled with max_num_batched_tokens=8192.", "config.py:2434")
    cfg = (f"model='{d.path}', speculative_config=None, tokenizer='{d.path}', skip_tokenizer_init=False, "
           "tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, "
           f"max_seq_len=8192, download_dir=None, load_format=auto, tensor_parallel_size={n}, pipeline_parallel_size=1, "
           "data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
           "kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=" + d.path)
    vl(f"Initializing a V1 LLM engine (v{d.version}) with config: {cfg}", "core.py:75")
    log.wait(5)
    for i in range(n):
        vl(f"rank {i} in world size {n} is assigned as DP rank 0, PP rank 0, TP rank {i}, EP rank {i}",
           "parallel_state.py:1134", both=False)
    vl(f"Starting to load model {d.path}...", "gpu_model_runner.py:1953")
    vl("Using Flash Attention backend on V1 engine.", "cuda.py:328")
    shards = d.model.shards
    rate = rng.uniform(0.35, 0.6)
    stop = int(shards * rng.uniform(0.3, 0.45))
    for i in range(0, stop + 1, 2):
        log.wait(2 / rate)
        log.app(f"Loading safetensors checkpoint shards: {int(100 * i / shards):3d}% Completed | {i}/{shards} "
                f"[{int(i / rate // 60):02d}:{int(i / rate % 60):02d}<{int((shards - i) / rate // 60):02d}:"
                f"{int((shards - i) / rate % 60):02d}, {1 / rate:5.2f}s/it]")
    log.wait(rng.uniform(8, 20))
    dead = kids[0]
    tw(f"Sending process {kids[1]} closing signal SIGTERM", src="torch/distributed/elastic/multiprocessing/api.py:900")
    log.wait(0.7)
    tw(f"failed (exitcode: -9) local_rank: 0 (pid: {dead}) of binary: /usr/bin/python3", lvl="E",
       src="torch/distributed/elastic/multiprocessing/api.py:874")
    site = d.site
    fr = [F("/usr/local/bin/torchrun", 8, "<module>", "sys.exit(main())", "             ^^^^^^"),
          F("torch/distributed/elastic/multiprocessing/errors/__init__.py", 357, "wrapper",
            "return f(*args, **kwargs)", "           ^^^^^^^^^^^^^^^^^^"),
          F("torch/distributed/run.py", 901, "main", "run(args)"),
          F("torch/distributed/run.py", 892, "run", "elastic_launch("),
          F("torch/distributed/launcher/api.py", 143, "__call__",
            "return launch_agent(self._config, self._entrypoint, list(args))",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
          F("torch/distributed/launcher/api.py", 277, "launch_agent", "raise ChildFailedError(")]
    when = log.t.strftime("%Y-%m-%d_%H:%M:%S")
    bar = "=" * 60
    err = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
           f"{bar}\n{script} FAILED\n{'-' * 60}\nFailures:\n  <NO_OTHER_FAILURES>\n{'-' * 60}\n"
           "Root Cause (first observed failure):\n[0]:\n"
           f"  time      : {when}\n  host      : {log.host}\n  rank      : 0 (local_rank: 0)\n"
           f"  exitcode  : -9 (pid: {dead})\n  error_file: <N/A>\n"
           f"  traceback : Signal 9 (SIGKILL) received by PID {dead}\n{bar}")
    for ln in traceback(fr, err, site, d.py_minor):
        log.app(ln, 3)
    return Outcome("weight_load", "host_oom", [],
                   fix_other="more host RAM (or swap) for the job, or fewer ranks loading at once on this host; "
                             "dmesg shows the OOM kill",
                   must_not=["--gpu-memory-utilization", "--max-model-len"], exit="none", confidence="medium",
                   notes="torchrun's elastic agent reports rank 0 killed by SIGKILL (exitcode -9) while both ranks "
                         "were reading the checkpoint; vLLM printed no error. A SIGKILL from outside during loading is "
                         "the OOM killer (host RAM); the ChildFailedError is the launcher's echo.")


# -- hardware_fault ---------------------------------------------------------------------------------------------------
def devices_unavailable(run: Run) -> Outcome:
    v = run.vl()
    v.boot("dist_init")
    v.hook("dist_init")
    d = v.d
    err = cuda_error("all CUDA-capable devices are busy or unavailable", d.v >= (0, 11))
    fr = [F("vllm/v1/worker/gpu_worker.py", 162, "init_device", "torch.cuda.set_device(self.device)"),
          F("torch/cuda/__init__.py", 567, "set_device", "torch._C._cuda_setDevice(device)")]
    v.fail_in_worker(0, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    return Outcome("launch", "hardware_fault", [],
                   fix_other="nvidia-smi -q -d COMPUTE,PIDS: no process holds the GPU, so it is wedged; reset it "
                             "(nvidia-smi -r) or drain and reboot the host",
                   must_not=["--gpu-memory-utilization", "--enforce-eager", "--tensor-parallel-size"], exit="exit1",
                   confidence="medium",
                   notes="The engine's first CUDA call fails with 'all CUDA-capable devices are busy or unavailable' "
                         "(cudaErrorDevicesUnavailable) on a GPU nothing else uses: the device is wedged. The host, "
                         "not the flags.")


def gpu_lost_nvml(run: Run, lost: int = 5) -> Outcome:
    """vLLM's CUDA platform lists the GPUs through NVML at import; one of them is gone (fell off the bus)."""
    v = run.vl()
    d = v.d
    err = "vllm.third_party.pynvml.NVMLError_GpuIsLost: GPU is lost"
    bin_ = "/usr/local/bin/vllm" if "dist-packages" in d.site else d.site.split("/lib/")[0] + "/bin/vllm"
    imp = "/usr/lib/python3.12/importlib/__init__.py"
    fr = [F(bin_, 10, "<module>", "sys.exit(main())", "             ^^^^^^"),
          F("vllm/entrypoints/cli/main.py", 46, "main", "cmd.subparser_init(subparsers).set_defaults("),
          F("vllm/entrypoints/cli/serve.py", 101, "subparser_init", "serve_parser = make_arg_parser(serve_parser)",
            "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
          F("vllm/entrypoints/openai/cli_args.py", 263, "make_arg_parser",
            "parser = AsyncEngineArgs.add_cli_args(parser)"),
          F("vllm/engine/arg_utils.py", 1743, "add_cli_args", "parser = EngineArgs.add_cli_args(parser)"),
          F("vllm/platforms/__init__.py", 272, "__getattr__", "_current_platform = resolve_obj_by_qualname("),
          F("vllm/utils/__init__.py", 2568, "resolve_obj_by_qualname", "module = importlib.import_module(module_name)"),
          F(imp, 90, "import_module", "return _bootstrap._gcd_import(name[level:], package, level)"),
          F("<frozen importlib._bootstrap>", 1387, "_gcd_import"),
          F("<frozen importlib._bootstrap>", 1360, "_find_and_load"),
          F("<frozen importlib._bootstrap>", 1331, "_find_and_load_unlocked"),
          F("<frozen importlib._bootstrap>", 935, "_load_unlocked"),
          F("<frozen importlib._bootstrap_external>", 999, "exec_module"),
          F("<frozen importlib._bootstrap>", 488, "_call_with_frames_removed"),
          F("vllm/platforms/cuda.py", 657, "<module>", "CudaPlatform.log_warnings()"),
          F("vllm/platforms/cuda.py", 56, "wrapper", "return fn(*args, **kwargs)", "           ^^^^^^^^^^^^^^^^^^^"),
          F("vllm/platforms/cuda.py", 589, "log_warnings",
            "cls._get_physical_device_name(i) for i in range(device_ids)"),
          F("vllm/platforms/cuda.py", 571, "_get_physical_device_name",
            "handle = pynvml.nvmlDeviceGetHandleByIndex(device_id)"),
          F("vllm/third_party/pynvml.py", 2468, "nvmlDeviceGetHandleByIndex", "_nvmlCheckReturn(ret)"),
          F("vllm/third_party/pynvml.py", 1044, "_nvmlCheckReturn", "raise NVMLError(ret)")]
    for ln in traceback(fr, err, d.site, d.py_minor):
        v.log.app(ln, 3)  # before vLLM prefixes its output: a bare traceback
    return Outcome("launch", "hardware_fault", [],
                   fix_other=f"GPU {lost} (PCI {d.pci(lost)}) is lost to the driver (fallen off the bus): drain the "
                             "host, reboot/reseat; check dmesg for Xid 79",
                   must_not=["--gpu-memory-utilization", "--tensor-parallel-size", "--enforce-eager"], exit="exit1",
                   notes="The restarted container cannot even enumerate the GPUs: NVML reports GPU_IS_LOST for one "
                         "device while vLLM's CUDA platform reads their names at import. The GPU dropped off the "
                         "bus; no engine setting is involved.")


def cuda_unknown_one_worker(run: Run, rank: int = 2) -> Outcome:
    v = run.vl()
    v.boot("dist_init")
    v.hook("dist_init")
    d = v.d
    err = cuda_error("unknown error", d.v >= (0, 11))
    fr = [F("vllm/v1/worker/gpu_worker.py", 162, "init_device", "torch.cuda.set_device(self.device)"),
          F("torch/cuda/__init__.py", 567, "set_device", "torch._C._cuda_setDevice(device)")]
    n = len(v.ranks())
    port = run.rng.randint(34000, 59999)
    for i in [k for k in range(n) if k != rank]:
        v.log.tick(0, 0.04)
        v.say(v.ranks()[i], f"world_size={n} rank={i} local_rank={i} distributed_init_method=tcp://127.0.0.1:{port} "
                            "backend=nccl", "parallel_state.py", 1208)
    v.fail_in_worker(rank, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    return Outcome("dist_init", "hardware_fault", [],
                   fix_other=f"rank {rank}'s GPU (PCI {d.pci(rank)}) fails its first CUDA call: nvidia-smi -q -i "
                             f"{rank}, dmesg for Xid; exclude or reset it",
                   must_not=["--gpu-memory-utilization", "--enforce-eager", "--tensor-parallel-size"], exit="exit1",
                   confidence="medium",
                   notes=f"Worker {rank} alone gets 'CUDA error: unknown error' setting its device while the other "
                         "three initialise: one GPU has stopped working (container logs, so no kernel lines to "
                         "confirm).")


# -- kernel_arch_mismatch ----------------------------------------------------------------------------------------------
def head_dim_backend(run: Run) -> Outcome:
    v = run.vl()
    v.boot("weight_load")
    v.load_begin()
    d = v.d
    hd = d.model.head_dim
    be = d.args.get("attention_backend", "FLASHINFER")
    fr = vf.load(d, "create")[:4] + [
        F("vllm/model_executor/models/llama.py", 545, "__init__", "self.model = self._init_model("),
        F("vllm/model_executor/models/llama.py", 590, "_init_model", "return LlamaModel(vllm_config=vllm_config,"),
        F("vllm/compilation/decorators.py", 201, "__init__",
          "old_init(self, vllm_config=vllm_config, prefix=prefix, **kwargs)"),
        F("vllm/model_executor/models/llama.py", 345, "__init__",
          "self.start_layer, self.end_layer, self.layers = make_layers("),
        F("vllm/model_executor/models/utils.py", 610, "make_layers",
          "maybe_offload_to_cpu(layer_fn(prefix=f\"{prefix}.{idx}\"))"),
        F("vllm/model_executor/models/llama.py", 348, "<lambda>", "lambda prefix: layer_type(config=config,"),
        F("vllm/model_executor/models/llama.py", 276, "__init__", "self.self_attn = LlamaAttention("),
        F("vllm/model_executor/models/llama.py", 183, "__init__", "self.attn = attn_cls("),
        F("vllm/attention/layer.py", 213, "__init__", "self.impl = impl_cls(num_heads, head_size, scale, num_kv_heads,"),
        F("vllm/v1/attention/backends/flashinfer.py", 742, "__init__", "FlashInferBackend.validate_head_size(head_size)"),
        F("vllm/v1/attention/backends/flashinfer.py", 87, "validate_head_size", "raise ValueError(")]
    err = (f"ValueError: Head size {hd} is not supported by FlashInfer. Supported head sizes are: [64, 128, 256]. "
           "Set VLLM_ATTENTION_BACKEND=FLEX_ATTENTION to use FlexAttention backend which supports all head sizes.")
    v.fail_in_worker(0, fr, err, "executor", at_start=True)
    return Outcome("weight_load", "kernel_arch_mismatch", ["--attention-backend FLASH_ATTN"],
                   fix_other="(FlashAttention supports head size 96) or FLEX_ATTENTION",
                   must_not=[f"--attention-backend {be}", "--gpu-memory-utilization", "--max-model-len"], exit="exit1",
                   notes=f"{d.model.name} has head_dim {hd}; the forced FlashInfer backend only has kernels for 64, "
                         "128 and 256, so building the attention layers fails. Another backend, not another size.")


def _cli_import_frames(d, chain: list[F]) -> list[F]:
    bin_ = "/usr/local/bin/vllm" if "dist-packages" in d.site else d.site.split("/lib/")[0] + "/bin/vllm"
    return [F(bin_, 10, "<module>", "sys.exit(main())", "             ^^^^^^"),
            F("vllm/entrypoints/cli/main.py", 46, "main", "cmd.subparser_init(subparsers).set_defaults(")] + chain


def cudart_missing(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    err = "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory"
    fr = _cli_import_frames(d, [
        F("vllm/entrypoints/cli/serve.py", 118, "subparser_init", "serve_parser = make_arg_parser(serve_parser)"),
        F("vllm/entrypoints/openai/cli_args.py", 289, "make_arg_parser",
          "parser = AsyncEngineArgs.add_cli_args(parser)"),
        F("vllm/platforms/__init__.py", 271, "__getattr__", "_current_platform = resolve_obj_by_qualname("),
        F("vllm/platforms/cuda.py", 18, "<module>", "import vllm._C  # noqa")])
    for ln in traceback(fr, err, d.site, d.py_minor):
        v.log.app(ln, 3)  # before vLLM prefixes its output: a bare traceback
    return Outcome("launch", "kernel_arch_mismatch", [],
                   fix_other="reinstall torch from the CUDA 12.8 index vLLM was built against (or use the vLLM image): "
                             "a CUDA 13 torch left no libcudart.so.12 for vllm._C",
                   must_not=["--gpu-memory-utilization", "--enforce-eager"], exit="exit1",
                   notes="vllm._C is linked against the CUDA 12 runtime; the environment only has CUDA 13's "
                         "libcudart (torch was upgraded to a cu130 wheel). The compiled extension cannot load.")


def missing_module(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    err = "ModuleNotFoundError: No module named 'openai_harmony'"
    fr = _cli_import_frames(d, [
        F("vllm/entrypoints/cli/__init__.py", 3, "<module>",
          "from vllm.entrypoints.cli.benchmark.latency import BenchmarkLatencySubcommand"),
        F("vllm/entrypoints/cli/serve.py", 16, "<module>",
          "from vllm.entrypoints.openai.api_server import (run_multi_api_server,"),
        F("vllm/entrypoints/openai/api_server.py", 74, "<module>",
          "from vllm.entrypoints.openai.serving_responses import OpenAIServingResponses"),
        F("vllm/entrypoints/openai/serving_responses.py", 31, "<module>",
          "from vllm.entrypoints.harmony_utils import (get_developer_message,"),
        F("vllm/entrypoints/harmony_utils.py", 12, "<module>", "from openai_harmony import (Author, Conversation,")])
    fr[1] = F("vllm/entrypoints/cli/main.py", 22, "main", "import vllm.entrypoints.cli.serve")
    for ln in traceback(fr, err, d.site, d.py_minor):
        v.log.app(ln, 3)  # before vLLM prefixes its output: a bare traceback
    return Outcome("launch", "kernel_arch_mismatch", [],
                   fix_other="pip install openai-harmony (the image installed vLLM with --no-deps); or install vLLM "
                             "with its dependencies",
                   must_not=["--gpu-memory-utilization", "--trust-remote-code"], exit="exit1",
                   notes="vllm serve fails at import: a dependency of the API server (openai_harmony) is not "
                         "installed. The environment, not the model or the flags.")


# -- config_invalid ----------------------------------------------------------------------------------------------------
def env_int_value(run: Run, var: str = "VLLM_CONFIGURE_LOGGING", val: str = "true") -> Outcome:
    v = run.vl()
    d = v.d
    err = f"ValueError: invalid literal for int() with base 10: '{val}'"
    bin_ = "/usr/local/bin/vllm" if "dist-packages" in d.site else d.site.split("/lib/")[0] + "/bin/vllm"
    fr = [F(bin_, 5, "<module>", "from vllm.entrypoints.cli.main import main"),
          F("vllm/__init__.py", 14, "<module>", "import vllm.env_override  # noqa: F401"),
          F("vllm/env_override.py", 5, "<module>", "from vllm.logger import init_logger"),
          F("vllm/logger.py", 19, "<module>", f"VLLM_CONFIGURE_LOGGING = envs.{var}",
            "                         ^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
          F("vllm/envs.py", 1126, "__getattr__", "return environment_variables[name]()",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
          F("vllm/envs.py", 236, "<lambda>", f"lambda: int(os.getenv(\"{var}\", \"1\")),",
            "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]
    for ln in traceback(fr, err, d.site, d.py_minor):
        v.log.app(ln, 3)  # before vLLM prefixes its output: a bare traceback
    return Outcome("launch", "config_invalid", [],
                   fix_other=f"set {var}=1 (vLLM's integer switches take 0/1, not true/false) in the unit's "
                             "Environment=",
                   must_not=["--gpu-memory-utilization", "--max-model-len"], exit="exit1",
                   notes=f"vLLM reads {var} with int() at import; the unit sets it to '{val}', so `vllm serve` dies "
                         "before printing anything. An environment setting the engine rejects.")


def quant_mismatch(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.launch()
    have = d.model.quant or "fp8"
    want = d.args["quantization"]
    msg = (f"Quantization method specified in the model config ({have}) does not match the quantization method "
           f"specified in the `quantization` argument ({want}).")
    fr = _config_frames(v, [F("vllm/engine/arg_utils.py", 1189, "create_model_config", "return ModelConfig(",
                              "       ^^^^^^^^^^^^")])
    _api_tb(v, fr, _pyd("ModelConfig", msg, f"'model': '{d.path}', 'quantization': '{want}', ..."))
    return Outcome("launch", "config_invalid", [f"--quantization {have}"],
                   fix_other="or drop --quantization: vLLM reads the method from the checkpoint's config",
                   must_not=[f"--quantization {want}", "--gpu-memory-utilization"], exit="exit1",
                   notes=f"The checkpoint is {have}-quantized (quantization_config in config.json) but the unit passes "
                         f"--quantization {want}; vLLM's config check refuses the contradiction.")


# -- model_load_error --------------------------------------------------------------------------------------------------
def head_dim_dropped(run: Run, wrong: int = 80, right: int = 128) -> Outcome:
    """A merged checkpoint's config.json lost "head_dim": vLLM derives hidden/heads (80 for Qwen3-32B, really 128);
    the first tensor whose shape depends on it alone (self_attn.k_norm.weight) does not fit its parameter."""
    v = run.vl()
    v.boot("weight_load")
    v.load_begin()
    d = v.d
    v.load_bar(stop=0.06)
    fr = vf.load(d, "weights")[:5] + [
        F("vllm/model_executor/models/qwen3.py", 329, "load_weights", "return loader.load_weights(weights)"),
        F("vllm/model_executor/models/utils.py", 291, "load_weights",
          "autoloaded_weights = set(self._load_module(\"\", self.module, weights))"),
        F("vllm/model_executor/models/utils.py", 249, "_load_module",
          "yield from self._load_module(prefix,"),
        F("vllm/model_executor/models/utils.py", 222, "_load_module", "loaded_params = module_load_weights(weights)",
          "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        F("vllm/model_executor/models/qwen2.py", 430, "load_weights", "weight_loader(param, loaded_weight)"),
        F("vllm/model_executor/model_loader/weight_utils.py", 750, "default_weight_loader",
          "assert param.size() == loaded_weight.size(), (",
          "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]
    err = (f"AssertionError: Attempted to load weight (torch.Size([{right}])) into parameter "
           f"(torch.Size([{wrong}]))")
    if v.workers:
        v.worker_error(1, vf.worker_main(d) + fr, err, at_start=True)
    v.fail_in_worker(0, fr, err, "executor", at_start=True)
    return Outcome("weight_load", "model_load_error", [],
                   fix_other=f"restore \"head_dim\": {right} in the checkpoint's config.json (the merge/export dropped "
                             f"it; hidden_size/num_heads = {wrong} is not this model's head size)",
                   must_not=["--gpu-memory-utilization", "--tensor-parallel-size", "--max-model-len"], exit="exit1",
                   notes=f"{d.path}: a merged checkpoint whose config.json lacks head_dim. vLLM derives "
                         f"5120/64={wrong} and builds the attention norms with {wrong} entries; the checkpoint's "
                         f"k_norm has {right}. The files and their config disagree.")


# -- illegal_memory_access -----------------------------------------------------------------------------------------------
def misaligned_serving(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.boot()
    v.serve(run.rng.randint(5, 9))
    err = cuda_error("misaligned address", d.v >= (0, 11))
    fr = vf.serving(d) + [
        F("vllm/v1/executor/multiproc_executor.py" if d.tp > 1 else "vllm/v1/executor/abstract.py", 102,
          "execute_model", "output = self.collective_rpc(\"execute_model\","),
        F("vllm/v1/worker/gpu_model_runner.py", 2498, "execute_model", "model_output = self.model("),
        F(f"vllm/model_executor/models/{d.model.vl_module}.py", 612, "forward",
          "hidden_states = self.model(input_ids, positions, intermediate_tensors,"),
        F("vllm/model_executor/layers/fused_moe/fused_moe.py", 1622, "fused_experts_impl", "invoke_fused_moe_kernel("),
        F("vllm/model_executor/layers/fused_moe/fused_moe.py", 655, "invoke_fused_moe_kernel",
          "fused_moe_kernel[grid](")]
    v.engine_error(fr, err, fatal=True)
    v.say(v.api, "AsyncLLM output_handler failed.", "async_llm.py", 480, "ERROR")
    for k in range(run.rng.randint(2, 4)):
        v.say(v.api, "Error in chat completion stream generator.", "serving_chat.py", 1145, "ERROR")
        v.raw(v.api, f'INFO:     10.{run.rng.randint(0, 40)}.{run.rng.randint(0, 255)}.{run.rng.randint(2, 250)}:'
                     f'{run.rng.randint(30000, 65000)} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
    v.raw(v.api, "INFO:     Shutting down")
    return Outcome("serving", "illegal_memory_access", [],
                   fix_other="CUDA_LAUNCH_BLOCKING=1 to pin down the kernel; report it with the shapes (a fused-MoE "
                             "kernel bug)",
                   must_not=["--gpu-memory-utilization", "--max-model-len", "--tensor-parallel-size"], exit="exit1",
                   notes="After serving for a while a fused-MoE Triton kernel faults with 'misaligned address': a "
                         "device-side crash from a kernel bug, not sizing and not the hardware.")


# -- port_in_use: vLLM's own random rendezvous port is taken between picking and binding (old torch wording) --------
def rendezvous_race(run: Run) -> Outcome:
    d, log, rng = run.d, run.log, run.rng
    path = d.path
    site = d.site
    n = d.tp

    def vl(msg: str, src: str, level: str = "INFO", prefix: str = "") -> None:
        log.app(f"{prefix}{level} {log.et.strftime('%m-%d %H:%M:%S')} {src}] {msg}", 6 if level == "INFO" else 3)
    vl(f"vLLM API server version {d.version}", "api_server.py:219")
    vl(f"args: Namespace(host=None, port=8000, uvicorn_log_level='info', allow_credentials=False, "
       f"allowed_origins=['*'], allowed_methods=['*'], allowed_headers=['*'], api_key=None, lora_modules=None, "
       f"prompt_adapters=None, chat_template=None, response_role='assistant', ssl_keyfile=None, ssl_certfile=None, "
       f"ssl_ca_certs=None, ssl_cert_reqs=0, root_path=None, middleware=[], return_tokens_as_token_ids=False, "
       f"disable_frontend_multiprocessing=False, model='{path}', tokenizer=None, skip_tokenizer_init=False, "
       f"revision=None, code_revision=None, tokenizer_revision=None, tokenizer_mode='auto', trust_remote_code=False, "
       f"download_dir=None, load_format='auto', dtype='auto', kv_cache_dtype='auto', quantization_param_path=None, "
       f"max_model_len=None, guided_decoding_backend='outlines', distributed_executor_backend=None, worker_use_ray=False, "
       f"pipeline_parallel_size=1, tensor_parallel_size={n}, max_parallel_loading_workers=None, ray_workers_use_nsight=False, "
       f"block_size=16, enable_prefix_caching=False, disable_sliding_window=False, use_v2_block_manager=False, "
       f"num_lookahead_slots=0, seed=0, swap_space=4, cpu_offload_gb=0, gpu_memory_utilization=0.9, "
       f"num_gpu_blocks_override=None, max_num_batched_tokens=None, max_num_seqs=256, max_logprobs=20, "
       f"disable_log_stats=False, quantization=None, rope_scaling=None, rope_theta=None, enforce_eager=False, "
       f"max_context_len_to_capture=None, max_seq_len_to_capture=8192, disable_custom_all_reduce=False, "
       f"tokenizer_pool_size=0, tokenizer_pool_type='ray', tokenizer_pool_extra_config=None, enable_lora=False, "
       f"max_loras=1, max_lora_rank=16, lora_extra_vocab_size=256, lora_dtype='auto', long_lora_scaling_factors=None, "
       f"max_cpu_loras=None, fully_sharded_loras=False, device='auto', scheduler_delay_factor=0.0, "
       f"enable_chunked_prefill=None, speculative_model=None, num_speculative_tokens=None, served_model_name=None, "
       f"disable_async_output_proc=False, engine_use_ray=False, disable_log_requests=False, max_log_len=None)",
       "api_server.py:220")
    log.wait(2)
    vl("Defaulting to use mp for distributed inference", "config.py:715")
    vl(f"Initializing an LLM engine (v{d.version}) with config: model='{path}', speculative_config=None, "
       f"tokenizer='{path}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, rope_scaling=None, "
       f"rope_theta=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len="
       f"{d.model.ctx}, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size={n}, "
       "pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
       "kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, decoding_config=DecodingConfig("
       "guided_decoding_backend='outlines'), observability_config=ObservabilityConfig(otlp_traces_endpoint=None), "
       f"seed=0, served_model_name={path}, use_v2_block_manager=False, enable_prefix_caching=False)",
       "llm_engine.py:176")
    log.wait(3)
    wpids = [log.pid + 140 + i for i in range(1, n)]
    for p in wpids:
        log.tick(0, 0.3)
        vl("Worker ready; awaiting tasks", "multiproc_worker_utils.py:215", prefix=f"(VllmWorkerProcess pid={p}) ")
    port = rng.randint(35000, 60000)
    std = site.rsplit("/site-packages", 1)[0] if "/conda/" in site else f"/usr/lib/python3.{d.py_minor}"
    fr = [F("<frozen runpy>", 198, "_run_module_as_main"),
          F("<frozen runpy>", 88, "_run_code"),
          F("vllm/entrypoints/openai/api_server.py", 317, "<module>", "asyncio.run(run_server(args))"),
          F(f"{std}/asyncio/runners.py", 190, "run", "return runner.run(main)",
            "           ^^^^^^^^^^^^^^^^"),
          F(f"{std}/asyncio/runners.py", 118, "run", "return self._loop.run_until_complete(task)",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
          F("uvloop/loop.pyx", 1517, "uvloop.loop.Loop.run_until_complete"),
          F("vllm/entrypoints/openai/api_server.py", 231, "run_server", "async with build_async_engine_client(args) "
            "as async_engine_client:"),
          F(f"{std}/contextlib.py", 204, "__aenter__", "return await anext(self.gen)",
            "           ^^^^^^^^^^^^^^^^^^^^^"),
          F("vllm/entrypoints/openai/api_server.py", 99, "build_async_engine_client",
            "async_engine_client = AsyncLLMEngine.from_engine_args("),
          F("vllm/engine/async_llm_engine.py", 471, "from_engine_args", "engine = cls("),
          F("vllm/engine/async_llm_engine.py", 381, "__init__", "self.engine = self._init_engine(*args, **kwargs)"),
          F("vllm/engine/async_llm_engine.py", 552, "_init_engine", "return engine_class(*args, **kwargs)"),
          F("vllm/engine/llm_engine.py", 249, "__init__", "self.model_executor = executor_class("),
          F("vllm/executor/distributed_gpu_executor.py", 25, "__init__", "super().__init__(*args, **kwargs)"),
          F("vllm/executor/executor_base.py", 47, "__init__", "self._init_executor()"),
          F("vllm/executor/multiproc_gpu_executor.py", 124, "_init_executor", "self._run_workers(\"init_device\")"),
          F("vllm/executor/multiproc_gpu_executor.py", 178, "_run_workers",
            "driver_worker_output = driver_worker_method(*args, **kwargs)"),
          F("vllm/worker/worker.py", 132, "init_device", "init_worker_distributed_environment(self.parallel_config, "
            "self.rank,"),
          F("vllm/worker/worker.py", 348, "init_worker_distributed_environment",
            "init_distributed_environment(parallel_config.world_size, rank,"),
          F("vllm/distributed/parallel_state.py", 866, "init_distributed_environment",
            "torch.distributed.init_process_group("),
          F("torch/distributed/c10d_logger.py", 75, "wrapper", "return func(*args, **kwargs)"),
          F("torch/distributed/c10d_logger.py", 89, "wrapper", "func_return = func(*args, **kwargs)"),
          F("torch/distributed/distributed_c10d.py", 1305, "init_process_group",
            "store, rank, world_size = next(rendezvous_iterator)"),
          F("torch/distributed/rendezvous.py", 199, "_tcp_rendezvous_handler",
            "store = _create_c10d_store(result.hostname, result.port, rank, world_size, timeout, use_libuv)"),
          F("torch/distributed/rendezvous.py", 174, "_create_c10d_store", "return TCPStore(")]
    err = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
           f"The server socket has failed to bind to [::]:{port} (errno: 98 - Address already in use). The server "
           f"socket has failed to bind to ?UNKNOWN? (errno: 98 - Address already in use).")
    log.wait(1.5)
    for ln in traceback(fr, err, site, d.py_minor):
        log.app(ln, 3)
    log.wait(0.4)
    for p in wpids:
        vl(f"Worker VllmWorkerProcess pid {p} died, exit code: -15", "multiproc_worker_utils.py:120", "ERROR")
    vl("Killing local vLLM worker processes", "multiproc_worker_utils.py:123")
    log.app(f"{std}/multiprocessing/resource_tracker.py:254: UserWarning: resource_tracker: There "
            "appear to be 1 leaked semaphore objects to clean up at shutdown", 4)
    log.app("  warnings.warn('resource_tracker: There appear to be %d '", 4)
    return Outcome("dist_init", "port_in_use", [],
                   fix_other="start the instances one after another (the port vLLM picked for its rendezvous was "
                             "taken before it could bind it), or give each its own VLLM_PORT range",
                   must_not=["--port", "--gpu-memory-utilization", "--tensor-parallel-size"], exit="exit1",
                   confidence="medium",
                   notes=f"TP{n}: vLLM picks a free port for its torch.distributed rendezvous (tcp://127.0.0.1:{port}) "
                         "and binds it a moment later; another instance started on the same host grabbed it in "
                         "between (errno 98). An internal port, not the HTTP --port; older torch words it without "
                         "'port: N'.")


# -- kernel_arch_mismatch: user-space driver upgraded under a loaded kernel module ----------------------------------------
def driver_library_mismatch(run: Run, client: str = "550.163.01", module: str = "550.144.03") -> Outcome:
    v = run.vl()
    d = v.d
    log = v.log
    log.app(f"+ nvidia-smi --query-gpu=index,name,memory.used --format=csv")
    log.tick(0.05, 0.2)
    for ln in (f"NVRM: API mismatch: the client has the version {client}, but",
               f"NVRM: this kernel module has the version {module}.  Please",
               "NVRM: make sure that this kernel module and all NVIDIA driver",
               "NVRM: components have the same version."):
        log.kernel(ln, 4)
    log.app("Failed to initialize NVML: Driver/library version mismatch")
    log.app(f"NVML library version: {client.rsplit('.', 1)[0]}")
    log.app(f"+ exec vllm serve {d.path} --tensor-parallel-size {d.tp}")
    log.wait(5)
    log.app(f"INFO {log.et.strftime('%m-%d %H:%M:%S')} [__init__.py:220] No platform detected, vLLM is running on "
            "UnspecifiedPlatform")
    v.launch()
    fr = vf.api_config(d) + [
        F("vllm/engine/arg_utils.py", 1069, "create_engine_config",
          "device_config = DeviceConfig(device=cast(Device, current_platform.device_type))"),
        F("<string>", 4, "__init__"),
        F("vllm/config/__init__.py", 1935, "__post_init__", "raise RuntimeError(")]
    err = ("RuntimeError: Failed to infer device type, please set the environment variable `VLLM_LOGGING_LEVEL=DEBUG` "
           "to turn on verbose logging to help debug the issue.")
    _api_tb(v, fr, err)
    return Outcome("launch", "kernel_arch_mismatch", [],
                   fix_other=f"reboot (or reload the nvidia kernel module) so the kernel module matches the upgraded "
                             f"user-space driver {client}",
                   must_not=["--gpu-memory-utilization", "--tensor-parallel-size", "--enforce-eager"], exit="exit1",
                   notes=f"The NVIDIA user-space libraries were upgraded to {client} while the {module} kernel module "
                         "is still loaded: NVML refuses (Driver/library version mismatch, NVRM 'API mismatch' in the "
                         "kernel log) and vLLM finds no CUDA platform at all.")


def waiter_gives_up(run: Run, waiter: str = "wait-for-http", limit: int = 900) -> Outcome:
    """An ExecStartPost readiness check gives up while torch.compile is still working through its ranges."""
    v = run.vl()
    d = v.d
    v.boot("compile")
    v.hook("compile")
    h = f"{run.rng.getrandbits(40):010x}"
    v.each(lambda p, i: v.say(p, f"Using cache directory: /root/.cache/vllm/torch_compile_cache/{h}/rank_{i}_0/"
                                 "backbone for vLLM's torch.compile", "backends.py", 548))
    v.log.wait(12)
    v.each(lambda p, i: v.say(p, f"Dynamo bytecode transform time: {run.rng.uniform(10, 16):.2f} s", "backends.py", 559))
    pid = v.log.pid + 1
    url = f"http://127.0.0.1:{d.http_port}/v1/models"
    t0 = v.log.t - timedelta(seconds=95)
    k = 1
    while (v.log.t - t0).total_seconds() < limit - 120:
        v.log.wait(run.rng.uniform(95, 120))
        v.say(v.ranks()[0], f"Compiling a graph for shape ({k}, {k}) takes {run.rng.uniform(92, 118):.2f} s",
              "backends.py", 194)
        v.log.other_unit(waiter, pid, f"{url} not ready yet ({int((v.log.t - t0).total_seconds())}s of {limit}s)")
        k *= 2
    v.log.wait(limit - (v.log.t - t0).total_seconds())
    v.log.other_unit(waiter, pid, f"giving up after {limit}s waiting for {url}", 3)
    u = v.log.unit
    v.log.systemd(f"{u}: Control process exited, code=exited, status=1/FAILURE", 5)
    v.log.wait(0.5)
    v.log.systemd(f"{u}: Main process exited, code=killed, status=15/TERM", 5)
    v.log.systemd(f"{u}: Failed with result 'exit-code'.", 4)
    v.log.systemd(f"Failed to start {u} - vLLM {d.model.name}.", 3)
    v.log.systemd(f"{u}: Consumed {system.cpu_time(run.rng, 4000, 9000)} CPU time.")
    return Outcome("graph_capture", "startup_timeout", [],
                   fix_other=f"raise the waiter's limit ({limit}s) above the cold-cache start time and keep "
                             "~/.cache/vllm/torch_compile_cache on a persistent path",
                   must_not=["--gpu-memory-utilization", "--max-model-len", "--enforce-eager"], exit="none",
                   notes="torch.compile works through one size after another (~100 s each on a cold cache); the unit's "
                         f"ExecStartPost waiter gives up after {limit}s and systemd stops the server mid-compile. "
                         "No error in the engine.")
