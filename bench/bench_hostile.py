"""Benchmark: `explain` on hostile input (docs/reliability.md), interleaved with the same journal undamaged, so the
ratio means the same on any machine. Inputs, built in a temporary folder:
  clean     the 89-line kv_cache_oom seed journal
  line50    the same with a 50 MB line of near-misses of every rule regex in the middle (budget: <= 2 s)
  tb50      a traceback whose exception message is that 50 MB line (every error/inner/wrapper leaf sees it)
  bomb      2 MB of gzip expanding to 2 GiB of one line (stops at the 256 MiB cap)
Run: python bench/bench_hostile.py [-n RUNS]   (wall time and peak RSS of the child, median and min-max)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def _inputs(d: Path) -> dict[str, Path]:
    from test_reliability import GOOD, MID, _hostile_unit  # the same hostile line the test uses

    unit = _hostile_unit()
    big = unit * (50_000_000 // len(unit))
    lines = GOOD.split(b"\n")
    out = {"clean": d / "clean.log", "line50": d / "line50.log", "tb50": d / "tb50.log", "bomb": d / "bomb.gz"}
    out["clean"].write_bytes(GOOD)
    out["line50"].write_bytes(b"\n".join(lines[:MID] + [b"[2026-05-22 10:38:43 TP0] " + big] + lines[MID:]))
    tb = [
        b"[2026-05-22 10:38:41 TP0] Load weight begin. avail mem=78.80 GB",
        b"[2026-05-22 10:38:43 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        b'  File "/sgl/x.py", line 3, in f',
        b"    g()",
        b"RuntimeError: " + big,
        b"[2026-05-22 10:38:45] Received sigquit from a child process. It usually means the child failed.",
    ]
    out["tb50"].write_bytes(b"\n".join(tb) + b"\n")
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(out["bomb"], "wb") as fh:
        block = b"A" * (1 << 24)
        for _ in range(128):
            fh.write(c.compress(block))
        fh.write(c.flush())
    return out


def _run(path: Path) -> tuple[float, int]:
    t = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "logdoctor", "explain", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    _, _, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t, ru.ru_maxrss // 1024


def main() -> None:
    if "--make" in sys.argv:  # in a child, so that the parent stays small (a fork starts at the parent's RSS)
        _inputs(Path(sys.argv[sys.argv.index("--make") + 1]))
        return
    runs = int(sys.argv[sys.argv.index("-n") + 1]) if "-n" in sys.argv else 5
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, __file__, "--make", tmp], check=True)
        d = Path(tmp)
        paths = {"clean": d / "clean.log", "line50": d / "line50.log", "tb50": d / "tb50.log", "bomb": d / "bomb.gz"}
        res: dict[str, list[tuple[float, int]]] = {k: [] for k in paths}
        for _ in range(runs):  # interleaved: clean, line50, tb50, bomb, clean, ...
            for k, p in paths.items():
                res[k].append(_run(p))
    base = statistics.median(t for t, _ in res["clean"])
    print(f"runs={runs}  python={sys.version.split()[0]}  cpus={os.cpu_count()}")
    print(f"{'input':<8} {'median':>8} {'min-max':>15} {'ratio':>7} {'peak RSS':>10}")
    for k, v in res.items():
        ts = [t for t, _ in v]
        print(
            f"{k:<8} {statistics.median(ts):7.2f}s {min(ts):6.2f}-{max(ts):5.2f}s {statistics.median(ts) / base:6.2f}x"
            f" {max(r for _, r in v):7d} MB"
        )


if __name__ == "__main__":
    main()
