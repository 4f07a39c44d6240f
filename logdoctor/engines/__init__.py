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
