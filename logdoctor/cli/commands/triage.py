"""`logdoctor triage PATH ...`: batch triage of archived logs (see docs/triage.md).

Exit codes: 0 every input was read · 2 some inputs were unreadable (the report still lists them, with the reason)
or a usage error."""

from __future__ import annotations

import importlib.util
import sys

import click

from logdoctor.render.triage import FORMATS


def _when(value: str | None):
    if value is None:
        return None
    import pandas as pd

    try:
        return pd.Timestamp(value)
    except (ValueError, TypeError):
        from logdoctor.core.errors import UsageError

        raise UsageError(f"cannot read the time {value!r}: use YYYY-MM-DD or YYYY-MM-DD HH:MM") from None


@click.command("triage")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(tuple(FORMATS)), default="table", show_default=True)
@click.option("--out", "out", type=click.Path(dir_okay=False), help="write the report here (needed for parquet/html)")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), help="local worker processes (default: all cores)")
@click.option(
    "--scheduler",
    help="run on Dask: a scheduler ADDRESS (tcp://host:8786, reached within 10 s), or "
    "local[:N] to start a local cluster of N workers; needs logdoctor[dask]",
)
@click.option("--year", type=click.IntRange(1970, 2200), help="year of short journal lines (default: from file mtime)")
@click.option("--since", help="only attempts that started at or after T")
@click.option("--until", help="only attempts that started at or before T")
@click.option("--host", "hosts", multiple=True, help="only this host (repeatable)")
@click.option("--cause", "causes", multiple=True, help="only this cause (repeatable)")
@click.option(
    "--baseline",
    type=click.Path(exists=True, dir_okay=False),
    help="an earlier `--format json` report: mark signatures new or regressed since then",
)
@click.option("--debug", is_flag=True, help="print the traceback of an internal error")
def triage_cmd(paths, fmt, out, jobs, scheduler, year, since, until, hosts, causes, baseline, debug):
    """Triage many logs at once: one row per attempt, failure signatures, suspect hosts, reports.

    PATH: files, folders (recursive), globs, .gz/.xz/.bz2/.zst, .tar/.tar.gz archives, systemd journal files or
    folders. The same log given twice (a folder and its tarball) is counted once, by content.

    \b
    Examples:
      logdoctor triage /srv/incident-logs/ --format html --out report.html
      logdoctor triage 'archive/*.tar.gz' --since 2026-11-01 --cause hardware_fault --format csv
      logdoctor triage logs/ --format json --out today.json --baseline yesterday.json
      logdoctor triage logs/ --scheduler local:4          # a Dask LocalCluster with 4 workers
      logdoctor triage logs/ --scheduler tcp://dask-scheduler:8786 --format json --out rows.json

    Exit codes: 0 every input was read · 2 some inputs were unreadable (listed in the report), a usage error, or a
    scheduler that cannot be reached · 4 internal error (--debug shows the traceback)."""
    from logdoctor.core.errors import LogdoctorError

    try:
        _triage(paths, fmt, out, jobs, scheduler, year, since, until, hosts, causes, baseline)
    except (
        LogdoctorError,
        click.ClickException,
        click.exceptions.Exit,
        click.exceptions.Abort,
        KeyboardInterrupt,
        BrokenPipeError,
        SystemExit,
    ):
        raise
    except Exception as exc:  # noqa: BLE001 - exit 4, one line; the traceback only with --debug
        if debug:
            import traceback

            traceback.print_exc()
        click.echo(
            f"logdoctor: internal error ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}) — please "
            "report it with the inputs and `logdoctor --version`"
            + ("" if debug else "; rerun with --debug for the traceback"),
            err=True,
        )
        sys.exit(4)


def _triage(paths, fmt, out, jobs, scheduler, year, since, until, hosts, causes, baseline):
    from logdoctor.core import extras
    from logdoctor.core.errors import UsageError

    extras.require("triage", "triage")
    form = FORMATS[fmt]
    if form.module and importlib.util.find_spec(form.module) is None:
        raise UsageError(f"--format {fmt} needs {form.module}: pip install 'logdoctor[{form.extra}]'")
    from logdoctor.triage import run

    if form.needs_out and not out:
        raise UsageError(f"--format {fmt} needs --out FILE")
    s, u = _when(since), _when(until)
    from logdoctor.triage import views

    base = views.load_baseline(baseline) if baseline else None
    cluster = None
    if scheduler:
        from logdoctor.triage.cluster import connect

        cluster = connect(scheduler)
    # every row, unfiltered, in a format that can be written from the rows: no frame, no pandas
    plain = form.from_rows is not None and s is None and u is None and not hosts and not causes and base is None
    try:
        res = run(
            list(paths),
            jobs=jobs,
            scheduler=cluster.client if cluster else None,
            year=year,
            progress=True,
            frame=not plain,
        )
    finally:
        if cluster is not None:
            cluster.close()
    text = form.from_rows(res) if plain and form.from_rows is not None else None
    if text is None:
        text = _render(form, res, s, u, hosts, causes, base, out)
    if text is not None:
        _write(text, out)
    if out:
        from logdoctor.render.visible import visible

        click.echo(visible(f"logdoctor: wrote {out}"), err=True)
    bad = res.unreadable
    if bad:
        from logdoctor.render.visible import visible

        click.echo(
            visible(
                f"logdoctor: {len(bad)} input(s) unreadable (listed in the report): "
                + "; ".join(f"{i['source']}{':' + i['member'] if i['member'] else ''}: {i['reason']}" for i in bad[:3])
                + (" ..." if len(bad) > 3 else "")
            ),
            err=True,
        )
        sys.exit(2)
    sys.exit(0)


def _render(form, res, since, until, hosts, causes, base, out) -> str | None:
    """The report through the frame: filtered, with the baseline, rendered by the format's `render`."""
    from logdoctor.render.text import width
    from logdoctor.triage import apply_filters

    df = apply_filters(res.frame, since=since, until=until, hosts=hosts, causes=causes)
    df.attrs["inputs"] = res.inputs
    if base is not None:
        df.attrs["baseline"] = base
    return form.render(df, res, width() if not out else 110, out)


def _write(text: str, out: str | None) -> None:
    if out:  # atomically: an interrupted run leaves the previous report whole (docs/reliability.md)
        from logdoctor.core.atomic import write_text

        write_text(out, text)
    else:
        click.echo(text, nl=False)
