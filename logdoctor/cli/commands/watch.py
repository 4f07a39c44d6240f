"""`logdoctor watch UNIT`: follow a unit during a deploy; exit 0 ready · 1 failed, known cause · 3 failed, cause
unknown · 5 timed out · 2 usage/input error · 130 interrupted (Ctrl-C)."""

from __future__ import annotations

import json
import sys

import click

from logdoctor.cli.commands.history import history_options, open_from_options
from logdoctor.engines import ENGINE_NAMES

ENGINES = ("auto", *ENGINE_NAMES)  # the engine registry (engines/__init__.py)


@click.command("watch")
@click.argument("unit")
@click.option("--timeout", type=float, default=900.0, show_default=True, help="give up after S seconds (exit 5)")
@click.option("--health-url", help="also count HTTP 200 from this URL (e.g. http://127.0.0.1:30000/health) as ready")
@click.option("--journal-file", multiple=True, type=click.Path(), help="follow this journal file (repeatable)")
@click.option("--journal-dir", type=click.Path(), help="follow the journal files in DIR")
@click.option("--since", help="look for the unit's latest start only after T (journalctl --since syntax)")
@click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-v", "--verbose", is_flag=True, help="timeline, all candidate rules and scores")
@history_options
def watch_cmd(
    unit, timeout, health_url, journal_file, journal_dir, since, engine, fmt, verbose, history_path, no_history
):
    """Follow UNIT from its latest start until it is ready or has failed; print the diagnosis.

    Reads the live journal (systemd-python) or --journal-file / --journal-dir. Ready is the engine's own ready line,
    or HTTP 200 from --health-url; failed is a diagnosed failure or the unit's failed result.

    \b
    Examples:
      systemctl restart sglang-qwen && logdoctor watch sglang-qwen --timeout 900
      logdoctor watch vllm-llama --health-url http://127.0.0.1:8000/health --format json
      logdoctor watch sglang-qwen --journal-file /var/log/journal/remote/host.journal

    Exit codes: 0 ready · 1 failed, known cause · 3 failed, cause unknown · 5 timed out · 2 usage/input error ·
    4 internal error · 130 interrupted (Ctrl-C)."""
    from logdoctor.core.errors import UsageError
    from logdoctor.hook.watching import watch

    if journal_file and journal_dir:
        raise UsageError("give --journal-file or --journal-dir, not both")
    journal = list(journal_file) if journal_file else journal_dir
    store = open_from_options(history_path, no_history)
    tty = sys.stderr.isatty()
    shown = {"len": 0}

    def status(p) -> None:
        import shutil

        width = shutil.get_terminal_size((100, 20)).columns - 1
        text = p.line(width if width > 20 else 0)
        sys.stderr.write("\r" + text + " " * max(0, shown["len"] - len(text)))
        sys.stderr.flush()
        shown["len"] = len(text)

    def clear() -> None:
        if shown["len"]:
            sys.stderr.write("\r" + " " * shown["len"] + "\r")
            sys.stderr.flush()
            shown["len"] = 0

    try:
        result = watch(
            unit,
            timeout=timeout,
            health_url=health_url,
            journal=journal,
            history=store,
            engine=engine,
            since=since,
            on_progress=status if tty else None,
        )
    except KeyboardInterrupt:
        clear()
        click.echo("logdoctor: interrupted", err=True)
        sys.exit(130)
    finally:
        clear()
        if store is not None:
            store.close()
            from logdoctor.cli.commands.history import emit_warnings

            emit_warnings(store)
    if fmt == "json":
        click.echo(json.dumps(result.to_dict(), indent=2, default=str))
        sys.exit(result.exit_code)
    if result.outcome == "timeout":
        d = result.diagnosis
        click.echo(
            f"TIMED OUT  after {result.elapsed:.0f}s: {result.unit} is neither ready nor failed "
            f"(last phase: {d.phase}; {result.lines} journal entries since its latest start)"
        )
        sys.exit(5)
    from logdoctor.render import text

    if result.outcome == "ready" and result.ready_by == "health":
        click.echo(f"READY  {result.unit}: {health_url} answered 200 after {result.elapsed:.0f}s")
    else:
        click.echo(text.render(result.diagnosis, color=text.use_color(sys.stdout), verbose=verbose), nl=False)
    sys.exit(result.exit_code)
