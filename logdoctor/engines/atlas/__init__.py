"""The atlas: every message SGLang and vLLM can raise or log, mined from their released sources
(tools/atlas/build.py), with the exception class, log level, module, function, line, the releases that carry it
and whether it sits on a recoverable path (docs/atlas.md).

`lookup(line)` resolves one log line to its entry, with the phase (phases.py: where the message lives) and the
cause (causes.py: the engine's own words), or None. The data is read on first use only.
"""

from __future__ import annotations

from logdoctor.engines.atlas.model import AtlasHit, Entry, Variant
from logdoctor.engines.atlas.store import Atlas, AtlasError, load

__all__ = ["Atlas", "AtlasError", "AtlasHit", "Entry", "Variant", "load", "lookup", "lookup_all"]

MIN_MATCHED = 16  # literal characters a template must contribute before a line counts as its message
MIN_SHARE = 0.3  # ... and this share of the line's message (the rest: formatted values, the exception's class),
PARTIAL_SHARE = 0.5  # a template found only up to a cut (its later lines, a reworded tail) must be this much found
PARTIAL_ENOUGH = 60  # ... or this many characters (a long hint or URL at its end)
ENOUGH = 30  # ... unless this many literal characters match (a long list or path formatted into the message)
_KIND_ORDER = {"raise": 0, "exit": 0, "assert": 1, "log": 2}
# Python's own wordings that engines re-raise by hand (a __getattr__ that mimics AttributeError): a line with them
# is the interpreter's message far more often than that engine site, so they name no entry
PYTHON_WORDINGS = (
    "object has no attribute",
    "unexpected keyword argument",
    "is not subscriptable",
    "object is not iterable",
    "object is not callable",
    "No module named",
    "positional argument",
)


def _message(text: str) -> str:
    """The part of a line an engine formatted: drop an "ExcType: " head (tracebacks print it, the template lacks it)."""
    head, sep, rest = text.partition(": ")
    if sep and head and " " not in head and (head.endswith(("Error", "Exception", "Exit", "Interrupt")) or "." in head):
        return rest
    return text


def lookup_all(
    line: str,
    engine: str | None = None,
    atlas: Atlas | None = None,
    version: str | None = None,
    frames: tuple[str, ...] = (),
) -> list[AtlasHit]:
    """Every entry whose template the line holds (best first): most literal text matched, then an entry in a file
    the traceback's `frames` name (one message copied into two models), the engine the log came from, a raise
    before a log call, a fatal path before a recoverable one, then the entry's id. Within an entry the variant
    cited is the one of the log's engine `version` when known, else the newest; the versions are those of every
    variant the line matches."""
    from logdoctor.engines.atlas.causes import cause_of
    from logdoctor.engines.atlas.phases import phase_of

    at = atlas if atlas is not None else load()
    text = _message(line.strip())
    if not text:
        return []
    need = max(MIN_MATCHED, min(ENOUGH, int(MIN_SHARE * len(text))))
    per_entry: dict[str, tuple[Entry, list[tuple[Variant, int]]]] = {}
    for ei, vi, matched, total in at.index_for(engine).matches(text):
        if matched >= need and (matched == total or matched >= min(PARTIAL_SHARE * total, PARTIAL_ENOUGH)):
            e = at.entry(ei)
            per_entry.setdefault(e.id, (e, []))[1].append((e.variants[vi], matched))
    scored = []
    for e, found in per_entry.values():
        if any(w in v.text() for v, _ in found for w in PYTHON_WORDINGS):
            continue
        matched = max(m for _, m in found)
        best = [v for v, m in found if m == matched]
        mask = 0
        for v, _ in found:
            mask |= v.mask
        vs = at.versions.get(e.engine, ())
        vi = vs.index(version) if version in vs else -1
        v = next((x for x in best if vi >= 0 and x.mask >> vi & 1), max(best, key=lambda x: x.mask.bit_length()))
        in_frames = any(f.endswith("/" + x.module) for x, _ in found for f in frames)
        key = (
            -matched,
            0 if in_frames else 1,
            0 if engine in (None, e.engine) else 1,
            _KIND_ORDER.get(e.kind, 3),
            1 if e.recoverable else 0,
            e.id,
        )
        scored.append((key, e, v, mask, matched))
    scored.sort(key=lambda x: x[0])
    hits = []
    for _, e, v, mask, matched in scored:
        phase = phase_of(v.module, v.qualname)
        cause, _words = cause_of(text, e.exc, phase)
        hits.append(AtlasHit(e, v, at.versions_of(e.engine, mask), phase, cause, matched))
    return hits


def lookup(
    line: str,
    engine: str | None = None,
    atlas: Atlas | None = None,
    version: str | None = None,
    frames: tuple[str, ...] = (),
) -> AtlasHit | None:
    """The atlas entry a log line carries, or None."""
    hits = lookup_all(line, engine, atlas, version, frames)
    return hits[0] if hits else None
