"""Benchmark `logdoctor explain` end to end, as a user runs it (a fresh process per run, interpreter start
included), against a baseline run side by side, so the figures mean the same on any machine.

    python bench/bench_explain.py [--runs N] [--large-runs N] [--only startup,multi,dense,big] [--md]

Rows (issue 11):
  startup  explain on a 140-line SGLang log vs `python -c pass` of the same venv: A B A B ..., N runs each,
           median and min-max, and the ratio taken pair by pair (median of the per-pair ratios)
  multi    explain on a 20 000-line multi-attempt journal (interleaved with `python -c pass` as well)
  dense    explain on traceback-dense logs of 10 000 and 20 000 lines: wall time and peak RSS per size
  big      explain on 100 MB and 200 MB serving logs that end in a KV-pool failure: wall and peak RSS per size
The last two print the 2n/n ratio of wall time (linear: about 2) and of peak RSS (flat: about 1); big also runs a
bare Python line loop over each file (`for _ in open(f, 'rb'): pass`) and prints explain's ratio to it and its
MB/s (issue 20's targets: ≤ 10× the loop, ≥ 50 MB/s, peak RSS ≤ 200 MB).

Inputs come from bench/make_inputs.py (generated into bench/.inputs, not committed). Bytecode is compiled first
(`compileall`), since a pip-installed package has it and this environment may set PYTHONDONTWRITEBYTECODE.
Benchmarks are not tests: nothing here asserts a time.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ROOT / "bench" / ".inputs"
PY = sys.executable


def run_once(cmd: list[str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in KiB, exit code) of one child process."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss, p.returncode


def interleaved(a: list[str], b: list[str], runs: int) -> dict:
    ta, tb = [], []
    for _ in range(runs):
        ta.append(run_once(a)[0])
        tb.append(run_once(b)[0])
    ratios = [y / x for x, y in zip(ta, tb)]
    return {"a": ta, "b": tb, "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}


def fmt_ms(ts: list[float]) -> str:
    return f"{statistics.median(ts) * 1000:8.1f} ms ({min(ts) * 1000:.0f}–{max(ts) * 1000:.0f})"


def sized(names: list[str], runs: int) -> list[tuple[str, float, int, float]]:
    out = []
    for name in names:
        path = INPUTS / name
        res = [run_once([PY, "-m", "logdoctor", "explain", str(path)]) for _ in range(runs)]
        wall = statistics.median(r[0] for r in res)
        rss = max(r[1] for r in res)
        out.append((name, path.stat().st_size / 1e6, rss, wall))
    return out


# the yardstick for a full read: a bare Python loop over the file's lines, nothing done per line
LINE_LOOP = "import sys\nfor _ in open(sys.argv[1], 'rb'):\n    pass"


def _line_loop_rows(rows: list[tuple[str, float, int, float]], runs: int) -> list[str]:
    """explain on each big file against a bare Python line loop over the same file (target: ≤ 10×, ≥ 50 MB/s)."""
    out = ["", "| big file | explain | MB/s | bare line loop | explain / loop |", "|---|---|---|---|---|"]
    for name, mb, _rss, wall in rows:
        loop = statistics.median(run_once([PY, "-c", LINE_LOOP, str(INPUTS / name)])[0] for _ in range(runs))
        out.append(f"| {name} | {wall:.2f} s | {mb / wall:.0f} | {loop:.2f} s | **{wall / loop:.1f}×** |")
    return out


def main(argv: list[str]) -> None:
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 10
    large = int(argv[argv.index("--large-runs") + 1]) if "--large-runs" in argv else 1
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else ["startup", "multi", "dense", "big"]
    need = {
        "startup": ["log140.log"],
        "multi": ["multi-20000.log"],
        "dense": ["tb-10000.log", "tb-20000.log"],
        "big": ["big-100mb.log", "big-200mb.log"],
    }
    names = [n for k in only for n in need[k]]
    subprocess.run(
        [PY, str(ROOT / "bench" / "make_inputs.py"), str(INPUTS), "--only", *names],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "logdoctor")], check=False, stdout=subprocess.DEVNULL)
    run_once([PY, "-m", "logdoctor", "explain", str(INPUTS / names[0])])  # warm the rule cache and the page cache
    base = [PY, "-c", "pass"]
    lines = [
        f"machine: {platform.node()} · {os.cpu_count()} CPUs · {platform.processor() or platform.machine()} · "
        f"Python {platform.python_version()} · {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"command: python bench/bench_explain.py {' '.join(argv)}".rstrip(),
        "",
        "| measurement | median (min–max) | ratio to `python -c pass` (pairwise median, min–max) |",
        "|---|---|---|",
    ]
    if "startup" in only:
        r = interleaved(base, [PY, "-m", "logdoctor", "explain", str(INPUTS / "log140.log")], runs)
        lines.append(f"| `python -c pass` ({runs} runs) | {fmt_ms(r['a'])} | 1 |")
        lines.append(
            f"| explain, 140-line SGLang log ({runs} runs, interleaved) | {fmt_ms(r['b'])} | "
            f"**{r['ratio']:.2f}×** ({r['ratio_min']:.2f}–{r['ratio_max']:.2f}) |"
        )
        r = interleaved(base, [PY, "-m", "logdoctor", "explain", "--no-history", str(INPUTS / "log140.log")], runs)
        lines.append(
            f"| explain --no-history, same log ({runs} runs, interleaved) | {fmt_ms(r['b'])} | "
            f"{r['ratio']:.2f}× ({r['ratio_min']:.2f}–{r['ratio_max']:.2f}) |"
        )
    if "multi" in only:
        n = max(3, runs // 3)
        r = interleaved(base, [PY, "-m", "logdoctor", "explain", str(INPUTS / "multi-20000.log")], n)
        lines.append(
            f"| explain, 20 000-line multi-attempt journal ({n} runs, interleaved) | {fmt_ms(r['b'])} | "
            f"{r['ratio']:.1f}× ({r['ratio_min']:.1f}–{r['ratio_max']:.1f}) |"
        )
    for key, label in (("dense", "traceback-dense log"), ("big", "serving log ending in a KV-pool failure")):
        if key not in only:
            continue
        rows = sized(need[key], large)
        lines += ["", f"| {label} | size | wall | peak RSS |", "|---|---|---|---|"]
        for name, mb, rss, wall in rows:
            lines.append(f"| {name} | {mb:.1f} MB | {wall:.2f} s | {rss / 1024:.0f} MB |")
        (_, _, r1, w1), (_, _, r2, w2) = rows
        lines.append(f"| 2n / n | 2× | {w2 / w1:.2f}× | {r2 / r1:.2f}× |")
        if key == "big":
            lines += _line_loop_rows(rows, large)
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
