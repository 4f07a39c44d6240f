#!/usr/bin/env python3
"""Render the raw recordings of tools/record_gpu_faults.py as systemd journal cases (logdoctor issue 6).

    python3 tools/render_gpu_journal.py [--raw fixtures/journals/gpu-real/raw] [--out fixtures/journals/gpu-real]

Input: RAW/<scenario>.log (the merged stdout+stderr of one scenario), RAW/results.json (exit status per scenario),
RAW/versions.txt. Output: OUT/<scenario>/journal.log in `journalctl -u UNIT` short format and OUT/<scenario>/label.yaml
per shared/corpus/LABEL_SCHEMA.md.

Every recorded line goes into the journal unchanged, one journal entry per line, in order (blank lines too: journald
keeps them as empty messages). Only the journal prefix is added: the timestamp is the line's own
`[YYYY-MM-DD HH:MM:SS ...]` prefix (lines without one, such as traceback lines and progress bars, take the last one
seen), host `gpu-node-7`, identifier `python3[PID]` with the launcher's PID (the one printed in
`Started server process [PID]` where the scenario got that far). systemd's own lines frame it: `Started ...` first
and, for a process that exited non-zero, `Main process exited, code=exited, status=N/FAILURE` and
`Failed with result 'exit-code'.` last.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

import yaml

HOST = "gpu-node-7"
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
TS = re.compile(r"^\[(\d{4})-(\d\d)-(\d\d) (\d\d:\d\d:\d\d)(?: [^\]]*)?\] ")
STARTED_PID = re.compile(r"INFO:     Started server process \[(\d+)\]")
SOURCE = "recorded on a lent NVIDIA H200 with tools/record_gpu_faults.py"

# launcher PIDs for scenarios that die before uvicorn prints its own (any neutral value will do)
FALLBACK_PID = {
    "weights_oom": 41877,
    "pool_oom": 42219,
    "pool_alloc_oom": 42561,
    "capture_oom": 42903,
    "capture_oom_in_graph": 43245,
    "capture_unsafe": 43587,
    "capture_unsafe_sync": 43929,
}

NOT_MEMORY = ["--mem-fraction-static", "--cuda-graph-max-bs", "--disable-cuda-graph"]

# label fields per scenario (the common ones are filled in by label_for)
LABELS = {
    "healthy": dict(
        failed=False,
        phase="serving",
        cause=None,
        fix_flags=[],
        fix_other="",
        notes="Healthy start of the imitated SGLang server (Llama-3.1-8B shapes, mem_fraction_static=0.88, "
        "cuda_graph_max_bs=256): real avail-mem readings, 36 decode graphs captured, warm-up request, two "
        "requests served with 'cuda graph: True' decode lines; the process is still up at the end.",
    ),
    "weights_oom": dict(
        phase="weight_load",
        cause="weights_oom",
        fix_flags=["--tp-size 8"],
        fix_other="a 405B model in bf16 needs about 756 GiB of weights: spread it over 8 GPUs (with an FP8 "
        "checkpoint) or use a smaller model; no memory fraction makes it fit one GPU",
        must_not_suggest=NOT_MEMORY + ["--context-length", "--chunked-prefill-size"],
        notes="torch.OutOfMemoryError while the model's parameters are created (torch.empty through "
        "torch/utils/_device.py), after 'Load weight begin' and before any shard is read: 'Tried to "
        "allocate 3.25 GiB ... of which 3.05 GiB is free'.",
    ),
    "pool_oom": dict(
        phase="memory_pool",
        cause="kv_cache_oom",
        fix_flags=["--tp-size 2"],
        fix_other="70B bf16 weights take 131.42 GB of 138.65 GB: add a GPU (tp 2) or use an FP8 checkpoint; "
        "--mem-fraction-static 0.95 would leave only ~0.3 GB (about a thousand tokens) of KV pool",
        must_not_suggest=[
            "--mem-fraction-static 0.88",
            "--disable-cuda-graph",
            "--cuda-graph-max-bs",
            "--context-length",
            "--max-running-requests",
        ],
        notes="SGLang's own check (printed by the imitator, not a CUDA error): weights fit (avail mem=7.23 GB "
        "after load) but rest memory = 7.23 - 138.65*(1-0.88) < 0, so 'RuntimeError: Not enough memory. "
        "Please try to increase --mem-fraction-static.' (classic wording, no current value).",
    ),
    "pool_alloc_oom": dict(
        phase="memory_pool",
        cause="kv_cache_oom",
        fix_flags=["--mem-fraction-static 0.9", "--max-running-requests 256"],
        fix_other="the req_to_token table for 2049 requests x 1010004 tokens (7.7 GiB) is allocated after the pool "
        "was sized from free memory; leave room for it (a lower memory fraction), or shrink it with fewer "
        "running requests or a shorter --context-length",
        must_not_suggest=["--mem-fraction-static 0.96", "--disable-cuda-graph", "--cuda-graph-max-bs"],
        notes="Real torch.OutOfMemoryError inside the KV-pool allocation (MHATokenToKVPool._create_buffers, "
        "torch.zeros) between 'Load weight end' and 'KV Cache is allocated': 'Tried to allocate 2.12 GiB ... "
        "of which 2.01 GiB is free'. Raising the fraction, as SGLang's pool message would say, makes it "
        "worse here.",
    ),
    "capture_oom": dict(
        phase="graph_capture",
        cause="graph_capture_fault",
        fix_flags=["--cuda-graph-max-bs 256", "--mem-fraction-static 0.88"],
        fix_other="",
        must_not_suggest=["--mem-fraction-static 0.97", "--cuda-graph-max-bs 1024"],
        notes="mem_fraction_static=0.97 leaves 2.20 GB after the pool; capturing 1024-wide decode graphs OOMs in "
        "the warm-up forward that capture_one_batch_size runs before torch.cuda.graph: 'Exception: Capture "
        "cuda graph failed: CUDA out of memory. Tried to allocate 486.00 MiB' + SGLang's 'Possible "
        "solutions:' block.",
    ),
    "capture_oom_in_graph": dict(
        phase="graph_capture",
        cause="graph_capture_fault",
        fix_flags=["--cuda-graph-max-bs 256", "--mem-fraction-static 0.88"],
        fix_other="",
        must_not_suggest=["--mem-fraction-static 0.97", "--cuda-graph-max-bs 1024"],
        notes="Same sizing as capture_oom, but the OOM is raised inside the torch.cuda.graph block (a decode "
        "scratch buffer allocated only while capturing): 'Tried to allocate 8.06 GiB ... with 26.00 MiB "
        "allocated in private pools (e.g., CUDA Graphs)', wrapped as 'Capture cuda graph failed:'.",
    ),
    "capture_unsafe": dict(
        phase="graph_capture",
        cause="graph_capture_fault",
        fix_flags=["--disable-cuda-graph"],
        fix_other="code fix: no host sync (.item()) in the decode path that is captured; another "
        "--attention-backend may avoid the offending code",
        must_not_suggest=["--mem-fraction-static", "--cuda-graph-max-bs"],
        notes="A .item() on seq_lens inside the attention backend during capture: 'operation not permitted when "
        "stream is capturing' (cudaErrorStreamCaptureUnsupported), then capture_end fails with 'operation "
        "failed due to a previous error during capture' (cudaErrorStreamCaptureInvalidated), and the SGLang "
        "wrapper quotes only that second error. Memory is not the problem although the hint lists it first.",
    ),
    "capture_unsafe_sync": dict(
        phase="graph_capture",
        cause="graph_capture_fault",
        fix_flags=["--disable-cuda-graph"],
        fix_other="code fix: no torch.cuda.synchronize() in the decode path that is captured",
        must_not_suggest=["--mem-fraction-static", "--cuda-graph-max-bs"],
        notes="torch.cuda.synchronize() inside the attention backend during capture (frame torch/cuda/__init__.py "
        "synchronize): same two CUDA errors as the .item() case; the wrapper again quotes "
        "cudaErrorStreamCaptureInvalidated.",
    ),
    "device_assert": dict(
        phase="serving",
        cause="illegal_memory_access",
        fix_flags=[],
        fix_other="the request carried token ids 128260/128261 beyond the model's 128256-entry vocabulary "
        "(tokenizer with added tokens): validate ids at the client/tokenizer; CUDA_LAUNCH_BLOCKING=1 "
        "localizes the kernel",
        must_not_suggest=NOT_MEMORY,
        notes="Embedding lookup out of range while serving: hundreds of 'vectorized_gather_kernel ... Assertion "
        '`ind >=0 && ind < ind_dim_size && "vectorized gather kernel index out of bounds"` failed.\' lines, '
        "then the error surfaces in the next cuBLAS call as 'RuntimeError: CUDA error: "
        "CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx(...)`' (no 'device-side assert "
        "triggered' text). Kernel log: Xid 43 (app, not hardware).",
    ),
    "device_assert_gather": dict(
        phase="serving",
        cause="illegal_memory_access",
        fix_flags=[],
        fix_other="the request asked for logprobs of token ids beyond the vocabulary (128300, 151643): validate "
        "token_ids_logprob against the model's vocab size",
        must_not_suggest=NOT_MEMORY,
        notes="torch.gather with out-of-range ids while serving: 'ScatterGatherKernel.cu:163 ... Assertion "
        '`idx_dim >= 0 && idx_dim < index_size && "scatter gather kernel index out of bounds"` failed.\' '
        "then 'torch.AcceleratorError: CUDA error: device-side assert triggered' at .tolist(). Kernel log: "
        "Xid 43.",
    ),
    "illegal_access": dict(
        phase="warmup",
        cause="illegal_memory_access",
        fix_flags=[],
        fix_other="kernel bug: the Triton write_req_to_token_pool kernel got a garbage req_pool_index and wrote far "
        "out of bounds; rerun with CUDA_LAUNCH_BLOCKING=1 to localize, report the bug",
        must_not_suggest=NOT_MEMORY,
        notes="Out-of-bounds Triton store during the warm-up request (before 'fired up'): 'torch.AcceleratorError: "
        "CUDA error: an illegal memory access was encountered' surfacing at an unrelated later call (a "
        "host-to-device torch.tensor). Kernel log: Xid 31 MMU fault FAULT_PDE ACCESS_TYPE_VIRT_WRITE (app "
        "bug, not hardware).",
    ),
}


def unit_for(raw_text: str) -> tuple[str, str]:
    if "model_path='Qwen/" in raw_text:
        return "sglang-qwen.service", "SGLang server."
    return "sglang-llama.service", "SGLang server."


def short_ts(y: str, mo: str, d: str, hms: str) -> str:
    return f"{MONTHS[int(mo) - 1]} {d} {hms}"


def render(scenario: str, raw_text: str, rc) -> str:
    unit, desc = unit_for(raw_text)
    lines = raw_text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    m = STARTED_PID.search(raw_text)
    pid = int(m.group(1)) if m else FALLBACK_PID.get(scenario, 40000)
    first = next((TS.match(x) for x in lines if TS.match(x)), None)
    if first is None:
        raise SystemExit(f"{scenario}: no timestamped line in the recording")
    ts = short_ts(*first.groups())
    out = [f"{ts} {HOST} systemd[1]: Started {unit} - {desc}"]
    for line in lines:
        mt = TS.match(line)
        if mt:
            ts = short_ts(*mt.groups())
        out.append(f"{ts} {HOST} python3[{pid}]: {line}")
    if rc not in (0, None):
        if isinstance(rc, int) and rc > 0:
            out.append(f"{ts} {HOST} systemd[1]: {unit}: Main process exited, code=exited, status={rc}/FAILURE")
            out.append(f"{ts} {HOST} systemd[1]: {unit}: Failed with result 'exit-code'.")
        else:  # killed by a signal (negative returncode) or the recorder's timeout
            out.append(f"{ts} {HOST} systemd[1]: {unit}: Main process exited, code=killed, status=9/KILL")
            out.append(f"{ts} {HOST} systemd[1]: {unit}: Failed with result 'signal'.")
    return "\n".join(out) + "\n"


def parse_versions(text: str) -> dict:
    v = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith(("|", "+")):
            k, _, val = line.partition(":")
            v[k.strip()] = val.strip()
    return v


def label_for(scenario: str, v: dict) -> dict:
    spec = dict(LABELS[scenario])
    smi = [x.strip() for x in v.get("nvidia-smi", "").split(",")]
    driver = smi[1] if len(smi) > 1 else "?"
    gpu_name = v.get("gpu[0]", "NVIDIA H200").split(",")[0]
    versions = (
        f"torch {v.get('torch', '?')}, CUDA {v.get('torch.version.cuda', '?')}, driver {driver}, "
        f"{gpu_name} ({smi[2] if len(smi) > 2 else '?'}, sm_90), triton {v.get('triton', '?')}, "
        f"NCCL {v.get('nccl', '?')}, Python {v.get('python', '?')}"
    )
    failed = spec.pop("failed", True)
    label = {
        "id": f"gpu-real-{scenario}",
        "source": SOURCE,
        "engine": "sglang",
        "engine_version": None,
        "gpu": f"1x {gpu_name} 141GB",
        "format": "journal-short",
        "failed": failed,
        "phase": spec.pop("phase"),
        "cause": spec.pop("cause"),
        "secondary": None,
        "fix_flags": spec.pop("fix_flags"),
        "fix_other": spec.pop("fix_other"),
        "resolved": False,
        "label_confidence": "high",
        "notes": spec.pop("notes") + " SGLang-style phase lines come from the imitator (classic 0.4/0.5.10 "
        "wording); tracebacks and CUDA/torch error text are genuine. Versions: " + versions + ".",
    }
    if "must_not_suggest" in spec:
        label["must_not_suggest"] = spec.pop("must_not_suggest")
    assert not spec, spec
    return label


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--raw", default="fixtures/journals/gpu-real/raw")
    ap.add_argument("--out", default="fixtures/journals/gpu-real")
    a = ap.parse_args(argv)
    with open(os.path.join(a.raw, "results.json")) as f:
        results = json.load(f)
    with open(os.path.join(a.raw, "versions.txt")) as f:
        versions = parse_versions(f.read())
    for scenario, res in results.items():
        raw_path = os.path.join(a.raw, f"{scenario}.log")
        with open(raw_path, encoding="utf-8") as f:
            raw_text = f.read()
        case_dir = os.path.join(a.out, scenario)
        os.makedirs(case_dir, exist_ok=True)
        journal = render(scenario, raw_text, res.get("rc"))
        with open(os.path.join(case_dir, "journal.log"), "w", encoding="utf-8") as f:
            f.write(journal)
        with open(os.path.join(case_dir, "label.yaml"), "w", encoding="utf-8") as f:
            yaml.safe_dump(label_for(scenario, versions), f, sort_keys=False, allow_unicode=True, width=100)
        print(f"{scenario}: {journal.count(chr(10))} journal lines -> {case_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
