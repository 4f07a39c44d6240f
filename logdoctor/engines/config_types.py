"""The result type of a config-dump parse, shared by the pyparsing grammars (config_dump) and the literal fast path
(config_fast) without importing pyparsing."""

from __future__ import annotations

from logdoctor.core.lean import dataclass


@dataclass(frozen=True)
class ConfigDump:
    """Fields read from one dump. ``truncated`` is True when the dump did not end properly (or was not found):
    ``values`` then holds only the pairs that were provably complete."""

    values: dict[str, object]
    truncated: bool
    form: str  # "serverargs-repr" | "dict" | "namespace" | "kv-list"
