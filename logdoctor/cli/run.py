"""The bodies of `explain` and `timeline`, free of click, so both the click CLI (cli.py) and the start-up fast path
(entry.py: a plain `logdoctor explain FILE` never imports click) run exactly the same code.

Also where options that would do nothing say so (issue 11): --since/--boot only filter a journal, --engine that
contradicts the log is followed but warned about, and a closed stdout pipe is a normal end.
"""

from __future__ import annotations

import os
import sys

from logdoctor.core.errors import InputError, LogdoctorError


def warn(msg: str) -> None:
    from logdoctor.render.visible import visible

    sys.stderr.write(f"logdoctor: warning: {visible(msg)}\n")  # a file name in it stays one printable line


def out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def read_input(source, unit, since, boot, lines, journal_file, journal_dir):
    """Pick the source: journal files / live journal, else a file or stdin (scan.sources.read_source_spec)."""
    from logdoctor.scan.sources import read_source_spec

    return read_source_spec(
        source, unit=unit, since=since, boot=boot, lines=lines, journal_files=journal_file, journal_dir=journal_dir
    )


def emit_warnings(res, stats: bool) -> None:
    for w in res.warnings:
        warn(w)
    if stats:
        sys.stderr.write(f"logdoctor: {res.origin}: {res.stats.line()}\n")
        for u in res.unparsed[:20]:
            sys.stderr.write(f"logdoctor:   unparsed line {u.line}: {u.reason}: {u.text[:80]!r}\n")


def check_engine(records, engine: str) -> None:
    """--engine X on a log another engine wrote: followed (the user may know better), but said."""
    if engine == "auto":
        return
    from logdoctor.engines import detect as engine_detect

    seen, _ = engine_detect.detect(records, "auto")
    if seen not in ("unknown", engine):
        warn(
            f"--engine {engine} given, but the log looks like {seen}; diagnosing as {engine} "
            f"(drop --engine to let logdoctor detect it)"
        )


def open_history(history_path, no_history):
    """--history/--no-history → an open History, or None (no sqlite work at all). The default location is a
    convenience: a problem with it warns and the diagnosis goes on without it (docs/hook.md)."""
    if no_history:
        if history_path:
            from logdoctor.core.errors import UsageError

            raise UsageError("give --history PATH or --no-history, not both")
        return None
    from logdoctor.history import History, HistoryUnavailable

    try:
        if history_path:
            return History(history_path)  # asked for by name: a problem with it is the user's error (exit 2)
        return History()
    except HistoryUnavailable as e:  # a passing state (locked, a full disk), named or not: diagnose now
        warn(f"{e}; continuing without the attempt history")
        return None
    except InputError as e:
        if history_path:
            raise
        warn(f"{e}; continuing without the attempt history")
        return None


def emit_store_warnings(store) -> None:
    """What the store could not do (read-only, locked past the timeout, a full disk): the verdict stands."""
    for w in getattr(store, "warnings", ()):
        warn(w)


def verdict(res, engine: str, unit, store, rule_dirs=()):
    """The verdict on what was read, through the attempt history when a store is open (api.diagnose): one
    implementation for explain, fix and notify."""
    from logdoctor.timeline.attempts import written_by_a_program
    from logdoctor.verdict.api import diagnose

    if not written_by_a_program(res.records):  # prose, a note, blank lines: no line a program logged
        d = diagnose(res, engine, rules=tuple(rule_dirs))
        if not d.failed and d.engine == "unknown":  # nothing to diagnose: refused, not called healthy (exit 2)
            if store is not None:
                store.close()
            raise InputError(f"{res.origin}: {NOT_A_LOG}")
        if store is None:
            return d
    if store is None:
        return diagnose(res, engine, rules=tuple(rule_dirs))
    with store:
        d = diagnose(res, engine, history=store, rules=tuple(rule_dirs), unit=unit)
    emit_store_warnings(store)
    return d


NOT_A_LOG = (
    "not a log: no line carries a time, a log level or a journal field, no inference engine wrote it and nothing"
    " in it failed — pipe the service's journal (journalctl -u UNIT -n 1000 --no-pager) or its log file"
)


def explain(
    source,
    engine="auto",
    unit=None,
    since=None,
    boot=None,
    lines=None,
    journal_file=(),
    journal_dir=None,
    fmt="text",
    rule_dirs=(),
    stats=False,
    verbose=False,
    *,
    history_path=None,
    no_history=False,
) -> int:
    res = read_input(source, unit, since, boot, lines, journal_file, journal_dir)
    emit_warnings(res, stats)
    check_engine(res.records, engine)
    d = verdict(res, engine, unit, open_history(history_path, no_history), rule_dirs)
    from logdoctor.core.progress import clear

    clear()
    if fmt == "json":
        import json

        out(json.dumps(d.to_dict(), indent=2, default=str) + "\n")
    elif fmt == "markdown":
        from logdoctor.render.markdown import render

        out(render(d))
    else:
        from logdoctor.render import text

        tl_text = ""
        if verbose:  # the timeline view rebuilds the timeline; the verdict came from the API
            from logdoctor.render.timeline_view import render_text
            from logdoctor.timeline.build import build

            tl_text = render_text(build(res.records, engine))
        from logdoctor.render.visible import visible_lines

        out(visible_lines(text.render(d, color=text.use_color(sys.stdout), verbose=verbose, timeline_text=tl_text)))
    return d.exit_code


def timeline(
    source,
    engine="auto",
    unit=None,
    since=None,
    boot=None,
    lines=None,
    journal_file=(),
    journal_dir=None,
    fmt="text",
    stats=False,
) -> int:
    from logdoctor.render.timeline_view import render_text, to_dict
    from logdoctor.timeline.build import build

    res = read_input(source, unit, since, boot, lines, journal_file, journal_dir)
    emit_warnings(res, stats)
    check_engine(res.records, engine)
    tl = build(res.records, engine)
    from logdoctor.core.progress import clear

    clear()
    if fmt == "json":
        import json

        out(json.dumps(to_dict(tl), indent=2, default=str) + "\n")
    else:
        out(render_text(tl))
    return 0


def closed_pipe() -> int:
    """stdout's reader went away (`logdoctor rules list | head`): a normal end. Point stdout at /dev/null so the
    interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 0


def fail(exc: BaseException, verbose: bool) -> int:
    """The documented exit codes for what escaped a command: 2 (or the error's own) with one line, 4 otherwise."""
    from logdoctor.core.progress import clear

    clear()
    if isinstance(exc, BrokenPipeError):
        return closed_pipe()
    if isinstance(exc, KeyboardInterrupt):
        sys.stderr.write("logdoctor: interrupted\n")
        return 130
    if isinstance(exc, LogdoctorError):
        from logdoctor.render.visible import visible

        sys.stderr.write(f"logdoctor: {visible(str(exc))}\n")
        return exc.exit_code
    if verbose:
        import traceback

        traceback.print_exc()
    sys.stderr.write(
        f"logdoctor: internal error ({type(exc).__name__}: {str(exc)[:200]}) — please report it with "
        f"the log and `logdoctor --version`; rerun with -v for the traceback\n"
    )
    return 4
