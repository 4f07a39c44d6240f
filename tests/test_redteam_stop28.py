"""Mechanisms behind what a red team found in 20 logs written from the sglang 0.5.3 / vllm 0.11.0 sources without
our fixtures (stop 28), each tested on lines built here: a fraction raise that the log's own numbers say is too
small, a torch build without the GPU's architecture, SGLang's speculative topk/page-size check, a `set -x` launch
line, and prose that is not a log."""

from __future__ import annotations

import subprocess
import sys

import pytest

import logdoctor
from logdoctor.engines.levers import step

PFX = "Oct 14 09:12:{s:02d} gpu-node-07 python3[41234]: "


def _sglang_pool_oom(frac: float, before: float, after: float) -> str:
    """SGLang TP1 start whose pool sizing fails: the weights leave `after` of the `before` GB free."""
    lines = [
        "Oct 14 09:12:01 gpu-node-07 systemd[1]: Started sglang.service - SGLang.",
        f"[2025-10-14 09:12:06] server_args=ServerArgs(model_path='m', mem_fraction_static={frac}, tp_size=1, "
        "port=30000)",
        "[2025-10-14 09:12:16 TP0] Init torch distributed begin.",
        "[2025-10-14 09:12:17 TP0] Init torch distributed ends. mem usage=1.12 GB",
        f"[2025-10-14 09:12:17 TP0] Load weight begin. avail mem={before:.2f} GB",
        f"[2025-10-14 09:12:50 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        f"avail mem={after:.2f} GB, mem usage={before - after:.2f} GB.",
        "[2025-10-14 09:12:51 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
        f"self.server_args.mem_fraction_static={frac}",
    ]
    return "\n".join(ln if ln.startswith("Oct") else PFX.format(s=20 + i) + ln for i, ln in enumerate(lines)) + "\n"


@pytest.mark.parametrize(
    ("frac", "before", "after"),
    [(0.8, 77.93, 12.11), (0.7, 79.0, 30.0), (0.85, 139.5, 21.0), (0.6, 44.0, 12.5)],
)
def test_fraction_raise_clears_the_weights_share(frac, before, after):
    """SGLang's pool is fraction x total − (total − free after load): a raise must pass the weights' share, not
    take one step (0.8 → 0.84 fails again when the weights take 0.845)."""
    d = logdoctor.diagnose(_sglang_pool_oom(frac, before, after))
    assert d.cause == "kv_cache_oom"
    share = (before - after) / before
    raise_ = next(f for f in d.fixes if f.lever == "mem_fraction")
    assert raise_.to > share and raise_.to > frac
    if d.rule == "sglang.kv-pool.not-enough-memory":  # (below SGLang's own choice: that choice is proposed)
        assert raise_.to <= max(round(share + 0.05, 2), frac + 0.04 + 1e-9)  # the least that works, not the cap


def test_fraction_needed_above_the_cap_is_not_proposed():
    d = logdoctor.diagnose(_sglang_pool_oom(0.9, 80.0, 2.0))  # weights take 0.975 of the GPU
    assert all(f.lever != "mem_fraction" for f in d.fixes)
    assert any("above the 0.95 cap" in n for n in d.notes)
    assert d.fixes and d.fixes[0].lever == "tp_size"


def test_step_at_least():
    assert step("mem_fraction", 0.8, "raise", at_least=0.875, bound=0.95) == 0.88
    assert step("mem_fraction", 0.8, "raise", at_least=0.81, bound=0.95) == 0.84  # the usual step already clears it
    assert step("mem_fraction", 0.8, "raise", at_least=0.97, bound=0.95) is None
    assert step("mem_fraction", 0.8, "raise", at_least=0.88, avoid=[0.88], bound=0.95) == 0.92


