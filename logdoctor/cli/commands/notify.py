"""`logdoctor notify UNIT`: diagnose a unit that just failed (from the journal) and write the verdict back into the
journal as LOGDOCTOR_* fields; what contrib/systemd/logdoctor-diagnose@.service runs (OnFailure=).

Exit 0 when the verdict was written (whatever it says: the OnFailure helper itself should not fail), 2 usage/input
error (no journal, unit not in the journal), 4 internal error."""

from __future__ import annotations

import sys

import click

from logdoctor.cli.commands.history import history_options, open_from_options


@click.command("notify")
@click.argument("unit")
@click.option(
    "--journal-file", multiple=True, type=click.Path(), help="read these journal files, not the system journal"
)
@click.option("--journal-dir", type=click.Path(), help="read the journal files in DIR")
@click.option("-n", "lines", type=int, default=5000, show_default=True, help="read at most the unit's last N entries")
@click.option(
    "--export",
    "export",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="write the entry in journal export format to PATH ('-' = stdout) instead of sending it to journald "
    "(the default when no journald runs)",
)
@history_options
def notify_cmd(unit, journal_file, journal_dir, lines, export, history_path, no_history):
    """Diagnose UNIT's latest failure from the journal and write the verdict back as LOGDOCTOR_* fields.

    What the OnFailure= template unit runs (logdoctor docs systemd); afterwards `journalctl -u UNIT` shows the
    verdict and `journalctl LOGDOCTOR_CAUSE=hardware_fault` finds every such failure.

    \b
    Examples:
      logdoctor notify sglang-qwen.service
      logdoctor notify vllm-llama --journal-file host.journal --export verdict.export

    Exit codes: 0 the verdict was written, whatever it says (an OnFailure= helper should not fail) · 2 usage/input
    error (no journal, the unit not in the journal) · 4 internal error."""
    from logdoctor.core.errors import InputError
    from logdoctor.hook.notify import export_bytes, journald_available, send, verdict_fields
    from logdoctor.input.read import read_entries
    from logdoctor.input.sources.journal import iter_journal_entries, mangle_unit

    unit = mangle_unit(unit)
    entries = [
        e
        for e in iter_journal_entries(files=tuple(journal_file), directory=journal_dir, unit=unit, lines=lines)
        if e.get("SYSLOG_IDENTIFIER") != "logdoctor"
    ]  # not our own earlier verdicts
    if not entries:
        raise InputError(f"no journal entries for {unit}")
    res = read_entries(entries, unit)
    from logdoctor.cli.run import verdict

    d = verdict(res, "auto", unit, open_from_options(history_path, no_history))
    fields = verdict_fields(d, unit)
    if export is None and journald_available():
        send(fields)
        click.echo(fields["MESSAGE"], err=True)
        return
    if export is None:
        click.echo("logdoctor: no journald here: writing the entry in journal export format to stdout", err=True)
        export = "-"
    data = export_bytes(fields)
    if export == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        with open(export, "ab") as f:
            f.write(data)
