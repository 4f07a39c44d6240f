"""explain must stay fast: reading, timeline, rules and classifier inference never import pandas, scikit-learn or
numpy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "fixtures" / "journals" / "formats" / "short.log"

PROBE = r"""
import json, sys, runpy
sys.argv = ["logdoctor", "explain", "--format", "json", sys.argv[1]]
try:
    runpy.run_module("logdoctor", run_name="__main__")
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pandas", "sklearn", "scipy", "numpy", "jsonschema"))
# dataclasses imports inspect (ast, dis, tokenize): ~5 ms of every start; core/lean.py collects fields itself
heavy += sorted(m for m in ("dataclasses", "inspect") if m in sys.modules)
print(json.dumps(heavy), file=sys.stderr)
"""


def test_reading_a_log_imports_nothing_heavy():
    code = (
        "import sys, json\nfrom logdoctor.input.read import read_bytes\nfrom logdoctor.timeline.build import build\n"
        f"build(read_bytes(open({str(LOG)!r}, 'rb').read()).records)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'sklearn', 'scipy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_explain_imports_nothing_heavy():
    p = subprocess.run([sys.executable, "-c", PROBE, str(LOG)], capture_output=True, text=True, cwd=ROOT)
    heavy = json.loads(p.stderr.strip().splitlines()[-1])
    assert heavy == [], heavy
    doc = json.loads(p.stdout)
    assert doc["schema"] == "logdoctor.diagnosis/v1"
    assert doc["failed"] is True  # a failing log: rules and the shipped classifier both ran