TORCH_WARN = [
    "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:287: UserWarning:",
    "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
    "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
]


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_torch_without_the_gpu_arch_proposes_no_flag(engine):
    """The failing kernel is torch's own: no attention backend or memory flag helps."""
    if engine == "sglang":
        head = ["[2025-10-24 09:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-4B', attention_backend='fa3')"]
        tail = [
            "[2025-10-24 09:00:07] Load weight begin. avail mem=30.83 GB",
            "[2025-10-24 09:00:08] Scheduler hit an exception: Traceback (most recent call last):",
            "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device",
        ]
    else:
        head = ["INFO 11-25 10:06:20 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3-4B'}"]
        tail = [
            "ERROR 11-25 10:06:23 [core.py:632] EngineCore failed to start.",
            "ERROR 11-25 10:06:23 [core.py:632] RuntimeError: CUDA error: no kernel image is available for execution"
            " on the device",
        ]
    d = logdoctor.diagnose("\n".join(head + TORCH_WARN + tail) + "\n")
    assert d.cause == "kernel_arch_mismatch"
    assert d.rule == "any.torch.build-lacks-gpu-arch"
    assert d.fixes == [] and d.no_flag_change


def _spec_launch(prefix: str, error: str) -> str:
    return (
        "Started sglang-eagle.service - SGLang EAGLE3.\n"
        f"{prefix}python3 -m sglang.launch_server --model-path m --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path d --speculative-eagle-topk 8 --page-size 16 --attention-backend fa3\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/sglang/srt/server_args.py", line 1119, in _handle_speculative_decoding\n'
        "    raise ValueError(\n"
        f"ValueError: {error}\n"
    )


@pytest.mark.parametrize(
    "error",
    [
        "speculative_eagle_topk > 1 with page_size > 1 is unstable and produces incorrect results for paged attention "
        "backends. This combination is only supported for the 'flashinfer' backend.",
        "speculative_eagle_topk(8) > 1 with page_size(16) > 1 is unstable and produces incorrect results for paged "
        "attention backends. This combination is only supported for the 'flashinfer' backend.",
    ],
)
@pytest.mark.parametrize("prefix", ["+ ", "+ exec ", ""])
def test_speculative_topk_with_pages_names_the_three_flags(error, prefix):
    d = logdoctor.diagnose(_spec_launch(prefix, error))
    assert d.cause == "config_invalid" and d.phase == "launch"
    got = {(f.flag, f.to) for f in d.fixes}
    assert got == {("--page-size", 1), ("--attention-backend", "flashinfer"), ("--speculative-eagle-topk", 1)}
    assert d.window["start_seen"]  # the launch command is the launch: its flags are known


def test_engine_rule_wins_a_tie_with_an_any_engine_rule():
    """Same score and the same evidence line: the rule written for the engine reads that engine's wording."""
    d = logdoctor.diagnose(
        _spec_launch(
            "",
            "speculative_eagle_topk > 1 with page_size > 1 is unstable and produces incorrect results "
            "for paged attention backends. This combination is only supported for the 'flashinfer' backend.",
        )
    )
    assert d.rule == "sglang.speculative.topk-with-paged-backend"


def _explain(text: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "logdoctor", "explain", "--no-history", "-"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "text",
    [
        "The server would not start this morning. I think it ran out of memory,\nthen it failed again after a retry.\n",
        "a\n\n\n",
    ],
)
def test_prose_is_not_a_log(text):
    r = _explain(text)
    assert r.returncode == 2, r.stdout
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and "not a log" in r.stderr and "Traceback" not in r.stderr


