"""`logdoctor fix UNIT_FILE --log SOURCE`: fixes[0] applied to the command the service runs, as a systemd drop-in
(`UNIT.d/50-logdoctor.conf`, the default for a unit), a renamed copy (`--new-unit`; always for a command line or a
docker run line), a diff (default) or a file (`--out`).

Exit codes: 1 a fix for a known cause was produced (printed as a diff, or written) · 0 the log shows no failure,
nothing changed · 3 a fix exists but the verdict is below `--min-confidence` (for --write/--out: left for a person,
nothing written) · 2 nothing flag-shaped to apply (hardware, unknown, engine defect), a value refused (not one token
of its lever's type), a target changed since it was read or edited by hand, an ambiguous or uneditable command, or a
usage / input error, one line on stderr."""

from __future__ import annotations

import difflib
import os
import socket
import sys
from pathlib import Path

import click

from logdoctor.cli.commands.history import history_options, open_from_options
from logdoctor.core.vocab import TIERS
from logdoctor.engines import ENGINE_NAMES

ENGINES = ("auto", *ENGINE_NAMES)  # the engine registry (engines/__init__.py)
DEFAULT_BAR = "specific"  # unattended writes need a rule of this tier or stronger (vocab.TIERS)

_UNIT = f"{ENGINE_NAMES[0]}-qwen"  # the examples' unit name
EPILOG = f"""\b
Examples:
  logdoctor fix {_UNIT}.service --log journal.txt           # the diff of the drop-in it would write
  logdoctor fix /etc/systemd/system/{_UNIT}.service --log journal.txt --write
      # -> /etc/systemd/system/{_UNIT}.service.d/50-logdoctor.conf; then: systemctl daemon-reload
  logdoctor fix {_UNIT}.service --log journal.txt --write --new-unit   # {_UNIT}-mem092.service
  logdoctor fix launch.sh --log journal.txt --out -             # a command line: the edited script on stdout
  logdoctor fix U.service --log j.txt --write --min-confidence 0.9   # only a verdict with confidence >= 0.9

\b
Exit codes:
  0  the log shows no failure: nothing changed
  1  a fix was produced (diff printed, or file written)
  2  nothing flag-shaped to apply (hardware, unknown cause, engine defect), a fix value
     refused (not one token of its lever's type), a target changed since it was read
     or edited by hand, an ambiguous command, or a usage / input error (one line)
  3  --write/--out: the verdict is below --min-confidence; left for a person, nothing written
  4  internal error"""


