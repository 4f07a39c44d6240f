"""The attempt history: one SQLite row per start attempt of a service, so that verdicts can reason across deploys
and hosts (crossattempt.py) and `logdoctor history` can list them.

Why SQLite: embedded, one file, safe under concurrent writers (WAL + a busy timeout + BEGIN IMMEDIATE, so two
deploy hooks diagnosing at once wait for each other instead of failing with "database is locked"). Every statement
is parameterised. The schema carries a version (PRAGMA user_version) and is upgraded by the MIGRATIONS list.

Location: $LOGDOCTOR_HISTORY, else $XDG_STATE_HOME/logdoctor/history.db, else ~/.local/state/logdoctor/history.db.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from logdoctor.errors import InputError, UsageError

BUSY_TIMEOUT_MS = 60_000   # $LOGDOCTOR_HISTORY_TIMEOUT (seconds) overrides it


class HistoryUnavailable(InputError):
    """A passing state (another process held the database past the busy timeout, a full disk): callers diagnose
    without the history instead of failing (docs/reliability.md)."""


def _busy_ms() -> int:
    try:
        return max(0, int(float(os.environ["LOGDOCTOR_HISTORY_TIMEOUT"]) * 1000))
    except (KeyError, ValueError):
        return BUSY_TIMEOUT_MS


def _transient(e: BaseException) -> bool:
    text = str(e).lower()
    return "locked" in text or "busy" in text


def _no_space(e: BaseException) -> bool:
    text = str(e).lower()
    return "disk is full" in text or "disk i/o error" in text

# Each entry moves the schema from version i to i+1; never edit an entry once released, append a new one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 0 -> 1
        """CREATE TABLE attempts (
            key TEXT PRIMARY KEY,          -- sha256 of the attempt's own beginning (host, unit, first lines)
            host TEXT NOT NULL DEFAULT '',
            unit TEXT NOT NULL DEFAULT '',
            engine TEXT,
            engine_version TEXT,
            model TEXT,
            started TEXT,                  -- ISO time of the attempt's first line, when the log has times
            config TEXT NOT NULL DEFAULT '{}',   -- effective levers (JSON)
            phase TEXT,
            outcome TEXT NOT NULL,         -- failed | ready | in_progress | stopped
            cause TEXT,
            signature TEXT,                -- normalised hash of the decisive error
            fix TEXT,                      -- the fix suggested for this attempt (JSON: lever, flag, to, text)
            rule TEXT,
            origin TEXT,
            recorded REAL NOT NULL         -- unix time first recorded
        )""",
        "CREATE INDEX attempts_host_unit ON attempts(host, unit, started)",
        "CREATE INDEX attempts_unit ON attempts(unit, outcome)",
    ),
    (  # 1 -> 2: when a row was last re-diagnosed (an in-progress attempt that later failed is updated in place)
        "ALTER TABLE attempts ADD COLUMN updated REAL",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)

COLUMNS = ("key", "host", "unit", "engine", "engine_version", "model", "started", "config", "phase", "outcome",
           "cause", "signature", "fix", "rule", "origin", "recorded", "updated")


def default_path() -> Path:
    env = os.environ.get("LOGDOCTOR_HISTORY")
    if env:
        return Path(env).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "logdoctor" / "history.db"


@dataclass
class AttemptRow:
    """One attempt as stored. ``config`` maps lever -> value; ``fix`` is fixes[0] of its verdict (or None)."""

    key: str
    host: str = ""
    unit: str = ""
    engine: str | None = None
    engine_version: str | None = None
    model: str | None = None
    started: str | None = None
    config: dict = field(default_factory=dict)
    phase: str | None = None
    outcome: str = "failed"
    cause: str | None = None
    signature: str | None = None
    fix: dict | None = None
    rule: str | None = None
    origin: str | None = None
    recorded: float = 0.0
    updated: float | None = None

    def to_dict(self) -> dict:
        return {c: getattr(self, c) for c in COLUMNS}


class History:
    """An open attempt store. Use as a context manager or call close()."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_path()
        self.read_only = False
        self.warnings: list[str] = []     # what went wrong without costing the diagnosis (callers print them)
        self.busy_ms = _busy_ms()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=self.busy_ms / 1000, isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            if self.path.is_file() and self._open_read_only():
                return
            raise InputError(f"cannot open the history database {self.path}: {e}") from None
        try:
            self.db.execute(f"PRAGMA busy_timeout = {self.busy_ms}")
            self._wal()
            self.db.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except sqlite3.DatabaseError as e:
            self.db.close()
            if _transient(e):
                raise HistoryUnavailable(f"the history database {self.path} is locked by another process (waited "
                                         f"{self.busy_ms / 1000:g} s)") from None
            if _no_space(e):
                raise HistoryUnavailable(f"the history database {self.path} cannot be opened for writing ({e}: a "
                                         "full disk?)") from None
            if "readonly" in str(e).lower().replace("-", "") and self._open_read_only():
                return
            raise InputError(f"{self.path} is not a usable logdoctor history database ({e}); move it away or "
                             f"pass --history PATH / --no-history") from None

    def _open_read_only(self) -> bool:
        """A history we may read but not write (a read-only file or folder, a read-only mount): earlier attempts
        still inform the verdict; this one is not recorded, and a warning says so."""
        uri = self.path.resolve().as_uri()
        for mode in ("?mode=ro", "?immutable=1"):    # immutable: a WAL database in a folder we cannot write
            db = None
            try:
                db = sqlite3.connect(uri + mode, uri=True, timeout=self.busy_ms / 1000, isolation_level=None)
                version = db.execute("PRAGMA user_version").fetchone()[0]
                db.execute("SELECT COUNT(*) FROM attempts").fetchone()
            except sqlite3.Error:
                if db is not None:
                    db.close()
                continue
            if version != SCHEMA_VERSION:
                db.close()
                return False
            self.db, self.read_only = db, True
            self.warnings.append(f"the history database {self.path} is read-only: this attempt is not recorded")
            return True
        return False

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
            for step in range(version, SCHEMA_VERSION):
                for stmt in MIGRATIONS[step]:
                    self.db.execute(stmt)
                self.db.execute(f"PRAGMA user_version = {step + 1}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # -- writing ---------------------------------------------------------------------------------------------------

    def record(self, rows: list[AttemptRow]) -> int:
        """Insert or update attempts (by key) in one transaction; returns how many rows were new.

        A re-diagnosis updates what it learned (outcome, phase, cause, signature, config) and keeps the fix that was
        suggested earlier when this run has none (an earlier attempt of a window gets no fix plan of its own)."""
        if not rows or self.read_only:
            return 0
        try:
            return self._record(rows)
        except sqlite3.OperationalError as e:   # locked past the timeout, disk full, I/O error: the transaction
            # rolled back, the file is as it was; the verdict is not lost over it
            if _transient(e):
                why = f"is locked by another process (waited {self.busy_ms / 1000:g} s)"
            elif "readonly" in str(e).lower():
                why = "is read-only"
            else:
                why = f"could not be written ({e}; the file is unchanged)"
            self.warnings.append(f"the history database {self.path} {why}: this attempt is not recorded")
            return 0

    def _record(self, rows: list[AttemptRow]) -> int:
        now = time.time()
        new = 0
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for r in rows:
                cur = self.db.execute(
                    "INSERT INTO attempts (key, host, unit, engine, engine_version, model, started, config, phase, "
                    "outcome, cause, signature, fix, rule, origin, recorded, updated) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(key) DO NOTHING",
                    (r.key, r.host or "", r.unit or "", r.engine, r.engine_version, r.model, r.started,
                     json.dumps(r.config, sort_keys=True, default=str), r.phase, r.outcome, r.cause, r.signature,
                     json.dumps(r.fix, sort_keys=True, default=str) if r.fix else None, r.rule, r.origin, now, now))
                if cur.rowcount:
                    new += 1
                    continue
                self.db.execute(
                    "UPDATE attempts SET engine = COALESCE(?, engine), engine_version = COALESCE(?, engine_version), "
                    "model = COALESCE(?, model), config = ?, phase = ?, outcome = ?, cause = ?, "
                    "signature = COALESCE(?, signature), fix = COALESCE(?, fix), rule = COALESCE(?, rule), "
                    "updated = ? WHERE key = ?",
                    (r.engine, r.engine_version, r.model, json.dumps(r.config, sort_keys=True, default=str), r.phase,
                     r.outcome, r.cause, r.signature,
                     json.dumps(r.fix, sort_keys=True, default=str) if r.fix else None, r.rule, now, r.key))
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        return new

    def forget(self, *, host: str | None = None, unit: str | None = None, key: str | None = None,
               before: float | None = None, everything: bool = False) -> int:
        """Delete matching attempts; refuses an unfiltered delete unless everything=True. Returns the count."""
        where, args = self._where(host=host, unit=unit, key=key)
        if before is not None:
            where.append("recorded < ?")
            args.append(before)
        if not where and not everything:
            raise UsageError("history forget needs --host, --unit, --key, --before or --all")
        # the WHERE holds fixed column names and ? placeholders only (_where); the values are bound
        sql = "DELETE FROM attempts" + (" WHERE " + " AND ".join(where) if where else "")  # noqa: S608
        self.db.execute("BEGIN IMMEDIATE")
        try:
            n = self.db.execute(sql, args).rowcount
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return n

    # -- reading ---------------------------------------------------------------------------------------------------

    @staticmethod
    def _where(*, host=None, unit=None, key=None, model=None, outcome=None) -> tuple[list[str], list]:
        where, args = [], []
        for col, val in (("host", host), ("unit", unit), ("model", model), ("outcome", outcome)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        if key is not None:
            where.append("key LIKE ?")       # a unique prefix is enough, as with git hashes
            args.append(key.replace("%", "").replace("_", "") + "%")
        return where, args

    def query(self, *, host: str | None = None, unit: str | None = None, model: str | None = None,
              outcome: str | None = None, key: str | None = None, limit: int | None = None) -> list[AttemptRow]:
        """Attempts matching the filters, oldest first (by start time, then by when they were recorded)."""
        where, args = self._where(host=host, unit=unit, key=key, model=model, outcome=outcome)
        sql = "SELECT " + ", ".join(COLUMNS) + " FROM attempts"  # noqa: S608 - fixed columns; values bound below
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY COALESCE(started, ''), recorded, rowid"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        return [_row(t) for t in self.db.execute(sql, args)]

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _row(t: tuple) -> AttemptRow:
    d = dict(zip(COLUMNS, t))
    d["config"] = json.loads(d["config"] or "{}")
    d["fix"] = json.loads(d["fix"]) if d["fix"] else None
    return AttemptRow(**d)


def open_history(history) -> History | None:
    """The API's ``history=`` argument → an open History or None: None/False = off, True = the default location,
    a path = that file, a History = itself."""
    if history is None or history is False:
        return None
    if isinstance(history, History):
        return history
    if history is True:
        return History()
    if isinstance(history, (str, os.PathLike)):
        return History(history)
    raise UsageError(f"history= takes None, True, a path or a logdoctor.history.History, not {type(history).__name__}")
