"""One test per input format, on fixtures/journals/formats/* (made by tools/make_format_fixtures.py): each format
must yield the same service messages, ranks, the reassembled traceback, and honest line accounting."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from logdoctor.core.records import KERNEL, META, SERVICE, SYSTEMD
from logdoctor.input.read import read_bytes
from logdoctor.timeline.blocks import assemble

ROOT = Path(__file__).resolve().parent.parent
FX = ROOT / "fixtures" / "journals" / "formats"
sys.path.insert(0, str(ROOT / "tools"))
import make_format_fixtures as mff  # noqa: E402


def expected_service_msgs() -> list[str]:
    from logdoctor.engines.prefixes import split_prefix
    from logdoctor.input.formats.clean import clean

    return [split_prefix(clean(l)[0]).body for _, l in mff.service_lines()]


def read(name: str):
    return read_bytes((FX / name).read_bytes(), name, year=2026)


JOURNAL_TEXT = {
    "short.log": "journal-short",
    "short-precise.log": "journal-short-precise",
    "short-iso.log": "journal-short-iso",
    "short-iso-precise.log": "journal-short-iso-precise",
    "short-full.log": "journal-short-full",
    "with-unit.log": "journal-with-unit",
    "short-monotonic.log": "journal-short-monotonic",
    "short-unix.log": "journal-short-unix",
}
ALL = list(JOURNAL_TEXT) + [
    "short-boots.log",
    "json.log",
    "cat.log",
    "raw.log",
    "docker.log",
    "docker-t.log",
    "kubectl.log",
    "compose.log",
]


def test_fixtures_are_current(tmp_path, monkeypatch):
    monkeypatch.setattr(mff, "OUT", tmp_path)
    mff.main()
    for f in tmp_path.iterdir():
        assert f.read_bytes() == (FX / f.name).read_bytes(), f"{f.name}: rerun tools/make_format_fixtures.py"


@pytest.mark.parametrize("name", ALL)
def test_messages_ranks_and_accounting(name):
    res = read(name)
    st = res.stats
    assert st.read == st.parsed + st.unparsed
    assert st.unparsed == 0
    svc = [r for r in res.records if r.transport == SERVICE]
    assert [r.msg for r in svc] == expected_service_msgs()
    # every line of the TP1 traceback is attributed to TP1 (only its first line carries the prefix)
    tb = [r for r in svc if r.line >= next(x.line for x in svc if "Scheduler hit an exception" in x.msg)]
    assert all(r.rank == "TP1" for r in tb[:-1]), [(r.line, r.rank) for r in tb]
    assert "Loading safetensors checkpoint shards: 100%" in " ".join(r.msg for r in svc)
    assert not any("\x1b" in r.msg for r in res.records)


@pytest.mark.parametrize("name", ALL)
def test_traceback_reassembled(name):
    res = read(name)
    blocks = [b for b in assemble(res.records) if b.kind == "traceback"]
    assert len(blocks) == 1
    b = blocks[0]
    assert b.rank == "TP1"
    assert b.header == "Scheduler hit an exception:"
    assert [s.exc_type for s in b.sections] == ["torch.AcceleratorError", "Exception"]
    assert b.sections[1].link == "cause"
    assert b.sections[0].frames[0].func == "capture"
    assert b.sections[1].exc_msg.startswith("Capture cuda graph failed: CUDA error: operation not permitted")
    assert len(b.sections[1].hints) == 4


@pytest.mark.parametrize("name,fmt", sorted(JOURNAL_TEXT.items()))
def test_journal_text_headers(name, fmt):
    res = read(name)
    first = res.records[0]
    assert first.fmt == fmt
    assert first.host == "gpu-node-7"
    assert first.transport == SYSTEMD
    svc = [r for r in res.records if r.transport == SERVICE]
    assert all(r.pid == 41877 for r in svc)
    kernel = [r for r in res.records if r.transport == KERNEL]
    assert len(kernel) == 1 and kernel[0].msg.startswith("NVRM: Xid")
    if fmt != "journal-short-monotonic":
        assert svc[0].ts is not None and svc[0].ts.year == 2026 and svc[0].ts.month == 5
    cont = [r for r in svc if r.continuation]
    assert len(cont) == 15  # the traceback's 16 lines: 1 header + 15 continuations


def test_journal_meta_lines_are_kept_and_skipped():
    res = read("short-boots.log")
    meta = [r for r in res.records if r.transport == META]
    assert [m.msg[:8] for m in meta] == ["-- Journa", "-- Boot "][:2] or len(meta) == 2
    assert meta[1].extra["_BOOT_ID"] == "0f3c8c2be49d4d1c9bd5b0c43f7c2a11"
    assert res.stats.skipped >= 2


def test_json_byte_arrays_and_multiline():
    res = read("json.log")
    assert res.stats.formats == {"journal-json": len(mff.ENTRIES)}
    warn = [r for r in res.records if "Attention backend not specified" in r.msg]
    assert warn and warn[0].priority == 4  # MESSAGE came as an array of byte ints with ESC codes
    sd = [r for r in res.records if r.transport == SYSTEMD]
    assert sd[-1].unit == "sglang-qwen.service"
    # a multi-line MESSAGE becomes one record per line, all pointing at the same input line
    tb = [r for r in res.records if r.line == res.records[-5].line]
    assert len(tb) >= 16


def test_container_formats_timestamps_and_names():
    t = read("docker-t.log").records[0]
    assert t.fmt == "docker-timestamps" and t.ts.year == 2026 and t.ts.microsecond == 320000
    c = read("compose.log").records[0]
    assert c.fmt == "docker-compose" and c.ident == "sglang-1"


def test_mixture_of_formats():
    res = read("mixed.log")
    assert [r.fmt for r in res.records] == ["journal-short", "docker-timestamps", "raw"]


def test_vllm_prefixes_give_every_line_a_process():
    text = (
        "(APIServer pid=5100) INFO 05-22 16:00:00 [startup.py:112] vLLM server version 0.33.0, serving model m\n"
        "(EngineCore_DP0 pid=5273) INFO 05-22 16:00:15 [parallel_state.py:1321] world_size=2 rank=0\n"
        "(Worker_TP1 pid=5301) ERROR 05-22 16:00:21 [multiproc_executor.py:7] Traceback (most recent call last):\n"
        "(Worker_TP0 pid=5300) ERROR 05-22 16:00:21 [multiproc_executor.py:7] Traceback (most recent call last):\n"
        '(Worker_TP1 pid=5301) ERROR 05-22 16:00:21 [multiproc_executor.py:7]   File "/v/gpu_worker.py", line 3, in load_model\n'
        '(Worker_TP0 pid=5300) ERROR 05-22 16:00:21 [multiproc_executor.py:7]   File "/v/gpu_worker.py", line 3, in load_model\n'
        "(Worker_TP0 pid=5300) ERROR 05-22 16:00:21 [multiproc_executor.py:7] torch.OutOfMemoryError: CUDA out of memory.\n"
        "(Worker_TP1 pid=5301) ERROR 05-22 16:00:21 [multiproc_executor.py:7] torch.OutOfMemoryError: CUDA out of memory.\n"
        "(VllmWorker rank=1 pid=77) INFO 05-22 16:00:22 [x.py:1] old style\n"
        "(APIServer) (EngineCore_0) (VllmWorker TP0) nested\n"
        "[rank0]: torch prefixed\n"
    )
    res = read_bytes(text.encode())
    r = res.records
    assert (r[0].proc, r[0].level, r[0].src) == ("APIServer", "INFO", "startup.py:112")
    assert r[1].proc == "EngineCore_DP0"
    assert r[2].rank == "TP1" and r[3].rank == "TP0"
    assert r[8].rank == "TP1" and r[9].rank == "TP0" and r[10].rank == "rank0"
    blocks = assemble(r)
    assert sorted(b.rank for b in blocks) == ["TP0", "TP1"]
    assert all(
        b.sections[0].exc_type == "torch.OutOfMemoryError" and b.sections[0].frames[0].func == "load_model"
        for b in blocks
    )
