"""Timeline: phases per rank, failing rank, attempts, effective config, window awareness, phase inference."""

from __future__ import annotations

from pathlib import Path

from logdoctor.input.read import read_bytes, read_lines
from logdoctor.timeline.build import build

ROOT = Path(__file__).resolve().parent.parent
FX = ROOT / "fixtures" / "journals" / "formats"


def tl_of(text: str, engine: str = "auto"):
    return build(read_lines(text.strip("\n").split("\n")).records, engine)


def test_sglang_classic_tp2_capture_failure():
    tl = build(read_bytes((FX / "short.log").read_bytes(), year=2026).records)
    assert (tl.engine, len(tl.attempts), tl.start_seen) == ("sglang", 1, True)
    a = tl.last
    assert a.failed and a.phase == "graph_capture" and a.phase_source == "markers"
    assert a.first_failing_rank == "TP1"
    assert a.ranks["TP1"].died and not a.ranks["TP0"].died
    assert a.completed_by_all == "memory_pool"
    assert a.config.levers["mem_fraction"] == 0.88 and a.config.levers["tp_size"] == 2
    assert a.config.levers["graphs_off"] is False
    assert a.readings["weights_gb"] == 30.82 and a.readings["kv_tokens"] == 402654
    assert a.systemd["code"] == "killed" and a.systemd["status"] == "9"
    assert [e.values["xid"] for e in a.kernel] == [13]
    # per-rank spans have durations from the journal timestamps
    w = next(p for p in a.ranks["TP0"].phases if p.phase == "weight_load")
    assert w.completed and 11 < w.seconds < 13


SGL_NEW = """
[2026-05-22 14:44:40] server_args={'model_path': '/models/Qwen3-Next-80B', 'tp_size': 2, 'mem_fraction_static': 0.88, 'context_length': 262144, 'speculative_algorithm': 'DFLASH', 'cuda_graph_backend_decode': 'full', 'disable_cuda_graph': False}
[2026-05-22 14:44:46] Using hybrid linear attention backend for hybrid GDN models.
[2026-05-22 14:44:46 TP1] Init parallel begin.
[2026-05-22 14:44:46 TP0] Init parallel begin.
[2026-05-22 14:44:47 TP1] Init parallel ends. elapsed=1.50 s
[2026-05-22 14:44:47 TP0] Init parallel ends. elapsed=1.50 s
[2026-05-22 14:44:48 TP1] Load weight begin. avail mem=78.52 GB
[2026-05-22 14:44:48 TP0] Load weight begin. avail mem=78.80 GB
[2026-05-22 14:45:00 TP0] Load weight end. elapsed=17.25 s, type=Qwen3NextForCausalLM, dtype=torch.bfloat16, avail mem=38.49 GB, mem usage=40.31 GB.
[2026-05-22 14:45:00 TP1] Load weight end. elapsed=17.25 s, type=Qwen3NextForCausalLM, dtype=torch.bfloat16, avail mem=38.21 GB, mem usage=40.31 GB.
[2026-05-22 14:45:01 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 540, in init_memory_pool
    raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88")
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88
[2026-05-22 14:45:01] Received sigquit from a child process. It usually means the child failed.
"""


def test_sglang_new_wording_dict_args_pool_failure():
    tl = tl_of(SGL_NEW)
    a = tl.last
    assert tl.engine == "sglang" and tl.engine_version == ">=0.5.23"
    assert a.phase == "memory_pool" and a.first_failing_rank == "TP0"
    assert a.config.levers["context_length"] == 262144 and a.config.levers["speculative_algorithm"] == "DFLASH"
    assert a.readings["avail_mem_gb"] in (38.49, 38.21)
    assert not tl.start_seen or a.start_seen  # server_args is the launch


