"""The CLI contract (design.md): JSON per schema logdoctor.diagnosis/v1 for every fixture, exit codes, text and
markdown rendering, journal-file input, --version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted(p.parent for p in (ROOT / "fixtures" / "journals").rglob("label.yaml"))
SCHEMA = json.loads((ROOT / "logdoctor" / "schemas" / "diagnosis.schema.json").read_text())


def cli(*args, stdin: bytes | None = None, env=None):
    e = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    e.update(env or {})
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", *args], input=stdin, capture_output=True, cwd=ROOT, env=e, timeout=120
    )
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def test_version():
    rc, out, _ = cli("--version")
    assert rc == 0 and "logdoctor, version" in out


def test_every_fixture_json_validates_and_exit_code_matches_label():
    from logdoctor.verdict.api import diagnose

    assert CASES, "no labelled fixtures"
    v = jsonschema.Draft202012Validator(SCHEMA)
    for case in CASES:
        label = yaml.safe_load((case / "label.yaml").read_text())
        d = diagnose(case / "journal.log")
        doc = d.to_dict()
        errs = list(v.iter_errors(doc))
        assert not errs, f"{case.name}: {errs[0].message}"
        healthy = label.get("failed") is False or label.get("cause") is None
        assert (d.exit_code == 0) == healthy, f"{case.name}: exit {d.exit_code}, label cause {label.get('cause')}"
        for f in doc["fixes"]:
            assert not (f["lever"] == "mem_fraction" and isinstance(f["to"], float) and f["to"] > 0.95)


def test_json_through_the_cli_and_exit_code():
    case = ROOT / "fixtures" / "journals" / "gpu-real" / "capture_unsafe" / "journal.log"
    rc, out, err = cli("explain", "--format", "json", str(case))
    assert rc == 1, err
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["cause"] == "graph_capture_fault" and doc["phase"] == "graph_capture"
    assert doc["fixes"][0]["flag"] == "--disable-cuda-graph" and doc["fixes"][0]["to"] is True
    assert all(e["line"] >= 1 for e in doc["evidence"])


def test_text_is_plain_when_piped_and_has_the_parts():
    case = ROOT / "fixtures" / "journals" / "gpu-real" / "pool_oom" / "journal.log"
    rc, out, _ = cli("explain", str(case))
    assert rc == 1
    assert "\x1b[" not in out
    assert out.startswith("FAILED  while sizing the memory pool: kv_cache_oom")
    for part in ("evidence", "why", "next"):
        assert f"\n{part}\n" in out


def test_verbose_shows_timeline_and_candidates():
    case = ROOT / "fixtures" / "journals" / "gpu-real" / "capture_oom" / "journal.log"
    rc, out, _ = cli("explain", "-v", str(case))
    assert "candidates:" in out and "attempt 1:" in out and "TP0" in out


def test_markdown():
    case = ROOT / "fixtures" / "journals" / "gpu-real" / "weights_oom" / "journal.log"
    rc, out, _ = cli("explain", "--format", "markdown", str(case))
    assert rc == 1 and out.startswith("### ") and "**Evidence**" in out and "```" in out


def test_healthy_exits_zero():
    case = ROOT / "fixtures" / "journals" / "gpu-real" / "healthy" / "journal.log"
    rc, out, _ = cli("explain", str(case))
    assert rc == 0 and out.startswith("OK")


def test_unknown_exits_three_and_says_what_to_collect():
    text = b"some service starting\nERROR: something odd happened in module foo\n"
    rc, out, _ = cli("explain", "-", stdin=text)
    assert rc == 3
    assert "journalctl -u UNIT -n 1000 --no-pager" in out and "nvidia-smi -q" in out


def test_journal_file_with_unit(journal_file):
    exp = ROOT / "fixtures" / "journals" / "formats" / "export" / "sglang-tp2-graph-capture.export"
    if not exp.exists():
        pytest.skip("export fixture missing")
    path = journal_file(exp)
    rc, out, err = cli("timeline", "--journal-file", str(path), "--unit", "sglang-qwen", "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["engine"] == "sglang" and len(doc["attempts"]) >= 1
    rc2, out2, _ = cli("explain", str(path))  # a .journal file given as SOURCE is read as a journal
    assert rc2 in (1, 3)
