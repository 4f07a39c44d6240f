"""The embedded store: one SQLite file per machine.

Why SQLite: embedded, one file, safe under concurrent writers (WAL + a busy timeout + BEGIN IMMEDIATE, so two deploy
hooks diagnosing at once wait for each other instead of failing with "database is locked"). The schema version is
PRAGMA user_version. A file that is not ours is refused before anything is written to it: a database of another
program (tables of its own, user_version 0) is never migrated, and one at our version without our table or columns
is reported in one line.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from logdoctor.core.errors import InputError
from logdoctor.history.store import (
    MIGRATIONS,
    SCHEMA_VERSION,
    History,
    HistoryUnavailable,
    busy_ms,
    check_columns,
    default_spec,
)


def _transient(e: BaseException) -> bool:
    text = str(e).lower()
    return "locked" in text or "busy" in text


def _no_space(e: BaseException) -> bool:
    text = str(e).lower()
    return "disk is full" in text or "disk i/o error" in text


class SQLiteStore(History):
    """An attempt store in one SQLite file."""

    def __init__(self, spec: str | os.PathLike[str] | None = None, **kw: Any) -> None:
        super().__init__(spec)
        path = spec if spec is not None else default_spec()
        self.path = Path(path)
        self.describe = str(self.path)
        self.read_only = False
        self.busy_ms = busy_ms()
        self._check_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=self.busy_ms / 1000, isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            if self.path.is_file() and self._open_read_only():
                return
            why = e.strerror if isinstance(e, OSError) and e.strerror else e
            raise InputError(f"cannot open the history database {self.path}: {why}") from None
        try:
            self.db.execute(f"PRAGMA busy_timeout = {self.busy_ms}")
            self._refuse_foreign()
            self._wal()
            self.db.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
            self._check_schema()
        except sqlite3.DatabaseError as e:
            self.db.close()
            if _transient(e):
                raise HistoryUnavailable(
                    f"the history database {self.path} is locked by another process (waited {self.busy_ms / 1000:g} s)"
                ) from None
            if _no_space(e):
                raise HistoryUnavailable(
                    f"the history database {self.path} cannot be opened for writing ({e}: a full disk?)"
                ) from None
            if "readonly" in str(e).lower().replace("-", "") and self._open_read_only():
                return
            raise InputError(
                f"{self.path} is not a usable logdoctor history database ({e}); move it away or "
                f"pass --history PATH / --no-history"
            ) from None
        except InputError:
            self.db.close()
            raise

    def _check_path(self) -> None:
        """Refuse what cannot be a database file, in words (not SQLite's "cannot rollback" or errno 17)."""
        try:
            st = self.path.stat()
        except (FileNotFoundError, NotADirectoryError):
            st = None
        except OSError as e:
            raise InputError(f"cannot open the history database {self.path}: {e.strerror or e}") from None
        if st is not None and not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise InputError(f"the history database {self.path} is {kind}; give a file path")
        for parent in self.path.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise InputError(
                        f"cannot create the history database {self.path}: {parent} is a file, not a folder"
                    )
                break

    def _open_read_only(self) -> bool:
        """A history we may read but not write (a read-only file or folder, a read-only mount): earlier attempts
        still inform the verdict; this one is not recorded, and a warning says so."""
        uri = self.path.resolve().as_uri()
        for mode in ("?mode=ro", "?immutable=1"):  # immutable: a WAL database in a folder we cannot write
            db = None
            try:
                db = sqlite3.connect(uri + mode, uri=True, timeout=self.busy_ms / 1000, isolation_level=None)
                version = db.execute("PRAGMA user_version").fetchone()[0]
                cols = {t[1] for t in db.execute("PRAGMA table_info(attempts)")}
            except sqlite3.Error:
                if db is not None:
                    db.close()
                continue
            if version != SCHEMA_VERSION:
                db.close()
                return False
            self.db = db
            try:
                check_columns(cols, str(self.path))
            except InputError:
                db.close()
                raise
            self.read_only = True
            self.warnings.append(f"the history database {self.path} is read-only: this attempt is not recorded")
            return True
        return False

    def _refuse_foreign(self) -> None:
        """Before anything is written: user_version 0 with tables of its own is another program's database, never
        migrated (F20); a version of ours must have its attempts table and columns (F14)."""
        nested = self.db.in_transaction
        if not nested:
            self.db.execute("BEGIN")  # one snapshot: another process may be migrating a new file right now
        try:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            tables = [
                t[0] for t in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            ]
        except BaseException:
            if not nested and self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise  # the read's own error (a full disk, a lock), not a later "no transaction is active"
        if not nested and self.db.in_transaction:
            self.db.execute("COMMIT")
        if version:
            if version <= SCHEMA_VERSION:  # ours: its table must be there before anything (WAL, migrations) is written
                cols = {t[1] for t in self.db.execute("PRAGMA table_info(attempts)")}
                check_columns(cols, str(self.path), version)
            return
        if tables:
            shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
            raise InputError(
                f"{self.path} is an SQLite database of another program (tables: {shown}); logdoctor leaves it "
                "alone: pass another --history PATH"
            )

    def _check_schema(self) -> None:
        check_columns({t[1] for t in self.db.execute("PRAGMA table_info(attempts)")}, str(self.path))

    def _wal(self) -> None:
        # switching to WAL needs a moment of exclusive access; another process may be opening the file too
        for i in range(50):
            try:
                self.db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                time.sleep(0.02 * (i + 1))
        self.db.execute("PRAGMA journal_mode = WAL")

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise InputError(f"{self.path} was written by a newer logdoctor (schema {version} > {SCHEMA_VERSION})")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]  # another process may have done it
            if version == 0:
                self._refuse_foreign()
            else:
                check_columns({t[1] for t in self.db.execute("PRAGMA table_info(attempts)")}, str(self.path), version)
            for step in range(version, SCHEMA_VERSION):
                for stmt in MIGRATIONS[step]:
                    self.db.execute(stmt)
                self.db.execute(f"PRAGMA user_version = {step + 1}")
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    # -- primitives ------------------------------------------------------------------------------------------------

    def _rows(self, sql: str, args: list[Any] | tuple = ()) -> list[tuple]:
        return self.db.execute(sql, list(args)).fetchall()

    def _stream(self, sql: str, args: list[Any] | tuple = ()) -> Iterator[tuple]:
        yield from self.db.execute(sql, list(args))

    def _write(self, statements: list[tuple[str, list[Any] | tuple]]) -> list[int]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            counts = [self.db.execute(sql, list(args)).rowcount for sql, args in statements]
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        return counts

    def record(self, rows: list) -> int:
        if not rows or self.read_only:
            return 0
        try:
            return self._record(rows)
        except sqlite3.OperationalError as e:  # locked past the timeout, disk full, I/O error: the transaction
            # rolled back, the file is as it was; the verdict is not lost over it
            if _transient(e):
                why = f"is locked by another process (waited {self.busy_ms / 1000:g} s)"
            elif "readonly" in str(e).lower():
                why = "is read-only"
            else:
                why = f"could not be written ({e}; the file is unchanged)"
            self.warnings.append(f"the history database {self.path} {why}: this attempt is not recorded")
            return 0

    def close(self) -> None:
        self.db.close()
