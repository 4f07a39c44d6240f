"""python -m tools.fixturegen --out fixtures/journals [--docs docs/fixtures.md] [--only ID ...]"""
from __future__ import annotations

import argparse
from pathlib import Path

from .catalogue import all_cases
from .writer import update_docs, write_all

SEED = 20260522


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.fixturegen", description=__doc__)
    ap.add_argument("--out", type=Path, default=Path("fixtures/journals"))
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--docs", type=Path, default=None, help="rewrite the catalogue table in this markdown file")
    ap.add_argument("--only", nargs="*", help="generate only these case ids (no stale-folder cleanup)")
    a = ap.parse_args(argv)
    cases = all_cases()
    if a.only:
        from .case import build
        from .writer import dump_label
        for c in cases:
            if c.id in a.only:
                text, label = build(c, a.seed)
                (a.out / c.id).mkdir(parents=True, exist_ok=True)
                (a.out / c.id / "journal.log").write_text(text, encoding="utf-8", newline="\n")
                (a.out / c.id / "label.yaml").write_text(dump_label(label), encoding="utf-8", newline="\n")
        return 0
    done = write_all(cases, a.out, a.seed)
    if a.docs:
        update_docs(a.docs, done)
    print(f"wrote {len(done)} cases to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
