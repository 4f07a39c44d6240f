"""Small checks several test files share: a history database's integrity, everything a pty received."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path


def history_attempts(db: Path) -> int:
    """Assert SQLite's integrity_check is ok; return the number of recorded attempts."""
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    finally:
        con.close()


def read_pty(master: int) -> bytes:
    """All a pty's master side has to read until the other side is closed (EIO or EOF)."""
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)
