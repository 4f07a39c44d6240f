"""`logdoctor timeline`: per-rank phase bars on a shared time axis, memory readings, where each rank stopped,
attempts separated, and the flags in force — as text or JSON."""
from __future__ import annotations

from logdoctor.render.safe_text import visible
from logdoctor.timeline import PHASES, Timeline

_SHORT = {"launch": "L", "dist_init": "D", "weight_load": "W", "kernel_init": "K", "memory_pool": "M",
          "graph_capture": "G", "warmup": "U", "serving": "S"}
WIDTH = 48


def to_dict(tl: Timeline) -> dict:
    out = {"schema": "logdoctor.timeline/v1", "engine": tl.engine, "engine_version": tl.engine_version,
           "start_seen": tl.start_seen, "attempts": []}
    for a in tl.attempts:
        out["attempts"].append({
            "index": a.index, "start_line": a.start_line, "end_line": a.end_line, "failed": a.failed,
            "ready": a.ready, "phase": a.phase, "phase_source": a.phase_source,
            "first_failing_rank": a.first_failing_rank, "last_phase_all_completed": a.completed_by_all,
            "start_seen": a.start_seen, "systemd": a.systemd,
            "config": {"sources": a.config.sources, "truncated": a.config.truncated, "levers": _jsonable(a.config.levers),
                       "env": a.config.env},
            "readings": _jsonable(a.readings),
            "kernel": [{"line": e.line, "event": e.name, **_jsonable(e.values)} for e in a.kernel],
            "ranks": {r.rank: {"phase": r.phase, "died": r.died, "death_line": r.death_line, "error": r.error,
                               "readings": _jsonable(r.readings),
                               "phases": [{"phase": p.phase, "start_line": p.start_line, "end_line": p.end_line,
                                           "seconds": p.seconds, "completed": p.completed} for p in r.phases]}
                      for r in a.ranks.values()},
        })
    return out


def _num(v) -> str:
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


def _jsonable(d: dict) -> dict:
    return {k: (v if isinstance(v, (int, float, str, bool)) or v is None else str(v)) for k, v in d.items()}


def render_text(tl: Timeline) -> str:
    lines = [f"{tl.engine}" + (f" {tl.engine_version}" if tl.engine_version else "") +
             ("" if tl.start_seen else "  (window starts after launch)")]
    for a in tl.attempts:
        status = "FAILED in " + a.phase if a.failed else ("came up" if a.ready else "no failure seen (" + a.phase + ")")
        lines.append("")
        lines.append(f"attempt {a.index + 1}: lines {a.start_line}-{a.end_line} · {status}"
                     + (f" · first failing rank {a.first_failing_rank}" if a.first_failing_rank else ""))
        if a.config.known:
            shown = {k: v for k, v in a.config.levers.items() if v not in (None, False)}
            lines.append("  flags: " + ", ".join(f"{k}={v}" for k, v in list(shown.items())[:14]) +
                         ("  (truncated dump)" if a.config.truncated else ""))
        else:
            lines.append("  flags: unknown (no server_args / non-default args / command line in this attempt)")
        ts = [p.start_ts for r in a.ranks.values() for p in r.phases if p.start_ts] + \
             [p.end_ts for r in a.ranks.values() for p in r.phases if p.end_ts]
        t0, t1 = (min(ts), max(ts)) if ts else (None, None)
        span = (t1 - t0).total_seconds() if t0 and t1 else 0
        lines.append("  " + " ".join(f"{_SHORT[p]}={p}" for p in PHASES))
        for r in sorted(a.ranks.values(), key=lambda r: r.rank):
            if not r.phases and not r.died:
                continue
            bar = [" "] * WIDTH
            for p in r.phases:
                if span and p.start_ts and p.end_ts:
                    s = int((p.start_ts - t0).total_seconds() / span * (WIDTH - 1))
                    e = max(s, int((p.end_ts - t0).total_seconds() / span * (WIDTH - 1)))
                else:
                    s = e = min(WIDTH - 1, PHASES.index(p.phase) * 6)
                for i in range(s, e + 1):
                    bar[i] = _SHORT[p.phase]
            end = "✗ " + r.error[:60] if r.died else ("→ " + (r.phase or "?"))
            lines.append(f"  {r.rank:<14}|{''.join(bar)}| {end}")
        mem = {k: v for k, v in a.readings.items() if any(t in k for t in ("mem", "gb", "gib", "tokens", "size"))}
        if mem:
            lines.append("  memory: " + ", ".join(f"{k}={_num(v)}" for k, v in mem.items()))
        for e in a.kernel:
            lines.append(f"  kernel line {e.line}: {e.text[:100]}")
        if a.systemd:
            lines.append("  systemd: " + ", ".join(f"{k}={v}" for k, v in a.systemd.items()))
    return visible("\n".join(lines) + "\n")   # log text made visible (safe_text.py)
