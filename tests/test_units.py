"""Which unit is the engine (timeline/units.py), the one home explain and triage both read: a generated journal of
three services (an SGLang unit named after its engine, a vLLM unit whose name says nothing, an unrelated backup job)
as `journalctl -o json`, export and `-o short` text. Explain reads the part `units.pick` gives, triage one row set
per engine part, and the two agree on every part."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from journal_export import write_export  # tests/journal_export.py (conftest puts tests/ on the path)

import logdoctor
from logdoctor.input.read import read_bytes
from logdoctor.timeline import units

pd = pytest.importorskip("pandas")

from logdoctor.triage import run  # noqa: E402

T0 = datetime(2026, 3, 14, 9, 30, 0, tzinfo=UTC)
HOST = "gpu-b7"
SG, VL, BK = "sglang-chat.service", "model-b.service", "nightly-backup.service"


def _sglang() -> list[str]:
    ts = "[2026-03-14 09:30:{:02d}{}] "
    return [
        ts.format(1, "") + "server_args=ServerArgs(model_path='/srv/models/q', tp_size=1, mem_fraction_static=0.93, "
        "context_length=None, port=30010, cuda_graph_max_bs=160)",
        ts.format(3, " TP0") + "Load weight begin. avail mem=78.61 GB",
        ts.format(9, " TP0") + "Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=62.02 GB, "
        "mem usage=16.59 GB.",
        ts.format(10, " TP0") + "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 2871, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ]


def _vllm() -> list[str]:
    return [
        "INFO 03-14 09:30:02 [api_server.py:1896] vLLM API server version 0.10.1",
        "INFO 03-14 09:30:02 [utils.py:326] non-default args: {'model': '/srv/models/m', 'port': 8011, "
        "'gpu_memory_utilization': 0.95}",
        "INFO 03-14 09:30:20 [gpu_model_runner.py:1953] Model loading took 14.9 GiB and 12.1 seconds",
        "INFO 03-14 09:30:31 [core.py:214] init engine (profile, create kv cache, warmup model) took 9.8 seconds",
        "INFO 03-14 09:30:33 [api_server.py:1971] Starting vLLM API server 0 on http://0.0.0.0:8011",
        "INFO:     Application startup complete.",
    ]


def _backup() -> list[str]:
    return [
        "sending incremental file list",
        'rsync: [sender] send_files failed to open "/srv/cache/tmp.lock": Permission denied (13)',
        "rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1338)",
    ]


def _entries() -> list[dict]:
    """Interleaved entries of the three units, with systemd's own lines about each."""
    out: list[dict] = []

    def add(unit: str | None, ident: str, pid: int, msg: str, transport: str = "stdout") -> None:
        e = {
            "__REALTIME_TIMESTAMP": str(int((T0 + timedelta(milliseconds=250 * len(out))).timestamp() * 1e6)),
            "_BOOT_ID": "5f1c0e2a9b8d4c7e8a1b2c3d4e5f6a7b",
            "_HOSTNAME": HOST,
            "SYSLOG_IDENTIFIER": ident,
            "_PID": str(pid),
            "_TRANSPORT": transport,
            "PRIORITY": "6",
            "MESSAGE": msg,
        }
        if pid == 1:
            e["UNIT"] = unit
        elif unit:
            e["_SYSTEMD_UNIT"] = unit
        out.append(e)

    for unit, desc in ((SG, "SGLang chat"), (VL, "Model B"), (BK, "Nightly backup")):
        add(unit, "systemd", 1, f"Started {unit} - {desc}.", "journal")
    sg, vl, bk = _sglang(), _vllm(), _backup()
    for i in range(max(map(len, (sg, vl, bk)))):
        if i < len(vl):
            add(VL, "vllm", 4120, vl[i])
        if i < len(sg):
            add(SG, "python3", 3301, sg[i])
        if i < len(bk):
            add(BK, "rsync", 5502, bk[i])
    add(SG, "systemd", 1, f"{SG}: Main process exited, code=exited, status=1/FAILURE", "journal")
    add(SG, "systemd", 1, f"{SG}: Failed with result 'exit-code'.", "journal")
    add(BK, "systemd", 1, f"{BK}: Main process exited, code=exited, status=23/n/a", "journal")
    return out


def _short(entries: list[dict]) -> str:
    lines = []
    for e in entries:
        ts = datetime.fromtimestamp(int(e["__REALTIME_TIMESTAMP"]) / 1e6, tz=UTC).strftime("%b %d %H:%M:%S")
        for k, part in enumerate(e["MESSAGE"].split("\n")):
            lines.append(f"{ts} {HOST} {e['SYSLOG_IDENTIFIER']}[{e['_PID']}]: {part}" if not k else f"    {part}")
    return "\n".join(lines) + "\n"


