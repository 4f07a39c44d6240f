"""Measure the per-GPU memory the engines' budget formulas leave out, on a real GPU (preflight's constants).

What preflight needs and this measures, each through NVML/cudaMemGetInfo (what the engines themselves read):
  * the CUDA context (driver + runtime + module images) created by the first CUDA call of a PyTorch process;
  * the cuBLAS / cuBLASLt workspace and kernel images added by the first GEMMs (bf16, the engines' dtype);
  * the caching allocator's reserve over what tensors hold (fragmentation after a weights-like load);
  * CUDA-graph capture cost: memory a captured decode-like step keeps per batch size (graph pools + exec).
Run:  python tools/measure_gpu_overheads.py > gpu-overheads.json   (needs torch with CUDA)
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys

GiB = 1 << 30
MiB = 1 << 20


def _nvidia_smi_used() -> float | None:
    try:
        out = (
            subprocess.run(  # noqa: S603 - a fixed argv
                [  # noqa: S607 - nvidia-smi from PATH, as an operator runs it
                    "nvidia-smi",
                    "--query-gpu=memory.used,memory.total,name,driver_version",
                    "--format=csv,noheader,nounits",
                ],
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            )
            .stdout.strip()
            .splitlines()[0]
        )
        return float(out.split(",")[0]) * MiB
    except Exception:  # noqa: BLE001 - optional cross-check only
        return None


def main() -> int:
    import torch

    res: dict = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version()}
    smi_before = _nvidia_smi_used()
    free0, total = torch.cuda.mem_get_info()  # creates the primary context
    res["gpu"] = torch.cuda.get_device_name(0)
    res["total_bytes"] = total
    res["nvidia_smi_used_before_context"] = smi_before
    smi_ctx = _nvidia_smi_used()
    res["context_bytes_nvidia_smi"] = (smi_ctx - smi_before) if smi_ctx and smi_before is not None else None
    res["used_after_context_bytes"] = total - free0

    # first bf16 GEMMs: cuBLAS(Lt) handles + workspace + kernel images
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    free1, _ = torch.cuda.mem_get_info()
    b = a @ a
    torch.nn.functional.linear(a, a)
    torch.cuda.synchronize()
    free2, _ = torch.cuda.mem_get_info()
    res["cublas_first_gemm_bytes"] = (free1 - free2) - 0  # non-torch growth (outputs are torch-reserved)
    res["torch_reserved_after_gemm"] = torch.cuda.memory_reserved()
    del a, b
    torch.cuda.empty_cache()

    # weights-like load: 300 tensors of mixed sizes (a 7B-ish layer set scaled down), reserve vs allocated
    torch.cuda.reset_peak_memory_stats()
    sizes = []
    for _ in range(60):
        sizes += [(4096, 4096), (4096, 11008), (11008, 4096), (4096, 1024), (4096, 1024)]
    ws = [torch.empty(s, device="cuda", dtype=torch.bfloat16) for s in sizes]
    torch.cuda.synchronize()
    alloc = torch.cuda.memory_allocated()
    reserved = torch.cuda.memory_reserved()
    free3, _ = torch.cuda.mem_get_info()
    res["weights_like_allocated_bytes"] = alloc
    res["weights_like_reserved_bytes"] = reserved
    res["allocator_overhead_fraction"] = (reserved - alloc) / alloc
    # non-torch memory = what the device reports used minus what torch reserved (the vLLM definition)
    res["non_torch_bytes_after_load"] = (total - free3) - reserved

    # CUDA graph capture of a decode-like MLP step at increasing batch sizes: what each capture keeps
    w1 = ws[1]  # 4096 x 11008
    w2 = ws[2]
    cap = []
    pool = torch.cuda.graph_pool_handle()
    graphs = []
    for bs in (1, 8, 32, 64, 128, 256, 512):
        x = torch.randn(bs, 4096, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        f_before, _ = torch.cuda.mem_get_info()
        r_before = torch.cuda.memory_reserved()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                y = torch.nn.functional.silu(x @ w1) @ w2
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            y = torch.nn.functional.silu(x @ w1) @ w2
        torch.cuda.synchronize()
        f_after, _ = torch.cuda.mem_get_info()
        graphs.append((g, x, y))
        cap.append(
            {
                "batch": bs,
                "device_bytes": f_before - f_after,
                "torch_reserved_delta": torch.cuda.memory_reserved() - r_before,
                "activation_bytes_per_step": bs * (11008 + 4096) * 2,
            }
        )
    res["graph_capture"] = cap
    freeN, _ = torch.cuda.mem_get_info()
    res["non_torch_bytes_after_graphs"] = (total - freeN) - torch.cuda.memory_reserved()

    # NCCL communicator of one rank (the engines' TP group at TP=1 still builds one): its buffers are non-torch
    try:
        import os

        import torch.distributed as dist

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        f_before, _ = torch.cuda.mem_get_info()
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
        t = torch.ones(1 << 20, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
        f_after, _ = torch.cuda.mem_get_info()
        res["nccl_one_rank_bytes"] = (f_before - f_after) - (4 << 20)
        dist.destroy_process_group()
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        res["nccl_one_rank_error"] = repr(exc)
    json.dump(res, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
