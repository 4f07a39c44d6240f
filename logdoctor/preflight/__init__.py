"""Pre-flight: before the start, predict whether the weights, the KV pool and graph capture fit, and whether the
host is sound (docs/preflight.md).

    from logdoctor.preflight import run
    report = run(unit_file="sglang-qwen.service", gpu_memory="141GiB", gpus=2)
    report.verdict, report.cause, report.fixes, report.to_dict()

Modules: inputs (the command), model (config.json), gpus (NVML / XML / manual), budget (per-engine accounting),
overheads (the constants table), health (counters, kernel Xids, history), verdict, render."""

from __future__ import annotations

import socket
import sys
import types
from pathlib import Path

from logdoctor.core.errors import UsageError
from logdoctor.preflight.verdict import LOAD_CAVEAT, Report


def run(
    *,
    unit_file: str | None = None,
    argv: list[str] | None = None,
    engine: str | None = None,
    model_config: str | None = None,
    draft_config: str | None = None,
    nvidia_smi_xml: str | None = None,
    gpu_memory: str | None = None,
    gpus: int | None = None,
    kernel_log: str | None = None,
    no_kernel_log: bool = False,
    history=None,
    host: str | None = None,
    version: str | None = None,
) -> Report:
    """Check a launch command before starting it; see the module docstring. Raises UsageError / InputError for bad
    input (the CLI turns them into exit 2)."""
    from logdoctor.preflight import gpus as gp
    from logdoctor.preflight import health, inputs
    from logdoctor.preflight.verdict import decide

    if (unit_file is None) == (not argv):
        raise UsageError("give either UNIT_FILE or a command after `--`, not both")
    launch = inputs.from_unit_file(unit_file, engine) if unit_file else inputs.from_argv(argv or [], engine)
    gset = _gpu_set(gpu_memory, gpus, nvidia_smi_xml)
    raw = launch.raw
    tp = _int(raw.get("tp_size") or raw.get("tensor_parallel_size"))
    pp = _int(raw.get("pp_size") or raw.get("pipeline_parallel_size"))
    used = gp.select(gset, launch.env.get("CUDA_VISIBLE_DEVICES"), _int(raw.get("base_gpu_id"), 0), tp * pp)
    hist = _open_history(history)
    host = host or socket.gethostname()
    tried = health.tried_values(hist, host, launch.unit)
    notes: list[str] = []
    signs = _host_signs(used, gset, kernel_log, no_kernel_log, notes) + health.history_signs(hist, host)
    b, spec = _model_budget(launch, gset, used, (tp, pp), model_config, draft_config, version, notes)
    if gset.count < tp * pp and b is None:
        b = _too_few_gpus(launch.engine, version, gset.count, tp, pp)
    rep = decide(launch.engine, b, signs, raw, launch.levers, tried, version)
    rep.model = spec.name if spec else launch.model_path
    rep.gpus = [
        {
            "index": g.index,
            "name": g.name,
            "memory_gib": round(g.total_bytes / (1 << 30), 2),
            "pci_bus": g.pci_bus,
            "source": g.source,
        }
        for g in used
    ]
    rep.notes = notes + rep.notes
    if b is not None and b.lines:
        rep.notes.append(LOAD_CAVEAT)
    if hist is not None and history is not None and not hasattr(history, "query"):
        hist.close()
    return rep


def _gpu_set(gpu_memory: str | None, gpus: int | None, nvidia_smi_xml: str | None):
    """The GPUs to budget for: given by hand (--gpu-memory with --gpus), read from nvidia-smi's XML, else live NVML."""
    from logdoctor.preflight import gpus as gp

    if gpu_memory or gpus:
        if not (gpu_memory and gpus):
            raise UsageError("--gpu-memory and --gpus go together")
        return gp.manual(gpu_memory, gpus)
    if nvidia_smi_xml:
        return gp.from_xml(nvidia_smi_xml)
    return gp.from_nvml()


def _host_signs(used, gset, kernel_log: str | None, no_kernel_log: bool, notes: list[str]) -> list:
    """Host health from the GPUs' counters and the kernel log's Xids; a note (added to notes) says what the kernel
    log could not tell."""
    from logdoctor.preflight import health

    signs = health.counter_signs(used)
    if no_kernel_log:
        return signs
    klines, ksource = health.read_kernel_log(kernel_log)
    if ksource:
        signs += health.kernel_signs(klines, used, ksource)
        if not any(g.pci_bus for g in used):
            notes.append(f"the GPUs' PCI addresses are unknown ({gset.source}): Xids of every GPU in {ksource} count")
    else:
        notes.append("no kernel log read (journalctl unavailable): pass --kernel-log FILE to check Xid history")
    return signs


def _model_budget(launch, gset, used, tp_pp: tuple[int, int], model_config, draft_config, version, notes: list[str]):
    """(the memory budget, the model) when the model's config is at hand, else (None, None) and a note saying how to
    give it; the budget's notes are added to notes. Too few GPUs for TP x PP is a no-go before any accounting."""
    from logdoctor.preflight import budget as bud
    from logdoctor.preflight import model as mdl

    raw = launch.raw
    model_dir = model_config or _local(launch.model_path)
    if model_dir is None:
        notes.append(
            f"the model {launch.model_path or '(none named)'} is not a local directory: pass "
            "--model-config FILE_OR_DIR for the memory budget"
        )
        return None, None
    spec, _cfg = mdl.load(model_dir)
    draft = None
    draft_dir = draft_config or _local(raw.get("speculative_draft_model_path"))
    if draft_dir:
        draft, _ = mdl.load(draft_dir)
    elif raw.get("speculative_draft_model_path"):
        notes.append("the draft model is not local: its weights and KV are not counted (--draft-config)")
    tp, pp = tp_pp
    if gset.count < tp * pp:
        b = _too_few_gpus(launch.engine, version, gset.count, tp, pp)
    else:
        smallest = min(used, key=lambda g: g.total_bytes)
        other = max((g.used_bytes or 0) for g in used) if gset.source == "NVML" else 0
        b = bud.compute(launch.engine, spec, raw, smallest.total_bytes, version=version, other_used=other, draft=draft)
    notes.extend(b.notes)
    return b, spec


def _too_few_gpus(engine: str, version: str | None, count: int, tp: int, pp: int):
    """A budget holding only the no-go finding that TP x PP needs more GPUs than there are."""
    from logdoctor.preflight import budget as bud

    b = bud.Budget(engine, version)
    b.findings.append(
        bud.Finding("no-go", "config_invalid", "launch", f"{count} GPU(s) for TP {tp} x PP {pp} = {tp * pp}")
    )
    return b


def _int(v, default: int = 1) -> int:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else default
    except (TypeError, ValueError):
        return default


def _local(path) -> str | None:
    if not path:
        return None
    p = Path(str(path)).expanduser()
    return str(p) if (p / "config.json").is_file() else None


def _open_history(history):
    if history is None or history is False:
        return None
    from logdoctor.history import open_history

    return open_history(history)


class _CallableModule(types.ModuleType):
    """`logdoctor.preflight(...)` is the API and `logdoctor.preflight` this package: once the package is imported
    its module object replaces the lazy function on `logdoctor`, so the module itself answers the call."""

    def __call__(self, unit_file: str | None = None, **kwargs) -> Report:
        return run(unit_file=unit_file, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["run", "Report"]
