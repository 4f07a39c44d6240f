"""The attempt store's interface: one row per start attempt of a service, the schema and its migrations, and every
question the reasoning asks (crossattempt.py), answered in SQL with indexes and LIMITs so that no caller ever loads a
unit's whole history.

`History(spec)` opens the store a spec names: a file path → SQLite (sqlite.py, the embedded default), a
``postgresql://`` URL → PostgreSQL (postgres.py, shared by a fleet, with a local spool when the server cannot be
reached); factory.py makes that choice, so that this interface depends on no backend. Both run the same statements and migrations (the SQL here is written once, with ``?`` placeholders), so
the reasoning code never knows which one it has.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from logdoctor.core.errors import InputError, UsageError
from logdoctor.core.lean import dataclass, field

BUSY_TIMEOUT_MS = 60_000  # $LOGDOCTOR_HISTORY_TIMEOUT (seconds) overrides it
RECENT_HERE = 50  # the reasoning reads at most this many earlier attempts of a unit on a host
TRIED_WINDOW = 500  # "already tried" = the values of the latest this many failed attempts of the unit on the host
ELSEWHERE_WINDOW = 200  # ready attempts of the unit on other hosts examined for "came up elsewhere"
HOST_RECENT = 5  # `history hosts`: a host is a suspect when one of its latest this many attempts is hardware_fault
FORGET_KEY_MIN = 8  # `forget --key`: an exact key, or a unique prefix of at least this many characters


class HistoryUnavailable(InputError):
    """A passing state (another process held the database past the busy timeout, a full disk, a server that cannot
    be reached): callers diagnose without the history instead of failing (docs/reliability.md)."""


# Each entry moves the schema from version i to i+1; never edit an entry once released, append a new one. The
# statements are portable SQL; the PostgreSQL store maps REAL to DOUBLE PRECISION (postgres.py) and keeps the
# version in a table instead of PRAGMA user_version.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 0 -> 1
        """CREATE TABLE attempts (
            key TEXT PRIMARY KEY,          -- sha256 of the attempt (host, unit, its lines: crossattempt.attempt_key)
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
    (  # 2 -> 3: bounded queries (issue 18): '' for "no start time" so that (host, unit, started) orders by index;
        # indexes for "came up elsewhere", the fleet circuit breaker and --since / forget --before
        "UPDATE attempts SET started = '' WHERE started IS NULL",
        "DROP INDEX attempts_host_unit",
        "CREATE INDEX attempts_here ON attempts(host, unit, started, recorded)",
        "CREATE INDEX attempts_ready ON attempts(unit, outcome, recorded)",
        "CREATE INDEX attempts_verdict ON attempts(cause, rule, recorded)",
        "CREATE INDEX attempts_recorded ON attempts(recorded)",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)

COLUMNS = (
    "key",
    "host",
    "unit",
    "engine",
    "engine_version",
    "model",
    "started",
    "config",
    "phase",
    "outcome",
    "cause",
    "signature",
    "fix",
    "rule",
    "origin",
    "recorded",
    "updated",
)
_SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM attempts"  # noqa: S608 - fixed column names and ? placeholders; values are bound
_ORDER = " ORDER BY started, recorded, key"
_ORDER_DESC = " ORDER BY started DESC, recorded DESC, key DESC"


def busy_ms() -> int:
    try:
        return max(0, int(float(os.environ["LOGDOCTOR_HISTORY_TIMEOUT"]) * 1000))
    except (KeyError, ValueError):
        return BUSY_TIMEOUT_MS


def is_url(spec: object) -> bool:
    """A ``postgresql://`` (or ``postgres://``) URL: never a file path."""
    return isinstance(spec, str) and spec.split("://", 1)[0].lower() in ("postgresql", "postgres") and "://" in spec


def default_spec() -> str | Path:
    """$LOGDOCTOR_HISTORY (a path or a postgresql:// URL), else $XDG_STATE_HOME/logdoctor/history.db, else
    ~/.local/state/logdoctor/history.db."""
    env = os.environ.get("LOGDOCTOR_HISTORY")
    if env:
        return env if is_url(env) else Path(env).expanduser()
    return state_dir() / "history.db"


def default_path() -> Path:
    spec = default_spec()
    return spec if isinstance(spec, Path) else state_dir() / "history.db"


def state_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "logdoctor"


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


@dataclass
class HostSummary:
    """One line of `history hosts`: what the store knows about a host."""

    host: str
    attempts: int
    failures: int
    last_seen: float
    hardware_at: float | None  # when its latest hardware_fault verdict was recorded
    hardware_rule: str | None
    hardware_unit: str | None
    suspect: bool = False  # a hardware_fault among its latest HOST_RECENT attempts

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def row_from(t: tuple) -> AttemptRow:
    d = dict(zip(COLUMNS, t))
    d["config"] = json.loads(d["config"] or "{}")
    d["fix"] = json.loads(d["fix"]) if d["fix"] else None
    d["started"] = d["started"] or None
    return AttemptRow(**d)


def row_values(r: AttemptRow, recorded: float, updated: float) -> tuple:
    return (
        r.key,
        r.host or "",
        r.unit or "",
        r.engine,
        r.engine_version,
        r.model,
        r.started or "",
        json.dumps(r.config, sort_keys=True, default=str),
        r.phase,
        r.outcome,
        r.cause,
        r.signature,
        json.dumps(r.fix, sort_keys=True, default=str) if r.fix else None,
        r.rule,
        r.origin,
        recorded,
        updated,
    )


# one upsert for both stores: a re-diagnosis updates what it learned and keeps the fix suggested earlier when this
# run has none (an earlier attempt of a window gets no fix plan of its own); `recorded` stays the first time
UPSERT = (
    "INSERT INTO attempts (" + ", ".join(COLUMNS) + ") VALUES (" + ", ".join("?" * len(COLUMNS)) + ") "  # noqa: S608 - fixed column names and ? placeholders; values are bound
    "ON CONFLICT (key) DO UPDATE SET engine = COALESCE(excluded.engine, attempts.engine), "
    "engine_version = COALESCE(excluded.engine_version, attempts.engine_version), "
    "model = COALESCE(excluded.model, attempts.model), config = excluded.config, phase = excluded.phase, "
    "outcome = excluded.outcome, cause = excluded.cause, "
    "signature = COALESCE(excluded.signature, attempts.signature), fix = COALESCE(excluded.fix, attempts.fix), "
    "rule = COALESCE(excluded.rule, attempts.rule), updated = excluded.updated"
)
# a replayed spool row never overwrites what the server learned later about the same attempt
UPSERT_REPLAY = UPSERT + " WHERE excluded.updated >= COALESCE(attempts.updated, attempts.recorded)"


def _where(
    *,
    host: str | None = None,
    unit: str | None = None,
    model: str | None = None,
    outcome: str | None = None,
    since: float | None = None,
    before: float | None = None,
) -> tuple[list[str], list[Any]]:
    """Fixed column names and ? placeholders only; the values are bound."""
    where: list[str] = []
    args: list[Any] = []
    for col, val in (("host", host), ("unit", unit), ("model", model), ("outcome", outcome)):
        if val is not None:
            where.append(f"{col} = ?")
            args.append(val)
    if since is not None:
        where.append("recorded >= ?")
        args.append(float(since))
    if before is not None:
        where.append("recorded < ?")
        args.append(float(before))
    return where, args


def _sql(base: str, where: list[str]) -> str:
    return base + (" WHERE " + " AND ".join(where) if where else "")


# Which backend `History(spec)` opens: chosen by history/factory.py, which the package's __init__ imports and which
# installs itself here. The interface below names no backend; the backends (sqlite.py, postgres.py) import only it.
_backend_for: Callable[[str | os.PathLike[str]], type[History]] | None = None


def install_backends(choose: Callable[[str | os.PathLike[str]], type[History]]) -> None:
    """Called once by history/factory.py: `choose(spec)` is the History subclass that opens `spec`."""
    global _backend_for  # noqa: PLW0603 - the one registration point of the backends
    _backend_for = choose


class History:
    """An open attempt store; use as a context manager or call close().

    ``History(spec)`` picks the store: None = the default location ($LOGDOCTOR_HISTORY or the XDG state dir), a
    ``postgresql://`` URL = PostgreSQL, anything else = an SQLite file. Subclasses provide the connection (`_rows`,
    `_stream`, `_write`, `_scalar`); every question below is the same SQL on both."""

    describe: str = ""
    read_only: bool = False

    def __new__(cls, spec: str | os.PathLike[str] | None = None, **kw: Any) -> History:
        if cls is not History:
            return super().__new__(cls)
        if _backend_for is None:  # the package's __init__ installs factory.py's chooser: never seen in practice
            raise RuntimeError("no history backend is installed: import logdoctor.history, not only its store")
        return super().__new__(_backend_for(default_spec() if spec is None else spec))

    def __init__(self, spec: str | os.PathLike[str] | None = None, **kw: Any) -> None:
        self.warnings: list[str] = []  # what went wrong without costing the diagnosis (callers print them)

    # -- connection primitives (subclasses) ------------------------------------------------------------------------

    def _rows(self, sql: str, args: list[Any] | tuple = ()) -> list[tuple]:
        raise NotImplementedError

    def _stream(self, sql: str, args: list[Any] | tuple = ()) -> Iterator[tuple]:
        raise NotImplementedError

    def _write(self, statements: list[tuple[str, list[Any] | tuple]]) -> list[int]:
        """Run the statements in one write transaction; their row counts."""
        raise NotImplementedError

    def _scalar(self, sql: str, args: list[Any] | tuple = ()) -> Any:
        rows = self._rows(sql, args)
        return rows[0][0] if rows else None

    def close(self) -> None:
        raise NotImplementedError

    def sync(self) -> int:
        """Replay attempts spooled while a server was unreachable; the count (a local file has no spool: 0)."""
        return 0

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------------------------------

    def record(self, rows: list[AttemptRow]) -> int:
        """Insert or update attempts (by key) in one transaction; returns how many rows were new."""
        if not rows or self.read_only:
            return 0
        return self._record(rows)

    def _upserts(
        self, rows: list[AttemptRow], *, keep_times: bool = False, replay: bool = False
    ) -> list[tuple[str, list[Any] | tuple]]:
        now = time.time()
        out: list[tuple[str, list[Any] | tuple]] = []
        for i, r in enumerate(rows):
            # a micro-step per row keeps a window's attempts in order when their logs carry no times
            t = r.recorded if keep_times and r.recorded else now + i * 1e-6
            out.append((UPSERT_REPLAY if replay else UPSERT, row_values(r, t, (r.updated or t) if keep_times else t)))
        return out

    def _record(self, rows: list[AttemptRow]) -> int:
        keys = [r.key for r in rows]
        before = self.existing(keys)
        self._write(self._upserts(rows))
        return len(set(keys) - before)

    def existing(self, keys: list[str]) -> set[str]:
        if not keys:
            return set()
        marks = ", ".join("?" * len(keys))
        return {t[0] for t in self._rows(f"SELECT key FROM attempts WHERE key IN ({marks})", keys)}  # noqa: S608

    def forget(
        self,
        *,
        host: str | None = None,
        unit: str | None = None,
        key: str | None = None,
        before: float | None = None,
        everything: bool = False,
    ) -> int:
        """Delete matching attempts; refuses an unfiltered delete unless everything=True. Returns the count.

        A key is one attempt: the exact key, or a prefix of at least FORGET_KEY_MIN characters that names exactly one
        (no wildcards: an empty or short key never widens to every row)."""
        where, args = _where(host=host, unit=unit, before=before)
        if key is not None:
            where.append("key = ?")
            args.append(self.resolve_key(key))
        if not where and not everything:
            raise UsageError("history forget needs --host, --unit, --key, --before or --all")
        return self._write([(_sql("DELETE FROM attempts", where), args)])[0]

    def resolve_key(self, key: str) -> str:
        k = key.strip()
        if not k:
            raise UsageError("history forget --key needs a key (as `history` shows it), not an empty string")
        if self._scalar("SELECT COUNT(*) FROM attempts WHERE key = ?", [k]):
            return k
        if len(k) < FORGET_KEY_MIN:
            raise UsageError(f"no attempt has the key {k!r} (a key prefix needs at least {FORGET_KEY_MIN} characters)")
        hits = self._rows("SELECT key FROM attempts WHERE key > ? AND substr(key, 1, ?) = ? LIMIT 2", [k, len(k), k])
        if not hits:
            raise UsageError(f"no attempt has a key starting with {k!r}")
        if len(hits) > 1:
            raise UsageError(f"the key prefix {k!r} names more than one attempt: give more characters")
        return hits[0][0]

    # -- listing ---------------------------------------------------------------------------------------------------

    def query(
        self,
        *,
        host: str | None = None,
        unit: str | None = None,
        model: str | None = None,
        outcome: str | None = None,
        key: str | None = None,
        since: float | None = None,
        limit: int | None = None,
    ) -> list[AttemptRow]:
        """Attempts matching the filters, oldest first (by start time, then by when they were recorded); with
        `limit`, the first `limit` of them. Prefer iter_rows() or page() for listings that may be long."""
        return list(
            self.iter_rows(host=host, unit=unit, model=model, outcome=outcome, key=key, since=since, limit=limit)
        )

    def iter_rows(
        self,
        *,
        host: str | None = None,
        unit: str | None = None,
        model: str | None = None,
        outcome: str | None = None,
        key: str | None = None,
        since: float | None = None,
        limit: int | None = None,
    ) -> Iterator[AttemptRow]:
        """query(), streamed: rows come from a cursor as they are read."""
        where, args = _where(host=host, unit=unit, model=model, outcome=outcome, since=since)
        if key is not None:
            where.append("substr(key, 1, ?) = ?")
            args += [len(key), key]
        sql = _sql(_SELECT, where) + _ORDER
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        for t in self._stream(sql, args):
            yield row_from(t)

    def page(
        self,
        *,
        host: str | None = None,
        unit: str | None = None,
        since: float | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[AttemptRow]:
        """The `limit` most recent attempts after skipping the `offset` most recent ones, oldest first."""
        where, args = _where(host=host, unit=unit, since=since)
        sql = _sql(_SELECT, where) + _ORDER_DESC + " LIMIT ? OFFSET ?"
        return [row_from(t) for t in reversed(self._rows(sql, [*args, int(limit), int(offset)]))]

    def count(self, *, host: str | None = None, unit: str | None = None, since: float | None = None) -> int:
        where, args = _where(host=host, unit=unit, since=since)
        return int(self._scalar(_sql("SELECT COUNT(*) FROM attempts", where), args) or 0)

    # -- the questions the reasoning asks (crossattempt.py) --------------------------------------------------------

    def get(self, keys: list[str]) -> dict[str, AttemptRow]:
        """The stored rows of these exact keys (a window's attempts: a handful)."""
        if not keys:
            return {}
        marks = ", ".join("?" * len(keys))
        rows = self._rows(_SELECT + f" WHERE key IN ({marks})", list(keys))  # noqa: S608 - placeholders only
        return {r.key: r for r in map(row_from, rows)}

    def recent_here(
        self, host: str, unit: str, *, started_before: str | None = None, limit: int = RECENT_HERE
    ) -> list[AttemptRow]:
        """The latest `limit` attempts of `unit` on `host` (that started before `started_before`, when given),
        oldest first; read backwards along the (host, unit, started, recorded) index."""
        where, args = _where(host=host, unit=unit)
        if started_before:
            where.append("started < ?")
            args.append(started_before)
        sql = _sql(_SELECT, where) + _ORDER_DESC + " LIMIT ?"
        return [row_from(t) for t in reversed(self._rows(sql, [*args, int(limit)]))]

    def count_here(self, host: str, unit: str, *, started_before: str | None = None) -> int:
        where, args = _where(host=host, unit=unit)
        if started_before:
            where.append("started < ?")
            args.append(started_before)
        return int(self._scalar(_sql("SELECT COUNT(*) FROM attempts", where), args) or 0)

    def tried_here(
        self, host: str, unit: str, *, started_before: str | None = None, limit: int = TRIED_WINDOW
    ) -> list[dict]:
        """The distinct configs of the latest `limit` failed attempts of `unit` on `host` (the planner's "already
        tried"): a bounded window, newest first."""
        where, args = _where(host=host, unit=unit, outcome="failed")
        if started_before:
            where.append("started < ?")
            args.append(started_before)
        inner = _sql("SELECT config FROM attempts", where) + _ORDER_DESC + " LIMIT ?"  # noqa: S608 - fixed column names and ? placeholders; values are bound
        sql = f"SELECT DISTINCT config FROM ({inner}) AS latest"  # noqa: S608 - built from fixed text above
        return [json.loads(t[0] or "{}") for t in self._rows(sql, [*args, int(limit)])]

    def ready_elsewhere(self, unit: str, host: str, *, limit: int = ELSEWHERE_WINDOW) -> list[AttemptRow]:
        """The latest `limit` ready attempts of `unit` on other hosts, oldest first (the (unit, outcome, recorded)
        index, newest first)."""
        sql = (
            _SELECT + " WHERE unit = ? AND outcome = 'ready' AND host <> ? AND host <> ''"
            " ORDER BY recorded DESC, key DESC LIMIT ?"
        )
        return [row_from(t) for t in reversed(self._rows(sql, [unit, host, int(limit)]))]

    def verdict_hosts(self, cause: str, rule: str | None, since: float, *, limit: int = 1000) -> list[str]:
        """Distinct hosts whose attempts got this verdict (cause and rule) recorded since `since` (unix time): the
        fleet circuit breaker's question."""
        where, args = _where(since=since)
        where = ["cause = ?", "host <> ''", *where]
        args = [cause, *args]
        if rule is not None:
            where.insert(1, "rule = ?")
            args.insert(1, rule)
        sql = _sql("SELECT DISTINCT host FROM attempts", where) + " ORDER BY host LIMIT ?"  # noqa: S608 - fixed column names and ? placeholders; values are bound
        return [t[0] for t in self._rows(sql, [*args, int(limit)])]

    def hosts(self, *, since: float | None = None, recent: int = HOST_RECENT) -> list[HostSummary]:
        """Per host: attempts, failures, its latest hardware_fault verdict, and whether it is a suspect (one among
        its latest `recent` attempts). Aggregates and a window function: nothing is loaded row by row."""
        where, args = _where(since=since)
        where.append("host <> ''")
        body = _sql("FROM attempts", where)
        totals = self._rows(
            "SELECT host, COUNT(*), SUM(CASE WHEN outcome = 'failed' THEN 1 ELSE 0 END), MAX(recorded), "
            "MAX(CASE WHEN cause = 'hardware_fault' THEN recorded END) " + body + " GROUP BY host ORDER BY host",
            args,
        )
        ranked = (
            "SELECT host, cause, rule, unit, recorded, ROW_NUMBER() OVER (PARTITION BY host ORDER BY recorded DESC, "
            "key DESC) AS n " + body
        )
        hw = self._rows(
            f"SELECT host, MIN(n) FROM ({ranked}) AS r WHERE cause = 'hardware_fault' GROUP BY host",  # noqa: S608
            args,
        )
        first_hw = {h: n for h, n in hw}
        out = []
        for host, n, failures, last, hw_at in totals:
            rule = unit = None
            if hw_at is not None:
                got = self._rows(
                    "SELECT rule, unit FROM attempts WHERE host = ? AND cause = 'hardware_fault' AND recorded = ? "
                    "LIMIT 1",
                    [host, hw_at],
                )
                if got:
                    rule, unit = got[0]
            out.append(
                HostSummary(
                    host=host,
                    attempts=int(n),
                    failures=int(failures or 0),
                    last_seen=float(last),
                    hardware_at=float(hw_at) if hw_at is not None else None,
                    hardware_rule=rule,
                    hardware_unit=unit,
                    suspect=first_hw.get(host, recent + 1) <= recent,
                )
            )
        return out


def check_columns(present: set[str], where: str, version: int = SCHEMA_VERSION) -> None:
    """A database at a version of ours whose attempts table lacks that version's columns is not ours to use (checked
    before a migration touches it, and after)."""
    if not present:
        raise InputError(
            f"{where} is not a logdoctor history database (no attempts table); move it away or pass "
            "--history PATH / --no-history"
        )
    gone = [c for c in COLUMNS if c not in present and (version >= 2 or c != "updated")]
    if gone:
        raise InputError(
            f"{where} is not a logdoctor history database (its attempts table lacks "
            f"{', '.join(gone)}); move it away or pass --history PATH / --no-history"
        )


def open_history(history: object) -> History | None:
    """The API's ``history=`` argument → an open History or None: None/False = off, True = the default location,
    a path or a postgresql:// URL = that store, a History = itself."""
    if history is None or history is False:
        return None
    if isinstance(history, History):
        return history
    if history is True:
        return History()
    if isinstance(history, (str, os.PathLike)):
        return History(history)
    raise UsageError(f"history= takes None, True, a path or a logdoctor.history.History, not {type(history).__name__}")
