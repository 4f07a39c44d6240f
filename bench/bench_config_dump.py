"""Micro-benchmark: pyparsing dump grammars vs ``ast.literal_eval`` on the same complete 6 KB dict.

Why: the ``server_args=`` line sits on the ``explain`` hot path; this keeps the cost of tolerance (cut lines, raw
objects) visible. Run: ``.venv/bin/python bench/bench_config_dump.py [-n 200]``. No assertions, just figures.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import time


def _realistic() -> dict[str, object]:
    """~6 KB in the shape of a real SGLang 0.5.23 dump: nearly all scalars, a few flat lists/dicts."""
    base: dict[str, object] = {
        "model_path": "/models/Qwen3-Next-80B-A3B-Instruct",
        "tokenizer_mode": "auto",
        "trust_remote_code": False,
        "context_length": 262144,
        "revision": None,
        "host": "0.0.0.0",
        "port": 30000,
        "nccl_port": None,
        "dtype": "auto",
        "quantization": None,
        "mem_fraction_static": 0.86,
        "max_running_requests": None,
        "chunked_prefill_size": 8192,
        "max_prefill_tokens": 16384,
        "tp_size": 4,
        "watchdog_timeout": 300,
        "json_model_override_args": "{}",
        "cuda_graph_bs_decode": [1, 2, 4, 8, 16, 32],
        "lora_paths": {"a": "/x"},
        "mamba_full_memory_ratio": 0.9,
        "cuda_graph_backend_decode": "full",
        "enable_torch_compile": False,
    }
    out: dict[str, object] = {}
    i = 0
    while len(repr(out)) < 6000:
        out.update({f"{k}_{i}": v for k, v in base.items()})
        i += 1
    return out


def _fields() -> dict[str, object]:
    """An adversarial ServerArgs-sized map: every value kind, 1 in 4 a container, 1 in 12 nested."""
    f: dict[str, object] = {
        "model_path": "/models/Qwen3-Next-80B-A3B-Instruct",
        "tokenizer_path": "/models/Qwen3-Next-80B-A3B-Instruct",
        "json_model_override_args": '{"rope_scaling": {"type": "yarn", "factor": 4.0}}',
        "cuda_graph_bs": [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 160, 192, 256],
        "lora_paths": {"a": "/x", "b": "/y"},
        "speculative_config": None,
        "mem_fraction_static": 0.88,
        "rms_eps": 1e-05,
        "served_model_name": "qwen3-next",
        "host": "0.0.0.0",
        "port": 30000,
        "api_key": 'it\'s a "secret", really',
        "disable_cuda_graph": False,
        "enable_torch_compile": True,
    }
    kinds = [None, True, False, 0, 1, 8192, 0.9, "auto", "fcfs", [1, 2], {"k": [1, {"z": None}]}, (1, 2)]
    i = 0
    while len(repr(f)) < 6000:
        f[f"option_number_{i}"] = kinds[i % len(kinds)]
        i += 1
    return f


def _best(fn, text: str, n: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(text)
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=100, help="parses per timing round")
    n = ap.parse_args().n

    t0 = time.perf_counter()
    from logdoctor.engines import config_dump as cd  # noqa: PLC0415 -- import time is one of the figures

    import_s = time.perf_counter() - t0
    cold = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time;t=time.perf_counter();import pyparsing;"
            "a=time.perf_counter();import logdoctor.engines.config_dump;b=time.perf_counter();"
            "print(a-t, b-a)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()

    fields = _fields()
    body = repr(fields)
    dict_line = "server_args=" + body
    repr_line = "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"
    kv_line = "with config: " + ", ".join(f"{k}={v!r}" for k, v in fields.items())
    assert cd.parse_server_args(dict_line).values == ast.literal_eval(body)
    assert cd.parse_server_args(repr_line).values == fields

    base = _best(ast.literal_eval, body, n)
    real = _realistic()
    real_body = repr(real)
    real_repr = "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in real.items()) + ")"
    assert cd.parse_server_args(real_repr).values == real
    real_base = _best(ast.literal_eval, real_body, n)
    rows = [
        ("realistic: ast.literal_eval (baseline)", len(real_body), real_base),
        (
            "realistic: parse_server_args (dict)",
            len(real_body) + 12,
            _best(cd.parse_server_args, "server_args=" + real_body, n),
        ),
        ("realistic: parse_server_args (repr)", len(real_repr), _best(cd.parse_server_args, real_repr, n)),
        ("adversarial: ast.literal_eval (baseline)", len(body), base),
        ("adversarial: parse_server_args (dict)", len(dict_line), _best(cd.parse_server_args, dict_line, n)),
        ("adversarial: parse_server_args (repr)", len(repr_line), _best(cd.parse_server_args, repr_line, n)),
        (
            "adversarial: repr cut at 60%",
            int(len(repr_line) * 0.6),
            _best(cd.parse_server_args, repr_line[: int(len(repr_line) * 0.6)], n),
        ),
        ("adversarial: parse_vllm_engine_config", len(kv_line), _best(cd.parse_vllm_engine_config, kv_line, n)),
        ("parse_command_line (sglang, 20 flags)", 0, 0.0),
    ]
    cmd = (
        "ExecStart=/opt/venv/bin/python -m sglang.launch_server --model-path /m --tp 2 --mem-fraction-static=0.88 "
        + " ".join(f"--flag-{i} {i}" for i in range(16))
        + " --disable-cuda-graph"
    )
    rows[-1] = (rows[-1][0], len(cmd), _best(cd.parse_command_line, cmd, n))

    print(
        f"cold import (fresh process): pyparsing {float(cold[0]) * 1e3:.1f} ms, "
        f"config_dump grammars {float(cold[1]) * 1e3:.1f} ms; in-process import {import_s * 1e3:.1f} ms"
    )
    print(f"{'case':42s} {'bytes':>6s} {'ms/parse':>9s} {'x literal_eval':>15s}")
    for name, size, t in rows:
        ref = real_base if name.startswith("realistic") else base
        print(f"{name:42s} {size:6d} {t * 1e3:9.3f} {t / ref:15.1f}")


if __name__ == "__main__":
    main()