VLLM_TP2 = """
(APIServer pid=5100) INFO 05-22 16:00:00 [startup.py:112] vLLM server version 0.33.0, serving model Qwen/Qwen3-32B
(APIServer pid=5100) INFO 05-22 16:00:00 [utils.py:253] non-default args: {'model': 'Qwen/Qwen3-32B', 'tensor_parallel_size': 2, 'max_model_len': 131072, 'gpu_memory_utilization': 0.95}
(EngineCore_DP0 pid=5273) INFO 05-22 16:00:09 [core.py:94] Initializing a V1 LLM engine (v0.33.0) with config: model='Qwen/Qwen3-32B', max_seq_len=131072, tensor_parallel_size=2, enforce_eager=False
(Worker_TP0 pid=5300) INFO 05-22 16:00:15 [parallel_state.py:1321] world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:41235 backend=nccl
(Worker_TP1 pid=5301) INFO 05-22 16:00:15 [parallel_state.py:1321] world_size=2 rank=1 local_rank=1 distributed_init_method=tcp://127.0.0.1:41235 backend=nccl
(Worker_TP0 pid=5300) INFO 05-22 16:00:16 [gpu_model_runner.py:3218] Starting to load model Qwen/Qwen3-32B...
(Worker_TP1 pid=5301) INFO 05-22 16:00:16 [gpu_model_runner.py:3218] Starting to load model Qwen/Qwen3-32B...
(Worker_TP0 pid=5300) INFO 05-22 16:00:31 [gpu_model_runner.py:3299] Model loading took 30.7 GiB memory and 15.2 seconds
(Worker_TP1 pid=5301) INFO 05-22 16:00:31 [gpu_model_runner.py:3299] Model loading took 30.7 GiB memory and 15.2 seconds
(Worker_TP0 pid=5300) INFO 05-22 16:00:45 [monitor.py:34] torch.compile took 12.3 s in total
(Worker_TP1 pid=5301) INFO 05-22 16:00:45 [monitor.py:34] torch.compile took 12.4 s in total
(Worker_TP0 pid=5300) INFO 05-22 16:00:48 [gpu_worker.py:398] Available KV cache memory: 4.10 GiB
(EngineCore_DP0 pid=5273) ERROR 05-22 16:00:49 [core.py:1080] EngineCore failed to start.
(EngineCore_DP0 pid=5273) ERROR 05-22 16:00:49 [core.py:1080] Traceback (most recent call last):
(EngineCore_DP0 pid=5273) ERROR 05-22 16:00:49 [core.py:1080]   File "/v/vllm/v1/engine/core.py", line 279, in _initialize_kv_caches
(EngineCore_DP0 pid=5273) ERROR 05-22 16:00:49 [core.py:1080]     kv_cache_configs = get_kv_cache_configs(vllm_config, kv_cache_specs, available_gpu_memory)
(EngineCore_DP0 pid=5273) ERROR 05-22 16:00:49 [core.py:1080] ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (4.10 GiB). Based on the available memory, the estimated maximum model length is 33552. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
(APIServer pid=5100) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def test_vllm_v1_tp2_kv_sizing():
    tl = tl_of(VLLM_TP2)
    a = tl.last
    assert (tl.engine, tl.engine_version) == ("vllm", "0.33.0")
    assert a.phase == "memory_pool"
    assert a.config.levers["mem_fraction"] == 0.95 and a.config.levers["context_length"] == 131072
    assert a.config.levers["tp_size"] == 2 and a.config.levers["graphs_off"] is False  # filled from defaults
    assert set(a.ranks) >= {"TP0", "TP1", "APIServer", "EngineCore_DP0"}
    assert a.readings["available_kv_gib"] == 4.10


MULTI = """
May 22 10:00:00 h systemd[1]: Started sglang-qwen.service - SGLang.
May 22 10:00:01 h python3[100]: [2026-05-22 10:00:01] server_args=ServerArgs(model_path='/m', tp_size=2, mem_fraction_static=0.88, disable_cuda_graph=False)
May 22 10:00:05 h python3[100]: [2026-05-22 10:00:05 TP0] Load weight begin. avail mem=78.80 GB
May 22 10:00:09 h python3[100]: [2026-05-22 10:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):
May 22 10:00:09 h python3[100]: RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.
May 22 10:00:10 h systemd[1]: sglang-qwen.service: Main process exited, code=exited, status=1/FAILURE
May 22 10:00:10 h systemd[1]: sglang-qwen.service: Failed with result 'exit-code'.
May 22 10:00:40 h systemd[1]: sglang-qwen.service: Scheduled restart job, restart counter is at 1.
May 22 10:00:40 h systemd[1]: Started sglang-qwen.service - SGLang.
May 22 10:00:41 h python3[200]: [2026-05-22 10:00:41] server_args=ServerArgs(model_path='/m', tp_size=2, mem_fraction_static=0.95, disable_cuda_graph=True)
May 22 10:00:45 h python3[200]: [2026-05-22 10:00:45 TP0] Init torch distributed begin.
May 22 10:00:46 h python3[200]: [2026-05-22 10:00:46 TP1] Init torch distributed ends. elapsed=1.0 s, mem usage=0.7 GB
May 22 10:01:46 h python3[200]: [2026-05-22 10:01:46] The server is fired up and ready to roll!
"""


def test_attempts_split_and_each_has_its_config():
    tl = tl_of(MULTI)
    assert len(tl.attempts) == 2
    a1, a2 = tl.attempts
    assert a1.failed and a1.phase == "weight_load" and a1.config.levers["mem_fraction"] == 0.88
    assert not a2.failed and a2.ready and a2.phase == "serving"
    assert a2.config.levers["mem_fraction"] == 0.95 and a2.config.levers["graphs_off"] is True
    assert a1.systemd["result"] == "exit-code"
    assert (a1.start_line, a2.start_line) == (1, 9)


def test_window_cut_after_launch_is_said():
    tl = tl_of("\n".join(MULTI.strip().split("\n")[2:5]))
    assert not tl.start_seen and not tl.last.config.known


EXCERPT = """
Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2410, in capture_model
    self._capture_cudagraphs(compilation_cases)
  File "/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2480, in _capture_cudagraphs
    self._dummy_run(num_tokens)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total capacity of 79.19 GiB of which 512.00 MiB is free.
"""


def test_excerpt_without_markers_takes_the_phase_from_frames():
    a = tl_of(EXCERPT).last
    assert a.failed and a.phase == "graph_capture" and a.phase_source == "frames"


def test_healthy_with_scary_lines_is_not_failed():
    text = MULTI.strip().split("\n")[8:] + [
        "May 22 10:02:00 h python3[200]: [2026-05-22 10:02:00] KV cache pool is full. Retract requests. #retracted_reqs: 1",
        "May 22 10:02:01 h python3[200]: /usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: FutureWarning: pynvml is deprecated",
    ]
    a = build(read_lines(text).records).last
    assert not a.failed and a.phase == "serving"


def test_starting_then_started_is_one_start():
    text = (ROOT / "tests" / "data" / "starting-started.log").read_text()
    tl = tl_of(text)
    assert [a.start_line for a in tl.attempts] == [1, 8]
    assert tl.attempts[0].failed and tl.attempts[0].phase == "weight_load"
