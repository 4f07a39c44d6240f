"""The fuzz targets (fuzz/targets.py) under hypothesis, with bounded examples, plus the regression inputs the atheris
campaigns found. Invariants: no unhandled exception, read == parsed + unparsed, explain JSON validates."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuzz.targets import TARGETS, seeds  # noqa: E402

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

SEEDS = seeds(60)
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_LINES = st.sampled_from(
    [
        b"May 22 10:38:43 h python3[7]: [2026-05-22 10:38:43 TP0] Load weight begin. avail mem=78.80 GB",
        b"[2026-05-22 10:38:43 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        b'  File "/sgl/x.py", line 3, in f',
        b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        b"(EngineCore_DP0 pid=95) ERROR 05-22 10:38:43 [core.py:1] EngineCore failed to start.",
        b"server_args=ServerArgs(model_path='/m', tp_size=2, mem_fraction_static=0.9, context_length=",
        b"\x00\x00",
        b"\xff\xfe",
        b"\x1b[31m",
        b"\r",
        b"(" + b"_" * 50,
        b'{"MESSAGE": "x", "_PID": "1"',
        b"\x1f\x8b\x08\x00",
        b"kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
        b"-- Boot 0123456789abcdef0123456789abcdef --",
        b"__CURSOR=s=1\n__REALTIME_TIMESTAMP=1\n_BOOT_ID=ab\nMESSAGE=x\n",
    ]
)
# real journals with random damage spliced in: a random cut, random bytes, a known-hard line
_DAMAGED = st.builds(
    lambda seed, at, junk, cut: (seed[:at] + junk + seed[at:])[:cut],
    st.sampled_from(SEEDS),
    st.integers(0, 2048),
    st.binary(max_size=200) | _LINES,
    st.integers(0, 4096),
)
_INPUT = st.binary(max_size=3000) | _DAMAGED | st.lists(_LINES, max_size=30).map(b"\n".join)


@settings(max_examples=300, **_SETTINGS)
@given(_INPUT)
def test_read(data):
    TARGETS["read"](data)


@settings(max_examples=150, **_SETTINGS)
@given(_INPUT)
def test_read_compressed(data):
    TARGETS["read"](gzip.compress(data, mtime=0)[: max(10, len(data) // 2)])


@settings(max_examples=300, **_SETTINGS)
@given(_INPUT)
def test_formats(data):
    TARGETS["formats"](data)


@settings(max_examples=500, **_SETTINGS)
@given(st.binary(max_size=300) | _LINES | st.text(max_size=200).map(str.encode))
def test_prefix(data):
    TARGETS["prefix"](data)


@settings(max_examples=200, **_SETTINGS)
@given(st.binary(max_size=2000) | _DAMAGED | st.text(alphabet="{}[]()'\"=,: abc123-_.\\", max_size=300).map(str.encode))
def test_config(data):
    TARGETS["config"](data)


@settings(max_examples=60, **_SETTINGS)
@given(st.binary(max_size=1500) | st.lists(_LINES, max_size=20).map(b"\n".join))
def test_rules(data):
    TARGETS["rules"](data)


@settings(max_examples=40, **_SETTINGS)
@given(st.binary(max_size=1500) | st.lists(_LINES, max_size=20).map(b"\n".join))
def test_explain(data):
    TARGETS["explain"](data)


# ---------------------------------------------------------------------------------------------- atheris regressions


def test_vllm_tag_prefix_does_not_backtrack():
    """fuzz/run.py prefix, first minute: "(" + "_" * 68 took longer than 10 s (exponential in the length) in the
    vLLM process-tag regex. 2000 characters would never finish with that regex; a subprocess bounds the test."""
    code = (
        "from logdoctor.engines.prefixes import split_prefix\n"
        "for n in (68, 2000, 60000):\n"
        "    for s in ('(' + '_' * n, '(a' + '_a' * n, '(' + 'a ' * n + '!', '(a) ' * n):\n"
        "        split_prefix(s)\nprint('ok')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.stdout.strip() == "ok", p.stderr


def test_vllm_tags_still_split():
    from logdoctor.engines.prefixes import split_prefix

    p = split_prefix("(APIServer pid=1) (EngineCore_DP0 pid=95) (Worker_TP1 pid=3) ERROR 05-22 10:38:43 [x.py:1] boom")
    assert (p.proc, p.rank, p.level, p.body, p.tag_pid) == (
        "APIServer/EngineCore_DP0/Worker_TP1",
        "TP1",
        "ERROR",
        "boom",
        3,
    )
    assert split_prefix("(a=1) x").engine is None  # "=" in the first word: not a process tag
    assert split_prefix("(VllmWorker rank=1 pid=7) INFO 05-22 10:38:43 [a.py:2] hi").rank == "TP1"
