"""The seed story: one SGLang service (Qwen3-Next + DFLASH, TP2 on H200) that failed three times in three
different ways.  All four cases are slices of one build (same rng key), so they agree line for line."""
from __future__ import annotations

from functools import partial

from ..case import Attempt, Case
from ..deploy import Deploy
from ..render import View
from ..sg_gpu import hardware
from ..sg_memory import capture_unsafe, kv_pool

BASE = Deploy("sglang", "0.5.22", "qwen3-next", "H200", tp=2, path_style=1, site_style=0,
              unit="sglang-qwen.service", host="h200-qwen-03", gpu_ids=(4, 5),
              draft="/models/Qwen3-Next-80B-A3B-DFlash-b16",
              args={"mem_fraction_static": 0.88, "context_length": 131072, "speculative_algorithm": "DFLASH",
                    "speculative_draft_model_path": "/models/Qwen3-Next-80B-A3B-DFlash-b16",
                    "speculative_dflash_block_size": 16, "speculative_num_draft_tokens": 16,
                    "max_running_requests": 64, "tool_call_parser": "qwen25", "host": "0.0.0.0"})
A1 = BASE
A2 = BASE.with_args(mem_fraction_static=0.95)
A3 = A2.with_args(disable_cuda_graph=True)
DESC = "SGLang Qwen3-Next-80B-A3B (DFLASH)"

N1 = ("Attempt 1 of the seed story: hybrid GDN model with DFLASH speculative decoding; the KV/mamba pool sizing "
      "fails with 'Not enough memory ... Current value: mem_fraction_static=0.88'. Raise the static fraction.")
N2 = ("Attempt 2 of the seed story (mem_fraction_static=0.95): the pool fits, then the target-verify CUDA graph "
      "capture fails at bs=4 because the GDN decode path calls .item() inside capture. The engine's own hint lists "
      "--mem-fraction-static / --cuda-graph-max-bs-decode first; neither helps a capture-unsafe op.")
N3 = ("Attempt 3 of the seed story (--disable-cuda-graph already set): TP1 alone dies while loading weights with "
      "'CUDA error: unspecified launch failure' and the kernel logs Xid 79 (GPU fallen off the bus) for TP1's GPU; "
      "TP0 keeps loading. Same service, three different failures: the host, not the config.")


def _attempts() -> list[Attempt]:
    return [
        Attempt(A1, partial(kv_pool, target=0.92, notes=N1), desc=DESC),
        Attempt(A2, partial(capture_unsafe, notes=N2, stop_bs=4), desc=DESC, gap=30),
        Attempt(A3, partial(hardware, phase="weight_load", cuda_text="unspecified launch failure", rank=1,
                            xids=(79,), notes=N3), desc=DESC, gap=30),
    ]


def cases() -> list[Case]:
    common = dict(group="seed-story", desc=DESC, start=(22, 10, 31), label={})
    out = [
        Case("seed-attempt1-kv-oom", attempts=_attempts(), only_attempt=0, view=View("short"), **common),
        Case("seed-attempt2-capture-unsafe", attempts=_attempts(), only_attempt=1, view=View("short"), **common),
        Case("seed-attempt2-capture-unsafe-tail140", attempts=_attempts(), only_attempt=1,
             view=View("short", tail=140), **common,
             notes="The same attempt as seen through journalctl -n 140: the start (server_args) is cut off."),
        Case("seed-attempt3-hardware", attempts=_attempts(), only_attempt=2, view=View("short", scope="boot"),
             **common),
        Case("seed-all-attempts", attempts=_attempts(), view=View("short", scope="boot"), host_noise=0, **common,
             notes="All three attempts in one window with systemd restarts; the label describes the last one. "
                   "Across attempts the failure moved from pool sizing to graph capture to a device fault on one "
                   "rank as the flags changed."),
    ]
    for c in out:
        c.rng_key = "seed-story"
    return out