def _write(tmp_path: Path, fmt: str, entries: list[dict]) -> Path:
    p = tmp_path / f"journal-{fmt}.log"
    if fmt == "json":
        p.write_text("".join(json.dumps(e) + "\n" for e in entries))
    elif fmt == "export":
        p.write_bytes(write_export(entries))
    else:
        p.write_text(_short(entries))
    return p


def _triage(path: Path):
    df = run([str(path)], jobs=1).frame
    return df[df["status"].isin(["diagnosed", "healthy"])].sort_values("attempt")


def _agrees(d, rows) -> list[str]:
    """Triage's rows of one part against explain's Diagnosis of the same part: [] when they are one."""
    if list(rows["attempt"]) != list(range(1, len(d.attempts) + 1)):  # numbered per unit, as explain numbers them
        return [f"rows numbered {list(rows['attempt'])}, {len(d.attempts)} attempts"]
    out = [
        f"attempt {i + 1}: {o} / {a['outcome']}"
        for i, (o, a) in enumerate(zip(rows["outcome"], d.attempts, strict=True))
        if o != a["outcome"]
    ]
    v = rows.iloc[d.attempt_index]
    if (v["outcome"] == "failed", v["phase"], v["cause"] if d.failed else None) != (
        d.failed,
        d.phase,
        d.cause if d.failed else None,
    ):
        out.append(f"verdict: {(v['outcome'], v['phase'], v['cause'])} / {(d.failed, d.phase, d.cause)}")
    return out


@pytest.mark.parametrize("fmt", ["json", "export"])
def test_parts_and_which_are_engines(tmp_path, fmt):
    recs = read_bytes(_write(tmp_path, fmt, _entries()).read_bytes()).records
    parts = {p.unit: p for p in units.partition(recs)}
    assert set(parts) == {SG, VL, BK}
    # SGLang by its unit's name; vLLM by its own lines (the name says nothing); rsync is no engine
    assert (parts[SG].engine, parts[VL].engine, parts[BK].engine) == (True, True, False)
    assert [p.unit for p in units.engine_parts(recs)] == sorted([SG, VL])
    assert units.pick(recs).unit in (SG, VL)
    # a part holds its unit's lines and systemd's lines about it, never another unit's
    for u, p in parts.items():
        assert all(r.unit == u for r in p.records if r.unit)


@pytest.mark.parametrize("fmt", ["json", "export"])
def test_explain_and_triage_agree_on_every_engine_unit(tmp_path, fmt):
    entries = _entries()
    path = _write(tmp_path, fmt, entries)
    rows = _triage(path)
    assert set(rows["unit"]) == {SG, VL}  # the backup job is no engine: no row
    picked = units.pick(read_bytes(path.read_bytes()).records).unit
    problems = [
        f"{picked} (whole journal): {p}" for p in _agrees(logdoctor.diagnose(path), rows[rows["unit"] == picked])
    ]
    # every engine part alone (its unit's entries and systemd's about it) reads as triage's rows of that unit
    for u in (SG, VL):
        own = [e for e in entries if u in (e.get("_SYSTEMD_UNIT"), e.get("UNIT"))]
        (tmp_path / u).mkdir()
        alone = _write(tmp_path / u, fmt, own)
        problems += [f"{u}: {p}" for p in _agrees(logdoctor.diagnose(alone), rows[rows["unit"] == u])]
    assert not problems, problems
    sg = rows[rows["unit"] == SG].iloc[-1]
    vl = rows[rows["unit"] == VL].iloc[-1]
    assert (sg["outcome"], sg["engine"], vl["outcome"], vl["engine"]) == ("failed", "sglang", "ready", "vllm")


def test_short_format_agrees_and_names_the_unit(tmp_path):
    """`journalctl -o short` carries no unit field: one part for explain and triage alike, and triage's unit column
    names the unit systemd's lines name rather than a process's identifier."""
    path = _write(tmp_path, "short", [e for e in _entries() if SG in (e.get("_SYSTEMD_UNIT"), e.get("UNIT"))])
    assert len(units.partition(read_bytes(path.read_bytes()).records)) == 1
    rows = _triage(path)
    assert not _agrees(logdoctor.diagnose(path), rows)
    assert set(rows["unit"]) == {SG}
