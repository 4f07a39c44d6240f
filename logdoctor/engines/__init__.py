"""Engine knowledge, one module per engine (sglang, vllm, tgi, trtllm, lmdeploy), each exporting `ENGINE`
(engines/engine.py says what it declares). This is the one registry: to add an engine, add its module and one
line below. Order matters where votes tie in detection: earlier engines win."""

from __future__ import annotations

from types import MappingProxyType

from logdoctor.engines import lmdeploy, sglang, tgi, trtllm, vllm
from logdoctor.engines.engine import Engine

ENGINES: MappingProxyType[str, Engine] = MappingProxyType(
    {
        e.name: e
        for e in (
            sglang.ENGINE,
            vllm.ENGINE,
            tgi.ENGINE,
            trtllm.ENGINE,
            lmdeploy.ENGINE,
        )
    }
)
ENGINE_NAMES: tuple[str, ...] = tuple(ENGINES)


def each(field: str) -> tuple[str, ...]:
    """One tuple field of every registered engine, flattened in registry order (duplicates dropped): how a stage
    that serves all engines (triage's unit split, the signature frames, a byte prefilter) reads the registry."""
    return tuple(dict.fromkeys(v for e in ENGINES.values() for v in getattr(e, field)))


def config_dump_pattern() -> str:
    """One regex (on a message) for the line that opens an attempt, over every engine's `config_dump`."""
    return "|".join(each("config_dump"))
