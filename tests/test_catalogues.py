"""The CUDA / NCCL / Xid / PyTorch catalogues (logdoctor/matching/catalogues, logdoctor/data/catalogues) and their use in a
verdict: lookups, wording -> code resolution, one source of truth for the Xid classes, lazy loading, a bare fatal
CUDA line as a failure, error 802 as a host fault, and "recoverable is not decisive" (issue 19 parts 3 and 4).
Log lines here are written for these tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.core.vocab import CAUSES, PHASES, XID_APP, XID_HARDWARE
from logdoctor.input.read import read_lines
from logdoctor.matching import catalogues
from logdoctor.timeline import decisive
from logdoctor.timeline.build import build
from tools.catalogues import build as catbuild

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "logdoctor" / "data" / "catalogues"


def _explain(text: str, tmp_path: Path) -> tuple[int, dict]:
    p = tmp_path / "journal.log"
    p.write_text(text, encoding="utf-8")
    r = subprocess.run(
        [sys.executable, "-m", "logdoctor", "explain", str(p), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return r.returncode, json.loads(r.stdout)


# --------------------------------------------------------------------------------------------------------------------
# the data


def test_shipped_files_equal_the_reviewed_tables():
    assert catbuild.check() == []


def test_sources_record_wheels_and_sha256():
    for name in ("cuda", "nccl"):
        doc = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
        assert doc["sources"], name
        for s in doc["sources"]:
            assert s["wheel"].endswith(".whl") and len(s["sha256"]) == 64
            assert all(len(h) == 64 for h in s["members"].values())


def test_causes_and_phases_are_the_vocabulary():
    for e in catalogues.load.cuda() + catalogues.load.nccl():
        assert e.cause is None or e.cause in CAUSES, e
        assert e.phase is None or e.phase in PHASES, e
        assert e.next, e
    for f in catalogues.load.torch():
        assert f.cause is None or f.cause in CAUSES, f


def test_runtime_and_driver_enums_are_complete():
    runtime = [e for e in catalogues.load.cuda() if e.api == "runtime"]
    driver = [e for e in catalogues.load.cuda() if e.api == "driver"]
    assert len(runtime) > 100 and len(driver) > 90
    assert all(e.message for e in runtime)  # cudaGetErrorString of the wheel's libcudart


@pytest.mark.parametrize(
    "key, name, cause",
    [
        (2, "cudaErrorMemoryAllocation", None),  # an OOM: the phase decides which one
        (700, "cudaErrorIllegalAddress", "illegal_memory_access"),
        (802, "cudaErrorSystemNotReady", "hardware_fault"),
        (209, "cudaErrorNoKernelImageForDevice", "kernel_arch_mismatch"),
        (35, "cudaErrorInsufficientDriver", "kernel_arch_mismatch"),
        (804, "cudaErrorCompatNotSupportedOnDevice", "kernel_arch_mismatch"),
        (999, "cudaErrorUnknown", None),
        ("CUDA_ERROR_SYSTEM_NOT_READY", "CUDA_ERROR_SYSTEM_NOT_READY", "hardware_fault"),
        ("an illegal memory access was encountered", "cudaErrorIllegalAddress", "illegal_memory_access"),
        ("802", "cudaErrorSystemNotReady", "hardware_fault"),
    ],
)
def test_cuda_error_lookup(key, name, cause):
    e = catalogues.cuda_error(key)
    assert e is not None and e.name == name and e.cause == cause


def test_802_names_the_fabric_manager():
    assert "nvidia-fabricmanager" in catalogues.cuda_error(802).next


def test_nccl_result_lookup():
    assert catalogues.nccl_result(1).name == "ncclUnhandledCudaError"
    assert catalogues.nccl_result("ncclSystemError").cause == "distributed_init"
    assert catalogues.nccl_result("remote process exited or there was a network error").code == 6
    assert not catalogues.nccl_result(7).fatal  # ncclInProgress is not an error


def test_vocab_xid_classes_are_the_catalogue():
    assert catalogues.xid_codes(host=True) == XID_HARDWARE
    assert catalogues.xid_codes(cls="app") == XID_APP
    for code in (13, 31, 43, 45):
        x = catalogues.xid(code)
        assert x.cls == "app" and not x.host  # never hardware evidence on its own
    assert catalogues.xid(79).host and catalogues.xid(48).cls == "memory"
    assert catalogues.xid(4242) is None


@pytest.mark.parametrize(
    "line, kind, name",
    [
        ("torch.AcceleratorError: CUDA error: device-side assert triggered", "cuda", "cudaErrorAssert"),
        ("CUDA error: misaligned address", "cuda", "cudaErrorMisalignedAddress"),
        ("CUDA error: device doesn't have valid Grid license", "cuda", "cudaErrorDeviceNotLicensed"),
        (
            "Failed: Cuda error /src/kernels/moe_align.cu:88 'no kernel image is available for execution on the device'",
            "cuda",
            "cudaErrorNoKernelImageForDevice",
        ),
        ("init.cc:1512 NCCL WARN Cuda failure 'out of memory'", "cuda", "cudaErrorMemoryAllocation"),
        ("CUDA error at sampling.cuh:210 code=716(cudaErrorMisalignedAddress)", "cuda", "cudaErrorMisalignedAddress"),
        (
            "UserWarning: CUDA initialization: cudaGetDeviceCount() returned Error 802: system not yet initialized",
            "cuda",
            "cudaErrorSystemNotReady",
        ),
        (
            "DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3012, unhandled system error (run with "
            "NCCL_DEBUG=INFO for details), NCCL version 2.26.2",
            "nccl",
            "ncclSystemError",
        ),
        ("RuntimeError: NCCL Error 6: remote process exited or there was a network error", "nccl", "ncclRemoteError"),
    ],
)
def test_mention_resolves_every_wrapper(line, kind, name):
    m = catalogues.mention(line)
    assert m is not None and m.kind == kind and m.entry.name == name


@pytest.mark.parametrize(
    "line",
    ["Serving 802 requests per minute on cuda:0", "INFO batch 35 done", "CUDA graph capture took 12.5 s"],
)
def test_mention_ignores_numbers_without_an_error(line):
    assert catalogues.mention(line) is None


def test_advice_is_not_an_error():
    assert catalogues.is_advice("For debugging consider passing CUDA_LAUNCH_BLOCKING=1")
    assert catalogues.is_advice("Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
    assert not catalogues.is_advice("RuntimeError: CUDA error: unknown error. Set CUDA_LAUNCH_BLOCKING=1 to debug")


def test_catalogues_load_lazily():
    """Explaining a log with no CUDA/NCCL error text reads no catalogue file."""
    code = (
        "from logdoctor.verdict import api\n"
        "from logdoctor.matching.catalogues import load\n"
        'api.diagnose(\'May 22 10:00:01 h python3[5]: [2026-05-22 10:00:01] server_args=ServerArgs(model_path="m")\\n'
        "May 22 10:00:02 h python3[5]: [2026-05-22 10:00:02 TP0] Capture cuda graph begin. avail mem=9.10 GB\\n"
        "May 22 10:00:03 h python3[5]: NCCL INFO Channel 00/02 via P2P/CUMEM\\n"
        "May 22 10:00:04 h python3[5]: ValueError: bad value for --foo\\n')\n"
        "print(load.cuda.cache_info().currsize, load.nccl.cache_info().currsize, load.xids.cache_info().currsize)\n"
        "api.diagnose('May 22 10:00:01 h python3[5]: RuntimeError: CUDA error: misaligned address\\n')\n"
        "print(load.cuda.cache_info().currsize)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "0", "0", "1"]  # CUDA/NCCL words alone load nothing; an error line loads one


# --------------------------------------------------------------------------------------------------------------------
# in a verdict

VL = "2026-07-02T09:{:02d}:00.000000Z (EngineCore_DP0 pid=77) "


def _vl(minute: int, msg: str) -> str:
    return VL.format(minute) + msg


START = [
    "2026-07-02T09:00:00.000000Z (APIServer pid=12) INFO 07-02 09:00:00 [api_server.py:1839] "
    "vLLM API server version 0.10.1",
    _vl(
        1,
        "INFO 07-02 09:01:00 [parallel_state.py:1208] world_size=1 rank=0 local_rank=0 "
        "distributed_init_method=tcp://127.0.0.1:40000 backend=nccl",
    ),
    _vl(2, "INFO 07-02 09:02:00 [gpu_model_runner.py:1879] Starting to load model /m/phi-4..."),
]


def test_a_bare_fatal_cuda_line_is_a_failure(tmp_path):
    rc, d = _explain("\n".join(START + [_vl(3, "CUDA error: an illegal instruction was encountered")]) + "\n", tmp_path)
    assert rc == 1 and d["failed"] and d["cause"] == "illegal_memory_access" and d["phase"] == "weight_load"


def test_a_bare_nccl_error_line_is_a_distributed_failure(tmp_path):
    lines = START[:2] + [
        _vl(
            1,
            "NCCL error in: /src/c10d/NCCLUtils.hpp:268, unhandled system error (run with NCCL_DEBUG=INFO for "
            "details), NCCL version 2.23.4",
        )
    ]
    rc, d = _explain("\n".join(lines) + "\n", tmp_path)
    assert rc == 1 and d["cause"] == "distributed_init" and d["phase"] == "dist_init"


def test_a_non_fatal_cuda_line_is_not(tmp_path):
    # cudaErrorNotReady (600) is a query's answer, not an error; nothing fails here
    rc, d = _explain("\n".join(START + [_vl(3, "CUDA error: device not ready")]) + "\n", tmp_path)
    assert rc == 0 and not d["failed"]


def test_a_bare_cuda_line_the_engine_went_past_is_not_a_failure(tmp_path):
    lines = START + [
        _vl(3, "CUDA error: an illegal memory access was encountered"),
        _vl(4, "INFO 07-02 09:04:00 [default_loader.py:267] Loading weights took 30.10 seconds"),
        _vl(4, "INFO 07-02 09:04:00 [gpu_worker.py:232] Available KV cache memory: 20.00 GiB"),
    ]
    rc, d = _explain("\n".join(lines) + "\n", tmp_path)
    assert rc == 0 and not d["failed"]


def test_error_802_is_a_host_fault_naming_the_fabric_manager(tmp_path):
    lines = START[:2] + [
        _vl(2, "UserWarning: CUDA initialization: cudaGetDeviceCount() returned Error 802: system not yet initialized"),
        _vl(2, "ERROR 07-02 09:02:00 [core.py:700] EngineCore failed to start."),
        _vl(2, "RuntimeError: Failed to infer device type"),
    ]
    rc, d = _explain("\n".join(lines) + "\n", tmp_path)
    assert rc == 1 and d["cause"] == "hardware_fault"
    assert any("fabricmanager" in a for a in d["actions"]) and not d["fixes"]


# --------------------------------------------------------------------------------------------------------------------
# recoverable is not decisive

SG = "Aug 09 11:20:{:02d} gpu7 python3[900]: [2026-08-09 11:20:{:02d}{}] "


def _sg(sec: int, msg: str, tp: str = " TP0") -> str:
    return SG.format(sec, sec, tp) + msg


def _attempt(lines: list[str]):
    tl = build(read_lines(lines).records)
    return tl.attempts[-1]


def test_a_retry_error_is_set_aside_and_the_real_error_decides():
    lines = [
        _sg(1, "server_args=ServerArgs(model_path='org/m', tp_size=1, mem_fraction_static=0.8)", ""),
        _sg(2, "ERROR: fetching tokenizer_config.json failed (ReadTimeout), retrying in 2 s (attempt 1 of 3)", ""),
        _sg(4, "Load weight begin. avail mem=78.50 GB"),
        _sg(9, "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=62.10 GB, mem usage=16.40 GB."),
        _sg(10, "ERROR: Not enough memory. Please try to increase --mem-fraction-static."),
    ]
    a = _attempt(lines)
    d = decisive.of(a)
    retry_line = a.records[1].line
    assert retry_line in d.recoverable and retry_line not in d.error_lines
    assert a.failed and a.fatal_line == a.records[4].line and a.phase == "memory_pool"
    assert all("retrying" not in t for _, t in d.errors)


def test_an_error_line_nothing_followed_still_fails():
    lines = [
        _sg(1, "server_args=ServerArgs(model_path='org/m', tp_size=1)", ""),
        _sg(2, "ERROR: fetching config.json failed (ReadTimeout), retrying in 2 s (attempt 3 of 3)", ""),
    ]
    a = _attempt(lines)
    assert a.failed and decisive.of(a).recoverable == []


def test_advice_lines_are_never_decisive():
    lines = [
        _sg(1, "server_args=ServerArgs(model_path='org/m', tp_size=1)", ""),
        _sg(2, "ERROR: For debugging consider passing CUDA_LAUNCH_BLOCKING=1"),
    ]
    a = _attempt(lines)
    assert not a.failed and decisive.of(a).errors == []


def test_the_hook_list_is_extensible():
    """The atlas appends its own 'recoverable path' flag as a hook."""
    lines = [
        _sg(1, "server_args=ServerArgs(model_path='org/m', tp_size=1)", ""),
        _sg(2, "ERROR: optional kernel cache unavailable"),
    ]
    assert _attempt(lines).failed

    def atlas_says_recoverable(r, follow):
        return "optional kernel cache" in r.msg

    decisive.RECOVERABLE_HOOKS.append(atlas_says_recoverable)
    try:
        assert not _attempt(lines).failed
    finally:
        decisive.RECOVERABLE_HOOKS.remove(atlas_says_recoverable)


def test_triage_does_not_flag_a_host_for_an_application_xid(tmp_path):
    """Issue 20's disagreement: an app-class Xid (31, a page fault of the engine's own kernel) made triage list the
    host as a hardware suspect while explain calls the log illegal_memory_access; a hardware Xid still flags it."""
    pytest.importorskip("pandas")
    from logdoctor.triage import run
    from logdoctor.triage.views import host_suspects

    def log(host: str, code: int, text: str) -> str:
        return (
            f"Jan 05 02:10:01 {host} python3[4100]: [2026-01-05 02:10:01 TP0] Load weight begin. avail mem=78.20 GB\n"
            f"Jan 05 02:10:09 {host} kernel: NVRM: Xid (PCI:0000:4c:00): {code}, pid=4100, name=python3, {text}\n"
            f"Jan 05 02:10:09 {host} python3[4100]: RuntimeError: CUDA error: an illegal memory access was "
            "encountered\n"
        )

    (tmp_path / "app.log").write_text(log("nodeA", 31, "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS"))
    (tmp_path / "hw.log").write_text(log("nodeB", 95, "Uncontained: FBHUB. RST: No, D-RST: No"))
    r = run([str(tmp_path / "app.log"), str(tmp_path / "hw.log")], jobs=1)
    hosts = {s.host for s in host_suspects(r.frame)}
    assert "nodeB" in hosts and "nodeA" not in hosts