@click.command("fix", epilog=EPILOG)
@click.argument("unit_file", type=click.Path(dir_okay=False))
@click.option("--log", "log", required=True, help="the failed attempt's log: a file, a .journal file, or '-' (stdin)")
@click.option(
    "--unit", "-u", help="the unit the log belongs to (for the history; default: from the log, else UNIT_FILE's name)"
)
@click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True)
@click.option(
    "--diff", "mode", flag_value="diff", default=True, help="print a unified diff of what --write would write (default)"
)
@click.option(
    "--write",
    "mode",
    flag_value="write",
    help="write UNIT.d/50-logdoctor.conf beside the unit (a renamed copy next to UNIT_FILE with --new-unit "
    "or for a command line)",
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="write what --write would write to PATH instead ('-' = stdout; a device or FIFO is written as a "
    "stream, a symlink keeps pointing at the replaced file)",
)
@click.option("--new-unit", is_flag=True, help="a renamed copy of the unit (…-mem092.service) instead of a drop-in")
@click.option(
    "--min-confidence",
    "bar",
    default=DEFAULT_BAR,
    show_default=True,
    metavar="TIER|NUMBER",
    help="--write/--out apply only a verdict whose rule is of this tier or stronger "
    f"({' > '.join(TIERS)}), or whose confidence is at least NUMBER; else exit 3",
)
@history_options
def fix_cmd(unit_file, log, unit, engine, mode, out, new_unit, bar, history_path, no_history):
    """Apply the recommended fix to the command the service runs (ExecStart=, a command line or a docker run line),
    changing only that flag: by default as a systemd drop-in, so the unit keeps its name and its history."""
    from logdoctor.core.errors import InputError, UsageError
    from logdoctor.hook import unitfile as uf

    bar_check = _parse_bar(bar)
    path = Path(unit_file)
    raw = uf.read_bounded(path)
    text = uf.decode(raw, unit_file)
    if new_unit and path.parent.name.endswith(".d") and path.suffix == ".conf":
        raise UsageError(
            f"{unit_file} is a drop-in: a renamed copy would load beside it (--new-unit is for unit "
            f"files); without --new-unit the change goes into {uf.DROPIN}"
        )
    as_dropin = uf.is_unit(path, text) and not new_unit
    units = uf.load_unit(path) if uf.is_unit(path, text) else None
    from logdoctor.cli.app import _read

    res = _read(log, None, None, None, None, (), None)  # log is a path or "-" (stdin)
    d, rules = _verdict(
        res, engine, unit or _log_unit(res) or (units.name if units else None), history_path, no_history
    )
    if not d.failed:
        click.echo("logdoctor: the log shows no failure: nothing to fix", err=True)
        sys.exit(0)
    from logdoctor.verdict.remedy import refusals

    refused = refusals(d.notes)
    if refused:
        raise InputError(refused[0])
    change = _change(units if as_dropin else None, text, path, unit_file, d)
    if (out or mode == "write") and not bar_check(d, rules):
        click.echo(
            f"logdoctor: left for a person: {_why_below(d, rules, bar)}; the change would be "
            f"{change.summary} (see `logdoctor explain`)",
            err=True,
        )
        sys.exit(3)
    if out:
        _write_out(out, path, raw, change)
    elif mode == "write":
        _write(path, change)
    else:
        click.echo(_diff(change, text, path), nl=False)
    sys.exit(1)


def _change(units, text: str, path: Path, unit_file: str, d):
    """The edit: a drop-in for the loaded unit (units given), else the file's own command edited. When nothing in
    the file can be edited, the InputError names the file and says what to change by hand."""
    from logdoctor.core.errors import InputError
    from logdoctor.hook import unitfile as uf
    from logdoctor.verdict.remedy import render_fix

    try:
        return uf.dropin(units, d) if units is not None else uf.fix(text, str(path), d)
    except InputError as e:  # nothing to edit, but the verdict is known: say what to change by hand
        by_hand = f"; the change to make by hand: {render_fix(d.fixes[0])}" if d.fixes else ""
        msg = str(e) if str(e).startswith(str(path)) else f"{unit_file}: {e}"
        raise type(e)(f"{msg}{by_hand}") from None


def _write_out(out: str, path: Path, raw: bytes, change) -> None:
    """--out: what --write would write, to PATH or stdout ('-'). --out UNIT_FILE edits in place, by request; never
    over a version changed since it was read."""
    from logdoctor.core.atomic import seen
    from logdoctor.hook import unitfile as uf

    expect = seen(path, raw) if out != "-" and _same_file(Path(out), path) else None
    uf.write_atomic(out, change.text, mode=0o644 if change.kind == "dropin" else _mode(path), expect=expect)
    if out != "-":
        click.echo(f"wrote {out}: {change.summary}")


def _diff(change, text: str, path: Path) -> str:
    """The default output: a unified diff of the drop-in against the one there (or /dev/null), or of the file
    against its edited copy (named as the renamed unit would be)."""
    if change.kind == "dropin":
        old = change.old.splitlines(keepends=True)
        diff = difflib.unified_diff(
            old,
            change.text.splitlines(keepends=True),
            fromfile=f"a/{change.name}" if change.old else "/dev/null",
            tofile=f"b/{change.name}",
        )
        return "".join(diff)
    new_name = change.name if change.kind == "unit" or change.name != path.name else path.name
    diff = difflib.unified_diff(
        text.splitlines(keepends=True),
        change.text.splitlines(keepends=True),
        fromfile=f"a/{path.name}",
        tofile=f"b/{new_name}",
    )
    return "".join(diff)


