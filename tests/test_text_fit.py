"""Text output fits the terminal and says everything the JSON says (issue 23): width from $COLUMNS, words wrapped,
evidence cut visibly, every fix and action printed; `timeline` shows each phase's start, duration and gaps."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import logdoctor
from logdoctor.render import text
from logdoctor.verdict.remedy import render_fix

ROOT = Path(__file__).resolve().parent.parent
FX = ROOT / "fixtures" / "journals"
SEED = FX / "seed-all-attempts" / "journal.log"
FAILING = sorted(p / "journal.log" for p in FX.iterdir() if (p / "journal.log").exists() and "healthy" not in p.name)


def cli(*args, columns="80", **env_extra):
    env = {**os.environ, "COLUMNS": columns, **env_extra}
    env.pop("NO_COLOR", None)
    p = subprocess.run([sys.executable, "-m", "logdoctor", *args], capture_output=True, text=True, cwd=ROOT, env=env)
    return p.returncode, p.stdout, p.stderr


def flat(s: str) -> str:
    return " ".join(s.split())


@pytest.mark.parametrize("columns", ["80", "132"])
def test_the_cli_verdict_follows_columns_and_prints_every_action(columns, tmp_path):
    hist = tmp_path / "h.db"
    cli("explain", "--history", str(hist), str(SEED))  # the second run escalates across attempts
    rc, out, _ = cli("explain", "--history", str(hist), str(SEED), columns=columns)
    assert rc == 1
    assert max(len(line) for line in out.splitlines()) <= int(columns)
    _, js, _ = cli("explain", "--history", str(hist), str(SEED), "--format", "json")
    d = json.loads(js)
    assert len(d["actions"]) >= 5
    for a in d["actions"]:
        assert flat(a) in flat(out), a
    assert "move the service to another host" in flat(out)


def test_a_narrow_pane_never_splits_a_flag_at_its_hyphens():
    for journal in FAILING[:60]:
        d = logdoctor.diagnose(journal)
        out = text.render(d, width_=60)
        for line in out.splitlines():
            assert not re.search(r"(^|\s)-$", line.rstrip()), line  # "(-" / "-mem-fraction" breaks
            assert not line.rstrip().endswith("--"), line


def test_every_fix_and_action_of_every_failing_fixture_is_in_the_text():
    missing = []
    for journal in FAILING:
        d = logdoctor.diagnose(journal)
        out = flat(text.render(d, width_=80))
        for f in d.fixes:
            if flat(render_fix(f)) not in out or flat(f.why) not in out:
                missing.append((journal.parent.name, render_fix(f)))
        missing += [(journal.parent.name, a) for a in d.actions if flat(a) not in out]
        too_long = [ln for ln in text.render(d, width_=80).splitlines() if len(ln) > 80]
        assert not too_long, (journal.parent.name, too_long)
    assert not missing


def test_evidence_is_cut_visibly_to_the_width():
    d = logdoctor.diagnose(SEED)
    ev = next(e for e in d.evidence if len(e.text) > 70)
    out = text.render(d, width_=80)
    shown = next(ln for ln in out.splitlines() if ln.strip().startswith(f"{ev.line}  "))
    assert shown.endswith("…") and len(shown) <= 80
    quoted = shown.strip()[len(f"{ev.line}  ") : -1]
    assert len(quoted) > 40 and ev.text.startswith(quoted)


def test_width_reads_columns_then_falls_back(monkeypatch):
    monkeypatch.setenv("COLUMNS", "91")
    assert text.width() == 91
    monkeypatch.setenv("COLUMNS", "7")
    assert text.width() == text.MIN_WIDTH
    monkeypatch.setenv("COLUMNS", "wide")
    assert text.MIN_WIDTH <= text.width() <= text.MAX_WIDTH


def test_timeline_shows_phase_start_duration_and_gaps():
    rc, out, err = cli("timeline", str(SEED), columns="100")
    assert rc == 0, err
    assert "phase start and duration per rank" in out
    # attempt 1 of the seed: TP0 dist_init at 10:31:38, weight loading starts at 10:31:40, after a gap
    row = next(ln for ln in out.splitlines() if ln.strip().startswith("TP0") and "weight_load" in ln)
    assert re.search(r"dist_init \d\d:\d\d:\d\d \d+\.\d s", row)
    assert re.search(r"gap \d+\.\d s · weight_load \d\d:\d\d:\d\d", row)
    assert max(len(line) for line in out.splitlines()) <= 100
    rc, js, _ = cli("timeline", str(SEED), "--format", "json")
    ph = json.loads(js)["attempts"][0]["ranks"]["TP0"]["phases"]
    wl = next(p for p in ph if p["phase"] == "weight_load")
    assert wl["start_time"].startswith("2026-05-22T10:31:40") and wl["seconds"] == 20.0
