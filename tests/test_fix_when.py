"""A fix's `when:` is checked, not trusted: an unknown key (a typo such as `lever_om`) is a schema error naming
the line, where before it was silently ignored and the fix always applied; `lever_on: L` applies a fix only while
the switch is on in the config in force (SGLang's graph-capture OOM: remove --enable-torch-compile)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor import diagnose

ROOT = Path(__file__).resolve().parent.parent


def test_an_unknown_when_key_is_a_schema_error(tmp_path):
    d = tmp_path / "kv_cache_oom"
    d.mkdir()
    (d / "a.yaml").write_text(
        "id: x.a\ncause: kv_cache_oom\ntitle: t t\nmatch: {message: foo}\n"
        "fixes:\n  - {lever: mem_fraction, op: raise, when: {lever_om: torch_compile}}\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "logdoctor", "rules", "lint", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 2, out.stderr
    assert "a.yaml:6: schema:" in out.stderr and "lever_om" in out.stderr, out.stderr


def _capture_oom(compile_on: bool) -> str:
    h = "[2026-04-01 09:00:{s:02d}] "
    rows = [
        h.format(s=1) + "server_args=ServerArgs(model_path='/m/x', tp_size=1, mem_fraction_static=0.9, "
        f"cuda_graph_max_bs=256, enable_torch_compile={compile_on}, torch_compile_max_bs=32, disable_cuda_graph=False)",
        h.format(s=2) + "Load weight begin. avail mem=23.50 GB",
        h.format(s=9)
        + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=8.10 GB, mem usage=15.40 GB.",
        h.format(s=10) + "KV Cache is allocated. #tokens: 50000, K size: 2.9 GB, V size: 2.9 GB",
        h.format(s=10) + "Memory pool end. avail mem=1.90 GB",
        h.format(s=11) + "Capture cuda graph begin. This can take up to several minutes. avail mem=1.85 GB",
        h.format(s=14) + "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 380, in capture',
        "    out = self.capture_one_batch_size(bs, forward)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total capacity of "
        "23.57 GiB of which 410.00 MiB is free.",
    ]
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("compile_on", [True, False])
def test_torch_compile_is_turned_off_only_where_it_is_on(tmp_path, compile_on):
    p = tmp_path / "paste.log"
    p.write_text(_capture_oom(compile_on))
    d = diagnose(p)
    assert d.cause == "graph_capture_fault"
    flags = [f.lever for f in d.fixes]
    assert ("torch_compile" in flags) == compile_on
    assert not any("torch-compile" in n for n in d.notes)  # never "already off" noise