def test_a_bare_traceback_paste_is_still_diagnosed():
    r = _explain(
        "Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 1, in forward\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    assert r.returncode == 1, r.stderr
    assert "illegal_memory_access" in r.stdout


def _journal_forward() -> list[str]:
    p = "Oct 26 10:00:{:02d} gpu-node-07 vllm[812]: "
    e = "(EngineCore_DP0 pid=830) "
    return [
        "Oct 26 10:00:01 gpu-node-07 systemd[1]: Started vllm.service - vLLM.",
        p.format(3) + "(APIServer pid=812) INFO 10-26 10:00:03 [utils.py:326] non-default args: {'model': 'm', "
        "'max_model_len': 131072}",
        p.format(9) + e + "INFO 10-26 10:00:09 [gpu_model_runner.py:1911] Starting to load model m...",
        p.format(30) + e + "INFO 10-26 10:00:30 [gpu_worker.py:298] Available KV cache memory: 4.31 GiB",
        p.format(31) + e + "ERROR 10-26 10:00:31 [core.py:708] EngineCore failed to start.",
        p.format(31) + e + "ERROR 10-26 10:00:31 [core.py:708] Traceback (most recent call last):",
        p.format(31) + e + "ERROR 10-26 10:00:31 [core.py:708] ValueError: To serve at least one request with the "
        "models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache "
        "memory (4.31 GiB). Based on the available memory, the estimated maximum model length is 35296.",
        "Oct 26 10:00:32 gpu-node-07 systemd[1]: vllm.service: Main process exited, code=exited, status=1/FAILURE",
        "Oct 26 10:00:32 gpu-node-07 systemd[1]: vllm.service: Failed with result 'exit-code'.",
    ]


def test_newest_first_journal_is_read_in_time_order():
    """journalctl -r: the phase comes from markers before the death, as in the forward journal."""
    from logdoctor.input.read import read_bytes
    from logdoctor.verdict.api import diagnose

    fwd = _journal_forward()
    a = diagnose(read_bytes(("\n".join(fwd) + "\n").encode()))
    res = read_bytes(("\n".join(reversed(fwd)) + "\n").encode())
    b = diagnose(res)
    assert (b.cause, b.phase, b.rule) == (a.cause, a.phase, a.rule) == ("kv_cache_oom", "memory_pool", b.rule)
    assert any("newest first" in w for w in res.warnings)
    assert not any("newest first" in w for w in read_bytes(("\n".join(fwd) + "\n").encode()).warnings)


def test_entries_keep_their_continuation_lines():
    from logdoctor.input.order import newest_first, oldest_first

    lines = [
        "2025-10-26T10:00:05+0000 h app[1]: third",
        "2025-10-26T10:00:04+0000 h app[1]: second, two lines",
        "    its continuation",
        "2025-10-26T10:00:03+0000 h app[1]: first",
        "2025-10-26T10:00:02+0000 h app[1]: zeroth",
    ]
    assert newest_first(lines)
    assert oldest_first(lines) == [lines[4], lines[3], lines[1], lines[2], lines[0]]
    assert not newest_first(oldest_first(lines))
    # a concatenation of two forward logs (the newer one first) steps back once: not reversed
    two = oldest_first(lines) + [ln.replace("2025-10-26", "2025-10-25") for ln in oldest_first(lines)]
    assert not newest_first(two)


def test_newest_first_json_entries():
    from logdoctor.input.order import newest_first

    lines = [f'{{"__REALTIME_TIMESTAMP":"{1761472800000000 - i * 1000000}","MESSAGE":"m{i}"}}' for i in range(6)]
    assert newest_first(lines) and not newest_first(lines[::-1])


def _vllm_quant_refused(method: str, flag: bool) -> str:
    args = "{'model': 'org/m'" + (f", 'quantization': '{method}'" if flag else "") + "}"
    return (
        f"(APIServer pid=1) INFO 10-18 10:00:03 [utils.py:233] non-default args: {args}\n"
        "(APIServer pid=1) Traceback (most recent call last):\n"
        '(APIServer pid=1)   File "/usr/lib/python3/dist-packages/vllm/config/__init__.py", line 263, in '
        "_get_quantization_config\n"
        f"(APIServer pid=1) ValueError: The quantization method {method} is not supported for the current GPU. "
        "Minimum capability: 89. Current capability: 80.\n"
    )


@pytest.mark.parametrize(("method", "online"), [("fp8", True), ("modelopt", False), ("awq_marlin", False)])
def test_quantization_flag_is_proposed_only_for_an_online_method(method, online):
    """A checkpoint's own format (modelopt, AWQ, ...) is read from its config whatever --quantization says."""
    d = logdoctor.diagnose(_vllm_quant_refused(method, flag=True))
    assert d.failed
    flags = [f.flag for f in d.fixes]
    assert ("--quantization" in flags) is online
    assert d.cause == ("config_invalid" if online else "kernel_arch_mismatch")


def test_ray_warning_alone_is_not_a_failure_and_the_timeout_is_distributed_init():
    e = "(EngineCore_DP0 pid=8950) "
    head = [
        "(APIServer pid=8801) INFO 10-19 06:00:03 [utils.py:233] non-default args: {'model': 'm', "
        "'tensor_parallel_size': 8, 'distributed_executor_backend': 'ray'}",
        e + "WARNING 10-19 06:00:09 [ray_utils.py:352] The number of required GPUs exceeds the total number of "
        "available GPUs in the placement group.",
    ]
    ready = [
        e + "INFO 10-19 06:01:09 [gpu_worker.py:298] Available KV cache memory: 40.1 GiB",
        "(APIServer pid=8801) INFO:     Application startup complete.",
    ]
    assert not logdoctor.diagnose("\n".join(head + ready) + "\n").failed
    dead = [
        e + "ERROR 10-19 06:30:09 [core.py:708] ValueError: Cannot provide a placement group of "
        "placement_group_specs=[{'GPU': 1.0}, {'GPU': 1.0}] within 1800 seconds. See `ray status` and "
        "`ray list nodes` to make sure the cluster has enough resources.",
    ]
    d = logdoctor.diagnose("\n".join(head + dead) + "\n")
    assert d.cause == "distributed_init" and not any(f.lever == "tp_size" for f in d.fixes)


@pytest.mark.parametrize(
    ("line", "cause"),
    [
        (
            "ValueError: Failed to import Ray: No module named 'ray'.Please install Ray with `pip install ray`.",
            "kernel_arch_mismatch",
        ),
        (
            "RuntimeError: Failed to load the model: No module named 'transformers_modules.m.modeling_m'",
            None,
        ),  # a remote-code model's own module: not the environment
    ],
)
def test_a_missing_module_inside_another_error(line, cause):
    frame = '  File "/usr/lib/python3/dist-packages/vllm/executor/ray_utils.py", line 291, in initialize_ray_cluster\n'
    d = logdoctor.diagnose("Traceback (most recent call last):\n" + frame + line + "\n")
    if cause:
        assert d.cause == cause and d.rule == "any.python.module-missing-in-error"
    else:
        assert d.rule != "any.python.module-missing-in-error"


def test_lora_rank_above_max_sets_the_adapter_rank():
    d = logdoctor.diagnose(
        "(APIServer pid=1) INFO 10-18 09:00:03 [utils.py:233] non-default args: {'model': 'm', 'enable_lora': True}\n"
        "(APIServer pid=1) ValueError: Call to add_lora method failed: LoRA rank 128 is greater than max_lora_rank 16.\n"
    )
    assert d.cause == "config_invalid"
    assert [(f.flag, f.to) for f in d.fixes][:1] == [("--max-lora-rank", 128)]


def _journal_json(entries: list[tuple[int, str | None, str]]) -> str:
    import json

    out = []
    for t, unit, msg in entries:
        e = {"__REALTIME_TIMESTAMP": str(1760432000000000 + t * 1000000), "MESSAGE": msg, "_HOSTNAME": "h"}
        if unit is None:  # systemd's own line about a unit
            e |= {"SYSLOG_IDENTIFIER": "systemd", "_PID": "1", "_TRANSPORT": "journal", "_SYSTEMD_UNIT": "init.scope"}
            e["UNIT"] = msg.split(" ", 2)[1 if msg.startswith("Started") else 0].rstrip(":")
        else:
            e |= {"SYSLOG_IDENTIFIER": "python3", "_PID": "100" if unit == "a.service" else "200"}
            e |= {"_TRANSPORT": "stdout", "_SYSTEMD_UNIT": f"sglang-{unit}"}
        out.append(json.dumps(e))
    return "\n".join(out) + "\n"


def test_of_two_engine_units_the_failed_one_is_read():
    """A journal of two SGLang services (-o json): the busier healthy one must not hide the other's crash."""
    busy = [
        (2 + i, "b.service", f'[2025-10-14 09:12:{i:02d}] INFO:     127.0.0.1:5000 - "POST /generate" 200 OK')
        for i in range(30)
    ]
    entries = [
        (1, None, "Started sglang-a.service - A."),
        (1, None, "Started sglang-b.service - B."),
        *busy,
        (5, "a.service", "[2025-10-14 09:12:05 TP0] Load weight begin. avail mem=77.93 GB"),
        (
            50,
            "a.service",
            "[2025-10-14 09:12:50 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
            "avail mem=12.11 GB, mem usage=65.82 GB.",
        ),
        (
            51,
            "a.service",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            "Current value: self.server_args.mem_fraction_static=0.8",
        ),
        (52, None, "sglang-a.service: Main process exited, code=exited, status=1/FAILURE"),
        (52, None, "sglang-a.service: Failed with result 'exit-code'."),
        (55, "b.service", "[2025-10-14 09:12:55] The server is fired up and ready to roll!"),
    ]
    d = logdoctor.diagnose(_journal_json(entries))
    assert d.failed and d.cause == "kv_cache_oom" and d.phase == "memory_pool"
    healthy_only = [e for e in entries if "sglang-a" not in e[2] and e[1] != "a.service"]
    assert not logdoctor.diagnose(_journal_json(healthy_only)).failed


def _short_two_services(restart: bool) -> str:
    """Two SGLang services in one short journal (journalctl -b): each stream under its own pid. `restart`: the
    same unit's second attempt under a new pid instead (sequential, not interleaved)."""
    a, b = "Oct 14 09:12:{:02d} h python3[100]: ", "Oct 14 09:12:{:02d} h python3[{}]: "
    pid_b = 100 if restart else 200
    lines = [
        "Oct 14 09:12:01 h systemd[1]: Started SGLang Llama server.",  # an old systemd: the description only
        "Oct 14 09:12:02 h systemd[1]: Started sglang-qwen.service - SGLang Qwen.",
        a.format(3) + "[2025-10-14 09:12:03 TP0] Load weight begin. avail mem=77.93 GB",
        b.format(4, pid_b) + "[2025-10-14 09:12:04] Load weight begin. avail mem=78.00 GB",
    ]
    for s in range(5, 12):
        lines.append(a.format(s) + f"[2025-10-14 09:12:{s:02d} TP0] Loading safetensors checkpoint shards: {s}0% ")
        lines.append(b.format(s, pid_b) + f"[2025-10-14 09:12:{s:02d}] Loading safetensors checkpoint shards: {s}0% ")
    lines += [
        a.format(50) + "[2025-10-14 09:12:50 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        "avail mem=12.11 GB, mem usage=65.82 GB.",
        a.format(51) + "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
        "self.server_args.mem_fraction_static=0.8",
        "Oct 14 09:12:52 h systemd[1]: sglang-llama.service: Main process exited, code=exited, status=1/FAILURE",
        "Oct 14 09:12:52 h systemd[1]: sglang-llama.service: Failed with result 'exit-code'.",
        b.format(55, pid_b) + "[2025-10-14 09:12:55] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=63.88 GB, mem usage=13.96 GB.",
        b.format(58, pid_b) + "[2025-10-14 09:12:58] The server is fired up and ready to roll!",
    ]
    return "\n".join(lines) + "\n"


def test_two_services_in_a_short_journal_are_told_apart_by_process():
    from logdoctor.input.read import read_bytes
    from logdoctor.timeline import units

    d = logdoctor.diagnose(_short_two_services(restart=False))
    assert d.failed and d.cause == "kv_cache_oom" and d.phase == "memory_pool"
    recs = read_bytes(_short_two_services(restart=False).encode()).records
    parts = units.partition(recs)
    assert sorted(p.unit for p in parts) == ["sglang-llama.service", "sglang-qwen.service"]
    # the same text under one pid is one service's stream: no unit is guessed
    recs = read_bytes(_short_two_services(restart=True).encode()).records
    assert len(units.partition(recs)) == 1 and not any(r.unit for r in recs if r.pid == 100)


def _sglang_launch_assert(flags: str, frame: str, assert_line: str, error: str) -> str:
    s = "/usr/lib/python3/dist-packages/sglang/srt/server_args.py"
    return (
        f"$ python3 -m sglang.launch_server --model-path m {flags}\n"
        "Traceback (most recent call last):\n"
        f'  File "{s}", line 1498, in {frame}\n'
        f"    {assert_line}\n"
        f"{error}\n"
    )


_DP = ("_handle_data_parallelism", "assert self.tp_size % self.dp_size == 0", "AssertionError")
_CHUNK = (
    "check_server_args",
    "assert self.chunked_prefill_size % self.page_size == 0, (",
    "AssertionError: chunked_prefill_size must be divisible by page_size",
)


@pytest.mark.parametrize(
    ("flags", "check", "fix"),
    [
        # DP attention: the largest DP size up to the one asked that divides the TP size
        ("--tp 4 --dp 3 --enable-dp-attention", _DP, ("--dp-size", 2)),
        ("--tp 8 --dp 3 --enable-dp-attention", _DP, ("--dp-size", 2)),
        ("--tp 6 --dp 4 --enable-dp-attention", _DP, ("--dp-size", 3)),
        ("--tp 8 --dp 6 --enable-dp-attention", _DP, ("--dp-size", 4)),
        # chunked prefill: the chunk rounded up to whole pages
        ("--page-size 64 --chunked-prefill-size 6000", _CHUNK, ("--chunked-prefill-size", 6016)),
        ("--page-size 16 --chunked-prefill-size 5000", _CHUNK, ("--chunked-prefill-size", 5008)),
        ("--page-size 32 --chunked-prefill-size 8191", _CHUNK, ("--chunked-prefill-size", 8192)),
    ],
)
def test_a_value_computed_from_the_flags_in_force(flags, check, fix):
    d = logdoctor.diagnose(_sglang_launch_assert(flags, *check))
    assert d.cause == "config_invalid" and (d.fixes[0].flag, d.fixes[0].to) == fix


def _two_attempts(fracs: tuple[float, float], kinds: tuple[str, str], free_after_load: float) -> str:
    """Two SGLang starts of one unit: each fails sizing its pool ("pool") or capturing graphs ("capture")."""
    out = []
    for i, (frac, kind) in enumerate(zip(fracs, kinds)):
        p = f"Oct 14 09:1{i}:%02d h python3[{100 + i}]: "
        t = f"[2025-10-14 09:1{i}:%02d TP0] "
        out += [
            f"Oct 14 09:1{i}:00 h systemd[1]: Started sglang.service - SGLang.",
            p % 1 + f"[2025-10-14 09:1{i}:01] server_args=ServerArgs(model_path='m', mem_fraction_static={frac}, "
            "tp_size=1, context_length=8192, port=30000)",
            p % 2 + t % 2 + "Load weight begin. avail mem=77.93 GB",
            p % 9 + t % 9 + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
            f"avail mem={free_after_load:.2f} GB, mem usage={77.93 - free_after_load:.2f} GB.",
        ]
        if kind == "pool":
            out.append(
                p % 10 + "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                f"Current value: self.server_args.mem_fraction_static={frac}"
            )
        else:
            out += [
                p % 10 + t % 10 + "Memory pool end. avail mem=4.10 GB",
                p % 11 + t % 11 + "Capture cuda graph begin. This can take up to several minutes. avail mem=4.05 GB",
                p % 12 + t % 12 + "Scheduler hit an exception: Traceback (most recent call last):",
                p % 12 + '  File "/usr/lib/python3/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", '
                "line 400, in __init__",
                p % 12
                + (
                    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.50 GiB."
                    if kind == "capture"
                    else "Exception: Capture cuda graph failed: CUDA error: an illegal memory access was encountered"
                ),
            ]
        out += [
            f"Oct 14 09:1{i}:13 h systemd[1]: sglang.service: Main process exited, code=exited, status=1/FAILURE",
            f"Oct 14 09:1{i}:13 h systemd[1]: sglang.service: Failed with result 'exit-code'.",
        ]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    ("fracs", "free", "want"),
    [
        ((0.92, 0.8), 12.0, 0.88),  # the pool needs > 0.846 of the GPU; capture failed at 0.92: 0.88 is between
        ((0.9, 0.8), 10.0, None),  # the pool needs 0.91, capture failed at 0.9: no fraction is left, no raise
    ],
)
def test_a_raise_stays_below_a_fraction_an_earlier_attempt_failed_capture_at(fracs, free, want):
    """Capture OOM at f1, then (the operator lowered it) the pool did not fit at f2: a raise must stay below f1."""
    d = logdoctor.diagnose(_two_attempts(fracs, ("capture", "pool"), free))
    assert d.cause == "kv_cache_oom"
    raised = [f.to for f in d.fixes if f.lever == "mem_fraction"]
    if want is None:
        assert raised == [] and any("attempt 1 ran out of memory outside the pool" in n for n in d.notes)
    else:
        assert raised == [want] and fracs[1] < want < fracs[0]


