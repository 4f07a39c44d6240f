"""SGLang healthy start-ups."""
from __future__ import annotations

from .case import Outcome, Run


def healthy(run: Run, serve: int = 8, pressure: bool = False, notes: str = "", extra=None) -> Outcome:
    e = run.sg()
    e.boot()
    e.serve(serve, pressure)
    if extra:
        extra(e)
        e.serve(3)
    return Outcome("serving", None, exit="alive", notes=notes or "Healthy start; the warnings on the way are normal.")
