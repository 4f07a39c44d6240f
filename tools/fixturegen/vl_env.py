"""vLLM endings: distributed init, ports, model files, argument values, host RAM, start-up timeouts, healthy."""
from __future__ import annotations

from . import system
from . import vllm_frames as vf
from .case import Outcome, Run
from .pyerr import F, cuda_error, traceback

EADDR = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
         "port: {port}, useIPv6: false, code: -98, name: EADDRINUSE, message: address already in use")


def healthy(run: Run, serve: int = 8, preempt: bool = False, extra=None, notes: str = "") -> Outcome:
    v = run.vl()
    v.boot()
    v.serve(serve, preempt)
    if extra:
        extra(v)
        v.serve(3)
    return Outcome("serving", None, exit="alive", notes=notes or "Healthy start; the warnings on the way are normal.")


def _api_tb(v, frames: list[F], err: str) -> None:
    for ln in traceback(frames, err, v.d.site, v.d.py_minor):
        v.raw(v.api, ln, 3)


def _api_head(v) -> list[F]:
    return vf.api_config(v.d)


def _config_frames(v, tail: list[F]) -> list[F]:
    return vf.api_config(v.d) + [
        F("vllm/engine/arg_utils.py", 1371, "create_engine_config", "model_config = self.create_model_config()",
          "               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^")] + tail


