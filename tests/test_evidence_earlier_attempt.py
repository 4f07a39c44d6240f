"""A verdict that rests on a line of an earlier attempt quotes that line as evidence (red team, issue 20): a GPU
that fell off the bus while serving is still the cause when the restart dies at CUDA init, and the Xid line of the
first attempt is what a reader must see, not a paraphrase of it in the explanation."""

from __future__ import annotations

import json
import subprocess
import sys

from logdoctor import diagnose

H = "Mar 03 11:{m:02d}:{s:02d} gpu-7 llm-server[{pid}]: "


def _journal() -> str:
    rows = ["Mar 03 11:00:00 gpu-7 systemd[1]: Started LLM server."]
    a = H.format(m=0, s=5, pid=700)
    rows += [
        a + "[2026-03-03 11:00:05] server_args=ServerArgs(model_path='/m/q', tp_size=1, mem_fraction_static=0.85)",
        a + "[2026-03-03 11:00:09] Load weight begin. avail mem=78.50 GB",
        a + "[2026-03-03 11:00:40] Load weight end. type=Qwen2ForCausalLM, avail mem=48.1 GB, mem usage=30.4 GB.",
        a + "[2026-03-03 11:00:44] KV Cache is allocated. #tokens: 400000, K size: 9.5 GB, V size: 9.5 GB",
        a + "[2026-03-03 11:00:58] The server is fired up and ready to roll!",
    ]
    for i in range(12):
        rows.append(
            H.format(m=1 + i, s=7, pid=700) + f"[2026-03-03 11:{1 + i:02d}:07] Decode batch. #running-req: "
            f"{4 + i}, #token: {900 + 37 * i}, token usage: 0.02, gen throughput (token/s): 811.20, #queue-req: 0"
        )
    rows += [
        "Mar 03 11:14:02 gpu-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=700, name=python3, GPU has fallen off the bus.",
        H.format(m=14, s=3, pid=700)
        + "[2026-03-03 11:14:03] Scheduler hit an exception: Traceback (most recent call last):",
        H.format(m=14, s=3, pid=700) + "RuntimeError: CUDA error: unspecified launch failure",
        "Mar 03 11:14:04 gpu-7 systemd[1]: llm.service: Main process exited, code=killed, status=9/KILL",
        "Mar 03 11:14:34 gpu-7 systemd[1]: llm.service: Scheduled restart job, restart counter is at 1.",
        "Mar 03 11:14:34 gpu-7 systemd[1]: Started LLM server.",
    ]
    b = H.format(m=14, s=50, pid=812)
    rows += [
        b + "[2026-03-03 11:14:50] server_args=ServerArgs(model_path='/m/q', tp_size=1, mem_fraction_static=0.85)",
        b + "[2026-03-03 11:14:51] Init torch distributed begin.",
        b + "[2026-03-03 11:14:51] Scheduler hit an exception: Traceback (most recent call last):",
        b + "RuntimeError: CUDA error: unknown error",
        "Mar 03 11:14:52 gpu-7 systemd[1]: llm.service: Main process exited, code=exited, status=1/FAILURE",
    ]
    return "\n".join(rows) + "\n"


def test_the_earlier_attempts_xid_line_is_quoted_as_evidence(tmp_path):
    p = tmp_path / "j.log"
    p.write_text(_journal())
    d = diagnose(p)
    assert d.cause == "hardware_fault"
    xid_line = next(i for i, t in enumerate(p.read_text().splitlines(), 1) if "NVRM: Xid" in t)
    assert any(e.line == xid_line and "Xid" in e.text for e in d.evidence), d.evidence
    out = subprocess.run(
        [sys.executable, "-m", "logdoctor", "explain", "--no-history", "--format", "json", str(p)],
        capture_output=True,
        text=True,
        check=False,
    )
    j = json.loads(out.stdout)
    assert any(e["line"] == xid_line for e in j["evidence"]), j["evidence"]
