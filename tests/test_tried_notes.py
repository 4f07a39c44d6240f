"""'already tried' notes and the configs-differ leaf compare what the attempts have in common.

vLLM logs a user's flags twice: `non-default args: {...}` (what was set; a missing flag means its default) and the
engine's `with config: ... dtype=torch.bfloat16 ...` line (the resolved values). An attempt that is cut before the
engine line (still loading, or failed in argument checks) has only the first. Comparing its levers with an earlier
attempt's resolved ones made up a change ("already tried: --dtype torch.bfloat16 → auto") that nobody made, and
could make a restart loop of one config look like "fails across configurations" (a hardware-suspect rule).
"""

from __future__ import annotations

import logdoctor
from logdoctor.input.read import read_lines
from logdoctor.timeline.config import comparable_levers, extract_config

HOST = "2026-10-02T08:00:{s:02d}+0000 gn-3 vllm[{pid}]: "


def _attempt(pid: int, t0: int, util: str, engine_line: bool, crash: bool) -> list[str]:
    h = lambda s: HOST.format(s=t0 + s, pid=pid)  # noqa: E731
    out = [
        f"2026-10-02T08:00:{t0:02d}+0000 gn-3 systemd[1]: Started vllm.service - vLLM.",
        h(1) + f"INFO 10-02 08:00:{t0 + 1:02d} [api_server.py:1805] vLLM API server version 0.10.1.1",
        h(1) + f"INFO 10-02 08:00:{t0 + 1:02d} [utils.py:326] non-default args: {{'model': '/models/m', "
        f"'gpu_memory_utilization': {util}, 'max_model_len': 8192}}",
    ]
    if engine_line:
        out.append(
            h(2) + f"INFO 10-02 08:00:{t0 + 2:02d} [core.py:74] Initializing a V1 LLM engine (v0.10.1.1) "
            "with config: model='/models/m', dtype=torch.bfloat16, max_seq_len=8192, "
            "tensor_parallel_size=1, enforce_eager=False, kv_cache_dtype=auto"
        )
    out.append(h(3) + f"INFO 10-02 08:00:{t0 + 3:02d} [gpu_model_runner.py:1953] Starting to load model /models/m...")
    if crash:
        out += [
            h(4) + f"ERROR 10-02 08:00:{t0 + 4:02d} [core.py:700] EngineCore failed to start.",
            h(4) + f"ERROR 10-02 08:00:{t0 + 4:02d} [core.py:700] torch.OutOfMemoryError: CUDA out of memory. "
            "Tried to allocate 270.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 190.56 MiB "
            "is free.",
            f"2026-10-02T08:00:{t0 + 5:02d}+0000 gn-3 systemd[1]: vllm.service: Main process exited, "
            "code=exited, status=1/FAILURE",
            f"2026-10-02T08:00:{t0 + 5:02d}+0000 gn-3 systemd[1]: vllm.service: Failed with result 'exit-code'.",
        ]
    return out


def _log(second_util: str) -> str:
    lines = _attempt(100, 0, "0.9", engine_line=True, crash=True) + _attempt(
        200, 20, second_util, engine_line=False, crash=False
    )
    return "\n".join(lines) + "\n"


def test_a_resolved_value_is_not_a_change():
    d = logdoctor.diagnose(_log("0.9"))
    assert d.failed and len(d.attempts) == 2
    assert not [n for n in d.notes if "already tried" in n], d.notes


def test_a_changed_flag_is_still_noted():
    d = logdoctor.diagnose(_log("0.8"))
    tried = [n for n in d.notes if "already tried" in n]
    assert tried == ["already tried at attempt 2: --gpu-memory-utilization 0.9 → 0.8"], d.notes


def test_comparable_levers_uses_the_sources_both_logged():
    both = _attempt(100, 0, "0.9", engine_line=True, crash=False)
    cut = _attempt(200, 20, "0.9", engine_line=False, crash=False)
    a = extract_config(read_lines(both).records, "vllm", "0.10.1.1")
    b = extract_config(read_lines(cut).records, "vllm", "0.10.1.1")
    assert a.levers != b.levers  # the raw views differ (resolved bf16 vs default auto) ...
    left, right = comparable_levers([a, b])
    assert left == right  # ... the comparable ones do not
    assert comparable_levers([a, a]) == [a.levers, a.levers]
    empty = extract_config(read_lines(["hello"]).records, "vllm", None)
    assert comparable_levers([a, empty]) is None  # nothing in common: nothing to compare


def _sglang_attempt(pid: int, t0: int, mem: str, total: int, running: int) -> list[str]:
    j = lambda s: f"2026-10-03T09:00:{t0 + s:02d}+0000 gn-4 python3[{pid}]: [2026-10-03 09:00:{t0 + s:02d}"  # noqa: E731
    return [
        f"2026-10-03T09:00:{t0:02d}+0000 gn-4 systemd[1]: Started sglang.service - SGLang.",
        j(1) + f"] server_args=ServerArgs(model_path='/models/m', tp_size=1, mem_fraction_static={mem}, "
        "max_running_requests=None, max_total_tokens=None, port=30000)",
        j(2) + " TP0] Load weight begin. avail mem=78.10 GB",
        j(3) + " TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=62.90 GB, "
        "mem usage=15.20 GB.",
        j(4) + f" TP0] max_total_num_tokens={total}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        f"max_running_requests={running}, context_len=131072, available_gpu_mem=6.10 GB",
        j(5) + " TP0] Scheduler hit an exception: Traceback (most recent call last):",
        j(5) + " TP0] RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        f"2026-10-03T09:00:{t0 + 6:02d}+0000 gn-4 systemd[1]: sglang.service: Main process exited, code=exited, "
        "status=1/FAILURE",
    ]


def test_values_the_engine_computed_are_not_changes():
    """SGLang's "max_total_num_tokens=..., max_running_requests=..." line states what it computed from the free
    memory; two starts of one config differ there by a few tokens, which no one tried."""
    same = _sglang_attempt(300, 0, "0.85", 127488, 249) + _sglang_attempt(400, 20, "0.85", 127232, 248)
    d = logdoctor.diagnose("\n".join(same) + "\n")
    assert len(d.attempts) == 2
    assert not [n for n in d.notes if "already tried" in n], d.notes
    changed = _sglang_attempt(300, 0, "0.85", 127488, 249) + _sglang_attempt(400, 20, "0.8", 120000, 230)
    d = logdoctor.diagnose("\n".join(changed) + "\n")
    assert [n for n in d.notes if "already tried" in n] == [
        "already tried at attempt 2: --mem-fraction-static 0.85 → 0.8"
    ]
