"""SGLang endings where the GPU or its kernels are at fault: hardware, illegal memory access, arch/ABI."""
from __future__ import annotations

from . import sglang_frames as sf
from . import system
from .case import Outcome, Run
from .pyerr import DURING, F, cuda_error, frame_lines
from .sg_memory import _wrapper_lines

HW_NOTE = ("The config is not what fails: the same crash does not depend on the flags, it hits one rank "
           "alone, and the kernel log shows an Xid that blames the GPU.")


def hardware(run: Run, phase: str, cuda_text: str, rank: int = 1, xids: tuple[int, ...] = (79,),
             fallen: bool = True, notes: str = "", must_not: list[str] | None = None,
             watchdog: bool = False) -> Outcome:
    """One rank hits a device error; the kernel (NVRM) blames its GPU."""
    e = run.sg()
    d = e.d
    bad = e.ranks[rank]
    pci = d.pci(rank)
    name = (f"sglang::scheduler_{bad.split()[-1]}" if d.v >= (0, 5, 0) else "python3")[:15]
    spid = e.sched_pids[rank] if rank < len(e.sched_pids) else e.log.pid + 70
    torch_new = d.v >= (0, 5, 0)
    err = cuda_error(cuda_text, torch_new)

    def kernel_lines() -> None:
        e.log.tick(0.01, 0.5)
        for code in xids:
            system.xid(e.log, run.rng, pci, code, spid, name)
        if fallen and 79 in xids:
            system.fallen_off(e.log, pci)

    if phase == "weight_load":
        e.boot("weight_load")
        e.load_begin()
        e.load_bar(stop=run.rng.uniform(0.15, 0.45))
        kernel_lines()
        e.exception(bad, e.tb(sf.load_model(d, "weights"), err))
        e.log.wait(1.5)
        e.raw(f"Loading safetensors checkpoint shards:  {run.rng.randint(40, 60)}% Completed | "
              f"{d.model.shards // 2}/{d.model.shards} [00:{run.rng.randint(10, 40)}<00:20,  1.31it/s]")
    elif phase == "dist_init":
        e.boot("dist_init")
        e.each(lambda r: "Init parallel begin." if e.new_par else "Init torch distributed begin.")
        kernel_lines()
        fr = sf.dist_init(d)[:-2] + [F("torch/cuda/__init__.py", 567, "set_device", "torch._C._cuda_setDevice(device)")]
        e.exception(bad, e.tb(fr, err))
    elif phase == "graph_capture":
        e.boot("graph_capture")
        kind = "decode"
        e.capture_begin(kind)
        bs = e.capture_bar(run.rng.choice([64, 120, 160]))
        kernel_lines()
        inner, outer = sf.graph_capture(d)
        tb = (["Traceback (most recent call last):", *frame_lines(inner, d.site, d.py_minor), *err.split("\n")]
              + DURING + ["Traceback (most recent call last):", *frame_lines(outer, d.site, d.py_minor)]
              + _wrapper_lines(e, err))
        e.exception(bad, tb)
    else:  # serving
        e.boot()
        e.serve(run.rng.randint(4, 9))
        kernel_lines()
        fr = sf.forward_batch(d, "replay") + [
            F("sglang/srt/model_executor/cuda_graph_runner.py" if d.v < (0, 5, 17) else
              "sglang/srt/model_executor/runner_backend/decode_graph_runner.py", 833, "replay",
              "self.graphs[self.bs].replay()"),
            F("torch/cuda/graphs.py", 88, "replay", "super().replay()")]
        e.exception(bad, e.tb(fr, err))
        if watchdog:
            e.log.tick(0.2, 1)
            e.line(f"Subprocess scheduler_{rank} (pid={spid}) crashed with exit code -6. Triggering SIGQUIT for "
                   "cleanup...", prio=3)
    e.sigquit()
    mn = must_not if must_not is not None else ["--mem-fraction-static", "--disable-cuda-graph"]
    return Outcome(phase, "hardware_fault", [], fix_other="check/replace the GPU of " + bad.split()[-1] +
                   f" (PCI {pci}): nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER, dcgmi diag -r 2; drain or "
                   "move host", must_not=mn, exit="sigkill",
                   notes=notes or f"{bad} alone fails with '{cuda_text}' and the kernel logs Xid "
                                  f"{'/'.join(map(str, xids))} for its GPU. {HW_NOTE}")


