"""The local spool of a server store: attempts recorded while the server could not be reached, in an SQLite file of
the same schema, one file per server (a spool for one URL is never replayed into another), replayed in batches.

Location: $LOGDOCTOR_SPOOL_DIR, else the state dir's spool/ folder (next to the default SQLite history).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from logdoctor.history.store import History, state_dir

REPLAY_BATCH = 500


def redact(url: str) -> str:
    """The URL without its password (for messages and the spool's name)."""
    try:
        p = urlsplit(url)
    except ValueError:
        return "postgresql://…"
    if p.password is None:
        return url
    netloc = p.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit((p.scheme, f"{user}:***@{netloc[1]}", p.path, p.query, p.fragment))


def spool_path(url: str) -> Path:
    base = Path(os.environ["LOGDOCTOR_SPOOL_DIR"]) if os.environ.get("LOGDOCTOR_SPOOL_DIR") else state_dir() / "spool"
    digest = hashlib.sha256(redact(url).encode()).hexdigest()[:16]
    return base / f"{digest}.db"


def open_spool(url: str) -> History:
    from logdoctor.history.sqlite import SQLiteStore

    return SQLiteStore(spool_path(url))


def pending(url: str) -> int:
    path = spool_path(url)
    if not path.exists():
        return 0
    with open_spool(url) as s:
        return s.count()


def replay(url: str, write: Callable[[list], None]) -> int:
    """Hand the spooled attempts to `write` (the server's transaction) batch by batch, oldest first; each batch is
    deleted from the spool only after `write` returned. Returns how many were replayed."""
    path = spool_path(url)
    if not path.exists():
        return 0
    done = 0
    with open_spool(url) as s:
        while True:
            batch = s.query(limit=REPLAY_BATCH)
            if not batch:
                break
            write(batch)
            keys = [r.key for r in batch]
            marks = ", ".join("?" * len(keys))
            s._write([(f"DELETE FROM attempts WHERE key IN ({marks})", keys)])  # noqa: S608,SLF001
            done += len(batch)
    return done
