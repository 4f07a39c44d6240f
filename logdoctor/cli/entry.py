"""The `logdoctor` console script. The common call — `logdoctor explain [FILE|-]` with a few plain options — runs
without importing click at all (click is ~15 ms of a ~60 ms run; issue 11's start-up target is 4x bare python).
Anything else (help, other commands, journal options, a malformed option) goes to the click CLI unchanged."""

from __future__ import annotations

import sys

_FORMATS = ("text", "json", "markdown")


def _choices(option: str) -> tuple[str, ...] | None:
    """The values an option of the fast path accepts (None: any); --engine's are the registry's."""
    if option == "--format":
        return _FORMATS
    if option == "--engine":
        from logdoctor.engines import ENGINE_NAMES

        return ("auto", *ENGINE_NAMES)
    return None


def _fast_args(argv: list[str]) -> dict | None:
    """Options of a plain explain call, or None when click must parse them (and report any error)."""
    if not argv or argv[0] != "explain":
        return None
    kw: dict = {
        "source": None,
        "fmt": "text",
        "engine": "auto",
        "rule_dirs": [],
        "stats": False,
        "verbose": False,
        "history_path": None,
        "no_history": False,
    }
    it = iter(argv[1:])
    for a in it:
        if a in ("--stats",):
            kw["stats"] = True
        elif a in ("-v", "--verbose"):
            kw["verbose"] = True
        elif a == "--no-history":
            kw["no_history"] = True
        elif a in ("--format", "--engine", "--rules", "--history"):
            v = next(it, None)
            choices = _choices(a)
            if v is None or (choices is not None and v not in choices) or v.startswith("-"):
                return None
            if a == "--rules":
                kw["rule_dirs"].append(v)
            elif a == "--history":
                kw["history_path"] = v
            else:
                kw["fmt" if a == "--format" else "engine"] = v
        elif a == "-" or not a.startswith("-"):
            if kw["source"] is not None:
                return None
            kw["source"] = a
        else:
            return None
    kw["rule_dirs"] = tuple(kw["rule_dirs"])
    return kw


def _journalctl_boot(argv: list[str]) -> list[str]:
    """journalctl accepts `--boot -1` / `-b -1`; click reads "-1" after an option with an optional value as an
    option of its own, so the offset is passed as " -1" (sources/journal.py strips it)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if (
            a in ("--boot", "-b")
            and i + 1 < len(argv)
            and argv[i + 1].lstrip("-").isdigit()
            and argv[i + 1].startswith("-")
        ):
            out += ["--boot", " " + argv[i + 1]]  # a leading space: not an option to click; the reader strips it
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _import_pipeline() -> None:
    """Import what every explain runs (the read, the verdict) with the cyclic collector off, then freeze what the
    imports built: module-level objects live until the exit anyway, and the collector would otherwise walk them
    again and again while the rest is imported and run (issue 20: ~5 % of a 140-line explain's instructions)."""
    import gc

    if "logdoctor.verdict.api" in sys.modules:  # imported already (a second call in one process): nothing to do
        return
    was_on = gc.isenabled()
    gc.disable()
    try:
        import logdoctor.scan.sources
        import logdoctor.verdict.api  # noqa: F401
    finally:
        gc.freeze()
        if was_on:
            gc.enable()


def main() -> None:
    argv = sys.argv[1:]
    kw = _fast_args(argv)
    if kw is not None:
        _import_pipeline()
        from logdoctor.cli import run

        try:
            code = run.explain(**kw)
        except BaseException as exc:  # noqa: BLE001 - the documented exit codes
            if isinstance(exc, SystemExit):
                raise
            code = run.fail(exc, kw["verbose"])
        sys.exit(code)
    from logdoctor.cli.app import main as click_main

    click_main(args=_journalctl_boot(argv), prog_name="logdoctor")


if __name__ == "__main__":
    main()