def illegal(run: Run, phase: str = "serving", xid13: bool = True, backend_fix: str | None = "triton",
            assert_kind: bool = False, xid31: bool = False, notes: str = "") -> Outcome:
    e = run.sg()
    d = e.d
    text = "device-side assert triggered" if assert_kind else "an illegal memory access was encountered"
    err = cuda_error(text, d.v >= (0, 5, 0))
    spid = e.sched_pids[0]
    if phase == "graph_capture":
        e.boot("graph_capture")
        e.capture_begin()
        bs = e.capture_bar(run.rng.choice([1, 2, 8]))
        inner, outer = sf.graph_capture(d, [
            F(f"sglang/srt/models/{d.model.sg_module}.py", 503, "forward", "hidden_states = self.model("),
            F("sglang/srt/layers/attention/flashinfer_backend.py", 731, "forward_decode",
              "o = decode_wrapper.forward(")])
        for r in e.ranks:
            e.log.tick(0.001, 0.1)
            tb = (["Traceback (most recent call last):", *frame_lines(inner, d.site, d.py_minor), *err.split("\n")]
                  + DURING + ["Traceback (most recent call last):", *frame_lines(outer, d.site, d.py_minor)]
                  + _wrapper_lines(e, err))
            e.exception(r, tb)
        e.sigquit()
        return Outcome("graph_capture", "illegal_memory_access",
                       [f"--attention-backend {backend_fix}"] if backend_fix else [],
                       fix_other="rerun with CUDA_LAUNCH_BLOCKING=1 to find the faulting kernel; report the bug",
                       must_not=["--mem-fraction-static", "--cuda-graph-max-bs-decode" if e.new_capture else
                                 "--cuda-graph-max-bs"], exit="sigkill",
                       notes=notes or f"'Capture cuda graph failed: ... an illegal memory access was encountered' "
                                      f"at bs={bs}: the wrapper is a capture failure, but what it wraps is a kernel "
                                      "crash (no Xid naming hardware), so illegal_memory_access.")
    e.boot()
    e.serve(run.rng.randint(5, 10))
    if xid13 or xid31:
        e.log.tick(0.01, 0.3)
        system.xid(e.log, run.rng, d.pci(0), 31 if xid31 else 13, spid,
                   ("sglang::scheduler_TP0" if d.v >= (0, 5, 0) else "python3")[:15])
        if xid13 and not xid31:
            system.xid(e.log, run.rng, d.pci(0), 43, spid, "python3")
    if assert_kind:
        for k in range(run.rng.randint(3, 6)):
            e.raw(f"/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:93: operator(): block: [{run.rng.randint(0, 400)},"
                  f"0,0], thread: [{32 * k + run.rng.randint(0, 31)},0,0] Assertion `-sizes[i] <= index && index < "
                  "sizes[i] && \"index out of bounds\"` failed.")
        fr = sf.forward_batch(d, "decode")[:4] + [
            F("sglang/srt/managers/tp_worker.py", 281, "forward_batch_generation",
              "next_token_ids = self.model_runner.sample(logits_output, model_worker_batch)"),
            F("sglang/srt/layers/sampler.py", 118, "forward",
              "batch_next_token_ids = top_k_top_p_min_p_sampling_from_probs_torch("),
            F("sglang/srt/layers/sampler.py", 302, "top_k_top_p_min_p_sampling_from_probs_torch",
              "batch_next_token_ids = torch.gather(probs_idx, dim=1, index=sampled_index).view(-1)")]
    else:
        fr = sf.forward_batch(d, "decode") + [
            F(f"sglang/srt/models/{d.model.sg_module}.py", 503, "forward", "hidden_states = self.model("),
            F("sglang/srt/layers/attention/flashinfer_backend.py" if backend_fix == "triton" else
              "sglang/srt/layers/moe/ep_moe/layer.py", 731, "forward_decode" if backend_fix == "triton" else
              "forward_deepgemm_masked", "o = decode_wrapper.forward(" if backend_fix == "triton" else
              "self.dispatcher.combine_b(")]
    e.exception(e.r0, e.tb(fr, err))
    e.sigquit()
    fix = [f"--attention-backend {backend_fix}"] if backend_fix and not assert_kind else []
    return Outcome("serving", "illegal_memory_access", fix,
                   fix_other="CUDA_LAUNCH_BLOCKING=1 to localize the kernel; report the bug with the crash dump",
                   must_not=["--mem-fraction-static", "--tp-size"], exit="sigkill",
                   notes=notes or f"'{text}' while serving. "
                                  + ("The kernel logs Xid 13/43 (a graphics exception in the app's channel), which "
                                     "points at the application, not the hardware. " if xid13 and not xid31 else
                                     "Xid 31 is an MMU page fault: an app bug, not a hardware Xid. " if xid31 else "")
                                  + "A kernel bug, not memory sizing.")


def gpu_gone(run: Run, rank: int = 7) -> Outcome:
    """The restart after an Xid 79: the GPU that fell off the bus is gone, so the last rank has no device."""
    e = run.sg()
    d = e.d
    e.boot("dist_init")
    e.each(lambda r: "Init parallel begin." if e.new_par else "Init torch distributed begin.")
    bad = e.ranks[rank]
    err = cuda_error("invalid device ordinal", d.v >= (0, 5, 0))
    fr = sf.dist_init(d)[:-2] + [F("torch/cuda/__init__.py", 567, "set_device", "torch._C._cuda_setDevice(device)")]
    e.exception(bad, e.tb(fr, err))
    e.sigquit()
    return Outcome("dist_init", "hardware_fault", [],
                   fix_other=f"the GPU at PCI {d.pci(rank)} fell off the bus in the previous attempt (Xid 79) and is "
                             "gone: reboot/reseat it or drain the host; do not shrink the job around it",
                   must_not=["--tp-size", "--mem-fraction-static", "--disable-cuda-graph"], exit="sigkill",
                   notes=f"Alone, 'invalid device ordinal' on {bad} would read as a wrong CUDA_VISIBLE_DEVICES; the "
                         "window shows why: the previous attempt lost that GPU with Xid 79 (fallen off the bus), so "
                         "only seven devices are left.")
