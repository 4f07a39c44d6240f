"""`logdoctor triage PATH ...`: batch triage of archived logs (see docs/triage.md).

Exit codes: 0 every input was read · 2 some inputs were unreadable (the report still lists them, with the reason)
or a usage error."""
from __future__ import annotations

import importlib.util
import sys

import click

FORMATS = ("table", "csv", "json", "parquet", "html", "markdown")


def _when(value: str | None):
    if value is None:
        return None
    import pandas as pd
    try:
        return pd.Timestamp(value)
    except (ValueError, TypeError):
        from logdoctor.errors import UsageError
        raise UsageError(f"cannot read the time {value!r}: use YYYY-MM-DD or YYYY-MM-DD HH:MM") from None


@click.command("triage")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--out", "out", type=click.Path(dir_okay=False), help="write the report here (needed for parquet/html)")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), help="local worker processes (default: all cores)")
@click.option("--scheduler", help="run on a Dask cluster at ADDRESS (tcp://host:8786); needs logdoctor[dask]")
@click.option("--year", type=click.IntRange(1970, 2200), help="year of short journal lines (default: from file mtime)")
@click.option("--since", help="only attempts that started at or after T")
@click.option("--until", help="only attempts that started at or before T")
@click.option("--host", "hosts", multiple=True, help="only this host (repeatable)")
@click.option("--cause", "causes", multiple=True, help="only this cause (repeatable)")
def triage_cmd(paths, fmt, out, jobs, scheduler, year, since, until, hosts, causes):
    """Triage many logs at once: one row per attempt, failure signatures, suspect hosts, reports.

    PATH: files, folders (recursive), globs, .gz/.xz/.bz2/.zst, .tar/.tar.gz archives, systemd journal files or
    folders. Exit 0 when every input was read, 2 when some were unreadable (they are listed).

    \b
    Examples:
      logdoctor triage /srv/incident-logs/ --format html --out report.html
      logdoctor triage 'archive/*.tar.gz' --since 2026-11-01 --cause hardware_fault --format csv
      logdoctor triage logs/ --scheduler tcp://dask-scheduler:8786 --format json --out rows.json"""
    from logdoctor import extras
    from logdoctor.errors import UsageError
    extras.require("triage", "triage")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise UsageError("--format parquet needs pyarrow: pip install 'logdoctor[parquet]'")
    from logdoctor.triage import apply_filters, report, run
    if fmt in ("parquet", "html") and not out:
        raise UsageError(f"--format {fmt} needs --out FILE")
    s, u = _when(since), _when(until)
    res = run(list(paths), jobs=jobs, scheduler=scheduler, year=year, progress=True)
    df = apply_filters(res.frame, since=s, until=u, hosts=hosts, causes=causes)
    df.attrs["inputs"] = res.inputs
    if fmt == "parquet":
        report.to_parquet(df, out)
    elif fmt == "table":
        _write(report.terminal(df, res), out)
    elif fmt == "csv":
        import io
        buf = io.StringIO()
        report.to_csv(df, buf)
        _write(buf.getvalue(), out)
    elif fmt == "json":
        import io
        buf = io.StringIO()
        report.to_json(df, buf)
        _write(buf.getvalue() + "\n", out)
    elif fmt == "markdown":
        _write(report.markdown(df), out)
    else:
        _write(report.html_report(df), out)
    if out:
        from logdoctor.formats.visible import visible
        click.echo(visible(f"logdoctor: wrote {out}"), err=True)
    bad = res.unreadable
    if bad:
        from logdoctor.formats.visible import visible
        click.echo(visible(f"logdoctor: {len(bad)} input(s) unreadable (listed in the report): "
                           + "; ".join(f"{i['source']}{':' + i['member'] if i['member'] else ''}: {i['reason']}"
                                       for i in bad[:3]) + (" ..." if len(bad) > 3 else "")), err=True)
        sys.exit(2)
    sys.exit(0)


def _write(text: str, out: str | None) -> None:
    if out:   # atomically: an interrupted run leaves the previous report whole (docs/reliability.md)
        from logdoctor.atomic import write_text
        write_text(out, text)
    else:
        click.echo(text, nl=False)
