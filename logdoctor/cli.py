"""Command line (click). Heavy imports (pandas, scikit-learn) stay inside the commands that need them, so
`explain` answers in well under a second."""
from __future__ import annotations

import json
import sys

import click

from logdoctor import __version__
from logdoctor.engines import ENGINE_NAMES
from logdoctor.errors import LogdoctorError

ENGINES = ("auto", *ENGINE_NAMES)   # the --engine choices: the engine registry (engines/__init__.py)


def _fail(exc: BaseException, verbose: bool) -> None:
    if isinstance(exc, LogdoctorError):
        click.echo(f"logdoctor: {exc}", err=True)
        sys.exit(exc.exit_code)
    if verbose:
        import traceback
        traceback.print_exc()
    click.echo(f"logdoctor: internal error ({type(exc).__name__}: {str(exc)[:200]}) — please report it with the "
               f"log and `logdoctor --version`; rerun with -v for the traceback", err=True)
    sys.exit(4)


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:   # one line, like every other usage error (design.md: exit 2, no usage dump)
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            click.echo(f"logdoctor: {exc.format_message()}{where}", err=True)
            sys.exit(exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("logdoctor: interrupted", err=True)
            sys.exit(130)
        except BaseException as exc:  # noqa: BLE001 - the documented exit 4 path
            _fail(exc, "-v" in sys.argv or "--verbose" in sys.argv)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="logdoctor")
def main() -> None:
    """Diagnose why an LLM inference server (SGLang, vLLM, ...) failed to start."""


from logdoctor.commands.history import history_options as _history_options  # noqa: E402
from logdoctor.commands.history import open_from_options as _open_history  # noqa: E402


def _source_options(f):
    f = click.option("--journal-dir", type=click.Path(), help="read journal files in DIR")(f)
    f = click.option("--journal-file", multiple=True, type=click.Path(), help="read a journal file (repeatable)")(f)
    f = click.option("-n", "lines", type=int, help="the last N journal entries")(f)
    f = click.option("--boot", is_flag=False, flag_value="0", default=None, help="only this boot (default: current)")(f)
    f = click.option("--since", help="journal entries since T (journalctl syntax)")(f)
    f = click.option("--unit", "-u", help="read the system journal (or the journal files) for UNIT")(f)
    f = click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True)(f)
    f = click.argument("source", required=False)(f)
    return f


def _read(source, unit, since, boot, lines, journal_file, journal_dir):
    from logdoctor.read import read_source_spec
    return read_source_spec(source, unit=unit, since=since, boot=boot, lines=lines, journal_files=journal_file,
                            journal_dir=journal_dir)


def _emit_warnings(res, stats: bool) -> None:
    for w in res.warnings:
        click.echo(f"logdoctor: warning: {w}", err=True)
    if stats:
        click.echo(f"logdoctor: {res.origin}: {res.stats.line()}", err=True)
        for u in res.unparsed[:20]:
            click.echo(f"logdoctor:   unparsed line {u.line}: {u.reason}: {u.text[:80]!r}", err=True)


@main.command()
@_source_options
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), help="extra rule folder (overrides by id)")
@click.option("--stats", is_flag=True, help="line accounting on stderr")
@click.option("-v", "--verbose", is_flag=True, help="timeline, all candidate rules and scores")
@_history_options
def explain(source, engine, unit, since, boot, lines, journal_file, journal_dir, fmt, rule_dirs, stats, verbose,
            history_path, no_history):
    """Say why the service failed, show the evidence, and propose the next flag change.

    Exit codes: 0 no failure · 1 failure with a known cause · 3 failure, cause unknown · 2 input/usage error ·
    4 internal error."""
    from logdoctor.api import diagnose
    res = _read(source, unit, since, boot, lines, journal_file, journal_dir)
    _emit_warnings(res, stats)
    store = _open_history(history_path, no_history)
    if store is None:
        d = diagnose(res, engine, rules=tuple(rule_dirs))
    else:
        with store:
            d = diagnose(res, engine, history=store, rules=tuple(rule_dirs), unit=unit)
        from logdoctor.commands.history import emit_warnings
        emit_warnings(store)
    if fmt == "json":
        click.echo(json.dumps(d.to_dict(), indent=2, default=str))
    elif fmt == "markdown":
        from logdoctor.render.markdown import render
        click.echo(render(d), nl=False)
    else:
        from logdoctor.render import text
        tl_text = ""
        if verbose:   # the timeline view (-v) rebuilds the timeline; the verdict came from the API
            from logdoctor.render.timeline_view import render_text
            from logdoctor.timeline import build
            tl_text = render_text(build(res.records, engine))
        click.echo(text.render(d, color=text.use_color(sys.stdout), verbose=verbose, timeline_text=tl_text), nl=False)
    sys.exit(d.exit_code)


@main.command()
@_source_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--stats", is_flag=True, help="line accounting on stderr")
def timeline(source, engine, unit, since, boot, lines, journal_file, journal_dir, fmt, stats):
    """The start-up phases per rank, attempts, memory readings and flags in force."""
    from logdoctor.render.timeline_view import render_text, to_dict
    from logdoctor.timeline import build
    res = _read(source, unit, since, boot, lines, journal_file, journal_dir)
    _emit_warnings(res, stats)
    tl = build(res.records, engine)
    if fmt == "json":
        click.echo(json.dumps(to_dict(tl), indent=2, default=str))
    else:
        click.echo(render_text(tl), nl=False)


from logdoctor.commands import rules as _rules_cmd  # noqa: E402

main.add_command(_rules_cmd.rules)

from logdoctor.commands import evaluate as _eval_cmd  # noqa: E402

main.add_command(_eval_cmd.eval_cmd)

from logdoctor.commands import train as _train_cmd  # noqa: E402

main.add_command(_train_cmd.train_cmd)

from logdoctor.commands import history as _history_cmd  # noqa: E402

main.add_command(_history_cmd.history)

from logdoctor.commands import fix as _fix_cmd  # noqa: E402

main.add_command(_fix_cmd.fix_cmd)

from logdoctor.commands import watch as _watch_cmd  # noqa: E402

main.add_command(_watch_cmd.watch_cmd)

from logdoctor.commands import notify as _notify_cmd  # noqa: E402

main.add_command(_notify_cmd.notify_cmd)
