"""Benchmark: what the attempt history costs `explain`, as ratios against `explain --no-history` run side by side
(interleaved runs, medians), plus raw SQLite throughput of `History.record` (one transaction per attempt, as
concurrent deploy hooks write). Run: python bench/bench_history.py [LOG] [-n RUNS]. No assertions, just figures."""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("log", nargs="?", default=str(ROOT / "fixtures/journals/seed-all-attempts/journal.log"))
    ap.add_argument("-n", type=int, default=9)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    env = dict(os.environ, LOGDOCTOR_HISTORY=os.path.join(tmp, "h.db"))
    cmds = {
        "pass": [sys.executable, "-c", "pass"],
        "explain --no-history": [sys.executable, "-m", "logdoctor", "explain", "--no-history", a.log],
        "explain (history)": [sys.executable, "-m", "logdoctor", "explain", a.log],
    }
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(a.n):
        for k, c in cmds.items():
            t = time.perf_counter()
            subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
            times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["explain --no-history"]
    for k, v in med.items():
        print(f"{k:24s} {v * 1000:7.1f} ms   ratio to --no-history {v / base:5.2f}")

    from logdoctor.history import AttemptRow, History
    with History(os.path.join(tmp, "raw.db")) as h:
        n = 2000
        t = time.perf_counter()
        for i in range(n):
            h.record([AttemptRow(key=f"k{i}", host="ct100", unit="u.service", outcome="failed", config={"i": i})])
        dt = time.perf_counter() - t
        t = time.perf_counter()
        rows = h.query(host="ct100", unit="u.service")
        dq = time.perf_counter() - t
    print(f"History.record: {n / dt:8.0f} attempts/s (one transaction each);  query of {len(rows)} rows: "
          f"{dq * 1000:.1f} ms")


if __name__ == "__main__":
    main()