# -- distributed ----------------------------------------------------------------
def custom_allreduce(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("dist_init")
    v.hook("dist_init")
    n = len(v.ranks())
    v.each(lambda p, i: v.say(p, f"world_size={n} rank={i} local_rank={i} distributed_init_method=tcp://127.0.0.1:"
                                 f"{run.rng.randint(34000, 59999)} backend=nccl", "parallel_state.py", 1208))
    v.say(v.workers[0], "vLLM is using nccl==2.27.5", "pynccl.py", 70)
    err = cuda_error("peer access is not supported between these two devices", d.v >= (0, 11))
    fr = [F("vllm/v1/worker/gpu_worker.py", 186, "init_device",
            "init_worker_distributed_environment(self.vllm_config, self.rank,"),
          F("vllm/distributed/parallel_state.py", 1136, "initialize_model_parallel",
            "_TP = init_model_parallel_group(group_ranks,"),
          F("vllm/distributed/parallel_state.py", 306, "__init__", "self.device_communicator = device_comm_cls("),
          F("vllm/distributed/device_communicators/cuda_communicator.py", 67, "__init__",
            "self.ca_comm = CustomAllreduce("),
          F("vllm/distributed/device_communicators/custom_all_reduce.py", 150, "__init__",
            "self.meta_ptrs = self.create_shared_buffer(ops.meta_size() + max_size,"),
          F("vllm/distributed/device_communicators/custom_all_reduce.py", 291, "create_shared_buffer",
            "pointers.append(ops.open_mem_handle(h))")]
    v.fail_in_worker(1, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    return Outcome("dist_init", "distributed_init", ["--disable-custom-all-reduce"],
                   must_not=["--gpu-memory-utilization", "--enforce-eager"], exit="exit1",
                   notes="Custom all-reduce maps the peer GPU's memory over CUDA IPC; on this PCIe host peer access "
                         "is refused. Turn custom all-reduce off (NCCL does the all-reduce).")


def shm_nccl(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("dist_init")
    n = len(v.ranks())
    v.each(lambda p, i: v.say(p, f"world_size={n} rank={i} local_rank={i} distributed_init_method=tcp://127.0.0.1:"
                                 f"{run.rng.randint(34000, 59999)} backend=nccl", "parallel_state.py", 1208))
    v.say(v.workers[0], "vLLM is using nccl==2.21.5", "pynccl.py", 70)
    host = v.log.host
    seg = "".join(run.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(6))
    for i, w in enumerate(v.workers[:2]):
        v.log.app(f"{host}:{w.pid}:{w.pid + 33} [{i}] misc/shmutils.cc:{run.rng.choice([72, 80])} NCCL WARN Error: "
                  f"failed to extend /dev/shm/nccl-{seg} to {run.rng.choice([9637892, 33030148])} bytes, error: No "
                  "space left on device (28)")
    err = "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    fr = [F("vllm/v1/worker/gpu_worker.py", 186, "init_device",
            "init_worker_distributed_environment(self.vllm_config, self.rank,"),
          F("vllm/distributed/parallel_state.py", 1136, "initialize_model_parallel",
            "_TP = init_model_parallel_group(group_ranks,"),
          F("vllm/distributed/device_communicators/pynccl.py", 99, "__init__",
            "self.comm: ncclComm_t = self.nccl.ncclCommInitRank("),
          F("vllm/distributed/device_communicators/pynccl_wrapper.py", 277, "NCCL_CHECK",
            "raise RuntimeError(f\"NCCL error: {error_str}\")")]
    v.fail_in_worker(0, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    return Outcome("dist_init", "distributed_init", [],
                   fix_other="run the container with --ipc=host or --shm-size 16g (NCCL needs /dev/shm)",
                   must_not=["--gpu-memory-utilization", "--enforce-eager"], exit="exit1",
                   notes="NCCL cannot grow its /dev/shm segment (docker's small default): 'unhandled system error' "
                         "during init, explained by the NCCL WARN lines just before it.")


def store_timeout(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("dist_init")
    addr = d.args.get("master_addr", "10.20.0.11")
    n = d.tp * 2
    for k in range(3):
        v.log.wait(180)
        v.say(v.eng, f"Waiting for 1 remote node(s) to join: {n // 2}/{n} workers connected to {addr}:"
                     f"{d.args.get('master_port', 29501)}", "multiproc_executor.py", 141)
    v.log.wait(60)
    err = f"torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. {n // 2}/{n} clients joined."
    fr = [F("vllm/v1/worker/gpu_worker.py", 186, "init_device",
            "init_worker_distributed_environment(self.vllm_config, self.rank,"),
          F("vllm/distributed/parallel_state.py", 1021, "init_distributed_environment",
            "torch.distributed.init_process_group("),
          F("torch/distributed/distributed_c10d.py", 1689, "init_process_group",
            "store, rank, world_size = next(rendezvous_iterator)"),
          F("torch/distributed/rendezvous.py", 198, "_create_c10d_store", "return TCPStore(")]
    v.fail_in_worker(0, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    return Outcome("dist_init", "distributed_init", [],
                   fix_other="start vLLM on the second node (--node-rank 1) or fix --master-addr reachability",
                   must_not=["--gpu-memory-utilization", "--port", "--master-port"], exit="exit1",
                   notes="Two-node run: only this node's workers joined the rendezvous; the store gave up after "
                         "600 s. The other node never came (or cannot reach the master address).")


def duplicate_gpu(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("dist_init")
    n = len(v.ranks())
    v.each(lambda p, i: v.say(p, f"world_size={n} rank={i} local_rank={i} distributed_init_method=tcp://127.0.0.1:"
                                 f"{run.rng.randint(34000, 59999)} backend=nccl", "parallel_state.py", 1208))
    host = v.log.host
    w = v.workers[1]
    v.log.app(f"{host}:{w.pid}:{w.pid} [1] init.cc:{run.rng.choice([1005, 1012])} NCCL WARN Duplicate GPU detected : "
              "rank 1 and rank 0 both on CUDA device 18000")
    err = ("RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)")
    fr = [F("vllm/v1/worker/gpu_worker.py", 186, "init_device",
            "init_worker_distributed_environment(self.vllm_config, self.rank,"),
          F("vllm/distributed/device_communicators/pynccl.py", 99, "__init__",
            "self.comm: ncclComm_t = self.nccl.ncclCommInitRank("),
          F("vllm/distributed/device_communicators/pynccl_wrapper.py", 277, "NCCL_CHECK",
            "raise RuntimeError(f\"NCCL error: {error_str}\")")]
    v.fail_in_worker(1, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    return Outcome("dist_init", "distributed_init", [],
                   fix_other="CUDA_VISIBLE_DEVICES lists the same GPU twice: give each rank its own GPU",
                   must_not=["--gpu-memory-utilization", "--disable-custom-all-reduce"], exit="exit1",
                   secondary="config_invalid",
                   notes="NCCL refuses to build a communicator with two ranks on one GPU ('Duplicate GPU detected'): "
                         "a mis-set CUDA_VISIBLE_DEVICES; two ranks on one GPU counts as distributed_init.")


# -- ports --------------------------------------------------------------------------
def http_port(run: Run, fix_other: str = "") -> Outcome:
    v = run.vl()
    d = v.d
    v.launch()
    v.config()
    err = "OSError: [Errno 98] Address already in use"
    fr = vf.api_prefix(d) + [
        F("vllm/entrypoints/openai/api_server.py", 1879, "run_server", "listen_address, sock = setup_server(args)",
          "                        ^^^^^^^^^^^^^^^^^^"),
        F("vllm/entrypoints/openai/api_server.py", 1845, "setup_server", "sock = create_server_socket(sock_addr)",
          "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        F("vllm/entrypoints/openai/api_server.py", 1786, "create_server_socket", "sock.bind(addr)")]
    _api_tb(v, fr, err)
    port = d.http_port
    return Outcome("launch", "port_in_use", [f"--port {port + 1}"],
                   fix_other=fix_other or f"or stop the process that holds {port}",
                   must_not=["--gpu-memory-utilization", "--tensor-parallel-size"], exit="exit1",
                   notes=f"vLLM binds its HTTP socket before starting the engine; port {port} is taken ([Errno 98]).")


def master_port(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    port = d.args["master_port"]
    v.boot("dist_init")
    err = EADDR.format(port=port)
    fr = [F("vllm/v1/worker/gpu_worker.py", 186, "init_device",
            "init_worker_distributed_environment(self.vllm_config, self.rank,"),
          F("vllm/distributed/parallel_state.py", 1021, "init_distributed_environment",
            "torch.distributed.init_process_group("),
          F("torch/distributed/distributed_c10d.py", 1689, "init_process_group",
            "store, rank, world_size = next(rendezvous_iterator)"),
          F("torch/distributed/rendezvous.py", 270, "_tcp_rendezvous_handler", "store = _create_c10d_store("),
          F("torch/distributed/rendezvous.py", 198, "_create_c10d_store", "return TCPStore(")]
    v.fail_in_worker(0, fr, err, "executor", at_start=True, entry="self.worker.init_device()")
    return Outcome("dist_init", "port_in_use", [f"--master-port {port + 110}"],
                   fix_other="and pass the same port to the other node",
                   must_not=["--port", f"--master-port {port}"], exit="exit1",
                   notes=f"The torch.distributed rendezvous port {port} (--master-port) is taken (EADDRINUSE); the "
                         "HTTP --port is free. Change the dist-init port.")


def dp_rpc_port(run: Run) -> Outcome:
    v = run.vl()
    d = v.d
    port = d.args["data_parallel_rpc_port"]
    v.launch()
    v.config()
    err = f"zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:{port}')"
    fr = vf.api_launch_core(d) + [
        F("vllm/v1/engine/utils.py", 671, "launch_core_engines", "coordinator = DPCoordinator(parallel_config)"),
        F("vllm/v1/engine/coordinator.py", 74, "__init__", "front_publish_address = get_engine_client_zmq_addr("),
        F("zmq/sugar/socket.py", 317, "bind", "super().bind(addr)"),
        F("_zmq.py", 917, "zmq.backend.cython._zmq.Socket.bind"),
        F("_zmq.py", 179, "zmq.backend.cython._zmq._check_rc")]
    _api_tb(v, fr, err)
    return Outcome("launch", "port_in_use", [f"--data-parallel-rpc-port {port + 10}"],
                   must_not=["--port", f"--data-parallel-rpc-port {port}"], exit="exit1",
                   notes=f"Data-parallel start: the DP coordinator's RPC port {port} is already bound (ZMQ "
                         "EADDRINUSE). Not the HTTP port.")


# -- host RAM --------------------------------------------------------------------------
def host_oom_worker(run: Run, where: float = 0.5, fix: list[str] | None = None, must_not: list[str] | None = None,
                    notes: str = "", kernel: bool = True) -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("weight_load")
    v.load_begin()
    v.load_bar(stop=where)
    i = run.rng.randint(0, len(v.ranks()) - 1)
    victim = v.ranks()[i]
    v.log.wait(run.rng.uniform(5, 25))
    if kernel:
        system.oom_killer(v.log, run.rng, _wn(v, i), victim.pid, v.log.unit, run.rng.uniform(40, 120))
    name = f"Worker_TP{i}" if d.v >= (0, 11) else f"VllmWorker-{i}"
    v.say(v.eng, f"Worker proc {name} died unexpectedly (exit code: -9), shutting down executor.",
          "multiproc_executor.py", 231, "ERROR")
    fr = vf.engine_core(d, "executor") + [
        F("vllm/v1/executor/multiproc_executor.py", 107, "_init_executor",
          "self.workers = WorkerProc.wait_for_ready(unready_workers)"),
        F("vllm/v1/executor/multiproc_executor.py", 471, "wait_for_ready", "raise e from None")]
    v.engine_error(fr, "Exception: WorkerProc initialization failed due to an exception in a background process. "
                       "See stack trace for root cause.")
    v.api_error()
    cur = d.args.get("cpu_offload_gb")
    return Outcome("weight_load", "host_oom", fix if fix is not None else
                   ([f"--cpu-offload-gb {max(4, cur // 4)}"] if cur else []),
                   fix_other="more host RAM" if cur else "more host RAM/swap, or fewer workers loading at once",
                   must_not=must_not if must_not is not None else
                   ([f"--cpu-offload-gb {cur}"] if cur else []) + ["--gpu-memory-utilization", "--max-model-len"],
                   exit="exit1",
                   notes=notes or f"A worker is SIGKILLed (exit -9) while loading weights and the kernel's OOM killer "
                                  "names it: host RAM ran out"
                                  + (f" (--cpu-offload-gb {cur} per GPU pins host memory)." if cur else "."))


def _wn(v, i: int) -> str:
    return (f"VLLM::Worker_TP{i}" if v.workers else "VLLM::EngineCor")[:15]


def host_oom_unit(run: Run) -> Outcome:
    """systemd's OOMPolicy=stop: the whole unit is taken down during torch.compile (inductor workers)."""
    v = run.vl()
    v.boot("compile")
    v.hook("compile")
    h = f"{run.rng.getrandbits(40):010x}"
    v.each(lambda p, i: v.say(p, f"Using cache directory: /root/.cache/vllm/torch_compile_cache/{h}/rank_{i}_0/"
                                 "backbone for vLLM's torch.compile", "backends.py", 548))
    v.log.wait(14)
    v.each(lambda p, i: v.say(p, "Dynamo bytecode transform time: 11.82 s", "backends.py", 559))
    v.log.wait(25)
    u = v.log.unit
    v.log.systemd(f"{u}: A process of this unit has been killed by the OOM killer.", 4)
    v.log.systemd(f"{u}: Killing process {v.api.pid} (vllm) with signal SIGKILL.", 4)
    for p in v.ranks()[:3]:
        v.log.systemd(f"{u}: Killing process {p.pid} (VLLM::Worker_T) with signal SIGKILL.", 4)
    v.log.systemd(f"{u}: Main process exited, code=killed, status=9/KILL", 5)
    v.log.systemd(f"{u}: Failed with result 'oom-kill'.", 4)
    v.log.systemd(f"{u}: Consumed {system.cpu_time(run.rng, 600, 3000)} CPU time.")
    return Outcome("graph_capture", "host_oom", [],
                   fix_other="more host RAM, or fewer inductor compile workers (TORCHINDUCTOR_COMPILE_THREADS=4)",
                   must_not=["--gpu-memory-utilization", "--max-model-len"], exit="none",
                   notes="No Python error: during torch.compile systemd reports the OOM killer hit the unit and stops "
                         "it (result 'oom-kill'). Host RAM.")


def paste_killed(run: Run) -> Outcome:
    """A terminal paste: the command line, the log, then bash's 'Killed'."""
    v = run.vl()
    v.v0 = True
    d = v.d
    args = " ".join(f"--{k.replace('_', '-')} {val}" for k, val in d.args.items() if k != "model")
    v.log.app(f"$ VLLM_USE_V1=0 vllm serve {d.path} {args}".rstrip())
    v.boot("weight_load")
    v.load_begin()
    v.load_bar()
    v.load_end()
    sw = d.args.get("swap_space", 64)
    v.log.wait(3)
    v.say(v.api, f"# cpu blocks: {int(sw * 2**30 / d.model.kv_bytes_per_token(d.tp) / 16)}, # gpu blocks: "
                 f"{run.rng.randint(2000, 9000)}", "executor_base.py", 112)
    v.say(v.api, "Allocating CPU swap space for the KV cache (this can take a minute).", "cache_engine.py", 71)
    v.log.wait(20)
    v.log.app("Killed")
    return Outcome("memory_pool", "host_oom", [f"--swap-space {max(4, sw // 8)}"],
                   fix_other="or more host RAM",
                   must_not=[f"--swap-space {sw}", "--gpu-memory-utilization"], exit="none",
                   notes=f"The shell prints 'Killed' right after vLLM starts pinning {sw} GiB of CPU swap space for "
                         "the KV cache: the OOM killer took the process (host RAM).")


# -- start-up timeouts ---------------------------------------------------------------
def timeout_download(run: Run, waiter: str = "wait-for-vllm") -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("weight_load")
    v.load_begin()
    n = d.model.shards
    size = d.model.size_gb / n
    t0 = v.log.t
    for k in range(1, 8):
        v.log.wait(75)
        frac = min(0.99, run.rng.uniform(0.3, 0.9))
        v.raw(v.ranks()[0], f"model-{k:05d}-of-{n:05d}.safetensors: {int(frac * 100):3d}%|{'█' * int(frac * 10):<10}| "
                            f"{frac * size:.2f}G/{size:.2f}G [01:{run.rng.randint(10, 59)}<00:{run.rng.randint(10, 59)}, "
                            f"{run.rng.uniform(8, 30):.1f}MB/s]")
        if k % 2:
            v.log.other_unit(waiter, v.log.pid + 1, f"waiting for http://127.0.0.1:{d.http_port}/health ... "
                                                    f"({int((v.log.t - t0).total_seconds())}s)")
    v.log.wait(30)
    system.timed_out(v.log)
    return Outcome("weight_load", "startup_timeout", [],
                   fix_other="download the weights ahead of time (or raise TimeoutStartSec)",
                   must_not=["--gpu-memory-utilization", "--tensor-parallel-size"], exit="timeout",
                   notes="The weights stream from the Hub at a few MB/s; systemd's start timeout fires mid-download.")


def timeout_deepgemm(run: Run, waiter: str = "wait-for-vllm") -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("graph_capture")
    v.hook("graph_capture")
    w = v.ranks()[0]
    t0 = v.log.t
    total = 2048
    for k in range(1, 8):
        v.log.wait(80)
        done = 150 * k + run.rng.randint(0, 40)
        v.raw(w, f"DeepGemm(fp8_gemm_nt) warmup (W=torch.Size([{run.rng.choice([4096, 6144, 12288])}, 7168])): "
                 f"{100 * done // total:3d}%|{'█' * (10 * done // total):<10}| {done}/{total} [{k:02d}:{run.rng.randint(10, 59)}<"
                 f"{run.rng.randint(10, 30)}:00,  1.9it/s]")
        v.log.other_unit(waiter, v.log.pid + 1, f"still starting ({int((v.log.t - t0).total_seconds())}s), "
                                                "retrying in 20s")
    v.log.wait(20)
    system.timed_out(v.log)
    return Outcome("kernel_init", "startup_timeout", [],
                   fix_other="raise TimeoutStartSec for the first start (the DeepGEMM JIT cache makes later starts "
                             "fast) or set VLLM_SKIP_DEEP_GEMM_WARMUP=1",
                   must_not=["--gpu-memory-utilization", "--enforce-eager"], exit="timeout",
                   notes="DeepGEMM JIT warm-up of the FP8 GEMMs takes longer than TimeoutStartSec on a cold cache.")


def timeout_compile(run: Run, waiter: str = "wait-for-vllm") -> Outcome:
    v = run.vl()
    d = v.d
    v.boot("compile")
    v.hook("compile")
    h = f"{run.rng.getrandbits(40):010x}"
    v.each(lambda p, i: v.say(p, f"Using cache directory: /root/.cache/vllm/torch_compile_cache/{h}/rank_{i}_0/"
                                 "backbone for vLLM's torch.compile", "backends.py", 548))
    v.log.wait(12)
    v.each(lambda p, i: v.say(p, f"Dynamo bytecode transform time: {run.rng.uniform(9, 16):.2f} s", "backends.py", 559))
    t0 = v.log.t
    for rng_ in (1, 2, 4, 8, 16):
        v.log.wait(100)
        v.say(v.ranks()[0], f"Compiling a graph for {'compile range' if d.v >= (0, 30) else 'shape'} "
                            f"({rng_}, {rng_}) takes {run.rng.uniform(85, 110):.2f} s", "backends.py", 194)
        v.log.other_unit(waiter, v.log.pid + 1, f"waiting for http://127.0.0.1:{d.http_port}/health ... "
                                                f"({int((v.log.t - t0).total_seconds()) + 60}s)")
    v.log.wait(40)
    system.timed_out(v.log)
    return Outcome("graph_capture", "startup_timeout", [],
                   fix_other="raise TimeoutStartSec, keep ~/.cache/vllm between restarts (or -O0 for a faster, "
                             "uncompiled start)",
                   must_not=["--gpu-memory-utilization", "--max-model-len"], exit="timeout",
                   notes="torch.compile compiles one range per ~100 s on a cold cache; every restart is killed by the "
                         "start timeout at the same point, so the restart loop never finishes.")


def nccl_watchdog(run: Run) -> Outcome:
    """A hung all-reduce while serving: torch's NCCL watchdog aborts a worker (exit -6)."""
    v = run.vl()
    d = v.d
    v.boot()
    v.serve(run.rng.randint(3, 7))
    v.log.wait(600)
    i = run.rng.randint(1, len(v.workers) - 1)
    w = v.workers[i]
    seq = run.rng.randint(4000, 60000)
    ts = v.log.et
    st = f"E{ts.strftime('%m%d %H:%M:%S')}.{run.rng.randint(100000000, 999999999)}"
    v.raw(w, f"[rank{i}]:[{st} ProcessGroupNCCL.cpp:685] [Rank {i}] Watchdog caught collective operation timeout: "
             f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=8388608, NumelOut=8388608, Timeout(ms)=600000) ran "
             "for 600087 milliseconds before timing out.", 3)
    v.raw(w, f"[rank{i}]:[{st} ProcessGroupNCCL.cpp:752] To avoid data inconsistency, we are taking the entire process "
             "down.", 3)
    v.raw(w, f"[rank{i}]:[{st} ProcessGroupNCCL.cpp:1899] [PG ID 2 PG GUID 3 Rank {i}] Process group watchdog thread "
             "terminated with exception: [Rank {i}] Watchdog caught collective operation timeout".replace("{i}", str(i)),
          3)
    name = f"Worker_TP{i}" if d.v >= (0, 11) else f"VllmWorker-{i}"
    v.log.tick(0.3, 1.2)
    v.say(v.eng, f"Worker proc {name} died unexpectedly (exit code: -6), shutting down executor.",
          "multiproc_executor.py", 231, "ERROR")
    v.say(v.api, "AsyncLLM output_handler failed.", "async_llm.py", 480, "ERROR")
    for ln in v.tb([F("vllm/v1/engine/async_llm.py", 439, "output_handler",
                      "outputs = await engine_core.get_output_async()"),
                    F("vllm/v1/engine/core_client.py", 846, "get_output_async",
                      "raise self._format_exception(outputs) from None")],
                   "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
                   "(above) for the root cause."):
        v.say(v.api, ln, "async_llm.py", 480, "ERROR")
    v.raw(v.api, "INFO:     Shutting down")
    return Outcome("serving", "distributed_init", [],
                   fix_other="PCIe peer-to-peer hangs on this host: NCCL_P2P_DISABLE=1, or fix ACS/IOMMU settings",
                   must_not=["--gpu-memory-utilization", "--max-num-batched-tokens"], exit="exit1",
                   notes="While serving, an all-reduce never completes; torch's NCCL watchdog kills the worker "
                         "(exit -6) after 600 s and the engine dies. A collective failure, not memory.")
