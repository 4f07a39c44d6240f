"""The triage report's output formats, one table: what each renders and what it needs. The command picks a row;
no format is special-cased elsewhere. Nothing heavy is imported here (the CLI reads the names at start-up)."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    """One output format. `render(df, run, width, out)` returns the report text, or None when it wrote `out` itself
    (a binary format)."""

    name: str
    render: Callable[..., str | None]
    needs_out: bool = False  # a file format: --out is required
    module: str | None = None  # an optional package it imports, and the extra that installs it
    extra: str | None = None
    # the same text from the run's rows, without the frame (no pandas import), when nothing filters the rows; it
    # returns None for rows it cannot write as `render` would, and the command then renders the frame
    from_rows: Callable[..., str | None] | None = None


def _table(df, run, width, out):
    from logdoctor.triage import report

    return report.terminal(df, run, width=width)


def _csv(df, run, width, out):
    from logdoctor.triage import report

    buf = io.StringIO()
    report.to_csv(df, buf)
    return buf.getvalue()


def _csv_rows(run):
    from logdoctor.triage import report
    from logdoctor.triage.analyse import COLUMNS

    return report.rows_csv(run.rows, COLUMNS)


def _json(df, run, width, out):
    from logdoctor.triage import report

    buf = io.StringIO()
    report.to_json(df, buf)
    return buf.getvalue() + "\n"


def _markdown(df, run, width, out):
    from logdoctor.triage import report

    return report.markdown(df)


def _html(df, run, width, out):
    from logdoctor.triage import report

    return report.html_report(df)


def _parquet(df, run, width, out):
    from logdoctor.triage import report

    report.to_parquet(df, out)
    return None


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("table", _table),
        Format("csv", _csv, from_rows=_csv_rows),
        Format("json", _json),
        Format("parquet", _parquet, needs_out=True, module="pyarrow", extra="parquet"),
        Format("html", _html, needs_out=True),
        Format("markdown", _markdown),
    )
}
