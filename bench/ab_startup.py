"""Start-up of two source trees side by side: `explain` on the 140-line log, this checkout vs another one.

    python bench/ab_startup.py OTHER_TREE [--runs N]      # e.g. OTHER_TREE = `git archive main | tar -x -C /tmp/m`

Interleaves, per round, `python -c pass`, then each tree's `python -m logdoctor explain --no-history LOG` and
`explain LOG` (history on), all with this interpreter (run from each tree's root, so `-m logdoctor` imports that
tree's package), a shared warmed rule cache and a scratch history file. Prints the median and min of each and the
ratio of medians to `python -c pass`. A benchmark, not a test: the numbers move with the machine's load.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "bench" / ".inputs" / "log140.log"


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    other = Path(argv[0]).resolve()
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 12
    if not LOG.exists():
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "make_inputs.py"), str(LOG.parent), "--only", "log140.log"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    tmp = Path(tempfile.mkdtemp(prefix="ab-startup-"))
    env = dict(os.environ, LOGDOCTOR_CACHE_DIR=str(tmp / "cache"), LOGDOCTOR_HISTORY=str(tmp / "history.db"))
    py = sys.executable
    for tree in (ROOT, other):
        subprocess.run([py, "-m", "compileall", "-q", "-f", str(tree / "logdoctor")], stdout=subprocess.DEVNULL)
    cmds = {"python -c pass": ([py, "-c", "pass"], tmp)}
    for name, tree in (("other", other), ("this", ROOT)):
        cmds[f"{name}: explain --no-history"] = ([py, "-m", "logdoctor", "explain", "--no-history", str(LOG)], tree)
        cmds[f"{name}: explain"] = ([py, "-m", "logdoctor", "explain", str(LOG)], tree)

    def once(cmd, cwd) -> float:
        t = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return (time.perf_counter() - t) * 1e3

    for cmd, cwd in cmds.values():  # warm the caches and the page cache
        once(cmd, cwd)
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(runs):
        for k, (cmd, cwd) in cmds.items():
            times[k].append(once(cmd, cwd))
    base = statistics.median(times["python -c pass"])
    print(f"other tree: {other}\n\n| command | median | min | ratio to `python -c pass` |\n|---|---|---|---|")
    for k, v in times.items():
        print(f"| {k} | {statistics.median(v):.1f} ms | {min(v):.1f} ms | {statistics.median(v) / base:.2f}× |")


if __name__ == "__main__":
    main(sys.argv[1:])
