"""Host health before a deploy: GPU counters, the kernel log's Xid history, and the attempt history.

Why: a GPU whose kernel log already shows an ECC or bus Xid, or whose counters show uncorrectable errors or a
failed row remap, fails the start (or the first hour of serving) whatever the flags. The Xid classes are the
project's vocabulary (vocab.XID_*: hardware vs application)."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from logdoctor.core.errors import InputError
from logdoctor.preflight.gpus import GPU

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)\): (\d+),(.*)")  # older drivers omit "PCI:"
_OFF_BUS = re.compile(r"NVRM: GPU (?:at PCI:)?([0-9a-fA-F:.]+):? GPU has fallen off the bus")
# Xids that blame the GPU, not the application (shared/reference/engines.md section E)
HARDWARE_XIDS = {48, 63, 64, 92, 94, 95, 140, 79, 74, 61, 62, 119, 120, 154}


@dataclass
class Sign:
    """One piece of evidence that the host is unsound."""

    source: str  # "kernel log" | "nvidia-smi XML" | "NVML" | "history"
    text: str
    line: int = 0


def _norm_bus(bus: str | None) -> str:
    """'0000:10:1C.0', 'PCI:0000:10:1c', '00000000:10:1C.0' -> '10:1c' (bus:device), for matching."""
    if not bus:
        return ""
    parts = bus.lower().replace("pci:", "").strip(":").split(":")
    if len(parts) >= 2:
        return f"{parts[-2][-2:]}:{parts[-1].split('.')[0]}"
    return bus.lower()


KERNEL_LOG_CAP = 256 << 20  # a kernel log named with --kernel-log is read whole, up to this


def read_kernel_log(path: str | None) -> tuple[list[str], str]:
    """The kernel log: a file (--kernel-log), else `journalctl -k` of this host; ([], why) when unavailable."""
    if path:
        try:
            from logdoctor.input.sources.guard import read_regular

            return read_regular(path, KERNEL_LOG_CAP, "a kernel log").decode("utf-8", "replace").splitlines(), path
        except InputError as e:
            raise InputError(f"--kernel-log {e}") from None
    exe = shutil.which("journalctl")
    if not exe:
        return [], ""
    try:
        out = subprocess.run(
            [exe, "-k", "--no-pager", "-q", "-g", "NVRM"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return [], ""
    return out.stdout.splitlines(), "journalctl -k"


def kernel_signs(lines: list[str], gpus: list[GPU], source: str) -> list[Sign]:
    """Hardware-class Xids (and fallen-off-the-bus lines) for the GPUs the command will use. When the GPUs' PCI
    addresses are unknown (--gpu-memory), every GPU of the host counts: the operator is told so."""
    buses = {_norm_bus(g.pci_bus) for g in gpus if g.pci_bus}
    out = []
    for i, ln in enumerate(lines, 1):
        m = _XID.search(ln)
        if m:
            xid = int(m.group(2))
            if xid not in HARDWARE_XIDS or (buses and _norm_bus(m.group(1)) not in buses):
                continue
            out.append(Sign(source, ln.strip(), i))
            continue
        m = _OFF_BUS.search(ln)
        if m and (not buses or _norm_bus(m.group(1)) in buses):
            out.append(Sign(source, ln.strip(), i))
    return out


def counter_signs(gpus: list[GPU]) -> list[Sign]:
    out = []
    for g in gpus:
        for p in g.problems():
            out.append(Sign(g.source or "GPU counters", f"GPU {g.index} ({g.name}, {g.pci_bus or 'bus ?'}): {p}"))
    return out


def history_signs(history, host: str) -> list[Sign]:
    """Attempts on this host whose verdict was hardware_fault (the attempt store behind explain)."""
    if history is None:
        return []
    rows = history.query(host=host, outcome=None) if host else []
    return [
        Sign(
            "history",
            f"attempt {r.key[:10]} of {r.unit or 'a unit'} on {r.host} ({r.started or '?'}): "
            f"hardware_fault" + (f" ({r.signature})" if r.signature else ""),
        )
        for r in rows
        if r.cause == "hardware_fault"
    ]


def tried_values(history, host: str, unit: str | None) -> dict[str, set]:
    """lever -> values already tried on this host (and unit): never proposed again."""
    out: dict[str, set] = {}
    if history is None or not host:
        return out
    for r in history.query(host=host, unit=unit or None):
        for k, v in (r.config or {}).items():
            if v is not None:
                out.setdefault(k, set()).add(v)
    return out
