"""SGLang endings caused by the environment: distributed init, ports, host RAM, start-up timeouts."""
from __future__ import annotations

from . import sglang_frames as sf
from . import system
from .case import Outcome, Run
from .pyerr import DURING, F, frame_lines
from .sg_memory import _wrapper_lines

EADDR = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
         "port: {port}, useIPv6: false, code: -98, name: EADDRINUSE, message: address already in use")


def _die_in_dist_init(e, frames: list[F], err: str, ranks: list[str] | None = None) -> None:
    e.boot("dist_init")
    e.hook("dist_init")
    e.each(lambda r: "Init parallel begin." if e.new_par else "Init torch distributed begin.")
    e.log.wait(0.4)
    for r in ranks or [e.r0]:
        e.log.tick(0.001, 0.2)
        e.exception(r, e.tb(frames, err))
    e.sigquit()


# -- distributed ------------------------------------------------------------
def shm_too_small(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    seg = "".join(run.rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(6))
    err = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:"
           f"{run.rng.choice([77, 83, 94])}, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL "
           "version 2.21.5\nncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
           "device error. \nLast error:\nError while creating shared memory segment /dev/shm/nccl-" + seg +
           f" (size {run.rng.choice([9637888, 4196864, 33030144])}), error: No space left on device (28)")
    frames = sf.dist_init(d)[:-2] + [
        F("sglang/srt/distributed/parallel_state.py", 1340, "init_distributed_environment",
          "get_world_group().barrier()"),
        F("torch/distributed/distributed_c10d.py", 4789, "barrier", "work = group.barrier(opts=opts)",
          "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^")]
    _die_in_dist_init(e, frames, err, ranks=list(e.ranks)[:2])
    return Outcome("dist_init", "distributed_init", [],
                   fix_other="give the container a bigger /dev/shm (docker run --shm-size 32g or --ipc=host)",
                   must_not=["--mem-fraction-static", "--disable-cuda-graph"], exit="sigkill",
                   notes="NCCL cannot create its shared-memory segment: /dev/shm of the container is too small "
                         "(docker's 64 MB default). An environment fix, not an engine flag.")


def custom_allreduce_capture(run: Run) -> Outcome:
    d = run.d
    path = "/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh"
    inner = f"RuntimeError: Failed: Cuda error {path}:{run.rng.choice([425, 431, 468])} 'invalid argument'"
    e = run.sg()
    e.boot("graph_capture")
    e.capture_begin()
    bs = e.capture_bar(run.rng.choice([160, 128, 96]))
    inner_fr, outer = sf.graph_capture(d, [
        F(f"sglang/srt/models/{d.model.sg_module}.py", 481, "forward", "hidden_states = self.model("),
        F("sglang/srt/layers/linear.py", 1391, "forward", "output = tensor_model_parallel_all_reduce(output_parallel)"),
        F("sglang/srt/distributed/communication_op.py", 14, "tensor_model_parallel_all_reduce",
          "return get_tp_group().all_reduce(input_)"),
        F("sglang/srt/distributed/parallel_state.py", 538, "all_reduce", "return self._all_reduce_out_place(input_)"),
        F("sglang/srt/distributed/device_communicators/custom_all_reduce.py", 371, "custom_all_reduce",
          "return self.all_reduce(input, registered=True)"),
        F("sglang/srt/distributed/device_communicators/custom_all_reduce.py", 339, "all_reduce",
          "ops.all_reduce(")])
    for r in list(e.ranks)[:run.rng.randint(1, len(e.ranks))]:
        e.log.tick(0.001, 0.2)
        tb = (["Traceback (most recent call last):", *frame_lines(inner_fr, d.site, d.py_minor), inner]
              + DURING + ["Traceback (most recent call last):", *frame_lines(outer, d.site, d.py_minor)]
              + _wrapper_lines(e, inner))
        e.exception(r, tb)
    e.sigquit()
    return Outcome("graph_capture", "distributed_init", ["--disable-custom-all-reduce"],
                   must_not=["--mem-fraction-static", "--cuda-graph-max-bs"], exit="sigkill",
                   secondary="graph_capture_fault",
                   notes=f"'Capture cuda graph failed' at bs={bs}, but what fails inside is the custom all-reduce "
                         "kernel (custom_all_reduce.cuh). A wrapper is classified by what it wraps: distributed_init, "
                         "fixed by turning custom all-reduce off.")


