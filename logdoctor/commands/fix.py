"""`logdoctor fix UNIT_FILE --log SOURCE`: the next unit file (or command line, or docker run) with fixes[0] applied.

Exit codes follow the contract: 1 a fix for a known cause was produced (printed as a diff, or written) · 0 the log
shows no failure, nothing changed · 2 nothing flag-shaped to apply (hardware, unknown, engine defect) or a usage /
input error, one line on stderr."""
from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

import click

from logdoctor.commands.history import history_options, open_from_options
from logdoctor.engines import ENGINE_NAMES

ENGINES = ("auto", *ENGINE_NAMES)   # the engine registry (engines/__init__.py)


@click.command("fix")
@click.argument("unit_file", type=click.Path(dir_okay=False))
@click.option("--log", "log", required=True, help="the failed attempt's log: a file, a .journal file, or '-' (stdin)")
@click.option("--unit", "-u", help="the unit the log belongs to (for the history; default: from the log)")
@click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True)
@click.option("--diff", "mode", flag_value="diff", default=True, help="print a unified diff (default)")
@click.option("--write", "mode", flag_value="write", help="write the new file next to UNIT_FILE, named after the change")
@click.option("--out", "out", type=click.Path(dir_okay=False), help="write the new file to PATH ('-' = stdout)")
@history_options
def fix_cmd(unit_file, log, unit, engine, mode, out, history_path, no_history):
    """Apply the recommended fix to ExecStart= (or a command line / docker run), changing only that flag."""
    from logdoctor.errors import InputError
    from logdoctor.unitfile import fix, write_atomic

    path = Path(unit_file)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read {unit_file}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{unit_file} is not UTF-8 text") from None
    from logdoctor.cli import _read
    res = _read(None if log == "-" else log, None, None, None, None, (), None) if log != "-" else \
        _read("-", None, None, None, None, (), None)
    from logdoctor.run import verdict
    d = verdict(res, engine, unit, open_from_options(history_path, no_history))
    if not d.failed:
        click.echo("logdoctor: the log shows no failure: nothing to fix", err=True)
        sys.exit(0)
    try:
        change = fix(text, str(path), d)
    except InputError as e:   # nothing to edit, but the verdict is known: say what to change by hand
        from logdoctor.remedy import render_fix
        by_hand = f"; the change to make by hand: {render_fix(d.fixes[0])}" if d.fixes else ""
        raise InputError(f"{unit_file}: {e}{by_hand}") from None
    if out:
        if out == "-":
            click.echo(change.text, nl=False)
        else:
            write_atomic(out, change.text, mode=_mode(path))
            click.echo(f"wrote {out}: {change.summary}")
    elif mode == "write":
        target = path.with_name(change.name)
        write_atomic(target, change.text, mode=_mode(path))
        click.echo(f"wrote {target}: {change.summary}")
    else:
        new_name = change.name if change.kind == "unit" or change.name != path.name else path.name
        diff = difflib.unified_diff(text.splitlines(keepends=True), change.text.splitlines(keepends=True),
                                    fromfile=f"a/{path.name}", tofile=f"b/{new_name}")
        click.echo("".join(diff), nl=False)
    sys.exit(1)


def _mode(path: Path) -> int | None:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return None
