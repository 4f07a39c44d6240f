"""The KV-pool "Not enough memory" verdict and its first fix follow the numbers the log prints (issue 20 red team):
a static fraction set below the one SGLang picks by itself is raised to that choice before any GPU is added; only
weights that fill (nearly) the whole GPU make more tensor parallelism the first fix. Logs are generated here from
the engine's own wording, with the numbers as parameters."""

from __future__ import annotations

import pytest

from logdoctor import diagnose


def _log(frac: float, avail: float, weights: float, tp: int = 2, chunk: int = 8192) -> str:
    head = "Dec 02 10:00:{s:02d} node-1 python3[4242]: "
    rows = [
        "Dec 02 10:00:00 node-1 systemd[1]: Started llm.service - LLM server.",
        head.format(s=1)
        + f"[2026-12-02 10:00:01] server_args=ServerArgs(model_path='/models/m', mem_fraction_static={frac}, "
        f"tp_size={tp}, chunked_prefill_size={chunk}, cuda_graph_max_bs=160, context_length=32768, "
        "disable_cuda_graph=False, port=30000)",
    ]
    for r in range(tp):
        rows.append(head.format(s=2) + f"[2026-12-02 10:00:02 TP{r}] Init torch distributed begin.")
        rows.append(head.format(s=3) + f"[2026-12-02 10:00:03 TP{r}] Init torch distributed ends. mem usage=0.60 GB")
        rows.append(head.format(s=4) + f"[2026-12-02 10:00:04 TP{r}] Load weight begin. avail mem={avail:.2f} GB")
    for r in range(tp):
        rows.append(
            head.format(s=30) + f"[2026-12-02 10:00:30 TP{r}] Load weight end. type=Qwen2ForCausalLM, "
            f"dtype=torch.bfloat16, avail mem={avail - weights:.2f} GB, mem usage={weights:.2f} GB."
        )
    rows.append(
        head.format(s=31) + "[2026-12-02 10:00:31 TP0] Scheduler hit an exception: Traceback (most recent call last):"
    )
    rows.append(
        '  File "/usr/lib/python3/dist-packages/sglang/srt/model_executor/model_runner.py", line 426, in initialize'
    )
    rows.append("    self.init_memory_pool(")
    rows.append("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
    rows.append("Dec 02 10:00:33 node-1 systemd[1]: llm.service: Main process exited, code=exited, status=1/FAILURE")
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize(
    ("frac", "avail", "weights", "tp"),
    [(0.4, 78.6, 30.9, 2), (0.5, 44.4, 21.5, 2), (0.45, 139.5, 62.0, 4), (0.6, 78.6, 46.0, 1)],
)
def test_a_fraction_below_the_engines_choice_is_raised_to_it_first(tmp_path, frac, avail, weights, tp):
    p = tmp_path / "j.log"
    p.write_text(_log(frac, avail, weights, tp))
    d = diagnose(p)
    assert (d.cause, d.phase, d.rule) == ("kv_cache_oom", "memory_pool", "sglang.kv-pool.fraction-below-engine-choice")
    first = d.fixes[0]
    assert first.flag == "--mem-fraction-static" and first.from_ == frac
    assert weights / avail < first.to <= 0.95 and first.to - frac >= 0.05
    assert f"at {first.to} the pools get about" in d.explanation
    assert [f.flag for f in d.fixes].index("--tp-size") > 0  # more GPUs come after the setting


def test_weights_that_fill_the_gpu_ask_for_more_gpus_first(tmp_path):
    p = tmp_path / "j.log"
    p.write_text(_log(0.88, 78.6, 71.0, 1))
    d = diagnose(p)
    assert d.rule == "sglang.kv-pool.weights-fill-static-budget"
    assert d.fixes[0].flag == "--tp-size" and (d.fixes[0].from_, d.fixes[0].to) == (1, 2)


def test_a_fraction_at_or_above_the_engines_choice_takes_the_general_rule(tmp_path):
    """Weights fill the budget, the fraction is already SGLang's own choice or more: neither specific rule fires."""
    p = tmp_path / "j.log"
    p.write_text(_log(0.86, 78.6, 65.0, 2))
    d = diagnose(p)
    assert d.cause == "kv_cache_oom"
    assert d.rule == "sglang.kv-pool.not-enough-memory"
