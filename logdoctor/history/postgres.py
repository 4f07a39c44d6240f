"""The fleet store: one PostgreSQL database that every host's deploy hooks write to (psycopg 3, the `postgres` extra).

The same statements and migrations as SQLite (store.py): placeholders become %s, REAL becomes DOUBLE PRECISION, and
the schema version lives in a table (there is no PRAGMA user_version); migrations run under an advisory lock.
Writes run in SERIALIZABLE transactions, retried on a serialization failure; every value is a bound parameter; the
connection has a timeout. When the server cannot be reached, or goes away mid-run, nothing is lost: the store
switches to its local spool (spool.py) for the rest of the run, reads and writes alike, with one warning; the next
run that reaches the server replays the spool first.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from typing import Any

from logdoctor.core.errors import InputError, MissingExtra
from logdoctor.history import spool
from logdoctor.history.store import MIGRATIONS, SCHEMA_VERSION, History, busy_ms, check_columns, default_spec

CONNECT_TIMEOUT_S = 5  # $LOGDOCTOR_HISTORY_CONNECT_TIMEOUT overrides it
SERIALIZATION_RETRIES = 30
_LOCK_ID = 0x10_6D0C  # pg_advisory_xact_lock key for migrations


def _connect_timeout() -> int:
    try:
        return max(1, int(float(os.environ["LOGDOCTOR_HISTORY_CONNECT_TIMEOUT"])))
    except (KeyError, ValueError):
        return CONNECT_TIMEOUT_S


def _pg(sql: str) -> str:
    """Our SQL has no literal % and uses ? only as a placeholder."""
    return sql.replace("?", "%s")


def _pg_ddl(sql: str) -> str:
    return sql.replace(" REAL", " DOUBLE PRECISION")


class PostgresStore(History):
    """An attempt store on a PostgreSQL server, with a local spool for when it cannot be reached."""

    def __init__(self, spec: str | os.PathLike[str] | None = None, **kw: Any) -> None:
        super().__init__(spec)
        self.url = str(spec if spec is not None else default_spec())
        self.describe = spool.redact(self.url)
        self.conn: Any = None
        self.offline: History | None = None
        self.replayed = 0
        try:
            import psycopg
        except ImportError:
            raise MissingExtra("a postgresql:// history needs psycopg: pip install 'logdoctor[postgres]'") from None
        self._pgmod = psycopg
        try:
            self.conn = psycopg.connect(self.url, connect_timeout=_connect_timeout(), autocommit=True)
            # SET takes no bound parameter; set_config() does, with the same effect for this session
            self.conn.execute("SELECT set_config('statement_timeout', %s, false)", (str(busy_ms()),))
            self._migrate()
        except psycopg.OperationalError as e:
            self._go_offline(e)
            return
        except psycopg.ProgrammingError as e:  # a malformed URL, an unknown option
            raise InputError(f"bad history URL {self.describe}: {_first_line(e)}") from None
        except psycopg.Error as e:
            self._close_conn()
            raise InputError(f"the history database {self.describe} cannot be used: {_first_line(e)}") from None
        self.sync()

    # -- connection ------------------------------------------------------------------------------------------------

    def _go_offline(self, e: BaseException) -> None:
        self._close_conn()
        if self.offline is None:
            self.offline = spool.open_spool(self.url)
            self.warnings.append(
                f"the history server {self.describe} cannot be reached ({_first_line(e)}): attempts are spooled to "
                f"{self.offline.describe} and replayed on the next run that reaches it (or `logdoctor history sync`)"
            )

    def _close_conn(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001,S110 - a dead connection may fail to close; it is gone either way
                pass
            self.conn = None

    def _migrate(self) -> None:
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_ID])
            ours = self.conn.execute("SELECT to_regclass('logdoctor_schema')").fetchone()[0] is not None
            theirs = self.conn.execute("SELECT to_regclass('attempts')").fetchone()[0] is not None
            if not ours and theirs:
                raise InputError(
                    f"{self.describe} has an attempts table that logdoctor did not create; logdoctor leaves it "
                    "alone: point --history at another database or schema"
                )
            self.conn.execute("CREATE TABLE IF NOT EXISTS logdoctor_schema (version INTEGER NOT NULL)")
            got = self.conn.execute("SELECT version FROM logdoctor_schema").fetchone()
            version = got[0] if got else 0
            if version > SCHEMA_VERSION:
                raise InputError(
                    f"{self.describe} was written by a newer logdoctor (schema {version} > {SCHEMA_VERSION})"
                )
            if version:
                check_columns(self._columns(), self.describe, version)
            for step in range(version, SCHEMA_VERSION):
                for stmt in MIGRATIONS[step]:
                    self.conn.execute(_pg_ddl(stmt))
            if version != SCHEMA_VERSION:
                self.conn.execute("DELETE FROM logdoctor_schema")
                self.conn.execute("INSERT INTO logdoctor_schema (version) VALUES (%s)", [SCHEMA_VERSION])
            cols = self._columns()
        check_columns(cols, self.describe)

    def _columns(self) -> set[str]:
        got = self.conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'attempts' "
            "AND table_schema = current_schema()"
        ).fetchall()
        return {c[0] for c in got}

    # -- primitives: the server while it answers, the spool after it stops -----------------------------------------

    def _rows(self, sql: str, args: list[Any] | tuple = ()) -> list[tuple]:
        if self.offline is None:
            try:
                return self.conn.execute(_pg(sql), list(args)).fetchall()
            except self._pgmod.OperationalError as e:
                self._go_offline(e)
        assert self.offline is not None
        return self.offline._rows(sql, args)  # noqa: SLF001 - the spool is a store of the same family

    def _stream(self, sql: str, args: list[Any] | tuple = ()) -> Iterator[tuple]:
        if self.offline is None:
            try:
                cur = self.conn.cursor()
                yield from cur.stream(_pg(sql), list(args))
                return
            except self._pgmod.OperationalError as e:
                self._go_offline(e)
        assert self.offline is not None
        yield from self.offline._stream(sql, args)  # noqa: SLF001

    def _write(self, statements: list[tuple[str, list[Any] | tuple]]) -> list[int]:
        if self.offline is None:
            try:
                return self._write_serializable(statements)
            except self._pgmod.OperationalError as e:
                self._go_offline(e)
        assert self.offline is not None
        return self.offline._write(statements)  # noqa: SLF001

    def _write_serializable(self, statements: list[tuple[str, list[Any] | tuple]]) -> list[int]:
        errors = self._pgmod.errors
        for attempt in range(SERIALIZATION_RETRIES):
            try:
                with self.conn.transaction():
                    self.conn.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                    return [self.conn.execute(_pg(sql), list(args)).rowcount for sql, args in statements]
            except (errors.SerializationFailure, errors.DeadlockDetected):
                time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))  # noqa: S311 - jitter, not a secret
        with self.conn.transaction():  # the last try, its error (if any) goes up
            self.conn.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            return [self.conn.execute(_pg(sql), list(args)).rowcount for sql, args in statements]

    def record(self, rows: list) -> int:
        if not rows:
            return 0
        return self._record(rows)

    def sync(self) -> int:
        """Replay the spool into the server (idempotent: upserts by key, keeping each row's own times; a row is
        removed from the spool only after the server committed it)."""
        if self.offline is not None or self.conn is None:
            return 0
        try:
            n = spool.replay(self.url, self._write_replay)
        except self._pgmod.OperationalError as e:
            self._go_offline(e)
            return 0
        self.replayed += n
        return n

    def _write_replay(self, rows: list) -> None:
        self._write_serializable(self._upserts(rows, keep_times=True, replay=True))

    def close(self) -> None:
        self._close_conn()
        if self.offline is not None:
            self.offline.close()


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
