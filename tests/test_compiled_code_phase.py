"""An OOM raised inside code inductor generated is the compiled graph running (here vLLM's profile run, before the
KV cache exists): the phase is the run's (warm-up), not graph capture. A failure inside torch.compile itself
(dynamo / inductor compiling) stays graph capture (red team, issue 20)."""

from __future__ import annotations

import pytest

from logdoctor import diagnose

P = "/usr/local/lib/python3.12/dist-packages"


def _paste(inner: list[tuple[str, int, str, str]], exc: str) -> str:
    frames = [
        (f"{P}/vllm/v1/worker/gpu_worker.py", 243, "determine_available_memory", "self.model_runner.profile_run()"),
        (f"{P}/vllm/v1/worker/gpu_model_runner.py", 2606, "profile_run", "self._dummy_run(self.max_num_tokens)"),
        (f"{P}/vllm/v1/worker/gpu_model_runner.py", 2380, "_dummy_run", "outputs = self.model("),
        (f"{P}/vllm/compilation/cuda_graph.py", 115, "__call__", "return self.runnable(*args, **kwargs)"),
        (f"{P}/vllm/model_executor/models/llama.py", 530, "forward", "hidden_states = self.model("),
        *inner,
    ]
    rows = ["(EngineCore_0 pid=77) ERROR 05-04 09:12:01 [core.py:700] EngineCore failed to start."]
    rows.append("(EngineCore_0 pid=77) ERROR 05-04 09:12:01 [core.py:700] Traceback (most recent call last):")
    for f, n, fn, code in frames:
        rows.append(f'(EngineCore_0 pid=77) ERROR 05-04 09:12:01 [core.py:700]   File "{f}", line {n}, in {fn}')
        rows.append(f"(EngineCore_0 pid=77) ERROR 05-04 09:12:01 [core.py:700]     {code}")
    rows.append(f"(EngineCore_0 pid=77) ERROR 05-04 09:12:01 [core.py:700] {exc}")
    return "\n".join(rows) + "\n"


OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.10 GiB. GPU 0 has a total capacity of "
    "79.19 GiB of which 1.02 GiB is free."
)


@pytest.mark.parametrize(
    "cache",
    [
        "/tmp/torchinductor_svc/qk/cqkz7.py",
        "/root/.cache/vllm/torch_compile_cache/ab12/rank_0_0/inductor_cache/k2/ck2xy.py",
    ],
)
def test_running_compiled_code_is_the_runs_phase(tmp_path, cache):
    inner = [
        (f"{P}/torch/_inductor/output_code.py", 460, "__call__", "return self.current_callable(inputs)"),
        (cache, 811, "call", "buf3 = empty_strided_cuda((s0, 28672), (28672, 1), torch.bfloat16)"),
    ]
    p = tmp_path / "paste.log"
    p.write_text(_paste(inner, OOM))
    assert diagnose(p).phase == "warmup"


def test_torch_compile_failing_is_graph_capture(tmp_path):
    inner = [
        (f"{P}/torch/_dynamo/eval_frame.py", 655, "_fn", "return fn(*args, **kwargs)"),
        (f"{P}/torch/_inductor/compile_fx.py", 1903, "compile_fx", "return aot_autograd("),
    ]
    p = tmp_path / "paste.log"
    p.write_text(_paste(inner, OOM))
    assert diagnose(p).phase == "graph_capture"
