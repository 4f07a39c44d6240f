"""The per-case verdict snapshot: one JSON line per labelled log, the verdict as explain gives it.

Why: a change that means to move no verdict must leave this file byte-identical, and a change that moves some lists
them (`git diff tests/data/verdict-snapshot.jsonl`). `tests/test_snapshot.py` compares the fixtures' snapshot with
the shipped one; `--check` does the same from the command line.

    python tools/snapshot.py                       # print the fixtures' snapshot
    python tools/snapshot.py --write               # rewrite tests/data/verdict-snapshot.jsonl
    python tools/snapshot.py --check               # exit 1 and list the cases whose verdict moved
    python tools/snapshot.py ../shared/corpus/dev  # any other case folder (printed, never written)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "tests" / "data" / "verdict-snapshot.jsonl"


def _fix_text(fix: dict) -> str:
    return " ".join(str(fix.get(k)) for k in ("flag", "from", "to", "lever") if fix.get(k) is not None)


def snapshot(dirs: list[Path]) -> list[str]:
    """One sorted JSON line per case: failed, cause, phase, confidence (2 places), first fix, attempt count."""
    from logdoctor import diagnose
    from logdoctor.classify.corpus import load_cases

    lines = []
    for case in sorted(load_cases(dirs), key=lambda c: str(c.path.relative_to(c.path.anchor))):
        d = diagnose(case.path / "journal.log").to_dict()
        fixes = d.get("fixes") or []
        row = {
            "case": case.path.name if len(dirs) != 1 else str(case.path.relative_to(dirs[0])),
            "failed": d.get("failed"),
            "cause": d.get("cause"),
            "phase": d.get("phase"),
            "confidence": round(float(d.get("confidence") or 0.0), 2),
            "rule": d.get("rule"),
            "first_fix": _fix_text(fixes[0]) if fixes else None,
            "attempts": len(d.get("attempts") or []),
        }
        lines.append(json.dumps(row, sort_keys=True))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    dirs = a.dirs or [ROOT / "fixtures" / "journals"]
    lines = snapshot(dirs)
    if a.write:
        SHIPPED.write_text("\n".join(lines) + "\n")
        print(f"wrote {len(lines)} cases to {SHIPPED.relative_to(ROOT)}")
        return 0
    if a.check:
        old = {json.loads(x)["case"]: x for x in SHIPPED.read_text().splitlines() if x}
        new = {json.loads(x)["case"]: x for x in lines}
        moved = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        for k in moved:
            print(f"{k}\n  was {old.get(k)}\n  now {new.get(k)}")
        print(f"{len(moved)} of {len(new)} cases moved")
        return 1 if moved else 0
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
