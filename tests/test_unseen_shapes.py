"""Issue 10: windows and shapes that real `journalctl` output has and hand-written fixtures do not. Each mechanism
has fixtures of its own (fixtures/journals/u10-*) and a test here; the two window perturbations run over every
failing fixture."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import window_checks  # noqa: E402

FIX = ROOT / "fixtures" / "journals"
LD = [sys.executable, "-m", "logdoctor"]


def explain_json(path_or_text, *extra) -> tuple[dict, int]:
    if isinstance(path_or_text, Path):
        p = subprocess.run(LD + ["explain", str(path_or_text), "--format", "json", *extra], capture_output=True,
                           text=True, cwd=ROOT)
    else:
        p = subprocess.run(LD + ["explain", "-", "--format", "json", *extra], input=path_or_text, capture_output=True,
                           text=True, cwd=ROOT)
    assert p.returncode in (0, 1, 3), p.stderr
    return json.loads(p.stdout), p.returncode


def test_restart_and_foreign_line_perturbations_keep_every_failure():
    """Appending systemd's restart + the first 13 lines of the next start, or one sshd line, to a failing fixture
    must not turn it into 'OK' (issue 10: 103 and 118 did)."""
    r = window_checks.run(FIX)
    assert r["restart_cases"] >= 80 and r["sshd_cases"] >= 150
    assert r["restart_ok"] == [], r["restart_ok"]
    assert r["sshd_ok"] == [], r["sshd_ok"]


def test_restart_in_progress_json_names_attempts_and_note():
    case = next(d for d in window_checks.failing_cases(FIX) if (d / "journal.log").read_text().count("systemd[1]: Started") == 1
                and "Main process exited" in (d / "journal.log").read_text())
    text = window_checks.with_restart((case / "journal.log").read_text())
    d, rc = explain_json(text)
    assert d["failed"] is True and rc in (1, 3)
    outs = [a["outcome"] for a in d["attempts"]]
    assert outs[-1] == "in_progress" and "failed" in outs[:-1]
    assert any(n.startswith("a new attempt started at line ") for n in d["notes"])
