"""`logdoctor history`: list (paged, streamed), forget, per-host summary and spool sync of recorded attempts; plus the
--history/--no-history options that explain, watch, fix and notify share (sqlite3 / psycopg are imported only when
a history is actually used)."""

from __future__ import annotations

import csv
import io
import json
import sys
from datetime import UTC, datetime

import click

LIST_COLUMNS = (
    "key",
    "started",
    "host",
    "unit",
    "engine",
    "engine_version",
    "phase",
    "outcome",
    "cause",
    "fix",
    "signature",
)
TABLE_PAGE = 50  # the table shows the latest 50 attempts unless --limit says otherwise
SHOWN = ("key", "started", "host", "unit", "phase", "outcome", "cause", "fix")
WIDTHS = {"key": 12, "started": 19, "host": 16, "unit": 24, "phase": 14, "outcome": 11, "cause": 22, "fix": 40}
_HISTORY_HELP = (
    "attempt history: an SQLite file or a postgresql:// URL (default $LOGDOCTOR_HISTORY, else "
    "$XDG_STATE_HOME/logdoctor/history.db)"
)


def history_options(f):
    f = click.option("--no-history", is_flag=True, help="do not read or write the attempt history")(f)
    f = click.option("--history", "history_path", metavar="PATH|URL", help=_HISTORY_HELP)(f)
    return f


def open_from_options(history_path, no_history):
    """--history/--no-history → an open History, or None (no sqlite work at all); one implementation for the click
    commands and the click-free explain path (logdoctor/cli/run.py)."""
    from logdoctor.cli.run import open_history

    return open_history(history_path, no_history)


def emit_warnings(store) -> None:
    """What the store could not do (read-only, locked past the timeout, a full disk, a server away): the verdict
    stands."""
    from logdoctor.cli.run import emit_store_warnings

    emit_store_warnings(store)


def _fix_text(fix) -> str:
    if not fix:
        return ""
    return fix.get("text") or f"{fix.get('flag')} {fix.get('to')}"


def _since(text: str | None) -> float | None:
    if not text:
        return None
    from logdoctor.input.sources.journal import parse_since

    return parse_since(text) / 1_000_000


def _open(ctx):
    from logdoctor.history import History

    store = History(ctx.obj.get("history_path"))
    return store


def _cells(r) -> dict:
    return {
        c: (_fix_text(r.fix) if c == "fix" else (r.key[:12] if c == "key" else getattr(r, c))) for c in LIST_COLUMNS
    }


@click.group(invoke_without_command=True)
@click.option("--history", "history_path", metavar="PATH|URL", help=_HISTORY_HELP)
@click.option("--host", help="only attempts on this host")
@click.option("--unit", "-u", help="only attempts of this unit (X = X.service)")
@click.option("--since", help="only attempts recorded since T (journalctl --since syntax, e.g. '-2h', '2026-05-22')")
@click.option("--limit", type=click.IntRange(min=0), help=f"the latest N attempts (table: {TABLE_PAGE}; 0 = all)")
@click.option("--offset", type=click.IntRange(min=0), default=0, help="skip the latest M attempts (paging back)")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True)
@click.pass_context
def history(ctx, history_path, host, unit, since, limit, offset, fmt):
    """List the recorded start attempts (oldest first); `history hosts` sums them per host, `history forget`
    removes them, `history sync` replays a server's local spool.

    A listing is paged: the table shows the latest 50 (--limit N, --offset M to page back; --limit 0 = all); json
    and csv stream every match unless --limit is given. The history is what makes "never a value already tried" hold
    across runs: explain, watch, fix and notify record each attempt (per host and unit) unless given --no-history.
    --history takes a path or a postgresql:// URL (a fleet's shared history).

    \b
    Examples:
      logdoctor history --unit sglang-qwen
      logdoctor history --host gpu-node-07 --format csv > attempts.csv
      logdoctor history hosts
      logdoctor history forget --before '30 days ago'

    Exit codes: 0 listed (or removed) · 2 usage error, or a history that cannot be read or reached · 4 internal
    error."""
    ctx.obj = {"history_path": history_path}
    if ctx.invoked_subcommand is not None:
        return
    if unit:
        from logdoctor.input.sources.journal import mangle_unit

        unit = mangle_unit(unit)
    since_ts = _since(since)
    if limit is None and fmt == "table":
        limit = TABLE_PAGE
    with _open(ctx) as h:
        emit_warnings(h)
        if limit:
            rows = iter(h.page(host=host, unit=unit, since=since_ts, limit=limit, offset=offset))
            total = h.count(host=host, unit=unit, since=since_ts)
        else:
            rows = h.iter_rows(host=host, unit=unit, since=since_ts)
            total = None
            if offset:
                raise click.UsageError("--offset pages a --limit: give --limit N too")
        if fmt == "json":
            _json(rows)
        elif fmt == "csv":
            _csv(rows)
        else:
            n = _table(rows, unit, host)
            if total is not None and total > n:
                sys.stderr.write(
                    f"logdoctor: showing {n} of {total} attempts (latest last, {offset} newer skipped); "
                    "--limit N / --offset M for others, --limit 0 for all\n"
                )


def _json(rows) -> None:
    out = sys.stdout
    out.write('{"schema": "logdoctor.history/v1", "attempts": [')
    for i, r in enumerate(rows):
        out.write(("," if i else "") + "\n  " + json.dumps(r.to_dict(), default=str))
    out.write("\n]}\n")