def nccl_watchdog(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    e.boot()
    e.serve(run.rng.randint(4, 8))
    bad = run.rng.randint(1, d.tp - 1)
    seq = run.rng.randint(1200, 90000)
    numel = run.rng.choice([5242880, 2621440, 10485760])
    ts = e.log.et
    e.log.wait(600)
    stamp = lambda: f"E{ts.strftime('%m%d')} {e.log.et.strftime('%H:%M:%S')}.{run.rng.randint(100000000, 999999999)}"  # noqa: E731
    for r in sorted({bad, 0}):
        e.raw(f"[rank{r}]:[{stamp()} ProcessGroupNCCL.cpp:685] [Rank {r}] Watchdog caught collective operation "
              f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, "
              "Timeout(ms)=600000) ran for 600046 milliseconds before timing out.")
    e.raw(f"[rank{bad}]:[{stamp()} ProcessGroupNCCL.cpp:2271] [PG ID 2 PG GUID 3 Rank {bad}]  failure detected by "
          "watchdog at work sequence id: " + str(seq) + " PG status: last enqueued work: " + str(seq) +
          ", last completed work: " + str(seq - 1))
    e.raw(f"[rank{bad}]:[{stamp()} ProcessGroupNCCL.cpp:746] Some NCCL operations have failed or timed out. Due to "
          "the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.")
    e.raw(f"[rank{bad}]:[{stamp()} ProcessGroupNCCL.cpp:752] To avoid data inconsistency, we are taking the entire "
          "process down.")
    e.log.tick(0.3, 1.5)
    e.line(f"Subprocess scheduler_{bad} (pid={e.sched_pids[bad]}) crashed with exit code -6. Triggering SIGQUIT for "
           "cleanup...", prio=3)
    e.sigquit()
    return Outcome("serving", "distributed_init", [],
                   fix_other="PCIe P2P between these GPUs hangs (no NVLink): set NCCL_P2P_DISABLE=1 or fix ACS/IOMMU "
                             "on the host",
                   must_not=["--mem-fraction-static", "--chunked-prefill-size"], exit="sigkill",
                   notes="An all-reduce hung for 600 s and the NCCL watchdog aborted the rank (exit -6); the engine's "
                         "watchdog then tore the server down. A collective failure while serving.")


def dist_connect_timeout(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    addr = d.args.get("dist_init_addr", "10.20.0.11:5000")
    host, port = addr.split(":")
    e.boot("dist_init")
    e.each(lambda r: "Init parallel begin." if e.new_par else "Init torch distributed begin.")
    for k in range(1, 4):
        e.log.wait(150)
        e.raw(f"[W{e.log.et.strftime('%m%d %H:%M:%S')}.{run.rng.randint(100000000, 999999999)} socket.cpp:"
              f"{run.rng.choice([752, 767])}] [c10d] The client socket has timed out after {k * 150}000ms while "
              f"trying to connect to ({host}, {port}).")
    e.log.wait(150)
    err = (f"torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to "
           f"connect to ({host}, {port}).")
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
                   fix_other=f"node 0 is not reachable at --dist-init-addr {addr} (not started, wrong address or "
                             "firewall)",
                   must_not=["--mem-fraction-static", "--port"], exit="sigkill",
                   notes="Multi-node start: this node (node_rank 1) times out connecting to the rendezvous store of "
                         "node 0. Distributed init, not a port clash.")


# -- ports ---------------------------------------------------------------------
def http_port(run: Run, stale_note: str = "") -> Outcome:
    e = run.sg()
    e.boot("http")
    e.log.wait(0.8)
    p = e.log.pid
    port = e.d.http_port
    e.line(f"INFO:     Started server process [{p}]")
    e.line("INFO:     Waiting for application startup.")
    e.line("INFO:     Application startup complete.")
    e.line(f"ERROR:    [Errno 98] error while attempting to bind on address ('{e.cfg['host']}', {port}): address "
           "already in use", prio=3)
    e.line("INFO:     Waiting for application shutdown.")
    e.line("INFO:     Application shutdown complete.")
    return Outcome("serving", "port_in_use", [f"--port {port + 1}"],
                   fix_other=stale_note or f"or stop whatever holds {port} (ss -ltnp 'sport = :{port}')",
                   must_not=["--nccl-port", "--mem-fraction-static"], exit="exit1",
                   notes=f"Model, pool and graphs all came up; uvicorn then cannot bind the HTTP port {port} "
                         "([Errno 98]). The HTTP --port is the one in use.")


def nccl_port(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    port = e.cfg.get("nccl_port") or 29500
    frames = sf.dist_init(d) + sf.tcp_store()
    _die_in_dist_init(e, frames, EADDR.format(port=port), ranks=[e.r0])
    return Outcome("dist_init", "port_in_use", [f"--nccl-port {port + 100}"],
                   must_not=["--port", f"--nccl-port {port}"], exit="sigkill",
                   notes=f"Dies inside 'Init torch distributed' with EADDRINUSE on {port}, the port pinned by "
                         "--nccl-port (another instance on this host uses it). The HTTP port is not the problem.")


def dist_addr_port(run: Run) -> Outcome:
    e = run.sg()
    d = e.d
    addr = d.args["dist_init_addr"]
    host, port = addr.split(":")
    frames = sf.dist_init(d) + sf.tcp_store()
    _die_in_dist_init(e, frames, EADDR.format(port=port), ranks=[e.r0])
    new = f"{host}:{int(port) + 10}"
    return Outcome("dist_init", "port_in_use", [f"--dist-init-addr {new}"],
                   fix_other="use the same new address on every node",
                   must_not=["--port", f"--dist-init-addr {addr}"], exit="sigkill",
                   notes=f"Node 0 cannot listen on the rendezvous port {port} of --dist-init-addr (EADDRINUSE); a "
                         "stale run still holds it. Change the dist-init port, not the HTTP port.")


# -- host RAM ----------------------------------------------------------------
def host_oom(run: Run, style: str = "new", where: float = 0.4, fix: list[str] | None = None,
             fix_other: str = "", notes: str = "") -> Outcome:
    """The kernel OOM killer takes a scheduler while weights load (mmap'd shards x ranks)."""
    e = run.sg()
    d = e.d
    e.boot("weight_load")
    e.load_begin()
    e.load_bar(stop=where)
    victim_rank = 0 if style != "systemd" else None
    if style == "systemd":
        return _unit_oom(e, run, fix, fix_other, notes)
    vpid = e.sched_pids[victim_rank]
    comm = ("sglang::scheduler_TP0" if d.v >= (0, 5, 0) else "python3")[:15]
    e.log.wait(run.rng.uniform(4, 20))
    system.oom_killer(e.log, run.rng, comm, vpid, e.log.unit, run.rng.uniform(90, 180))
    e.log.tick(0.5, 2)
    if style == "old":
        e.line(f"Rank 0 scheduler is dead. Please check if there are relevant logs.", prio=3)
        e.line("Exit code: -9", prio=3)
        ex = "exit1"
    else:
        msg = ("Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common "
               "cause is the OS OOM killer.")
        tb = e.tb(sf.launch_main(d), "RuntimeError: " + msg)
        e.line(msg, prio=3)
        for ln in tb:
            e.raw(ln)
        ex = "oom-exit1"
    return Outcome("weight_load", "host_oom", fix or [],
                   fix_other=fix_other or "more host RAM or swap; fewer ranks loading at once on this host",
                   must_not=["--mem-fraction-static", "--context-length", "--disable-cuda-graph"], exit=ex,
                   notes=notes or "A scheduler is SIGKILLed (-9) during weight loading and the kernel logs the OOM "
                                  "killer: host RAM, not GPU memory.")


def _unit_oom(e, run: Run, fix, fix_other, notes) -> Outcome:
    e.log.wait(run.rng.uniform(3, 15))
    e.log.systemd(f"{e.log.unit}: A process of this unit has been killed by the OOM killer.", 4)
    e.log.systemd(f"{e.log.unit}: Killing process {e.log.pid} (python3) with signal SIGKILL.", 4)
    for pid in e.sched_pids[:3]:
        e.log.systemd(f"{e.log.unit}: Killing process {pid} (python3) with signal SIGKILL.", 4)
    e.log.systemd(f"{e.log.unit}: Main process exited, code=killed, status=9/KILL", 5)
    e.log.systemd(f"{e.log.unit}: Failed with result 'oom-kill'.", 4)
    e.log.systemd(f"{e.log.unit}: Consumed {system.cpu_time(run.rng, 120, 900)} CPU time.")
    cur = e.d.args.get("cpu_offload_gb")
    return Outcome("weight_load", "host_oom", fix or ([f"--cpu-offload-gb {max(8, cur // 4)}"] if cur else []),
                   fix_other=fix_other or "more host RAM",
                   must_not=([f"--cpu-offload-gb {cur}"] if cur else []) + ["--mem-fraction-static"],
                   exit="none", notes=notes or "No Python error at all: systemd reports that the OOM killer hit the "
                                               "unit during weight loading (result 'oom-kill').")


# -- start-up timeouts -------------------------------------------------------------
def timeout_compile(run: Run, waiter: str = "sglang-ready") -> Outcome:
    e = run.sg()
    d = e.d
    e.boot("graph_capture")
    e.capture_begin()
    pid = e.log.pid + 1
    url = f"http://127.0.0.1:{d.http_port}/health"
    bss = sorted(e.graph_bs(), reverse=True)
    for i, bs in enumerate(bss[:6]):
        e.log.wait(95)
        e.line(f"Compiling a graph for dynamic shape takes {run.rng.uniform(70, 110):.2f} s", e.r0)
        e.log.other_unit(waiter, pid, f"still waiting for {url} ({int((e.log.t - e.load_t0).total_seconds())}s)")
    e.log.wait(40)
    system.timed_out(e.log)
    return Outcome("graph_capture", "startup_timeout", [],
                   fix_other="raise TimeoutStartSec (e.g. 1800) or keep the torch.compile cache between starts",
                   must_not=["--mem-fraction-static", "--context-length"], exit="timeout",
                   notes="--enable-torch-compile compiles one graph per batch size (~90 s each on a cold cache); "
                         "systemd's start timeout fires while the health waiter is still polling. Nothing failed.")


def timeout_download(run: Run, waiter: str = "await-http") -> Outcome:
    e = run.sg()
    d = e.d
    e.boot("weight_load")
    e.load_begin()
    pid = e.log.pid + 1
    n = d.model.shards
    for k in range(0, 7):
        e.log.wait(80)
        e.raw(f"Fetching {n} files:  {int(100 * k / n):3d}%|{'█' * (10 * k // n):<10}| {k}/{n} "
              f"[{int(80 * k // 60):02d}:{80 * k % 60:02d}<{int(80 * (n - k) // 60):02d}:00, 80.1s/it]")
        if k % 2 == 0:
            e.log.other_unit(waiter, pid, f"waiting for http://127.0.0.1:{d.http_port}/health ... "
                                          f"({int((e.log.t - e.load_t0).total_seconds())}s)")
    e.log.wait(30)
    system.timed_out(e.log)
    return Outcome("weight_load", "startup_timeout", [],
                   fix_other="pre-download the weights to local disk (or raise TimeoutStartSec)",
                   must_not=["--mem-fraction-static", "--tp-size"], exit="timeout",
                   notes="The model path is a Hub id and the shards download at ~80 s each; systemd kills the start "
                         "job on TimeoutStartSec. Slow, not broken.")


def timeout_deepgemm(run: Run, waiter: str = "wait-ready") -> Outcome:
    e = run.sg()
    d = e.d
    e.boot("kernel_init")
    e.hook("kernel_init")
    e.line("Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) if you have "
           "not run `sglang.compile_deep_gemm`. It is recommended to run `sglang.compile_deep_gemm` with same args as "
           "`sglang.launch_server` for pre-compilation to reduce the overhead if you have not run it before. For "
           f"example: `python3 -m sglang.compile_deep_gemm --model {d.path} --tp {d.tp} --trust-remote-code`",
           e.r0, prio=4)
    total = 16384
    for k in range(1, 7):
        e.log.wait(95)
        done = 1100 * k + run.rng.randint(0, 300)
        e.raw(f"DeepGEMM warmup:  {100 * done // total:2d}%|{'█' * (10 * done // total):<10}| {done}/{total} "
              f"[{int(95 * k // 60):02d}:{95 * k % 60:02d}<1:{run.rng.randint(10, 59)}:00,  2.01it/s]")
        e.log.other_unit(waiter, e.log.pid + 1, f"retry {k * 6}/60: http://127.0.0.1:{d.http_port}/health "
                                                "not ready")
    e.log.wait(20)
    system.timed_out(e.log)
    return Outcome("kernel_init", "startup_timeout", [],
                   fix_other="run python3 -m sglang.compile_deep_gemm once (or raise TimeoutStartSec); the JIT cache "
                             "then makes starts fast",
                   must_not=["--mem-fraction-static", "--disable-cuda-graph"], exit="timeout",
                   notes="DeepGEMM JIT pre-compilation runs for many minutes on a cold cache and systemd's start "
                         "timeout kills it every time: the restart loop repeats the same compile.")


def duplicate_gpu(run: Run) -> Outcome:
    """Two ranks land on one GPU (a CUDA_VISIBLE_DEVICES / --base-gpu-id mix-up): NCCL refuses the communicator."""
    e = run.sg()
    d = e.d
    e.boot("dist_init")
    e.each(lambda r: "Init parallel begin." if e.new_par else "Init torch distributed begin.")
    if len(e.ranks) > 1 or e.new_par:
        e.line("sglang is using nccl==2.27.5" if e.new_par else "sglang is using nccl==2.21.5", e.r0)
    host = e.log.host
    pid = e.sched_pids[1]
    e.log.app(f"{host}:{pid}:{pid} [1] init.cc:{run.rng.choice([1011, 1019])} NCCL WARN Duplicate GPU detected : rank 1 "
              f"and rank 0 both on CUDA device {run.rng.choice(['18000', '3a000', '9a000'])}")
    err = "RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)"
    for r in e.ranks[:2]:
        e.log.tick(0.001, 0.1)
        e.exception(r, e.tb(sf.nccl_first_collective(d), err))
    e.sigquit()
    return Outcome("dist_init", "distributed_init", [],
                   fix_other="give each rank its own GPU: CUDA_VISIBLE_DEVICES / --base-gpu-id put two ranks on one",
                   must_not=["--mem-fraction-static", "--disable-custom-all-reduce"], exit="sigkill",
                   secondary="config_invalid",
                   notes="NCCL's 'Duplicate GPU detected' explains the generic 'invalid usage': two ranks on one GPU "
                         "counts as distributed_init.")
