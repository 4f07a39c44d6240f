"""Each registered leaf condition, tested on its own: a short log excerpt where it holds and one where it does not.
A leaf regression shows up here, next to the leaf, instead of as "rule X lost on fixture Y"."""

from __future__ import annotations

import pytest

from logdoctor.input.read import read_lines
from logdoctor.matching.conditions import LEAVES, Context, evaluate
from logdoctor.timeline.build import build

H = "May 22 10:33:{:02d} h200 "  # journal short prefix; {} = second
SG = "python3[100]: [2026-05-22 10:33:{:02d} TP{}] "


def _sg(sec: int, msg: str, tp: int = 0) -> str:
    return H.format(sec) + SG.format(sec, tp) + msg


def _tb(
    sec: int,
    exc: str,
    tp: int = 0,
    func: str = "capture",
    file: str = "/x/sglang/srt/cuda_graph_runner.py",
    inner: str | None = None,
) -> list[str]:
    out = [
        _sg(sec, "Scheduler hit an exception: Traceback (most recent call last):", tp),
        H.format(sec) + f'python3[100]:   File "{file}", line 7, in {func}',
        H.format(sec) + "python3[100]:     run()",
    ]
    if inner:
        out += [
            H.format(sec) + f"python3[100]: {inner}",
            H.format(sec) + "python3[100]: ",
            H.format(sec) + "python3[100]: During handling of the above exception, another exception occurred:",
            H.format(sec) + "python3[100]: ",
            H.format(sec) + "python3[100]: Traceback (most recent call last):",
            H.format(sec) + 'python3[100]:   File "/x/sglang/srt/model_runner.py", line 9, in init',
            H.format(sec) + "python3[100]:     go()",
        ]
    return out + [H.format(sec) + f"python3[100]: {exc}"]


START = [
    H.format(0) + "systemd[1]: Started sglang.service - SGLang.",
    _sg(1, "server_args=ServerArgs(model_path='m', tp_size=2, mem_fraction_static=0.88, disable_cuda_graph=False)"),
    _sg(2, "Load weight begin. avail mem=79.00 GB"),
]
OOM = START + _tb(
    5,
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    inner="RuntimeError: no kernel image is available for execution on the device",
)
CAPTURE = (
    START
    + [_sg(3, "Capture cuda graph begin. This can take up to several minutes.")]
    + _tb(5, "Exception: Capture cuda graph failed: CUDA out of memory", tp=1)
)
XID = (
    START
    + [H.format(3) + "kernel: NVRM: Xid (PCI:0000:ab:00): 79, pid=1, name=sglang, GPU has fallen off the bus."]
    + _tb(5, "RuntimeError: CUDA error: unspecified launch failure")
)
KILLED = START + [
    H.format(6) + "systemd[1]: sglang.service: Main process exited, code=killed, status=9/KILL",
    H.format(6) + "systemd[1]: sglang.service: Failed with result 'signal'.",
]
TIMEOUT = START + [
    H.format(6) + "systemd[1]: sglang.service: start operation timed out. Terminating.",
    H.format(6) + "systemd[1]: sglang.service: Failed with result 'timeout'.",
]
DIED = START + [
    _sg(6, "Scheduler hit an exception"),
    H.format(7) + "python3[100]: [2026-05-22 10:33:07] Received sigquit from a child process. It usually "
    "means the child failed.",
]
HINT = START + [
    _sg(
        5,
        "Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88",
        tp=0,
    )
]
ERRLINE = START + [H.format(5) + "python3[100]: [2026-05-22 10:33:05] ERROR:    Something broke badly"]
ENV = [
    H.format(0) + "systemd[1]: Started sglang.service - SGLang.",
    H.format(0) + "python3[100]: NCCL_P2P_DISABLE=1 python3 -m sglang.launch_server --model-path m --tp 2",
] + OOM[1:]
TWO = (
    OOM
    + [
        H.format(20) + "systemd[1]: Started sglang.service - SGLang.",
        _sg(
            21, "server_args=ServerArgs(model_path='m', tp_size=2, mem_fraction_static=0.80, disable_cuda_graph=False)"
        ),
    ]
    + _tb(25, "torch.OutOfMemoryError: CUDA out of memory")
)

