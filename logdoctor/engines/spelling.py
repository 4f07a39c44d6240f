"""How an engine spells a canonical lever: command-line spellings by version, the config fields that hold it, and its
defaults by version. Engine modules (engines/<name>.py) declare one `Side` per lever they support
(`LEVER_SIDES`); `levers.py` keeps the canonical levers and the arithmetic and reads the sides from the engine
registry. The table shorthands (`S`, `F`, `side`) and the field readers live here so engine modules stay data.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from logdoctor.core.lean import dataclass

__all__ = ["Spelling", "Field", "Side", "S", "F", "side", "equals", "negate", "nonzero", "spec_method"]


@dataclass(frozen=True)
class Spelling:
    """One way an engine spells a lever on its command line.

    ``since``/``until``: version range [since, until). ``switch``: a flag without value (present = on).
    ``values``: lever value -> flag value, for flags that take a word (``--cuda-graph-backend-decode disabled``);
    a lever value missing from it is not expressible. ``attach``: written as one token (``-O0``).
    ``needs_field``: used only when the config shows that field (SGLang 0.5.17+ graph backends).
    ``hint_field``: with the version unknown, that field in the config shows this spelling is the current one."""

    flag: str
    since: str | None = None
    until: str | None = None
    switch: bool = False
    values: tuple[tuple[object, str], ...] = ()
    attach: bool = False
    needs_field: str | None = None
    hint_field: str | None = None


@dataclass(frozen=True)
class Field:
    """A python field (dotted path into nested dicts) holding the lever, and how to read it as the lever value
    (``read`` returns None when the field says nothing about the lever)."""

    path: str
    read: Callable[[object], object] | None = None


@dataclass(frozen=True)
class Side:
    """A lever on one engine: spellings (oldest first), fields (canonical first) and version-dependent defaults
    as ``(since, value)`` pairs, oldest first (None = resolved at start-up)."""

    flags: tuple[Spelling, ...]
    fields: tuple[Field, ...]
    defaults: tuple[tuple[str | None, object], ...] = ((None, None),)


# --------------------------------------------------------------------------------------------------------------------
# readers for fields that encode a lever indirectly, and the table shorthands


def _equals(word: str) -> Callable[[object], object]:
    return lambda v: (str(v).lower() == word) if v is not None else None


def _negate(v: object) -> object:
    return (not v) if isinstance(v, bool) else None


def _nonzero(v: object) -> object:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return v != 0
    m = re.fullmatch(r"O?(\d)", str(v).strip())
    return int(m.group(1)) != 0 if m else None


def _spec_method(v: object) -> object:
    """vLLM ``speculative_config``: a dict, a JSON string, or a raw ``SpeculativeConfig(method='eagle3', ...)``."""
    if isinstance(v, dict):
        return v.get("method")
    if isinstance(v, str):
        m = re.search(r"""["']?method["']?\s*[:=]\s*["']([\w.-]+)""", v)
        return m.group(1) if m else None
    return None


def _S(flag: str, **kw: Any) -> Spelling:  # table shorthand
    return Spelling(flag, **kw)


def _F(*paths: str, read: Callable[[object], object] | None = None) -> tuple[Field, ...]:
    return tuple(Field(p, read) for p in paths)


def _side(
    flags: Spelling | tuple[Spelling, ...],
    fields: tuple[Field, ...],
    default: object = None,
    defaults: tuple[tuple[str | None, object], ...] | None = None,
) -> Side:
    return Side(flags if isinstance(flags, tuple) else (flags,), fields, defaults or ((None, default),))


equals, negate, nonzero, spec_method, S, F, side = _equals, _negate, _nonzero, _spec_method, _S, _F, _side
