"""Benchmark: what the attempt history costs `explain`, as ratios against `explain --no-history` run side by side
(interleaved runs, medians), plus raw SQLite throughput of `History.record` (one transaction per attempt, as
concurrent deploy hooks write). Run: python bench/bench_history.py [LOG] [-n RUNS]. No assertions, just figures.

`--rows N` instead measures a big history (issue 18, F15): N attempts of the log's unit (half on its host, half on
200 others, 5% of them ready), bulk-inserted at the schema of the logdoctor found first on sys.path (run it from a
checkout: `cd CHECKOUT && python bench/bench_history.py --rows 500000`), then `explain --history` and `history
--format json` timed with /usr/bin/time (wall seconds, max RSS), each the median of -n runs."""

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
    ap.add_argument("--rows", type=int, default=0, help="measure explain/history on a history of this many rows")
    a = ap.parse_args()
    if a.rows:
        big_history(a.log, a.rows, a.n)
        return
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
    print(
        f"History.record: {n / dt:8.0f} attempts/s (one transaction each);  query of {len(rows)} rows: "
        f"{dq * 1000:.1f} ms"
    )


def big_history(log: str, n_rows: int, runs: int) -> None:
    import importlib
    import json
    import sqlite3

    sys.path.insert(0, os.getcwd())  # the checkout being measured, not necessarily this script's
    for m in [m for m in sys.modules if m == "logdoctor" or m.startswith("logdoctor.")]:
        del sys.modules[m]
    hmod = importlib.import_module("logdoctor.history")

    tmp = tempfile.mkdtemp()
    db = os.path.join(tmp, "big.db")
    con = sqlite3.connect(db)
    for step in hmod.MIGRATIONS:
        for stmt in step:
            con.execute(stmt)
    con.execute(f"PRAGMA user_version = {len(hmod.MIGRATIONS)}")
    t0 = time.time() - n_rows
    rows = (
        (
            f"{i:032x}",
            "h200-qwen-03" if i % 2 else f"host-{i % 200}",
            "sglang-qwen.service",
            f"2026-01-01T00:00:{i % 60:02d}.{i:06d}",
            json.dumps({"mem_fraction": 0.8, "i": i}),
            "memory_pool",
            "ready" if i % 20 == 0 else "failed",
            None if i % 20 == 0 else "kv_cache_oom",
            t0 + i,
        )
        for i in range(n_rows)
    )
    con.executemany(
        "INSERT INTO attempts (key, host, unit, started, config, phase, outcome, cause, recorded)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    con.commit()
    con.close()
    print(f"{n_rows} rows, schema {len(hmod.MIGRATIONS)}, {os.path.getsize(db) / 1e6:.0f} MB")
    cmds = {
        "explain --history": ["explain", "--history", db, log],
        "history --format json": ["history", "--history", db, "--format", "json"],
    }
    # the first explain may migrate the file (once); it is not counted
    subprocess.run(
        [sys.executable, "-m", "logdoctor", *cmds["explain --history"]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=os.getcwd(),
    )
    for name, args in cmds.items():
        got = []
        for _ in range(runs):
            p = subprocess.run(
                ["/usr/bin/time", "-f", "%e %M", sys.executable, "-m", "logdoctor", *args],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                cwd=os.getcwd(),
            )
            wall, rss = p.stderr.strip().splitlines()[-1].split()
            if p.returncode not in (0, 1, 3):
                print(f"{name}: exit {p.returncode}: {p.stderr.strip().splitlines()[0]}")
            got.append((float(wall), int(rss) / 1024))
        print(
            f"{name:24s} {statistics.median(w for w, _ in got):6.2f} s   max RSS "
            f"{max(r for _, r in got):7.0f} MB   (median of {runs})"
        )


if __name__ == "__main__":
    main()
