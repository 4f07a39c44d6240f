"""The case catalogue.  Each module returns a list of Case objects."""
from __future__ import annotations

from ..case import Case


def all_cases() -> list[Case]:
    from . import healthy, more, others, seed, sglang_cases, vllm_cases
    out: list[Case] = []
    for mod in (seed, sglang_cases, vllm_cases, healthy, others, more):
        out += mod.cases()
    return out
