"""Which engine wrote this log, and which version: votes from line prefixes, marker hits and signatures.
Everything engine-specific comes from the registry (engines/__init__.py)."""
from __future__ import annotations

import re

from logdoctor.core import rxcache
from logdoctor.core.records import Record
from logdoctor.engines import ENGINES as _REGISTRY

ENGINES = tuple(_REGISTRY)
_SIGS = {e.name: e.signatures for e in _REGISTRY.values()}
# "name==1.2" / "name version 1.2" banners; the banner name -> the engine
_BANNER = {n: e.name for e in _REGISTRY.values() for n in e.banner_names}
_GENERIC_VER = rxcache.compile(r"\b(?P<name>" + "|".join(re.escape(n) for n in _BANNER) +
                               r")[ =:-]+v?(?P<v>\d+\.\d+(?:\.\d+)?[\w.+]*)", re.I)


def detect(records: list[Record], hint: str = "auto") -> tuple[str, str | None]:
    """Return (engine, version or None); engine 'unknown' when nothing points anywhere."""
    votes = {e: 0 for e in ENGINES}
    version: dict[str, str] = {}
    for r in records:
        if r.prefix_engine in votes:
            votes[r.prefix_engine] += 3
        msg = r.msg
        for eng, sigs in _SIGS.items():
            for s in sigs:
                if s in msg:
                    votes[eng] += 2
                    break
        for e in _REGISTRY.values():
            v = e.version_in(msg)
            if v:
                version.setdefault(e.name, v)
        m = _GENERIC_VER.search(msg) if "==" in msg or "version" in msg.lower() else None
        if m:
            version.setdefault(_BANNER.get(m.group("name").lower(), m.group("name").lower()), m.group("v"))
    if hint and hint != "auto":
        return hint, version.get(hint) or _infer_version(hint, records)
    best = max(votes, key=lambda e: votes[e])
    if votes[best] == 0:
        return "unknown", None
    return best, version.get(best) or _infer_version(best, records)


def _infer_version(engine: str, records: list[Record]) -> str | None:
    """An engine that often prints no version may date itself by its wording (engines.md §A)."""
    e = _REGISTRY.get(engine)
    return e.infer_version(records) if e is not None and e.infer_version is not None else None
