"""Benchmark: `logdoctor explain` on a 140-line log, end to end including interpreter start, reported as a ratio
against a baseline run side by side (`python -c pass`, and `python -c "import click, yaml"`), so the figure means
the same on any machine. Run: python bench/bench_explain.py [LOG] [-n RUNS]"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], runs: int) -> float:
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main() -> None:
    args = sys.argv[1:]
    runs = int(args[args.index("-n") + 1]) if "-n" in args else 10
    log = next((a for a in args if not a.startswith("-") and not a.isdigit()), None)
    if log is None:
        lines = (ROOT / "fixtures" / "journals" / "seed-all-attempts" / "journal.log").read_text().splitlines()
        tmp = ROOT / "bench" / ".last140.log"
        tmp.write_text("\n".join(lines[-140:]) + "\n")
        log = str(tmp)
    py = sys.executable
    base = timed([py, "-c", "pass"], runs)
    libs = timed([py, "-c", "import click, yaml"], runs)
    ex = timed([py, "-m", "logdoctor", "explain", log], runs)
    tl = timed([py, "-m", "logdoctor", "timeline", log], runs)
    print(f"runs={runs}  log={log}")
    print(f"python -c pass          {base * 1000:7.1f} ms   1.00x")
    print(f"import click, yaml      {libs * 1000:7.1f} ms   {libs / base:5.2f}x")
    print(f"logdoctor timeline      {tl * 1000:7.1f} ms   {tl / base:5.2f}x")
    print(f"logdoctor explain       {ex * 1000:7.1f} ms   {ex / base:5.2f}x   ({ex / libs:.2f}x the click+yaml baseline)")


if __name__ == "__main__":
    main()
