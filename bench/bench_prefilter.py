"""Prefilter engines compared in the same run (issue 11 asks for the numbers): finding which of the rule regexes'
literal words occur in a log, with (a) one `in` test per word (plain Python, what explain uses on small logs and
whenever pyahocorasick is absent) and (b) one Aho-Corasick pass (pyahocorasick, used above 64 KB of attempt text),
and, for scale, (c) compiling every rule regex as explain did before the prefilter.

    python bench/bench_prefilter.py [LOG ...]      (default: bench/.inputs/log140.log and a 10 MB serving log)
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from logdoctor.matching import prefilter  # noqa: E402
from logdoctor.matching.loader import load_rules  # noqa: E402


def timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main(argv: list[str]) -> None:
    logs = [Path(a) for a in argv] or [
        ROOT / "bench" / ".inputs" / "log140.log",
        ROOT / "bench" / ".inputs" / "big-10mb.log",
    ]
    rules = load_rules(())
    pats = sorted(prefilter.patterns(rules))
    vocab = prefilter.vocabulary(rules)
    print(f"{len(pats)} rule regexes, {len(vocab)} literal words")
    print("| log | size | plain `in` per word | Aho-Corasick (build + pass) | compile every regex |")
    print("|---|---|---|---|---|")
    for log in logs:
        if not log.exists():
            print(f"| {log.name} | (missing: python bench/make_inputs.py bench/.inputs --only {log.name}) | | | |")
            continue
        text = log.read_text(errors="replace")
        runs = 5 if len(text) < 1 << 20 else 1

        def plain(text=text):
            p = prefilter.Present(text)
            return {w for w in vocab if w in p}

        def aho(text=text):
            p = prefilter.Present(text)
            p.prime(vocab)
            return {w for w in vocab if w in p}

        def compile_all():
            re.purge()
            for p in pats:
                re.compile(p)

        assert plain() == aho()
        row = [statistics.median(timed(f, runs)) * 1000 for f in (plain, aho, compile_all)]
        print(f"| {log.name} | {len(text) / 1e6:.2f} MB | {row[0]:.1f} ms | {row[1]:.1f} ms | {row[2]:.1f} ms |")


if __name__ == "__main__":
    main(sys.argv[1:])
