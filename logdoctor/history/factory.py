"""Which backend opens a history spec: the top of the history package. The interface (store.py) names no backend
and each backend imports only the interface, so the choice lives here: a ``postgresql://`` URL → PostgresStore
(postgres.py, spooling to an SQLite file through spool.py while the server is unreachable), anything else → an
SQLite file (sqlite.py). The package's __init__ imports this module, which installs `backend_for` as the chooser
`History(spec)` calls; the backends are imported only when one is chosen (a PostgreSQL history costs nothing to a
run that uses a file).
"""

from __future__ import annotations

import os

from logdoctor.history.store import History, install_backends, is_url


def backend_for(spec: str | os.PathLike[str]) -> type[History]:
    """The History subclass that opens `spec` (a path or a postgresql:// URL)."""
    if is_url(spec):
        from logdoctor.history.postgres import PostgresStore

        return PostgresStore
    from logdoctor.history.sqlite import SQLiteStore

    return SQLiteStore


install_backends(backend_for)
