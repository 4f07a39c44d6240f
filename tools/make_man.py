"""Regenerate man/*.1 from the click commands (the pages the wheel installs into share/man/man1).

    python tools/make_man.py

tests/test_docs_cmd.py fails when a committed page differs from what the commands say now."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from logdoctor.cli.commands.docs import pages  # noqa: E402


def main() -> int:
    out = ROOT / "man"
    out.mkdir(exist_ok=True)
    want = pages()
    for stale in out.glob("*.1"):
        if stale.name not in want:
            stale.unlink()
    for name, text in want.items():
        (out / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(want)} man pages to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
