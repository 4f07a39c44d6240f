"""logdoctor: crash-log diagnosis for LLM inference servers.

    import logdoctor
    d = logdoctor.diagnose(Path("journal.log"))          # a file; a str is the log text itself
    d.failed, d.cause, d.phase, d.confidence, d.fixes, d.evidence, d.to_dict()
"""
from __future__ import annotations

__version__ = "0.1.0"

from logdoctor.errors import InputError, LogdoctorError, RuleError, UsageError  # noqa: E402


def diagnose(source, engine: str = "auto", history=None, rules=()):
    """Diagnose a log: a `str` is the log text, a `pathlib.Path` a file to read, or bytes / an iterable of lines
    (docs/api.md). A str is never taken for a file name: pass Path("journal.log") for a file."""
    from logdoctor.api import diagnose as _diagnose
    return _diagnose(source, engine=engine, history=history, rules=rules)


__all__ = ["diagnose", "LogdoctorError", "InputError", "UsageError", "RuleError", "__version__"]
