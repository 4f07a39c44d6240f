"""Mechanisms found by testing explain on fresh logs written independently of the fixtures."""

from __future__ import annotations

import logdoctor

VLLM_KV_AFTER_LOAD = """\
(EngineCore_DP0 pid=2) INFO 05-20 22:04:40 [gpu_model_runner.py:3088] Model loading took 65.7145 GiB memory and 84.31 seconds
(EngineCore_DP0 pid=2) ERROR 05-20 22:05:22 [core.py:843] ValueError: To serve at least one request with the model's max seq len (131072), (20.00 GiB KV cache is needed, which is larger than the available KV cache memory (6.03 GiB). Based on the available memory, the estimated maximum model length is 39488.
"""


def test_vllm_kv_sizing_right_after_loading_is_memory_pool():
    d = logdoctor.diagnose(VLLM_KV_AFTER_LOAD)
    assert (d.cause, d.phase) == ("kv_cache_oom", "memory_pool")
    assert d.fixes[0].flag == "--max-model-len" and d.fixes[0].to == 39488


HEALTHY_WITH_REQUEST_ERROR = """\
(APIServer pid=1) INFO:     Application startup complete.
(APIServer pid=1) ERROR 09-11 04:15:02 [serving_chat.py:228] Error in preprocessing prompt inputs
(APIServer pid=1) ERROR 09-11 04:15:02 [serving_chat.py:228] Traceback (most recent call last):
(APIServer pid=1) ERROR 09-11 04:15:02 [serving_chat.py:228]   File "/v/vllm/entrypoints/openai/serving_chat.py", line 210, in create_chat_completion
(APIServer pid=1) ERROR 09-11 04:15:02 [serving_chat.py:228]     request_prompts, engine_prompts = await self._preprocess_chat(
(APIServer pid=1) ERROR 09-11 04:15:02 [serving_chat.py:228] ValueError: This model's maximum context length is 8192 tokens. However, you requested 9012 tokens.
(APIServer pid=1) INFO:     10.0.0.9:51432 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request
(APIServer pid=1) INFO 09-11 04:15:10 [loggers.py:123] Engine 000: Avg prompt throughput: 810.2 tokens/s, Avg generation throughput: 95.1 tokens/s
"""


def test_a_request_error_while_serving_is_not_a_failure():
    d = logdoctor.diagnose(HEALTHY_WITH_REQUEST_ERROR)
    assert not d.failed and d.exit_code == 0


IMA_THEN_WARMUP_502 = """\
[2026-05-22 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1021, in event_loop_overlap
    self.process_batch_result(batch, result)
torch.AcceleratorError: CUDA error: an illegal memory access was encountered
[2026-05-22 10:00:00] Received sigquit from a child process. It usually means the child failed.
[2026-05-22 10:00:01] Initialization failed. warmup error: Traceback (most recent call last):
  File "/sgl/python/sglang/srt/entrypoints/http_server.py", line 1310, in _wait_and_warmup
    assert res.status_code == 200, f"{res=}, {res.text=}"
AssertionError: res=<Response [502]>, res.text=''
"""


def test_a_warmup_failure_after_the_engine_died_is_a_consequence():
    d = logdoctor.diagnose(IMA_THEN_WARMUP_502)
    assert d.cause == "illegal_memory_access"


def test_the_error_can_state_the_value_in_force():
    d = logdoctor.diagnose(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.88\n"
    )
    assert (d.engine, d.cause) == ("sglang", "kv_cache_oom")
    assert (d.fixes[0].flag, d.fixes[0].from_, d.fixes[0].to) == ("--mem-fraction-static", 0.88, 0.92)


def test_explain_never_prints_a_sentence_with_a_hole():
    from logdoctor.verdict.api import _fill

    assert (
        _fill("A is {a}. Capture was at batch size {bs} with {gb} GB free. Done.", {"a": 1, "gb": 3}) == "A is 1. Done."
    )
