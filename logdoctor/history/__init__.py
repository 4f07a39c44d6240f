"""The attempt history: one row per start attempt of a service, so that verdicts can reason across deploys and hosts
(crossattempt.py) and `logdoctor history` can list them. `History(spec)` opens it: an SQLite file (the embedded
default, sqlite.py) or a ``postgresql://`` URL (a fleet's shared server, postgres.py, spooling locally while the
server cannot be reached: spool.py). The interface and the SQL both share: store.py; which backend a spec gets:
factory.py (imported here, so that `History(spec)` can choose).

Location: $LOGDOCTOR_HISTORY, else $XDG_STATE_HOME/logdoctor/history.db, else ~/.local/state/logdoctor/history.db.
"""

from __future__ import annotations

from logdoctor.history.factory import backend_for
from logdoctor.history.store import (
    BUSY_TIMEOUT_MS,
    COLUMNS,
    MIGRATIONS,
    SCHEMA_VERSION,
    AttemptRow,
    History,
    HistoryUnavailable,
    HostSummary,
    default_path,
    default_spec,
    is_url,
    open_history,
)

__all__ = [
    "BUSY_TIMEOUT_MS",
    "COLUMNS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "AttemptRow",
    "History",
    "HistoryUnavailable",
    "HostSummary",
    "backend_for",
    "default_path",
    "default_spec",
    "is_url",
    "open_history",
]