def _csv(rows) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(LIST_COLUMNS) + ["config"], lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({**{k: ("" if v is None else v) for k, v in _cells(r).items()}, "config": json.dumps(r.config)})
        if buf.tell() > 65536:
            sys.stdout.write(buf.getvalue())
            buf.seek(0)
            buf.truncate()
    sys.stdout.write(buf.getvalue())


def _table(rows, unit, host) -> int:
    """Fixed column widths, so that rows are written as they come (no second pass over a long listing)."""
    n = 0
    for r in rows:
        if n == 0:
            click.echo("  ".join(c.ljust(WIDTHS[c]) for c in SHOWN).rstrip())
        t = _cells(r)
        click.echo("  ".join(str(t[c] or "-")[: WIDTHS[c]].ljust(WIDTHS[c]) for c in SHOWN).rstrip())
        n += 1
    if n == 0:
        click.echo("no attempts recorded" + (f" for {unit}" if unit else "") + (f" on {host}" if host else ""))
    return n


@history.command()
@click.option("--host", help="attempts on this host")
@click.option("--unit", "-u", help="attempts of this unit")
@click.option("--key", help="one attempt: its key, or a unique prefix of at least 8 characters (as `history` shows)")
@click.option("--before", help="attempts recorded before this time (journalctl --since syntax, e.g. '30 days ago')")
@click.option("--all", "everything", is_flag=True, help="every attempt")
@click.pass_context
def forget(ctx, host, unit, key, before, everything):
    """Remove recorded attempts (at least one filter, or --all).

    \b
    Examples:
      logdoctor history forget --unit sglang-qwen
      logdoctor history forget --key 61a24a35f893

    Exit codes: 0 removed (the count is printed) · 2 no filter given, a key that is empty, a wildcard, shorter than 8
    characters or names several attempts, or a bad --before time."""
    if unit:
        from logdoctor.input.sources.journal import mangle_unit

        unit = mangle_unit(unit)
    if host is not None and not host.strip():
        raise click.UsageError("--host needs a host name, not an empty string")
    with _open(ctx) as h:
        emit_warnings(h)
        n = h.forget(host=host, unit=unit, key=key, before=_since(before), everything=everything)
    click.echo(f"forgot {n} attempt{'s' if n != 1 else ''}")


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if ts else "-"


@history.command()
@click.option("--since", help="only attempts recorded since T (journalctl --since syntax)")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.pass_context
def hosts(ctx, since, fmt):
    """Per host: attempts, failures, the latest hardware evidence, and whether it is a suspect (a hardware_fault
    verdict among its latest 5 attempts). Suspects that share one hardware verdict on 4 or more hosts within 6 h
    are marked fleet-wide: more likely a software or driver cause than that many failing hosts."""
    import time

    from logdoctor.verdict.crossattempt import BREAKER_MIN_HOSTS, BREAKER_WINDOW_S

    with _open(ctx) as h:
        emit_warnings(h)
        summary = h.hosts(since=_since(since))
        fleet: dict[str | None, list[str]] = {}
        for rule in {s.hardware_rule for s in summary if s.suspect}:
            got = h.verdict_hosts("hardware_fault", rule, time.time() - BREAKER_WINDOW_S)
            if len(got) >= BREAKER_MIN_HOSTS:
                fleet[rule] = got
    docs = []
    for s in summary:
        d = s.to_dict()
        d["fleet_wide"] = bool(s.suspect and s.hardware_rule in fleet and s.host in fleet[s.hardware_rule])
        d["suspect"] = bool(s.suspect and not d["fleet_wide"])
        docs.append(d)
    if fmt == "json":
        click.echo(json.dumps({"schema": "logdoctor.history-hosts/v1", "hosts": docs}, indent=2))
        return
    if not docs:
        click.echo("no attempts recorded")
        return
    head = ("host", "attempts", "failures", "last hardware evidence", "suspect")
    cells = []
    for d in docs:
        hw = "-"
        if d["hardware_at"]:
            hw = f"{_when(d['hardware_at'])} {d['hardware_rule'] or 'hardware_fault'} ({d['hardware_unit'] or '-'})"
        sus = "fleet-wide: software/driver?" if d["fleet_wide"] else ("yes" if d["suspect"] else "no")
        cells.append([d["host"], str(d["attempts"]), str(d["failures"]), hw, sus])
    widths = [max(len(head[i]), *(len(c[i]) for c in cells)) for i in range(len(head))]
    click.echo("  ".join(c.ljust(w) for c, w in zip(head, widths)).rstrip())
    for c in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(c, widths)).rstrip())


@history.command()
@click.pass_context
def sync(ctx):
    """Replay the attempts spooled while the history server could not be reached (this also happens by itself on
    the next run that reaches it). Exit 2 when the server still cannot be reached."""
    from logdoctor.core.errors import InputError
    from logdoctor.history import spool

    with _open(ctx) as h:
        url = getattr(h, "url", None)
        if url is None:
            click.echo(f"nothing to sync: {h.describe} is a local SQLite file")
            return
        if getattr(h, "offline", None) is not None:
            n = spool.pending(url)
            raise InputError(
                f"the history server {h.describe} cannot be reached; {n} attempt{' stays' if n == 1 else 's stay'} "
                f"spooled in {spool.spool_path(url)}"
            )
        n = h.replayed + h.sync()
    click.echo(f"replayed {n} spooled attempt{'s' if n != 1 else ''} to {h.describe}")
