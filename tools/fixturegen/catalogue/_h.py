"""Shorthands for the catalogue."""
from __future__ import annotations

from functools import partial

from .. import noise
from ..case import Attempt, Case
from ..deploy import Deploy
from ..render import View

P = partial
STRUCT = {"dp", "ep", "pp", "port", "path_style", "site_style", "unit", "host", "draft", "gpu_ids"}


def _deploy(engine: str, ver: str, model: str, gpu: str, tp: int, kw: dict) -> Deploy:
    st = {k: kw.pop(k) for k in list(kw) if k in STRUCT}
    return Deploy(engine, ver, model, gpu, tp=tp, args=kw, **st)


def sg(ver: str, model_key: str, gpu: str, tp: int = 1, **kw) -> Deploy:
    return _deploy("sglang", ver, model_key, gpu, tp, kw)


def vl(ver: str, model_key: str, gpu: str, tp: int = 1, **kw) -> Deploy:
    return _deploy("vllm", ver, model_key, gpu, tp, kw)


def other(engine: str, ver: str, model: str, gpu: str, tp: int = 1, **kw) -> Deploy:
    return _deploy(engine, ver, model, gpu, tp, kw)


def one(id: str, group: str, d: Deploy, ending, fmt: str = "short", scope: str | None = None, tail: int | None = None,
        view: View | None = None, **kw) -> Case:
    if view is None:
        if scope is None:
            scope = "app" if fmt in ("docker", "docker-t", "kubectl", "paste") else "unit"
        view = View(fmt, scope=scope, tail=tail)
    return Case(id, group, [Attempt(d, ending)], view=view, **kw)


def multi(id: str, group: str, attempts: list[Attempt], fmt: str = "short", scope: str = "unit",
          tail: int | None = None, **kw) -> Case:
    return Case(id, group, attempts, view=View(fmt, scope=scope, tail=tail), **kw)


def hooks(**phases) -> dict:
    return {k: (v if isinstance(v, list) else [v]) for k, v in phases.items()}


N = noise
