"""The GPUs the command will run on: memory and health counters, from NVML, `nvidia-smi -q -x` or the command line.

Why three sources: a deploy host has NVML (nvidia-ml-py, the `nvml` extra); a laptop planning a deploy has an XML
dump copied from the host or only the card's size. Health counters (ECC, retired pages, row remapping) exist only in
the first two."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from logdoctor.core.errors import InputError, UsageError

GIB = 1 << 30
MIB = 1 << 20


@dataclass
class GPU:
    """One GPU: its framebuffer size (what nvidia-smi calls Total) and the counters that say it is sick."""

    index: int
    name: str
    total_bytes: int
    pci_bus: str | None = None  # "0000:10:1C.0": matches kernel Xid lines
    used_bytes: int | None = None  # memory other processes hold now (NVML / XML only)
    ecc_uncorrectable_volatile: int | None = None
    ecc_uncorrectable_aggregate: int | None = None
    retired_pending: bool | None = None
    retired_pages: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    source: str = ""

    def problems(self) -> list[str]:
        """What the counters say is wrong with this GPU (empty when sound or unknown)."""
        out = []
        if self.ecc_uncorrectable_volatile:
            out.append(f"{self.ecc_uncorrectable_volatile} uncorrectable ECC error(s) since the last reset")
        if self.ecc_uncorrectable_aggregate:
            out.append(f"{self.ecc_uncorrectable_aggregate} uncorrectable ECC error(s) in its lifetime")
        if self.retired_pending:
            out.append("a retired page is pending (reset the GPU to apply it)")
        if self.remap_pending:
            out.append("a row remap is pending (reset the GPU to apply it)")
        if self.remap_failure:
            out.append("row remapping has failed (RMA candidate)")
        return out


@dataclass
class GPUSet:
    gpus: list[GPU] = field(default_factory=list)
    source: str = ""

    @property
    def count(self) -> int:
        return len(self.gpus)


_SIZE = re.compile(r"^\s*([\d.]+)\s*(GiB|GB|G|MiB|MB|M|TiB|TB|T|B)?\s*$", re.I)
# the framebuffer a card reports (nvidia-smi "FB Memory Usage / Total"), for --gpu-memory H200 style shortcuts
_UNITS = {
    "b": 1,
    "m": MIB,
    "mb": MIB,
    "mib": MIB,
    "g": GIB,
    "gb": GIB,
    "gib": GIB,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tib": 1 << 40,
}


def parse_size(text: str) -> int:
    """'80GiB', '143771MiB', '141GB' -> bytes. GB is read as GiB: that is what nvidia-smi and the engines print."""
    m = _SIZE.match(str(text))
    if not m:
        raise UsageError(f"--gpu-memory {text!r}: expected a size like 80GiB or 143771MiB")
    unit = (m.group(2) or "GiB").lower()
    return int(float(m.group(1)) * _UNITS[unit])


def manual(memory: str, count: int) -> GPUSet:
    if count < 1:
        raise UsageError("--gpus must be at least 1")
    size = parse_size(memory)
    return GPUSet([GPU(i, "GPU", size, source="--gpu-memory") for i in range(count)], "--gpu-memory/--gpus")


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    m = re.match(r"\s*(\d+)", text)
    return int(m.group(1)) if m else None


def _mib(text: str | None) -> int | None:
    n = _int(text)
    return None if n is None else n * MIB


def from_xml(path: str) -> GPUSet:
    """`nvidia-smi -q -x` output. Missing counters (a card without ECC, an older driver) stay None."""
    import xml.etree.ElementTree as ET  # noqa: S405 - a local file the operator names, parsed without entities

    from logdoctor.input.sources.guard import read_regular

    try:
        data = read_regular(path, 64 << 20, "nvidia-smi XML")  # a FIFO or a device is refused, never waited on
        root = ET.fromstring(data)  # noqa: S314 - expat's amplification limit refuses entity bombs (reliability.md)
    except InputError as e:
        raise InputError(f"--nvidia-smi-xml {e}") from None
    except ET.ParseError as e:
        raise InputError(f"--nvidia-smi-xml {path}: not readable nvidia-smi XML ({e})") from None
    gpus = []
    for i, g in enumerate(root.findall("gpu")):
        total = _mib(g.findtext("fb_memory_usage/total"))
        if total is None:
            raise InputError(f"--nvidia-smi-xml {path}: GPU {i} has no fb_memory_usage/total")
        gpu = GPU(
            index=_int(g.findtext("minor_number")) or (0 if g.findtext("minor_number", "").strip() == "0" else i),
            name=(g.findtext("product_name") or "GPU").strip(),
            total_bytes=total,
            pci_bus=(g.get("id") or g.findtext("pci/pci_bus_id") or "").strip() or None,
            used_bytes=_mib(g.findtext("fb_memory_usage/used")),
            source="nvidia-smi XML",
        )
        gpu.ecc_uncorrectable_volatile = _sum_ecc(g, "volatile")
        gpu.ecc_uncorrectable_aggregate = _sum_ecc(g, "aggregate")
        pend = g.findtext("retired_pages/pending_retirement")
        gpu.retired_pending = None if pend is None else pend.strip().lower() == "yes"
        counts = [
            _int(g.findtext(f"retired_pages/{k}/retired_count"))
            for k in ("multiple_single_bit_retirement", "double_bit_retirement")
        ]
        gpu.retired_pages = sum(c for c in counts if c) if any(c is not None for c in counts) else None
        rp = g.findtext("remapped_rows/remapped_row_pending")
        gpu.remap_pending = None if rp is None else rp.strip().lower() == "yes"
        rf = g.findtext("remapped_rows/remapped_row_failure")
        gpu.remap_failure = None if rf is None else rf.strip().lower() == "yes"
        gpus.append(gpu)
    if not gpus:
        raise InputError(f"--nvidia-smi-xml {path}: no <gpu> element (is it `nvidia-smi -q -x` output?)")
    return GPUSet(gpus, f"nvidia-smi XML ({path})")


def _sum_ecc(g, which: str) -> int | None:
    """Uncorrectable ECC errors: newer drivers print dram/sram totals, older ones device_memory/total."""
    node = g.find(f"ecc_errors/{which}")
    if node is None:
        return None
    vals = [
        _int(node.findtext(k))
        for k in (
            "dram_uncorrectable",
            "sram_uncorrectable",
            "double_bit/total",
            "sram_uncorrectable_parity",
            "sram_uncorrectable_secded",
        )
    ]
    got = [v for v in vals if v is not None]
    return sum(got) if got else None


def from_nvml() -> GPUSet:
    """Live counters through NVML (pip install 'logdoctor[nvml]')."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        raise UsageError(
            "no GPU source: pass --gpu-memory SIZE --gpus N or --nvidia-smi-xml FILE, or install "
            "the nvml extra (pip install 'logdoctor[nvml]') for live NVML"
        ) from None
    try:
        pynvml.nvmlInit()
    except Exception as e:  # noqa: BLE001 - NVMLError has many subclasses; all mean "no live GPUs here"
        raise UsageError(
            f"NVML is not available here ({e}): pass --gpu-memory SIZE --gpus N or --nvidia-smi-xml"
        ) from None
    gpus = []
    try:
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            name = pynvml.nvmlDeviceGetName(h)
            gpu = GPU(
                i,
                name.decode() if isinstance(name, bytes) else str(name),
                int(mem.total),
                used_bytes=int(mem.used),
                source="NVML",
            )
            gpu.pci_bus = _nvml(lambda h=h: pynvml.nvmlDeviceGetPciInfo(h).busId)
            if isinstance(gpu.pci_bus, bytes):
                gpu.pci_bus = gpu.pci_bus.decode()
            unc = pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
            gpu.ecc_uncorrectable_volatile = _nvml(
                lambda h=h, unc=unc: pynvml.nvmlDeviceGetTotalEccErrors(h, unc, pynvml.NVML_VOLATILE_ECC)
            )
            gpu.ecc_uncorrectable_aggregate = _nvml(
                lambda h=h, unc=unc: pynvml.nvmlDeviceGetTotalEccErrors(h, unc, pynvml.NVML_AGGREGATE_ECC)
            )
            pend = _nvml(lambda h=h: pynvml.nvmlDeviceGetRetiredPagesPendingStatus(h))
            gpu.retired_pending = None if pend is None else bool(pend)
            remap = _nvml(lambda h=h: pynvml.nvmlDeviceGetRemappedRows(h))
            if remap is not None:
                gpu.remap_pending, gpu.remap_failure = bool(remap[2]), bool(remap[3])
            gpus.append(gpu)
    finally:
        _nvml(pynvml.nvmlShutdown)
    if not gpus:
        raise UsageError("NVML sees no GPU: pass --gpu-memory SIZE --gpus N or --nvidia-smi-xml FILE")
    return GPUSet(gpus, "NVML")


def _nvml(call):
    """A counter the card or driver does not support is None, not an error."""
    try:
        return call()
    except Exception:  # noqa: BLE001
        return None


def select(gpus: GPUSet, visible: str | None, base_gpu_id: int = 0, need: int = 0) -> list[GPU]:
    """The GPUs the command will use: CUDA_VISIBLE_DEVICES (indexes) when set, from SGLang's --base-gpu-id, the
    first `need` of them."""
    pool = gpus.gpus
    if visible and re.fullmatch(r"\s*\d+(\s*,\s*\d+)*\s*", visible):  # indexes; UUIDs (GPU-...) keep the order
        wanted = [int(x) for x in re.findall(r"\d+", visible)]
        by_index = {g.index: g for g in pool}
        pool = [by_index[i] for i in wanted if i in by_index] or pool
    pool = pool[base_gpu_id:] if base_gpu_id else pool
    return pool[:need] if need else pool