def test_an_earlier_fault_outside_memory_bounds_nothing():
    """Capture died of an illegal address (a kernel fault, not memory) at 0.84: a later pool failure may raise past it."""
    d = logdoctor.diagnose(_two_attempts((0.84, 0.8), ("iam", "pool"), 12.0))
    assert d.cause == "kv_cache_oom"
    assert [f.to for f in d.fixes if f.lever == "mem_fraction"] == [0.88]


def _tai64n(unix: float) -> str:
    sec = int(unix)
    return f"@{(1 << 62) + 10 + sec:016x}{int((unix - sec) * 1e9):08x} "


def test_a_daemontools_tai64n_label_is_peeled_and_gives_the_time():
    """s6-log / multilog / svlogd -tt write '@<24 hex>' before each line: peeled like any wrapper (the crash was read
    as 'OK' with the label left on the message), and its time is the line's."""
    from datetime import UTC, datetime

    from logdoctor.input.read import read_bytes

    t0 = datetime(2025, 10, 14, 11, 40, 2, tzinfo=UTC).timestamp()
    body = [
        "[2025-10-14 11:40:02] server_args=ServerArgs(model_path='m', mem_fraction_static=0.92, cuda_graph_max_bs=512)",
        "[2025-10-14 11:40:30] Memory pool end. avail mem=6.10 GB",
        "[2025-10-14 11:40:31] Capture cuda graph begin. This can take up to several minutes. avail mem=6.05 GB",
        "[2025-10-14 11:40:33] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 370, in __init__',
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 148.50 MiB.",
        "[2025-10-14 11:40:33] Received sigquit from a child process. It usually means the child failed.",
    ]
    text = "".join(_tai64n(t0 + i + 0.25) + line + "\n" for i, line in enumerate(body))
    d = logdoctor.diagnose(text)
    assert (d.cause, d.phase) == ("graph_capture_fault", "graph_capture")
    rec = read_bytes(text.encode()).records[0]
    assert rec.msg.startswith("server_args=") and abs(rec.ts.timestamp() - (t0 + 0.25)) < 1e-3
