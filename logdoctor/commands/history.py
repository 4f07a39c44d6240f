"""`logdoctor history`: list and forget recorded attempts; plus the --history/--no-history options that explain,
watch, fix and notify share (sqlite3 is imported only when a history is actually used)."""
from __future__ import annotations

import csv
import io
import json

import click

LIST_COLUMNS = ("key", "started", "host", "unit", "engine", "engine_version", "phase", "outcome", "cause", "fix",
                "signature")


def history_options(f):
    f = click.option("--no-history", is_flag=True, help="do not read or write the attempt history")(f)
    f = click.option("--history", "history_path", type=click.Path(dir_okay=False),
                     help="attempt history database (default $LOGDOCTOR_HISTORY, else "
                          "$XDG_STATE_HOME/logdoctor/history.db)")(f)
    return f


def open_from_options(history_path, no_history):
    """--history/--no-history → an open History, or None (no sqlite work at all); one implementation for the click
    commands and the click-free explain path (logdoctor/run.py)."""
    from logdoctor.run import open_history
    return open_history(history_path, no_history)


def emit_warnings(store) -> None:
    """What the store could not do (read-only, locked past the timeout, a full disk): the verdict stands."""
    from logdoctor.run import emit_store_warnings
    emit_store_warnings(store)


def _fix_text(fix) -> str:
    if not fix:
        return ""
    return fix.get("text") or f"{fix.get('flag')} {fix.get('to')}"


@click.group(invoke_without_command=True)
@click.option("--history", "history_path", type=click.Path(dir_okay=False), help="history database")
@click.option("--host", help="only attempts on this host")
@click.option("--unit", "-u", help="only attempts of this unit (X = X.service)")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True)
@click.pass_context
def history(ctx, history_path, host, unit, fmt):
    """List the recorded start attempts (oldest first); `history forget` removes them.

    The history is what makes "never a value already tried" hold across runs: explain, watch, fix and notify record
    each attempt (per host and unit) unless given --no-history.

    \b
    Examples:
      logdoctor history --unit sglang-qwen
      logdoctor history --host gpu-node-07 --format csv > attempts.csv
      logdoctor history forget --before '30 days ago'

    Exit codes: 0 listed (or removed) · 2 usage error, or a history file that cannot be read · 4 internal error."""
    ctx.obj = {"history_path": history_path}
    if ctx.invoked_subcommand is not None:
        return
    from logdoctor.history import History
    if unit:
        from logdoctor.sources.journal import mangle_unit
        unit = mangle_unit(unit)
    with History(history_path) as h:
        rows = h.query(host=host, unit=unit)
    if fmt == "json":
        click.echo(json.dumps({"schema": "logdoctor.history/v1", "attempts": [r.to_dict() for r in rows]},
                              indent=2, default=str))
        return
    table = [{c: (_fix_text(r.fix) if c == "fix" else (r.key[:12] if c == "key" else getattr(r, c)))
              for c in LIST_COLUMNS} for r in rows]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(LIST_COLUMNS) + ["config"], lineterminator="\n")
        w.writeheader()
        for r, t in zip(rows, table):
            w.writerow({**{k: ("" if v is None else v) for k, v in t.items()}, "config": json.dumps(r.config)})
        click.echo(buf.getvalue(), nl=False)
        return
    if not rows:
        click.echo("no attempts recorded" + (f" for {unit}" if unit else "") + (f" on {host}" if host else ""))
        return
    shown = ("key", "started", "host", "unit", "phase", "outcome", "cause", "fix")
    cells = [[str(t[c] or "-")[:19 if c == "started" else 60] for c in shown] for t in table]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(shown)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(shown, widths)).rstrip())
    for row in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())


@history.command()
@click.option("--host", help="attempts on this host")
@click.option("--unit", "-u", help="attempts of this unit")
@click.option("--key", help="one attempt (a unique key prefix, as `history` shows it)")
@click.option("--before", help="attempts recorded before this time (journalctl --since syntax, e.g. '30 days ago')")
@click.option("--all", "everything", is_flag=True, help="every attempt")
@click.pass_context
def forget(ctx, host, unit, key, before, everything):
    """Remove recorded attempts (at least one filter, or --all).

    \b
    Examples:
      logdoctor history forget --unit sglang-qwen
      logdoctor history forget --key 61a24a35

    Exit codes: 0 removed (the count is printed) · 2 no filter given, or a bad --before time."""
    from logdoctor.history import History
    before_ts = None
    if before:
        from logdoctor.sources.journal import parse_since
        before_ts = parse_since(before) / 1_000_000
    if unit:
        from logdoctor.sources.journal import mangle_unit
        unit = mangle_unit(unit)
    with History(ctx.obj.get("history_path")) as h:
        n = h.forget(host=host, unit=unit, key=key, before=before_ts, everything=everything)
    click.echo(f"forgot {n} attempt{'s' if n != 1 else ''}")
