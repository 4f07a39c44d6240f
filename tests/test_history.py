"""The attempt store: real SQLite files, concurrent writer processes, idempotent recording, migrations and the
`logdoctor history` command run as a subprocess."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.history import MIGRATIONS, SCHEMA_VERSION, AttemptRow, History, default_path

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "journals"
CLI = [sys.executable, "-m", "logdoctor"]

WRITER = r"""
import sys
from logdoctor.history import History, AttemptRow
path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
h = History(path)
for i in range(n):
    h.record([AttemptRow(key=f"{tag}-{i}", host=f"host-{tag}", unit="sglang-qwen.service", phase="memory_pool",
                         outcome="failed", cause="kv_cache_oom", config={"mem_fraction": 0.88, "i": i})])
h.close()
print("done", n)
"""


def run(*args, env=None, **kw):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT, env=env, **kw)


def test_default_path_follows_env(monkeypatch, tmp_path):
    monkeypatch.delenv("LOGDOCTOR_HISTORY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_path() == tmp_path / "state" / "logdoctor" / "history.db"
    monkeypatch.setenv("LOGDOCTOR_HISTORY", str(tmp_path / "x.db"))
    assert default_path() == tmp_path / "x.db"
    monkeypatch.delenv("LOGDOCTOR_HISTORY")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_path() == tmp_path / "home" / ".local" / "state" / "logdoctor" / "history.db"


def test_two_processes_record_2000_attempts_without_lock_errors(tmp_path):
    db = tmp_path / "h.db"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), tag, "1000"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for tag in ("a", "b")
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert "locked" not in err
        assert out.strip() == "done 1000"
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 2000
    assert con.execute("SELECT COUNT(DISTINCT host) FROM attempts").fetchone()[0] == 2
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_record_is_idempotent_and_updates_in_place(tmp_path):
    with History(tmp_path / "h.db") as h:
        row = AttemptRow(key="k1", host="ct100", unit="u.service", outcome="in_progress", phase="weight_load")
        assert h.record([row]) == 1
        row2 = AttemptRow(
            key="k1",
            host="ct100",
            unit="u.service",
            outcome="failed",
            phase="memory_pool",
            cause="kv_cache_oom",
            fix={"lever": "mem_fraction", "to": 0.92},
        )
        assert h.record([row2]) == 0
        # a later re-diagnosis without a fix plan keeps the fix suggested before
        assert (
            h.record(
                [
                    AttemptRow(
                        key="k1",
                        host="ct100",
                        unit="u.service",
                        outcome="failed",
                        phase="memory_pool",
                        cause="kv_cache_oom",
                    )
                ]
            )
            == 0
        )
        rows = h.query()
        assert len(rows) == 1
        assert (rows[0].outcome, rows[0].phase, rows[0].fix) == (
            "failed",
            "memory_pool",
            {"lever": "mem_fraction", "to": 0.92},
        )


def test_values_are_parameters_not_sql(tmp_path):
    with History(tmp_path / "h.db") as h:
        evil = "x'; DROP TABLE attempts; --"
        h.record([AttemptRow(key=evil, host=evil, unit=evil, outcome="failed")])
        assert [r.host for r in h.query(host=evil)] == [evil]
        assert h.count() == 1


def test_migrates_a_version_1_database(tmp_path):
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    for stmt in MIGRATIONS[0]:
        con.execute(stmt)
    con.execute("PRAGMA user_version = 1")
    con.execute(
        "INSERT INTO attempts (key, host, unit, config, outcome, recorded) VALUES "
        "('old', 'ct100', 'u.service', '{}', 'failed', 1.0)"
    )
    con.commit()
    con.close()
    with History(db) as h:
        assert h.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        [row] = h.query()
        assert row.key == "old" and row.updated is None


def test_refuses_a_newer_or_foreign_database(tmp_path):
    db = tmp_path / "new.db"
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    p = run("explain", str(SEED / "seed-attempt1-kv-oom" / "journal.log"), "--history", str(db))
    assert p.returncode == 2 and "newer logdoctor" in p.stderr and "Traceback" not in p.stderr
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    p = run("explain", str(SEED / "seed-attempt1-kv-oom" / "journal.log"), "--history", str(junk))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_explain_records_each_attempt_once_and_history_lists_them(history_db):
    log = SEED / "seed-all-attempts" / "journal.log"
    for _ in range(2):
        assert run("explain", str(log)).returncode == 1
    # the same attempts read from their own logs are the same attempts
    assert run("explain", str(SEED / "seed-attempt1-kv-oom" / "journal.log")).returncode == 1
    doc = json.loads(run("history", "--format", "json").stdout)
    rows = doc["attempts"]
    assert [r["phase"] for r in rows] == ["memory_pool", "graph_capture", "weight_load"]
    assert {r["host"] for r in rows} == {"h200-qwen-03"} and {r["unit"] for r in rows} == {"sglang-qwen.service"}
    assert rows[0]["config"]["mem_fraction"] == 0.88 and rows[0]["signature"]
    assert rows[0]["engine"] == "sglang" and rows[0]["started"].startswith("2026-05-22T10:31:32")
    table = run("history", "--unit", "sglang-qwen").stdout
    assert table.splitlines()[0].split()[:3] == ["key", "started", "host"] and len(table.splitlines()) == 4
    assert run("history", "--host", "elsewhere").stdout.startswith("no attempts recorded")
    rows_csv = list(csv.DictReader(io.StringIO(run("history", "--format", "csv").stdout)))
    assert [r["cause"] for r in rows_csv] == ["kv_cache_oom", "graph_capture_fault", "hardware_fault"]
    p = run("history", "forget")
    assert p.returncode == 2 and "needs" in p.stderr
    assert run("history", "forget", "--key", rows[0]["key"][:12]).stdout.strip() == "forgot 1 attempt"
    assert run("history", "forget", "--host", "h200-qwen-03").stdout.strip() == "forgot 2 attempts"
    assert json.loads(run("history", "--format", "json").stdout)["attempts"] == []


def test_no_history_writes_nothing_and_imports_no_sqlite(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = SEED / "seed-attempt1-kv-oom" / "journal.log"
    probe = (
        "import runpy, sys\nsys.argv = ['logdoctor', 'explain', '--no-history', sys.argv[1]]\n"
        "try:\n    runpy.run_module('logdoctor', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print('sqlite3' in sys.modules, file=sys.stderr)"
    )
    p = subprocess.run([sys.executable, "-c", probe, str(log)], capture_output=True, text=True, cwd=ROOT)
    assert p.stderr.strip().splitlines()[-1] == "False"
    assert not (tmp_path / "state").exists()
    assert run("explain", str(log)).returncode == 1
    assert (tmp_path / "state" / "logdoctor" / "history.db").exists()
    p = run("explain", str(log), "--no-history", "--history", str(tmp_path / "x.db"))
    assert p.returncode == 2 and "not both" in p.stderr


def test_an_unusable_default_location_only_warns(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))  # state dir below a regular file: cannot be created
    p = run("explain", str(SEED / "seed-attempt1-kv-oom" / "journal.log"))
    assert p.returncode == 1 and p.stdout.startswith("FAILED")
    assert "continuing without the attempt history" in p.stderr and "Traceback" not in p.stderr
    p = run("explain", str(SEED / "seed-attempt1-kv-oom" / "journal.log"), "--history", str(blocker / "h.db"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
