"""logdoctor: crash-log diagnosis for LLM inference servers. From Python (docs/api.md):

import logdoctor
d = logdoctor.diagnose(Path("journal.log"))          # a file; a str is the log text itself
d.failed, d.cause, d.phase, d.confidence, d.fixes, d.evidence, d.to_dict()
"""

from __future__ import annotations

__version__ = "0.1.0"

from logdoctor.core.errors import InputError, LogdoctorError, RuleError, UsageError  # noqa: E402


def diagnose(source, engine: str = "auto", history=None, rules=(), *, unit=None, host=None):
    """Diagnose a log: a `str` is the log text, a `pathlib.Path` a file to read, or bytes / an iterable of lines
    (docs/api.md). A str is never taken for a file name: pass Path("journal.log") for a file.
    history: None (off), True (the default store), a path or a logdoctor.history.History (docs/hook.md)."""
    from logdoctor.verdict.api import diagnose as _diagnose

    return _diagnose(source, engine=engine, history=history, rules=rules, unit=unit, host=host)


def watch(unit: str, *, timeout: float, health_url: str | None = None, journal=None, history=None, **kw):
    """Follow a unit until it is ready or has failed (or timeout seconds pass); returns a WatchResult whose
    .outcome is ready | failed | timeout and which reads like the Diagnosis (.cause, .fixes, .to_dict())."""
    from logdoctor.hook.watching import watch as _watch

    return _watch(unit, timeout=timeout, health_url=health_url, journal=journal, history=history, **kw)


def triage(paths, *, jobs=None, scheduler=None, year=None):
    """Triage many logs → pandas.DataFrame, one row per attempt (needs logdoctor[triage]); docs/triage.md."""
    from logdoctor.triage import triage as _triage

    return _triage(paths, jobs=jobs, scheduler=scheduler, year=year)


def preflight(unit_file=None, *, argv=None, **kw):
    """Before a start: the memory budget and host health of a launch command (a unit file, or argv) -> a Report
    whose .verdict is go | no-go | risky (.cause, .phase, .budget, .fixes, .to_dict()); docs/preflight.md."""
    from logdoctor.preflight import run

    return run(unit_file=unit_file, argv=argv, **kw)


__all__ = [
    "diagnose",
    "watch",
    "triage",
    "preflight",
    "LogdoctorError",
    "InputError",
    "UsageError",
    "RuleError",
    "__version__",
]
