"""Property tests: the parse layer never raises, accounts for every line, and reassembles interleaved ranks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logdoctor.input.read import read_bytes, read_lines
from logdoctor.timeline.blocks import assemble

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4000))
def test_arbitrary_bytes_never_raise_and_are_accounted(data):
    res = read_bytes(data)
    assert res.stats.read == res.stats.parsed + res.stats.unparsed
    assert res.stats.skipped <= res.stats.parsed
    assemble(res.records)


_LINE = st.one_of(
    st.text(max_size=120),
    st.sampled_from(
        [
            "May 22 10:38:43 h python3[7]: [2026-05-22 10:38:43 TP0] Load weight begin. avail mem=78.80 GB",
            '                                  File "/x.py", line 3, in f',
            "-- Boot 0123456789abcdef0123456789abcdef --",
            '{"MESSAGE": "hi", "__REALTIME_TIMESTAMP": "1"}',
            '{"MESSAGE": [27, 91, 51, 50, 109, 104, 105]}',
            "2026-05-22T10:38:43.123456789Z Traceback (most recent call last):",
            "sglang-1  | hello",
            "\x1b[31mred\x1b[0m",
            "a\rb\rc",
            "(Worker_TP1 pid=3) ERROR 05-22 10:38:43 [x.py:1] boom",
            "torch.OutOfMemoryError: CUDA out of memory",
        ]
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, max_size=60))
def test_every_line_in_exactly_one_bucket(lines):
    lines = [l.replace("\n", " ") for l in lines]
    res = read_lines(lines)
    assert res.stats.read == len(lines)
    assert res.stats.read == res.stats.parsed + res.stats.unparsed
    covered = {r.line for r in res.records} | {u.line for u in res.unparsed}
    assert covered == set(range(1, len(lines) + 1))


def _traceback(rank: str, exc: str, depth: int) -> list[str]:
    out = [f"[2026-05-22 10:38:43 {rank}] Scheduler hit an exception: Traceback (most recent call last):"]
    for i in range(depth):
        out += [f'  File "/sgl/{rank.lower()}_{i}.py", line {i + 1}, in f{i}', f"    call_{rank.lower()}_{i}()"]
    out.append(exc)
    return out


def _alternate(a: list[str], b: list[str], a_first: bool) -> list[str]:
    out = []
    x, y = (a, b) if a_first else (b, a)
    for k in range(max(len(x), len(y))):
        out += x[k : k + 1] + y[k : k + 1]
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.booleans(),
    st.sampled_from(["torch.OutOfMemoryError: CUDA out of memory", "RuntimeError: NCCL error"]),
)
def test_interleaved_sglang_tracebacks_line_by_line(d0, d1, a_first, exc):
    """SGLang: only each traceback's first line has a rank prefix; two ranks interleaved line by line."""
    lines = _alternate(_traceback("TP0", exc, d0), _traceback("TP1", exc, d1), a_first)
    _check(lines, exc, d0, d1)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.lists(st.booleans(), min_size=60, max_size=60),
    st.sampled_from(["torch.OutOfMemoryError: CUDA out of memory", "RuntimeError: NCCL error"]),
)
def test_interleaved_vllm_tracebacks_any_order(d0, d1, picks, exc):
    """vLLM: every line carries its process prefix; any interleaving is reassembled intact."""
    pre = {
        r: f"(Worker_{r} pid={9 + k}) ERROR 05-22 10:38:43 [multiproc_executor.py:7] "
        for k, r in enumerate(("TP0", "TP1"))
    }
    a = [pre["TP0"] + l.split("] ", 1)[-1] if l.startswith("[") else pre["TP0"] + l for l in _traceback("TP0", exc, d0)]
    b = [pre["TP1"] + l.split("] ", 1)[-1] if l.startswith("[") else pre["TP1"] + l for l in _traceback("TP1", exc, d1)]
    lines, i, j = [], 0, 0
    for p in picks:
        if p and i < len(a):
            lines.append(a[i])
            i += 1
        elif j < len(b):
            lines.append(b[j])
            j += 1
    lines += a[i:] + b[j:]
    _check(lines, exc, d0, d1)


def _check(lines, exc, d0, d1):
    blocks = assemble(read_lines(lines).records)
    by_rank = {blk.rank: blk for blk in blocks}
    assert set(by_rank) == {"TP0", "TP1"}
    for rank, depth in (("TP0", d0), ("TP1", d1)):
        sec = by_rank[rank].sections[0]
        assert [f.func for f in sec.frames] == [f"f{k}" for k in range(depth)]
        assert all(f.file.startswith(f"/sgl/{rank.lower()}_") for f in sec.frames)
        assert sec.exc_type == exc.split(":")[0]
