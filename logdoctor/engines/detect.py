"""Which engine wrote this log, and which version: votes from line prefixes, marker hits and signatures.
Everything engine-specific comes from the registry (engines/__init__.py)."""

from __future__ import annotations

import re
from functools import lru_cache

from logdoctor.core import rxcache
from logdoctor.core.records import Record
from logdoctor.engines import ENGINES as _REGISTRY

ENGINES = tuple(_REGISTRY)
_SIGS = {e.name: e.signatures for e in _REGISTRY.values()}
# "name==1.2" / "name version 1.2" banners; the banner name -> the engine
_BANNER = {n: e.name for e in _REGISTRY.values() for n in e.banner_names}
_GENERIC_VER = rxcache.compile(
    r"\b(?P<name>" + "|".join(re.escape(n) for n in _BANNER) + r")[ =:-]+v?(?P<v>\d+\.\d+(?:\.\d+)?[\w.+]*)", re.I
)


def detect(records: list[Record], hint: str = "auto") -> tuple[str, str | None]:
    """Return (engine, version or None); engine 'unknown' when nothing points anywhere."""
    votes = {e: 0 for e in ENGINES}
    version: dict[str, str] = {}
    for r in records:
        if r.prefix_engine in votes:
            votes[r.prefix_engine] += 3
        signed, versions = _line(r.msg)
        for eng in signed:
            votes[eng] += 2
        for name, v in versions:
            version.setdefault(name, v)
    if hint and hint != "auto":
        return hint, version.get(hint) or _infer_version(hint, records)
    best = max(votes, key=lambda e: votes[e])
    if votes[best] == 0:
        return "unknown", None
    return best, version.get(best) or _infer_version(best, records)


def _line(msg: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """What one message says: the engines whose signature it holds, and the (engine, version) pairs it names, in
    the order they are taken. Remembered per text (lines of ordinary length): triage reads a failing attempt's
    lines again in full, and again as the context of the attempts after it."""
    return _said(msg) if len(msg) <= 2000 else _said.__wrapped__(msg)


@lru_cache(maxsize=8192)
def _said(msg: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    signed = tuple(eng for eng, sigs in _SIGS.items() if any(s in msg for s in sigs))
    versions = []
    for e in _REGISTRY.values():
        v = e.version_in(msg)
        if v:
            versions.append((e.name, v))
    m = _GENERIC_VER.search(msg) if "==" in msg or "version" in msg.lower() else None
    if m:
        versions.append((_BANNER.get(m.group("name").lower(), m.group("name").lower()), m.group("v")))
    return signed, tuple(versions)


def _infer_version(engine: str, records: list[Record]) -> str | None:
    """An engine that often prints no version may date itself by its wording (engines.md §A)."""
    e = _REGISTRY.get(engine)
    return e.infer_version(records) if e is not None and e.infer_version is not None else None
