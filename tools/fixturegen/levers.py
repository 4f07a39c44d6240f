"""Fix values computed relative to the config a log shows."""
from __future__ import annotations

NICE_MEM = [0.6, 0.65, 0.7, 0.75, 0.8, 0.83, 0.85, 0.88, 0.9, 0.92, 0.95]


def raise_mem(cur: float, total: float, avail_after_load: float, need: float | None = None) -> float:
    """Smallest common --mem-fraction-static value above `cur` that leaves `need` GiB for the pools."""
    need = need if need is not None else max(2.0, 0.06 * total)
    for x in NICE_MEM:
        if x > cur + 1e-9 and avail_after_load - total * (1 - x) >= need:
            return x
    return 0.95 if cur < 0.95 else round(min(cur + 0.02, 0.97), 2)


def lower_mem(cur: float, step: float = 0.05) -> float:
    cands = [x for x in NICE_MEM if x <= cur - step + 1e-9]
    return cands[-1] if cands else round(cur - step, 2)


def halve(n: int, floor: int = 16) -> int:
    return max(floor, n // 2)


def next_tp(tp: int, need_per_rank: float, total: float, heads: int) -> int:
    for t in (1, 2, 4, 8, 16):
        if t > tp and need_per_rank * tp / t < total * 0.85 and heads % t == 0:
            return t
    return tp * 2


def fmt(x: float) -> str:
    return f"{x:g}"