# (leaf, value, log that holds, log that does not)
CASES = [
    ("message", r"Capture cuda graph begin", CAPTURE, OOM),
    ("error", r"CUDA out of memory", OOM, XID),
    ("inner", r"no kernel image", OOM, CAPTURE),
    ("wrapper", r"^torch\.OutOfMemoryError", OOM, XID),
    ("exception", "OutOfMemoryError", OOM, XID),
    ("frame", "^capture$", CAPTURE, START + [_sg(5, "fine")]),
    ("file", r"cuda_graph_runner\.py", CAPTURE, START + [_sg(5, "fine")]),
    ("phase", "graph_capture", CAPTURE, OOM),
    ("phase_reached", "graph_capture", CAPTURE, OOM),
    ("phase_not_reached", "graph_capture", OOM, CAPTURE),
    ("flag", {"lever": "mem_fraction", "gte": 0.85}, OOM, START[:1] + OOM[3:]),
    ("xid", "hardware", XID, OOM),
    ("kernel", "fallen off the bus", XID, OOM),
    ("systemd", {"code": "killed", "status": 9}, KILLED, TIMEOUT),
    ("exit_code", -9, KILLED, TIMEOUT),
    (
        "ranks_failed",
        {"alone": True},
        CAPTURE,
        START + _tb(5, "RuntimeError: x", tp=0) + _tb(5, "RuntimeError: x", tp=1),
    ),
    ("attempts", {"failed_min": 2, "configs_differ": True}, TWO, OOM),
    ("death", "sigquit", DIED, OOM),
    ("cut", True, CAPTURE[:-1], CAPTURE),  # the window ends before the traceback's exception line
    ("engine", "sglang", OOM, [x.replace("sglang", "vllm") for x in ["vllm: INFO hello", "ERROR x"]]),
    ("level", "ERROR", ERRLINE, START),
    (
        "hint",
        "increase",
        START
        + _tb(5, "RuntimeError: not enough memory")
        + [
            H.format(5) + "python3[100]: Possible solutions:",
            H.format(5) + "python3[100]: 1. increase --mem-fraction-static",
        ],
        OOM,
    ),
    ("env", {"NCCL_P2P_DISABLE": "1"}, ENV, OOM),
    ("reading", {"name": "free_before_load_gb", "gt": 10}, OOM, [H.format(0) + "python3[100]: hello"]),
    (
        "cuda_error",
        {"family": "host_not_ready"},
        START
        + [
            _sg(
                4,
                "UserWarning: CUDA initialization: cudaGetDeviceCount() returned Error 802: system not yet initialized",
            )
        ],
        OOM,
    ),
]


def _ctx(lines: list[str]) -> Context:
    tl = build(read_lines(lines).records)
    return Context.build(tl, tl.attempts[-1])


def test_every_leaf_has_a_case_and_a_documented_example():
    assert [c[0] for c in CASES] == list(LEAVES)
    for lf in LEAVES.values():
        assert "Example:" in lf.doc, lf.name


@pytest.mark.parametrize("name,val,holds,fails", CASES, ids=[c[0] for c in CASES])
def test_leaf_holds_and_does_not(name, val, holds, fails):
    assert evaluate({name: val}, _ctx(holds), {}) is not None, f"{name} should hold"
    assert evaluate({name: val}, _ctx(fails), {}) is None, f"{name} should not hold"


def test_leaf_captures_and_evidence():
    h = evaluate({"xid": "hardware"}, _ctx(XID), {})
    assert h.captures["xid"] == 79 and "fallen off the bus" in h.evidence[0][1]
    h = evaluate({"message": r"Current value: mem_fraction_static=(?P<mem_fraction_now>[\d.]+)"}, _ctx(HINT), {})
    assert h.captures == {"mem_fraction_now": "0.88"}
    h = evaluate({"inner": "no kernel image"}, _ctx(OOM), {})
    assert h.evidence and h.evidence[0][1].startswith("RuntimeError: no kernel image")


def test_registry_refuses_a_leaf_without_docstring():
    from logdoctor.matching.conditions import leaf

    with pytest.raises(ValueError):
        leaf("undocumented_leaf", syntax="x", schema={})(lambda val, ctx, compiled, scope: None)
    with pytest.raises(ValueError):

        @leaf("message", syntax="x", schema={})
        def again(val, ctx, compiled, scope):
            """dup"""
