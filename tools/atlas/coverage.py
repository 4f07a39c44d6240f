"""How much of a labelled corpus the atlas resolves: the share of error and exception lines, and of each failed
case's decisive errors, that resolve to an atlas entry.

    python tools/atlas/coverage.py fixtures/journals /work/shared/corpus/dev [--atlas FILE] [--misses N]

An "error line" is a service line logged at ERROR/CRITICAL or a bare "Type: message" exception line (the lines
decisive.py reads), traceback plumbing (frames, source lines, "Traceback ...") left out; a "decisive line" is one of the verdict attempt's decisive errors (inner, wrapper, error
lines). Lines that come from below the engine (PyTorch, CUDA, NCCL, the kernel) are counted too: the atlas holds
only what the engines themselves print, so those are the share it cannot reach.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

from logdoctor.core.records import SERVICE
from logdoctor.engines.atlas import load, lookup
from logdoctor.engines.atlas.tier import decisive_lines
from logdoctor.scan.sources import read_any
from logdoctor.timeline.attempts import verdict_attempt
from logdoctor.timeline.build import build

_EXC = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit): ")
# traceback plumbing that engines log line by line at ERROR level (vLLM): frames, source lines, chain headers
_PLUMBING = re.compile(r"^(?:\s|Traceback \(most recent|The above exception|During handling of|$)")


# lines printed below the engine (PyTorch, CUDA, NCCL, the OS, Hugging Face, pydantic, Ray, other servers): the atlas
# holds only the engines' own messages, so these are counted apart
_BELOW = re.compile(
    r"^(?:torch\.|[\w.]*(?:OutOfMemoryError|AcceleratorError|DistNetworkError|DistBackendError)\b|nccl\w*Error|"
    r"huggingface_hub\.|pydantic|safetensors|ray\.|zmq\.|requests\.|OSError: \[Errno|\[Errno|"
    r"text_generation_launcher|router/)|CUDA (?:error|kernel errors)|CUDA_LAUNCH_BLOCKING|TORCH_USE_CUDA_DSA|"
    r"NCCL error|cudaError|Search for `cuda|[Aa]ddress already in use"
)


def is_error_line(msg: str, level: str | None) -> bool:
    """A message line an operator reads as an error: ERROR/CRITICAL or "Type: message", not traceback plumbing."""
    return (level in ("ERROR", "CRITICAL") or bool(_EXC.match(msg))) and not _PLUMBING.match(msg)


def cases(dirs: list[Path]) -> list[Path]:
    out = []
    for d in dirs:
        out += sorted(p.parent for p in d.rglob("journal.log"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--atlas", type=Path)
    ap.add_argument("--misses", type=int, default=0, help="print this many unresolved decisive lines")
    a = ap.parse_args(argv)
    atlas = load(a.atlas)
    err_total = err_hit = 0
    own_total = own_hit = 0
    dec_total = dec_hit = 0
    case_total = case_hit = 0
    causes: Counter[str] = Counter()
    misses: list[str] = []
    err_misses: Counter[str] = Counter()
    hits: list[str] = []
    for case in cases(a.dirs):
        res = read_any(case / "journal.log")
        tl = build(res.records, "auto")
        engine = tl.engine if tl.engine != "unknown" else None
        for r in res.records:
            if r.transport != SERVICE or r.extra.get("foreign"):
                continue
            if is_error_line(r.msg, r.level):
                err_total += 1
                found_line = lookup(r.msg, engine, atlas) is not None
                err_hit += found_line
                if not _BELOW.search(r.msg):
                    own_total += 1
                    own_hit += found_line
                if not found_line:
                    err_misses[re.sub(r"\d+", "N", r.msg)[:120]] += 1
        if not tl.attempts:
            continue
        vi, _ = verdict_attempt(tl.attempts)
        att = tl.attempts[vi]
        if not att.failed:
            continue
        lines = decisive_lines(att)
        if not lines:
            continue
        case_total += 1
        found = False
        for _ln, text in lines:
            dec_total += 1
            h = lookup(text, engine, atlas)
            if h is not None:
                dec_hit += 1
                found = True
                causes[h.cause] += 1
                hits.append(f"{case.name}: {text[:100]} -> {h.entry.id} {h.cause} ({h.citation()})")
            else:
                misses.append(f"{case.name}: {text[:140]}")
        case_hit += found

    def pct(n: int, d: int) -> str:
        return f"{n}/{d} = {100 * n / d:.1f}%" if d else "0/0"

    print(f"atlas: {len(atlas.entries)} entries")
    print(f"error and exception lines resolved: {pct(err_hit, err_total)}")
    print(f"  of them not from below the engine: {pct(own_hit, own_total)}")
    print(f"decisive lines resolved:            {pct(dec_hit, dec_total)}")
    print(f"failed cases with >= 1 decisive line resolved: {pct(case_hit, case_total)}")
    print("causes of resolved decisive lines:", dict(causes.most_common()))
    for m, n in err_misses.most_common(a.misses):
        print(f"  error-line miss x{n}: {m}")
    for m in misses[: a.misses]:
        print("  miss", m)
    for h in hits[: a.misses]:
        print("  hit ", h)
    return 0


if __name__ == "__main__":
    sys.exit(main())
