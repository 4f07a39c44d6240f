"""The atlas tier of the decision (matching/decide.py PRECEDENCE: rules, then the atlas, then the classifier): the
decisive error of a failed attempt, resolved to the engine's own message.

Only the decisive lines are read (decisive.py: the inner errors first, then the outermost wrapper, then ERROR
lines and bare "Type: message" lines), and a message whose atlas entry sits on a recoverable path (caught and
retried, logged in a handler that goes on, a warning) is skipped: it cannot be why the attempt failed.
"""

from __future__ import annotations

from logdoctor.engines.atlas.model import AtlasHit


def decisive_lines(attempt) -> list[tuple[int, str]]:
    """(line, text) of the attempt's decisive error, root causes first, each once."""
    d = getattr(attempt, "decisive", None)
    if d is None:
        return []
    out: list[tuple[int, str]] = []
    seen: set[str] = set()
    for ln, text in [*d.inner, *d.wrapper, *d.errors]:
        first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
        if first and first not in seen:
            seen.add(first)
            out.append((ln, first))
    return out


def decisive_hit(attempt, engine: str | None, version: str | None = None) -> tuple[int, str, AtlasHit] | None:
    """(line, text, hit) for the first decisive line the atlas places with a cause; else the first it resolves at all
    (cause "unknown": the phase and the source alone); None when no decisive line is an engine message. An
    unreadable atlas file is no hit (the verdict falls through to the classifier)."""
    from logdoctor.engines.atlas import AtlasError, lookup

    first: tuple[int, str, AtlasHit] | None = None
    d = getattr(attempt, "decisive", None)
    frames = tuple(f.file for b in getattr(d, "blocks", None) or [] for s in b.sections for f in s.frames)
    for ln, text in decisive_lines(attempt):
        try:
            hit = lookup(text, engine, version=version, frames=frames)
        except AtlasError:
            return None
        if hit is None or hit.recoverable:
            continue
        if hit.cause != "unknown":
            return ln, text, hit
        if first is None:
            first = (ln, text, hit)
    return first
