"""Command line (click). Heavy imports (pandas, scikit-learn) stay inside the commands that need them, so
`explain` answers in well under a second."""

from __future__ import annotations

import sys

import click

from logdoctor.engines import ENGINE_NAMES

ENGINES = ("auto", *ENGINE_NAMES)  # the --engine choices: the engine registry (engines/__init__.py)


def _fail(exc: BaseException, verbose: bool) -> None:
    from logdoctor.cli.run import fail

    sys.exit(fail(exc, verbose))


class _Group(click.Group):
    """Commands in other modules are imported only when used (explain does not pay for yaml, jsonschema, ...)."""

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(_LAZY))

    def get_command(self, ctx, name):
        if name in _LAZY and name not in self.commands:
            import importlib

            mod, attr = _LAZY[name]
            self.add_command(getattr(importlib.import_module(mod), attr), name)
        return super().get_command(ctx, name)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # one line, like every other usage error (design.md: exit 2, no usage dump)
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            click.echo(f"logdoctor: {exc.format_message()}{where}", err=True)
            sys.exit(exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - the documented exit 4 path
            _fail(exc, "-v" in sys.argv or "--verbose" in sys.argv)


def _print_version(ctx, _param, value):
    if not value or ctx.resilient_parsing:
        return
    from logdoctor.cli.about import version_text

    click.echo(version_text())
    ctx.exit(0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="version, number of bundled rules, classifier model identity",
)
def main() -> None:
    """Diagnose why an LLM inference server (SGLang, vLLM, TGI, TensorRT-LLM, lmdeploy) failed: at start-up, or
    crashed while serving.

    \b
      journalctl -u sglang-qwen -n 1000 --no-pager | logdoctor explain
      logdoctor explain --unit vllm -n 1000
      logdoctor explain server.log.gz --format json

    Docs travel with the install: `logdoctor docs` lists the topics, `logdoctor docs cli` (commands, exit codes),
    `logdoctor docs reading-a-verdict`; man pages: `man logdoctor`, `man logdoctor-explain`."""


from logdoctor.cli.commands.history import history_options as _history_options  # noqa: E402


def _source_options(f):
    f = click.option("--journal-dir", type=click.Path(), help="read journal files in DIR")(f)
    f = click.option("--journal-file", multiple=True, type=click.Path(), help="read a journal file (repeatable)")(f)
    f = click.option("-n", "lines", type=int, help="the last N journal entries (of a text log: its last N lines)")(f)
    f = click.option(
        "--boot",
        is_flag=False,
        flag_value="0",
        default=None,
        help="only this boot, like journalctl -b (0 current, -1 the one before, or a boot id)",
    )(f)
    f = click.option("--since", help="journal entries since T (journalctl syntax)")(f)
    f = click.option("--unit", "-u", help="read the system journal (or the journal files) for UNIT")(f)
    f = click.option(
        "--engine",
        type=click.Choice(ENGINES),
        default="auto",
        show_default=True,
        help="which engine wrote the log (warned about when the log says otherwise)",
    )(f)
    f = click.argument("source", required=False, metavar="[SOURCE]")(f)
    return f


def _read(source, unit, since, boot, lines, journal_file, journal_dir):
    """Pick the source: journal files / live journal, else a file or stdin (logdoctor/cli/run.py)."""
    from logdoctor.cli.run import read_input

    return read_input(source, unit, since, boot, lines, journal_file, journal_dir)


def _emit_warnings(res, stats: bool) -> None:
    from logdoctor.cli.run import emit_warnings

    emit_warnings(res, stats)


@main.command()
@_source_options
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), help="extra rule folder (overrides by id)")
@click.option("--stats", is_flag=True, help="line accounting on stderr")
@click.option("-v", "--verbose", is_flag=True, help="timeline, all candidate rules and scores")
@_history_options
def explain(
    source,
    engine,
    unit,
    since,
    boot,
    lines,
    journal_file,
    journal_dir,
    fmt,
    rule_dirs,
    stats,
    verbose,
    history_path,
    no_history,
):
    """Say why the service failed (at start-up or while serving), show the evidence, and propose the next flag
    change.

    SOURCE is a log file (plain, .gz, .xz or .bz2, recognised by content; journalctl/docker/kubectl output or a
    raw paste), a systemd .journal file, or '-' / nothing for stdin. Or read the journal with --unit,
    --journal-file or --journal-dir (then --since, --boot and -n filter it like journalctl).

    \b
    Examples:
      journalctl -u sglang-qwen -n 1000 --no-pager | logdoctor explain
      logdoctor explain --unit vllm-llama --boot -1
      logdoctor explain /var/log/sglang/server.log.gz --format json

    Exit codes: 0 no failure · 1 failure with a known cause · 3 failure, cause unknown · 2 input/usage error ·
    4 internal error."""
    from logdoctor.cli import run

    sys.exit(
        run.explain(
            source,
            engine,
            unit,
            since,
            boot,
            lines,
            journal_file,
            journal_dir,
            fmt,
            rule_dirs,
            stats,
            verbose,
            history_path=history_path,
            no_history=no_history,
        )
    )


@main.command()
@_source_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--stats", is_flag=True, help="line accounting on stderr")
def timeline(source, engine, unit, since, boot, lines, journal_file, journal_dir, fmt, stats):
    """The start-up phases per rank, attempts, memory readings and flags in force.

    SOURCE is what `explain` reads: a log file (plain or compressed), a .journal file, or '-' / nothing for
    stdin; or --unit / --journal-file / --journal-dir.

    \b
    Examples:
      journalctl -u sglang-qwen -n 1000 --no-pager | logdoctor timeline
      logdoctor timeline --journal-file /var/log/journal/host.journal --unit vllm
      logdoctor timeline server.log --format json"""
    from logdoctor.cli import run

    sys.exit(run.timeline(source, engine, unit, since, boot, lines, journal_file, journal_dir, fmt, stats))


_LAZY = {
    "rules": ("logdoctor.cli.commands.rules", "rules"),
    "eval": ("logdoctor.cli.commands.evaluate", "eval_cmd"),
    "train": ("logdoctor.cli.commands.train", "train_cmd"),
    "history": ("logdoctor.cli.commands.history", "history"),
    "fix": ("logdoctor.cli.commands.fix", "fix_cmd"),
    "watch": ("logdoctor.cli.commands.watch", "watch_cmd"),
    "notify": ("logdoctor.cli.commands.notify", "notify_cmd"),
    "triage": ("logdoctor.cli.commands.triage", "triage_cmd"),
    "preflight": ("logdoctor.cli.commands.preflight", "preflight_cmd"),
    "atlas": ("logdoctor.cli.commands.atlas", "atlas"),
    "docs": ("logdoctor.cli.commands.docs", "docs_cmd"),
}
