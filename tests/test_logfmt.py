"""logfmt exports (Grafana/Loki, Vector, many agents): `ts=… level=… container=… msg="…"` lines whose `msg` holds the
line the engine wrote, quoted, with its newlines escaped. Found by a red-team log that read "OK, no failure" (exit 0)
for a dead deployment; the lines here are generated, not that log."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from logdoctor import diagnose
from logdoctor.input.formats import logfmt


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _line(sec: int, msg: str, container: str = "engine") -> str:
    return f"ts=2026-06-01T08:00:{sec:02d}.000Z level=info app=llm container={container} stream=stderr msg={_q(msg)}"


def _export(newest_first: bool) -> str:
    sg = "[2026-06-01 08:00:{s:02d}{r}] "
    body = [
        sg.format(s=1, r="") + "server_args=ServerArgs(model_path='/m/q', tp_size=2, mem_fraction_static=0.85)",
        sg.format(s=3, r=" TP0") + "Init torch distributed begin.",
        sg.format(s=3, r=" TP1") + "Init torch distributed begin.",
        "node-a:41:41 [1] include/shm.h:28 NCCL WARN Error: failed to extend /dev/shm/nccl-Xy12 to 9637892 bytes",
        sg.format(s=5, r=" TP1")
        + "Scheduler hit an exception: Traceback (most recent call last):\n"
        + '  File "/usr/lib/python3/dist-packages/sglang/srt/distributed/parallel_state.py", line 236, in __init__\n'
        + "    self.pynccl_comm = PyNcclCommunicator(\n"
        + "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    ]
    rows = [_line(i + 1, m) for i, m in enumerate(body)]
    rows.append(_line(9, "Essential container in task exited (engine: exit code 137)", container="agent"))
    if newest_first:
        rows.reverse()
    return "# an export header the shipper wrote\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize("newest_first", [False, True])
def test_a_logfmt_export_is_read_through_its_msg_field(tmp_path, newest_first):
    p = tmp_path / "export.log"
    p.write_text(_export(newest_first))
    d = diagnose(p)
    assert d.failed and d.cause == "distributed_init" and d.phase == "dist_init", (d.cause, d.phase)
    out = subprocess.run(
        [sys.executable, "-m", "logdoctor", "explain", "--no-history", "--format", "json", str(p)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1 and json.loads(out.stdout)["cause"] == "distributed_init"


def test_escapes_and_multi_line_messages():
    f = logfmt.parse_line(r'time=2026-06-01T08:00:01Z lvl=warn message="a \"q\" and a\nsecond line \\ end" k=')
    assert f is not None and f["message"] == 'a "q" and a\nsecond line \\ end' and f["k"] == ""
    assert logfmt.outer(f).msg.split("\n") == ['a "q" and a', "second line \\ end"]


@pytest.mark.parametrize(
    "line",
    [
        "server_args=ServerArgs(model_path='/m/q', tp_size=2, log_level='info')",  # k=v fields, no time or level
        "msg=hello",  # a message and nothing else
        'ts=1 level=info msg="unterminated',  # not key=value to the end
        "Decode batch. #running-req: 3, token usage=0.02 msg=x",  # prose with pairs in it
        "level=info note=no-message-key",
    ],
)
def test_lines_that_are_not_logfmt(line):
    assert logfmt.parse_line(line) is None
