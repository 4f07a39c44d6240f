"""Generate the benchmark inputs of issue 11 (none are committed: they are large and synthetic).

    python bench/make_inputs.py OUTDIR [--only NAME ...]

Every input is built from the structure of real engine logs (journalctl short format, SGLang prefixes, Python
tracebacks) with varying numbers, so the reader cannot shortcut on repeated identical lines:

  log140.log            the last 140 lines of fixtures/journals/seed-all-attempts (the start-up benchmark)
  tb-5000.log, tb-10000.log, tb-20000.log   SGLang logs dense with (handled) tracebacks, N lines
  tb10k.log             10 000 tracebacks, about 11 MB
  serving-100mb.log     a journal of days of serving (decode/prefill/HTTP lines), then a KV-pool failure, ~96 MB
  multi-20000.log       a 20 000-line journal with several restart attempts (serving, then failures)
  big-350mb.log         about 2 million lines (349 MB): a long serving journal then a failure (--only big)
  paren-a.log           90 lines, one of them "(" + "a_" x 30 + "!" (the exponential prefix case)
  enginecore.log        a realistic "(EngineCore_DP0_pid_95201_worker_proc_local_rank_0_..." line in a log
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "journals" / "seed-all-attempts" / "journal.log"
KV_TAIL = ROOT / "fixtures" / "journals" / "sglang-kv_cache_oom-qwen3-32b-l40s-attempts" / "journal.log"
HOST, PID = "h200-qwen-03", 115949


def _ts(sec: int) -> tuple[str, str]:
    d, rem = divmod(sec, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    day = 10 + d % 18
    return f"May {day} {h:02d}:{m:02d}:{s:02d}", f"2026-05-{day:02d} {h:02d}:{m:02d}:{s:02d}"


def _serving_line(rng: random.Random, sec: int) -> str:
    j, e = _ts(sec)
    k = rng.random()
    pre = f"{j} {HOST} python3[{PID}]: [{e} TP0] "
    if k < 0.45:
        return (
            pre + f"Decode batch. #running-req: {rng.randint(1, 64)}, #token: {rng.randint(100, 90000)}, token usage:"
            f" {rng.random():.2f}, cuda graph: True, gen throughput (token/s): {rng.uniform(200, 4000):.2f}, #queue-req: 0, "
        )
    if k < 0.75:
        return (
            pre + f"Prefill batch. #new-seq: {rng.randint(1, 8)}, #new-token: {rng.randint(10, 8000)}, #cached-token:"
            f" {rng.randint(0, 4000)}, token usage: {rng.random():.2f}, #running-req: {rng.randint(0, 64)}, #queue-req: 0, "
        )
    return (
        f"{j} {HOST} python3[{PID}]: [{e}] INFO:     10.25.{rng.randint(0, 255)}.{rng.randint(1, 254)}:"
        f'{rng.randint(30000, 60000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    )


def _traceback(rng: random.Random, sec: int, depth: int, rank: str = "TP0") -> list[str]:
    j, e = _ts(sec)
    pre = f"{j} {HOST} python3[{PID}]: "
    out = [
        pre
        + f"[{e} {rank}] Exception in callback handle_request({rng.randint(1, 10**6)}): Traceback (most recent call last):"
    ]
    for i in range(depth):
        out.append(
            pre + f'  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/m{i % 7}.py", line '
            f"{rng.randint(10, 3000)}, in step_{i % 5}"
        )
        out.append(pre + f"    result = self.call_{i % 5}(req, {rng.randint(0, 99)})")
    out.append(
        pre + f"ValueError: request {rng.randint(1, 10**9)} has an invalid sampling parameter top_p={rng.random():.3f}"
    )
    return out


def serving_then_kv(path: Path, target_bytes: int, tb_every: int = 0) -> None:
    rng = random.Random(11)
    seed = SEED.read_text().splitlines()
    head = seed[:30]  # a start: systemd Started, server_args, the first phases
    tail = KV_TAIL.read_text().splitlines()
    with path.open("w") as fh:
        for ln in head:
            fh.write(ln + "\n")
        size, sec, n = 0, 3600, 0
        while size < target_bytes:
            line = _serving_line(rng, sec)
            fh.write(line + "\n")
            size += len(line) + 1
            sec += rng.randint(0, 2)
            n += 1
            if tb_every and n % tb_every == 0:
                for t in _traceback(rng, sec, 4):
                    fh.write(t + "\n")
        for ln in tail:
            fh.write(ln + "\n")


def tb_dense(path: Path, lines: int, depth: int = 3) -> None:
    """A server's own stderr (`python -m vllm... 2>&1 | tee server.log`): Python tracebacks without any prefix,
    each followed by a log line, as a request handler that keeps failing prints them. Bare tracebacks are the
    ones whose blocks never closed (issue 11), so this is the shape that was quadratic."""
    rng = random.Random(5)
    out: list[str] = []
    i = 0
    while len(out) < lines:
        out.append("Traceback (most recent call last):")
        for d in range(depth):
            out.append(
                f'  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/m{d}.py", line '
                f"{rng.randint(10, 3000)}, in handler_{d}"
            )
            out.append(f"    await self.call_{d}(request)")
        out.append(f"ValueError: request {rng.randint(1, 10**9)} has an invalid top_p={rng.random():.3f}")
        out.append(f"INFO 05-22 10:{(i // 60) % 60:02d}:{i % 60:02d} [api_server.py:1049] request {i} finished")
        i += 1
    path.write_text("\n".join(out[:lines]) + "\n")


def tb_count(path: Path, count: int, depth: int) -> None:
    """`count` tracebacks back to back, half of them bare (a server's stderr), half inside a journal."""
    rng = random.Random(7)
    with path.open("w") as fh:
        for ln in SEED.read_text().splitlines()[:30]:
            fh.write(ln + "\n")
        for i in range(count):
            tb = _traceback(rng, 7200 + i, depth, rank=f"TP{i % 4}")
            if i % 2:
                tb = ["Traceback (most recent call last):"] + [t.split("]: ", 1)[-1] for t in tb[1:]]
            for t in tb:
                fh.write(t + "\n")


def multi_attempts(path: Path, lines: int) -> None:
    """Restart attempts (the seed story's three) separated by long serving stretches."""
    rng = random.Random(3)
    seed = SEED.read_text().splitlines()
    out: list[str] = []
    sec = 3600
    while len(out) < lines - len(seed):
        out += seed[:60]
        for _ in range(2000):
            out.append(_serving_line(rng, sec))
            sec += 1
    out += seed
    path.write_text("\n".join(out) + "\n")


def paren_a(path: Path) -> None:
    lines = SEED.read_text().splitlines()[-89:]
    j, _ = _ts(100)
    lines.insert(45, f"{j} {HOST} python3[{PID}]: (" + "a_" * 30 + "!")
    path.write_text("\n".join(lines) + "\n")


def enginecore(path: Path) -> None:
    lines = SEED.read_text().splitlines()[-89:]
    j, _ = _ts(100)
    tag = "EngineCore_DP0_pid_95201_worker_proc_local_rank_0_" + "_".join(f"x{i}" for i in range(14))
    lines.insert(
        45, f"{j} {HOST} python3[{PID}]: (" + tag + " INFO 05-22 10:38:43 [core.py:93] Initializing a V1 LLM engine"
    )
    path.write_text("\n".join(lines) + "\n")


def log140(path: Path) -> None:
    path.write_text("\n".join(SEED.read_text().splitlines()[-140:]) + "\n")


MAKERS = {
    "log140.log": log140,
    "tb-5000.log": lambda p: tb_dense(p, 5000),
    "tb-10000.log": lambda p: tb_dense(p, 10000),
    "tb-20000.log": lambda p: tb_dense(p, 20000),
    "tb-40000.log": lambda p: tb_dense(p, 40000),
    "tb10k.log": lambda p: tb_count(p, 10000, 4),
    "serving-100mb.log": lambda p: serving_then_kv(p, 96 * 1024 * 1024, tb_every=5000),
    "serving-50mb.log": lambda p: serving_then_kv(p, 48 * 1024 * 1024, tb_every=5000),
    "multi-20000.log": lambda p: multi_attempts(p, 20000),
    "paren-a.log": paren_a,
    "enginecore.log": enginecore,
    "big-10mb.log": lambda p: serving_then_kv(p, 10 * 1024 * 1024),
    "big-200mb.log": lambda p: serving_then_kv(p, 200 * 1024 * 1024),
    "big-100mb.log": lambda p: serving_then_kv(p, 100 * 1024 * 1024),
    "big-350mb.log": lambda p: serving_then_kv(p, 349 * 1024 * 1024),
}
DEFAULT = [k for k in MAKERS if not k.startswith("big-")]


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    names = argv[argv.index("--only") + 1 :] if "--only" in argv else DEFAULT
    for name in names:
        p = out / name
        if not p.exists():
            MAKERS[name](p)
        print(f"{p}  {p.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
