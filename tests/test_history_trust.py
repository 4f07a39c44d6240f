"""docs/reliability.md, "Trust boundaries: history state": every row with a message is run through the CLI here, in
a scratch folder, and its stderr compared with the table exactly (`…` stands for text that varies: a server's own
error, a spool file's hash); the exit code and what is left in the database are checked too."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "fixtures" / "journals" / "seed-attempt1-kv-oom" / "journal.log"
DOC = ROOT / "docs" / "reliability.md"


def rows() -> dict[str, tuple[str, int]]:
    text = DOC.read_text()
    section = text.split("## Trust boundaries: history state", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([\w-]+)` \| .*? \| (``(.*?)``|—) \| (\d) \|", line)
        if m:
            out[m[1]] = (m[3] or "", int(m[4]))
    return out


ROWS = rows()


def cli(tmp: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ, XDG_STATE_HOME=str(tmp / "state"), LOGDOCTOR_HISTORY_CONNECT_TIMEOUT="2")
    e.pop("LOGDOCTOR_HISTORY", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "logdoctor", *args], capture_output=True, text=True, cwd=tmp, env=e)


def check(row: str, p: subprocess.CompletedProcess) -> None:
    message, code = ROWS[row]
    assert p.returncode == code, (row, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, (row, p.stderr)
    pattern = ".*".join(map(re.escape, message.split("…")))
    assert re.fullmatch("logdoctor: " + pattern, lines[0]), (row, lines[0], message)


def test_the_table_has_every_row():
    assert {
        "history-forget-empty-key",
        "history-forget-wildcard",
        "history-forget-ambiguous",
        "history-wrong-tables",
        "history-foreign",
        "history-dev-null",
        "history-under-a-file",
        "history-server-away",
        "history-key-collision",
        "history-500k-rows",
    } <= set(ROWS)


def _keys_db(tmp: Path) -> Path:
    from logdoctor.history import AttemptRow, History

    db = tmp / "h.db"
    with History(db) as h:
        h.record(
            [
                AttemptRow(key=f"c0ffee00{i:02d}" + "0" * 22, host="ct100", unit="u.service", outcome="failed")
                for i in range(20)
            ]
        )
    return db


def _count(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize(
    "row,key",
    [
        ("history-forget-empty-key", ""),
        ("history-forget-empty-key", "  "),
        ("history-forget-wildcard", "%"),
        ("history-forget-ambiguous", "c0ffee00"),
    ],
)
def test_forget_keys(tmp_path, row, key):
    db = _keys_db(tmp_path)
    check(row, cli(tmp_path, "history", "--history", "h.db", "forget", "--key", key))
    assert _count(db) == 20
    for other in ("_", "c0ff"):
        p = cli(tmp_path, "history", "--history", "h.db", "forget", "--key", other)
        assert p.returncode == 2 and "8 characters" in p.stderr
    assert _count(db) == 20


def test_wrong_tables(tmp_path):
    con = sqlite3.connect(tmp_path / "notable.db")
    con.execute("PRAGMA user_version = 2")
    con.execute("CREATE TABLE other(x)")
    con.commit()
    con.close()
    before = (tmp_path / "notable.db").read_bytes()
    check("history-wrong-tables", cli(tmp_path, "explain", "--history", "notable.db", str(LOG)))
    assert (tmp_path / "notable.db").read_bytes() == before


def test_foreign(tmp_path):
    con = sqlite3.connect(tmp_path / "otherapp.db")
    con.execute("CREATE TABLE bookmarks(url TEXT)")
    con.commit()
    con.close()
    check("history-foreign", cli(tmp_path, "explain", "--history", "otherapp.db", str(LOG)))
    con = sqlite3.connect(tmp_path / "otherapp.db")
    assert con.execute("PRAGMA user_version").fetchone()[0] == 0
    assert [t[0] for t in con.execute("SELECT name FROM sqlite_master")] == ["bookmarks"]


def test_paths(tmp_path):
    check("history-dev-null", cli(tmp_path, "explain", "--history", "/dev/null", str(LOG)))
    (tmp_path / "notadir").write_text("x")
    check("history-under-a-file", cli(tmp_path, "explain", "--history", "notadir/x.db", str(LOG)))


def test_server_away(tmp_path):
    pytest.importorskip("psycopg")
    p = cli(tmp_path, "explain", "--history", "postgresql:///nodb?host=/nonexistent", str(LOG))
    check("history-server-away", p)
    assert p.stdout.startswith("FAILED")
    assert sorted(os.listdir(tmp_path)) == ["state"]
    [spool] = (tmp_path / "state" / "logdoctor" / "spool").glob("*.db")
    assert _count(spool) == 1