def _write(path: Path, change) -> None:
    """--write: the drop-in beside the unit, or the renamed copy next to UNIT_FILE; never UNIT_FILE itself, never a
    file that changed since it was read (or that another hand wrote)."""
    from logdoctor.core.atomic import ChangedError, Seen, seen
    from logdoctor.hook import unitfile as uf

    if change.kind == "dropin":
        target = change.path
        expect = Seen(False)
        if change.old:  # still what was read? (then any change before the rename is caught by `expect`)
            now = uf.read_bounded(target) if os.path.exists(target) else b""
            if uf.decode(now, str(target)).replace("\r\n", "\n") != change.old:
                raise ChangedError(f"{target} was edited since it was read: not replaced (run the command again)")
            expect = seen(target, now)
        try:
            target.parent.mkdir(mode=0o755, exist_ok=True)
        except OSError as e:
            raise ChangedError(f"cannot create {target.parent}: {e.strerror or e}") from None
        uf.write_atomic(target, change.text, mode=0o644, expect=expect)
        click.echo(f"wrote {target}: {change.summary} (then: systemctl daemon-reload)")
        return
    target = path.with_name(change.name)
    if _same_file(target, path):
        raise ChangedError(f"refusing to write over {path} itself")
    expect = seen(target)
    if expect.exists:
        try:
            current = uf.read_bounded(target)
        except Exception:  # noqa: BLE001 - a FIFO or device there: not ours to replace
            current = None
        if current != change.text.encode():
            raise ChangedError(
                f"{target} exists and differs from the new unit (edited by hand, or another run): not "
                f"replaced; remove it or rename it first"
            )
    uf.write_atomic(target, change.text, mode=_mode(path), expect=expect)
    click.echo(f"wrote {target}: {change.summary}")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def _log_unit(res) -> str | None:
    return next((r.unit for r in res.records if r.unit), None)


def _verdict(res, engine, unit, history_path, no_history):
    """The verdict through the attempt history, recorded under the unit's name; a log without host names is this
    host's (fix runs where the unit runs)."""
    from logdoctor.cli.run import check_engine, emit_store_warnings
    from logdoctor.matching.loader import load_rules
    from logdoctor.verdict.api import diagnose

    check_engine(res.records, engine)
    rules = load_rules(())
    store = open_from_options(history_path, no_history)
    if store is None:
        return diagnose(res, engine, loaded_rules=rules), rules
    host = None if any(r.host for r in res.records) else socket.gethostname()
    with store:
        d = diagnose(res, engine, history=store, loaded_rules=rules, unit=unit, host=host)
    emit_store_warnings(store)
    return d, rules


def _parse_bar(bar: str):
    """--min-confidence: a tier name (the verdict's rule must be of it or stronger) or a number in [0, 1]."""
    from logdoctor.core.errors import UsageError

    order = list(TIERS)
    if bar in TIERS:
        need = order.index(bar)
        return lambda d, rules: (t := _tier(d, rules)) is not None and order.index(t) <= need
    try:
        num = float(bar)
    except ValueError:
        num = -1.0
    if not 0.0 <= num <= 1.0:
        raise UsageError(f"--min-confidence {bar!r}: expected a tier ({', '.join(TIERS)}) or a number in [0, 1]")
    return lambda d, rules: d.confidence >= num


def _tier(d, rules) -> str | None:
    return next((r.tier for r in rules if r.id == d.rule), None)


def _why_below(d, rules, bar: str) -> str:
    tier = _tier(d, rules)
    what = f"rule {d.rule} (tier {tier})" if tier else f"a verdict not from a rule ({d.rule or 'classifier'})"
    return f"{what}, confidence {d.confidence:.2f}, is below --min-confidence {bar}"


def _mode(path: Path) -> int | None:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return None
