"""Attempt boundaries in triage's scanner are config dumps where the core reader sees them, in wrapped logs too.

Regression (issue 13 after issue 10): a two-rank SGLang crash whose traceback calls
`_launch_subprocesses(server_args=server_args)` was cut into three "attempts" by the scanner (the prefilter finds
`server_args=` anywhere on a line), so triage diagnosed a truncated traceback as `unknown`. Every process-manager
prefix of logdoctor/input/formats/wrappers.py is checked, on the same crash re-wrapped, against `diagnose`.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

import logdoctor  # noqa: E402
from logdoctor.scan.boundary import BoundaryCheck  # noqa: E402
from logdoctor.scan.prefilter import shared as _prefilter  # noqa: E402
from logdoctor.scan.scan import scan  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SRUN = ROOT / "fixtures" / "journals" / "rt10-a20-prefix-srun" / "journal.log"

# rank n → the prefix each process manager writes (formats as in the rt10-a17..a23 fixtures)
WRAPPERS = {
    "none": lambda n: "",
    "srun": lambda n: f"{n}: ",
    "ray": lambda n: f"(SchedulerProcess pid={4100 + n}, ip=10.0.0.{n + 2}) ",
    "torchrun": lambda n: f"[default{n}]:",
    "mpirun": lambda n: f"[1,{n}]<stderr>:",
    "kubectl": lambda n: f"[pod/sglang-qwen-{n}/sglang] ",
    "compose": lambda n: f"sglang-{n + 1}  | ",
}


def _ranked_lines() -> list[tuple[int, str]]:
    """The srun fixture as (rank, unwrapped line); srun's own closing lines keep rank -1 (no prefix)."""
    out = []
    for line in SRUN.read_text().splitlines():
        m = re.match(r"^(\d): ?(.*)$", line)
        out.append((int(m.group(1)), m.group(2)) if m else (-1, line))
    return out


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_wrapped_two_rank_crash_is_one_attempt_like_diagnose(tmp_path, wrapper):
    wrap = WRAPPERS[wrapper]
    text = "".join((wrap(n) if n >= 0 else "") + body + "\n" for n, body in _ranked_lines())
    assert text.count("server_args=") >= 4  # two config dumps and two traceback calls
    log = tmp_path / f"{wrapper}.log"
    log.write_text(text)
    segs = list(scan(io.BytesIO(text.encode()), _prefilter()))
    assert len(segs) == 1, [s.first_line for s in segs]
    d = logdoctor.diagnose(log)
    assert d.failed and d.cause != "unknown"
    df = logdoctor.triage([str(log)], jobs=1)
    assert len(df) == len(d.attempts) == 1
    row = df.iloc[0]
    assert (row["outcome"], row["cause"], row["rule"], row["phase"]) == ("failed", d.cause, d.rule, d.phase)


def test_boundary_check_reads_the_logs_own_prefixes():
    sample = b"".join(f"{n}: INFO starting worker {n}\n".encode() for n in (0, 1, 0, 1, 0))
    check = BoundaryCheck(sample)
    assert check.is_config(b"1: [2026-11-22 14:45:03] server_args=ServerArgs(model_path='/m', tp_size=8)")
    assert not check.is_config(b"0:     tokenizer_manager = _launch_subprocesses(server_args=server_args)")
    assert check.is_config(b"INFO 11-23 08:15:34 [utils.py:233] non-default args: {'model': 'x'}")
    assert not BoundaryCheck(b"").is_config(b"    launch(server_args=args)")


def test_healthy_selection_keeps_a_progress_bar_once_not_per_update():
    from logdoctor.scan.scan import _thin_bars

    bar = [
        (
            10 + i,
            f"[TP0] Capturing batches (bs={i} avail_mem=70.{i} GB): {' ' * (i < 10)}{i * 10}%|{'#' * i}| {i}/10".encode(),
        )
        for i in range(11)
    ]
    other = [(30, b"[TP0] Load weight end. elapsed=3.2 s"), (31, b"[TP1] Load weight end. elapsed=3.3 s")]
    other_bar = [
        (40, b"Capturing CUDA graphs (decode, FULL):  50%|#####     | 5/10"),
        (41, b"Capturing CUDA graphs (decode, FULL): 100%|##########| 10/10"),
    ]
    got = _thin_bars(bar + other + other_bar)
    assert got == [bar[0], bar[-1]] + other + other_bar
    assert _thin_bars(other) == other


def test_a_crash_keeps_its_own_engine_after_attempts_of_another(tmp_path):
    """Context attempts (for cross-attempt rules) never outvote the failing attempt's own engine."""
    fx = ROOT / "fixtures" / "journals"
    healthy = (fx / "vllm-healthy-llama8b" / "journal.log").read_text()
    crash = fx / "sglang-activation_oom-warmup-mem095" / "journal.log"
    log = tmp_path / "switched-engine.log"
    log.write_text(healthy * 3 + crash.read_text())
    d = logdoctor.diagnose(crash)
    df = logdoctor.triage([str(log)], jobs=1).sort_values("attempt")
    assert list(df["engine"]) == ["vllm"] * 3 + ["sglang"]
    last = df.iloc[-1]
    assert (last["outcome"], last["cause"], last["rule"] if isinstance(last["rule"], str) else None) == (
        "failed",
        d.cause,
        d.rule,
    )


def test_boundary_answers_kept_by_line_shape_not_by_first_answer():
    """The check keeps its answer per line shape (digits as 0, up to the dump words): the same dump at another time
    and rank is a boundary; a message that only mentions server_args= later on its line is not, whatever was asked
    before; and a traceback's keyword argument is not."""
    head = "".join(
        f"May 23 10:00:0{i} gpu1 python3[2314]: [2026-05-23 10:00:0{i}] INFO loading step {i}\n" for i in range(5)
    ).encode()
    check = BoundaryCheck(head)
    dump = (
        b"May 23 10:00:05 gpu1 python3[2314]: [2026-05-23 10:00:05] server_args=ServerArgs(model_path='m', tp_size=2)"
    )
    later = (
        b"May 23 11:42:17 gpu1 python3[9921]: [2026-05-23 11:42:17] server_args=ServerArgs(model_path='m', tp_size=4)"
    )
    prose = b"May 23 11:42:18 gpu1 python3[9921]: [2026-05-23 11:42:18] INFO restarting with server_args=ServerArgs(x)"
    call = b"May 23 11:42:19 gpu1 python3[9921]:     launch_server(server_args=server_args)"
    assert check.is_config(dump)
    assert check.is_config(later)
    assert not check.is_config(prose)
    assert not check.is_config(call)
    assert check.is_config(dump)  # asked again after the others
