"""Render one realistic start-up (SGLang TP2, ranks interleaved, a tqdm bar, colour codes, a chained traceback
printed as one multi-line record, systemd and kernel lines) into every text format logdoctor reads, so
tests/test_formats.py can check that each format yields the same messages.

    python tools/make_format_fixtures.py      # rewrites fixtures/journals/formats/*.log
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "journals" / "formats"
T0 = datetime(2026, 5, 22, 10, 38, 40, 120000, tzinfo=UTC)
HOST, UNIT, PID = "gpu-node-7", "sglang-qwen.service", 41877
TB = (
    "[2026-05-22 10:39:31 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/opt/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 391, in capture\n'
    "    self.capture_one_batch_size(bs, forward)\n"
    "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing\n"
    "\n"
    "The above exception was the direct cause of the following exception:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2510, in run_scheduler_process\n'
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)\n"
    "Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream is capturing\n"
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)"
)
# (seconds, identifier, pid, priority, transport, message)
ENTRIES = [
    (0.0, "systemd", 1, 6, "journal", "Started sglang-qwen.service - SGLang Qwen3 server."),
    (
        1.2,
        "python3",
        PID,
        6,
        "stdout",
        "[2026-05-22 10:38:41] server_args=ServerArgs(model_path='/models/Qwen3-32B', tp_size=2, mem_fraction_static=0.88, context_length=32768, disable_cuda_graph=False, cuda_graph_max_bs=32, port=30000)",
    ),
    (
        1.3,
        "python3",
        PID,
        4,
        "stdout",
        "\x1b[33m[2026-05-22 10:38:41] Attention backend not specified. Use fa3 backend by default.\x1b[0m",
    ),
    (6.0, "python3", PID, 6, "stdout", "[2026-05-22 10:38:46 TP0] Init torch distributed begin."),
    (6.0, "python3", PID, 6, "stdout", "[2026-05-22 10:38:46 TP1] Init torch distributed begin."),
    (
        7.1,
        "python3",
        PID,
        6,
        "stdout",
        "[2026-05-22 10:38:47 TP1] Init torch distributed ends. elapsed=1.05 s, mem usage=0.76 GB",
    ),
    (
        7.1,
        "python3",
        PID,
        6,
        "stdout",
        "[2026-05-22 10:38:47 TP0] Init torch distributed ends. elapsed=1.06 s, mem usage=0.76 GB",
    ),
    (7.5, "python3", PID, 6, "stdout", "[2026-05-22 10:38:47 TP0] Load weight begin. avail mem=78.43 GB"),
    (7.5, "python3", PID, 6, "stdout", "[2026-05-22 10:38:47 TP1] Load weight begin. avail mem=78.43 GB"),
    (
        9.0,
        "python3",
        PID,
        6,
        "stdout",
        "Loading safetensors checkpoint shards:   0% Completed | 0/17 [00:00<?, ?it/s]\rLoading safetensors checkpoint shards:  47% Completed | 8/17 [00:04<00:05,  1.71it/s]\rLoading safetensors checkpoint shards: 100% Completed | 17/17 [00:09<00:00,  1.80it/s]",
    ),
    (
        19.4,
        "python3",
        PID,
        6,
        "stdout",
        "[2026-05-22 10:38:59 TP1] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=47.61 GB, mem usage=30.82 GB.",
    ),
    (
        19.4,
        "python3",
        PID,
        6,
        "stdout",
        "[2026-05-22 10:38:59 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=47.61 GB, mem usage=30.82 GB.",
    ),
    (
        20.0,
        "python3",
        PID,
        6,
        "stdout",
        "[2026-05-22 10:39:00 TP0] KV Cache is allocated. #tokens: 402654, K size: 18.43 GB, V size: 18.43 GB",
    ),
    (
        20.0,
        "python3",
        PID,
        6,
        "stdout",
        "[2026-05-22 10:39:00 TP1] KV Cache is allocated. #tokens: 402654, K size: 18.43 GB, V size: 18.43 GB",
    ),
    (20.1, "python3", PID, 6, "stdout", "[2026-05-22 10:39:00 TP0] Memory pool end. avail mem=9.95 GB"),
    (20.1, "python3", PID, 6, "stdout", "[2026-05-22 10:39:00 TP1] Memory pool end. avail mem=9.95 GB"),
    (
        21.0,
        "python3",
        PID,
        6,
        "stdout",
        "[2026-05-22 10:39:01 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=9.31 GB",
    ),
    (
        21.0,
        "python3",
        PID,
        6,
        "stdout",
        "[2026-05-22 10:39:01 TP1] Capture cuda graph begin. This can take up to several minutes. avail mem=9.31 GB",
    ),
    (51.3, "python3", PID, 3, "stdout", TB),
    (
        51.5,
        "python3",
        PID,
        3,
        "stdout",
        "[2026-05-22 10:39:31] Received sigquit from a child process. It usually means the child failed.",
    ),
    (
        51.6,
        "kernel",
        None,
        4,
        "kernel",
        "NVRM: Xid (PCI:0000:1b:00): 13, pid=41902, name=python3, Graphics Exception: ESR 0x514648=0x1000f 0x514650=0x0",
    ),
    (52.0, "systemd", 1, 5, "journal", "sglang-qwen.service: Main process exited, code=killed, status=9/KILL"),
    (52.0, "systemd", 1, 4, "journal", "sglang-qwen.service: Failed with result 'signal'."),
]


def _ts(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def _prefix(fmt: str, s: float, ident: str, pid) -> str:
    t = _ts(s)
    who = f"{ident}[{pid}]" if pid else ident
    if fmt == "short":
        return f"{t:%b %d %H:%M:%S} {HOST} {who}: "
    if fmt == "short-precise":
        return f"{t:%b %d %H:%M:%S}.{t.microsecond:06d} {HOST} {who}: "
    if fmt == "short-iso":
        return f"{t:%Y-%m-%dT%H:%M:%S}+0000 {HOST} {who}: "
    if fmt == "short-iso-precise":
        return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}+0000 {HOST} {who}: "
    if fmt == "short-full":
        return f"{t:%a %Y-%m-%d %H:%M:%S} UTC {HOST} {who}: "
    if fmt == "with-unit":
        u = UNIT if ident == "python3" else ("init.scope" if ident == "systemd" else "kernel")
        return (
            f"{t:%a %Y-%m-%d %H:%M:%S} UTC {HOST} {u}[{pid}]: " if pid else f"{t:%a %Y-%m-%d %H:%M:%S} UTC {HOST} {u}: "
        )
    if fmt == "short-monotonic":
        return f"[{s + 812.5:12.6f}] {HOST} {who}: "
    if fmt == "short-unix":
        return f"{t.timestamp():.6f} {HOST} {who}: "
    raise ValueError(fmt)


def short_like(fmt: str) -> str:
    out = []
    for s, ident, pid, _prio, _tr, msg in ENTRIES:
        pre = _prefix(fmt, s, ident, pid)
        lines = msg.replace("\x1b[33m", "").replace("\x1b[0m", "").split("\n")  # journalctl strips ESC without -a
        out.append(pre + lines[0].split("\r")[-1] if "\r" in lines[0] else pre + lines[0])
        out += [" " * len(pre) + l for l in lines[1:]]
    return "\n".join(out) + "\n"


def service_lines() -> list[tuple[float, str]]:
    return [(s, l) for s, ident, _p, _pr, _t, msg in ENTRIES if ident == "python3" for l in msg.split("\n")]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for fmt in (
        "short",
        "short-precise",
        "short-iso",
        "short-iso-precise",
        "short-full",
        "with-unit",
        "short-monotonic",
        "short-unix",
    ):
        (OUT / f"{fmt}.log").write_text(short_like(fmt))
    # journalctl -o short with a boot separator and a header, as journalctl -b -1 ... prints across boots
    text = short_like("short").split("\n")
    (OUT / "short-boots.log").write_text(
        "-- Journal begins at Fri 2026-05-22 10:00:00 UTC, ends at Fri 2026-05-22 10:40:00 UTC. --\n"
        + "\n".join(text[:6])
        + "\n-- Boot 0f3c8c2be49d4d1c9bd5b0c43f7c2a11 --\n"
        + "\n".join(text[6:])
    )
    (OUT / "cat.log").write_text("\n".join(l for _, l in service_lines()) + "\n")
    (OUT / "raw.log").write_text("\n".join(l for _, l in service_lines()) + "\n")
    (OUT / "docker.log").write_text("\n".join(l for _, l in service_lines()) + "\n")
    (OUT / "docker-t.log").write_text(
        "\n".join(f"{_ts(s):%Y-%m-%dT%H:%M:%S}.{_ts(s).microsecond:06d}123Z {l}" for s, l in service_lines()) + "\n"
    )
    (OUT / "kubectl.log").write_text(
        "\n".join(f"{_ts(s):%Y-%m-%dT%H:%M:%S}.{_ts(s).microsecond:06d}000Z {l}" for s, l in service_lines()) + "\n"
    )
    (OUT / "compose.log").write_text("\n".join(f"sglang-1  | {l}" for _, l in service_lines()) + "\n")
    js = []
    for i, (s, ident, pid, prio, tr, msg) in enumerate(ENTRIES):
        rec = {
            "__CURSOR": f"s=0f3c;i={i:x}",
            "__REALTIME_TIMESTAMP": str(int(_ts(s).timestamp() * 1e6)),
            "__MONOTONIC_TIMESTAMP": str(int((s + 812.5) * 1e6)),
            "_BOOT_ID": "0f3c8c2be49d4d1c9bd5b0c43f7c2a11",
            "PRIORITY": str(prio),
            "_TRANSPORT": tr,
            "_HOSTNAME": HOST,
            "SYSLOG_IDENTIFIER": ident,
        }
        if pid:
            rec["_PID"] = str(pid)
        if ident == "python3":
            rec["_SYSTEMD_UNIT"] = UNIT
            rec["_COMM"] = "python3"
        elif ident == "systemd":
            rec["UNIT"] = UNIT
        value: object = msg
        if "\x1b" in msg or "\t" in msg:
            value = list(msg.encode())  # journalctl prints such a MESSAGE as an array of byte ints
        rec["MESSAGE"] = value
        keys = list(rec)
        keys = keys[i % len(keys) :] + keys[: i % len(keys)]  # key order differs per entry
        js.append(json.dumps({k: rec[k] for k in keys}))
    (OUT / "json.log").write_text("\n".join(js) + "\n")
    (OUT / "mixed.log").write_text(
        short_like("short").split("\n", 8)[8].split("\n", 6)[0]
        + "\n"
        + (OUT / "docker-t.log").read_text().split("\n", 3)[0]
        + "\n"
        + "plain engine stdout line\n"
    )


if __name__ == "__main__":
    main()
