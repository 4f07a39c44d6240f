"""The per-case verdict snapshot holds: a change moves a fixture's verdict only on purpose.

When a change means to move verdicts, rewrite the snapshot (`python tools/snapshot.py --write`) and list every moved
case in the commit message; `git diff tests/data/verdict-snapshot.jsonl` is the list.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("snapshot_tool", ROOT / "tools" / "snapshot.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fixture_verdicts_match_the_snapshot():
    tool = _tool()
    shipped = {json.loads(x)["case"]: x for x in tool.SHIPPED.read_text().splitlines() if x}
    now = {json.loads(x)["case"]: x for x in tool.snapshot([ROOT / "fixtures" / "journals"])}
    moved = sorted(k for k in shipped.keys() | now.keys() if shipped.get(k) != now.get(k))
    detail = "\n".join(f"{k}\n  was {shipped.get(k)}\n  now {now.get(k)}" for k in moved[:20])
    assert not moved, f"{len(moved)} fixture verdicts moved (python tools/snapshot.py --check):\n{detail}"
