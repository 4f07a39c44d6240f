"""Measure, on a real GPU, the overheads preflight's table needs (logdoctor/preflight/overheads.py): the memory the
driver keeps (nvidia-smi total vs torch's total), the CUDA context, NCCL's buffers for a group of one, and cuBLAS's
workspace, all outside PyTorch's allocator, which is what vLLM calls non-torch memory and what SGLang's
`Load weight begin. avail mem=` already has subtracted. Prints one JSON object.

Run on the GPU host: python3 tools/preflight_measure.py [--gpu 0]   (needs torch; NCCL optional)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

GIB = 1 << 30


def smi_total_mib(gpu: int) -> int | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "-i", str(gpu), "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
        return int(out.strip().splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def main(argv: list[str]) -> int:
    gpu = int(argv[argv.index("--gpu") + 1]) if "--gpu" in argv else 0
    import torch

    out: dict[str, object] = {"torch": torch.__version__, "cuda": torch.version.cuda}
    smi = smi_total_mib(gpu)
    torch.cuda.set_device(gpu)
    props = torch.cuda.get_device_properties(gpu)
    out["gpu"] = props.name
    out["nvidia_smi_total_gib"] = None if smi is None else round(smi / 1024, 3)
    out["torch_total_gib"] = round(props.total_memory / GIB, 3)
    if smi is not None:
        out["driver_reserved_gib"] = round(smi / 1024 - props.total_memory / GIB, 3)
    free, total = torch.cuda.mem_get_info()
    out["context_gib"] = round((total - free) / GIB, 3)  # CUDA context after the first call
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()
    del a
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    out["context_cublas_gib"] = round((total - free - torch.cuda.memory_reserved()) / GIB, 3)
    try:
        import torch.distributed as dist

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", gpu))
        t = torch.ones(1 << 20, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
        del t
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info()
        out["non_torch_after_nccl_gib"] = round((total - free - torch.cuda.memory_reserved()) / GIB, 3)
        out["avail_before_load_gib"] = round(free / GIB, 3)  # what SGLang prints at 'Load weight begin'
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001 - a host without NCCL still reports the rest
        out["nccl_error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
