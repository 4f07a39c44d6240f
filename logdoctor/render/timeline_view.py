"""`logdoctor timeline`: per-rank phase bars on a shared time axis, each phase's start time and duration and the gaps
between phases (issue 23: "how long did weight loading take" is the first question), memory readings, where each
rank stopped, attempts separated, and the flags in force — as text or JSON."""

from __future__ import annotations

from logdoctor.render.visible import visible_lines as visible
from logdoctor.timeline.build import PHASES, PhaseSpan, Timeline
from logdoctor.verdict.diagnosis import version_fields
from logdoctor.verdict.evidence import cut

GAP_MIN_S = 1.0  # a pause shorter than this between two phases is the log's own granularity, not a gap

_SHORT = {
    "launch": "L",
    "dist_init": "D",
    "weight_load": "W",
    "kernel_init": "K",
    "memory_pool": "M",
    "graph_capture": "G",
    "warmup": "U",
    "serving": "S",
}
WIDTH = 48


def to_dict(tl: Timeline) -> dict:
    version, hint = version_fields(tl.engine_version)
    out = {
        "schema": "logdoctor.timeline/v1",
        "engine": tl.engine,
        "engine_version": version,
        "engine_version_hint": hint,
        "start_seen": tl.start_seen,
        "attempts": [],
    }
    for a in tl.attempts:
        out["attempts"].append(
            {
                "index": a.index,
                "start_line": a.start_line,
                "end_line": a.end_line,
                "failed": a.failed,
                "ready": a.ready,
                "phase": a.phase,
                "phase_source": a.phase_source,
                "first_failing_rank": a.first_failing_rank,
                "last_phase_all_completed": a.completed_by_all,
                "start_seen": a.start_seen,
                "systemd": a.systemd,
                "config": {
                    "sources": a.config.sources,
                    "truncated": a.config.truncated,
                    "levers": _jsonable(a.config.levers),
                    "env": a.config.env,
                },
                "readings": _jsonable(a.readings),
                "kernel": [{"line": e.line, "event": e.name, **_jsonable(e.values)} for e in a.kernel],
                "ranks": {
                    r.rank: {
                        "phase": r.phase,
                        "died": r.died,
                        "death_line": r.death_line,
                        "error": r.error,
                        "readings": _jsonable(r.readings),
                        "phases": [
                            {
                                "phase": p.phase,
                                "start_line": p.start_line,
                                "end_line": p.end_line,
                                "seconds": p.seconds,
                                "completed": p.completed,
                                "start_time": p.start_ts.isoformat() if p.start_ts else None,
                                "end_time": p.end_ts.isoformat() if p.end_ts else None,
                            }
                            for p in r.phases
                        ],
                    }
                    for r in a.ranks.values()
                },
            }
        )
    return out


def _num(v) -> str:
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


def _jsonable(d: dict) -> dict:
    return {k: (v if isinstance(v, (int, float, str, bool)) or v is None else str(v)) for k, v in d.items()}


def _secs(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(int(round(s)), 60)
    return f"{m} min {sec:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def phase_times(phases: list[PhaseSpan]) -> list[str]:
    """Each phase as "name HH:MM:SS 12.3 s" (start, duration), with "gap N s" where nothing was logged between two."""
    out: list[str] = []
    prev_end = None
    for p in phases:
        if prev_end is not None and p.start_ts is not None:
            gap = (p.start_ts - prev_end).total_seconds()
            if gap >= GAP_MIN_S:
                out.append(f"gap {_secs(gap)}")
        start = p.start_ts.strftime("%H:%M:%S") if p.start_ts else "?"
        dur = _secs(p.seconds) if p.seconds is not None else "?"
        out.append(f"{p.phase} {start} {dur}" + ("" if p.completed or p.seconds is None else " (unfinished)"))
        prev_end = p.end_ts or p.start_ts
    return out


def render_text(tl: Timeline, width: int | None = None) -> str:
    from logdoctor.render.text import width as term_width

    w = width or term_width()
    version, hint = version_fields(tl.engine_version)
    lines = [
        f"{tl.engine}"
        + (f" {version}" if version else f" ({hint})" if hint else "")
        + ("" if tl.start_seen else "  (window starts after launch)")
    ]
    for a in tl.attempts:
        lines.append("")
        lines += _attempt_text(a, w)
    return visible("\n".join(lines) + "\n")  # log text made visible (formats/visible.py)


def _attempt_text(a, w: int) -> list[str]:
    """One attempt's block: its head, flags, phase bars per rank, phase times, memory, kernel and systemd lines."""
    from logdoctor.render.text import wrap

    ts = [p.start_ts for r in a.ranks.values() for p in r.phases if p.start_ts] + [
        p.end_ts for r in a.ranks.values() for p in r.phases if p.end_ts
    ]
    t0, t1 = (min(ts), max(ts)) if ts else (None, None)
    lines = _attempt_head(a, w, t0, t1) + _flags_text(a, w)
    span = (t1 - t0).total_seconds() if t0 and t1 else 0
    lines += wrap(" ".join(f"{_SHORT[p]}={p}" for p in PHASES), w, "  ")
    for r in sorted(a.ranks.values(), key=lambda r: r.rank):
        if not r.phases and not r.died:
            continue
        end = "✗ " + r.error if r.died else ("→ " + (r.phase or "?"))
        row = f"  {r.rank:<14}|{_bar(r.phases, t0, span)}| "
        lines.append(row + cut(end, max(12, w - len(row))))
    timed = [r for r in sorted(a.ranks.values(), key=lambda r: r.rank) if any(p.start_ts for p in r.phases)]
    if timed:
        lines.append("  phase start and duration per rank:")
        for r in timed:
            lines += wrap(" · ".join(phase_times(r.phases)), w, f"    {r.rank:<10} ", " " * 15)
    return lines + _readings_text(a, w)


def _attempt_head(a, w: int, t0, t1) -> list[str]:
    """The attempt's first line: its log lines, how it ended, the first failing rank and when it ran."""
    from logdoctor.render.text import wrap

    status = "FAILED in " + a.phase if a.failed else ("came up" if a.ready else "no failure seen (" + a.phase + ")")
    when = f" · {t0:%Y-%m-%d %H:%M:%S}, {_secs((t1 - t0).total_seconds())} logged" if t0 and t1 else ""
    return wrap(
        f"attempt {a.index + 1}: lines {a.start_line}-{a.end_line} · {status}"
        + (f" · first failing rank {a.first_failing_rank}" if a.first_failing_rank else "")
        + when,
        w,
        "",
        "  ",
    )


def _flags_text(a, w: int) -> list[str]:
    """The flags in force (those set), or a line saying why they are unknown."""
    from logdoctor.render.text import wrap

    if not a.config.known:
        return ["  flags: unknown (no server_args / non-default args / command line in this attempt)"]
    shown = {k: v for k, v in a.config.levers.items() if v not in (None, False)}
    return wrap(
        "flags: "
        + ", ".join(f"{k}={v}" for k, v in shown.items())
        + ("  (truncated dump)" if a.config.truncated else ""),
        w,
        "  ",
        "    ",
    )


def _bar(phases: list[PhaseSpan], t0, span: float) -> str:
    """A rank's phases as letters on the attempt's shared time axis; untimed phases sit at fixed slots by order."""
    bar = [" "] * WIDTH
    for p in phases:
        if span and p.start_ts and p.end_ts:
            s = int((p.start_ts - t0).total_seconds() / span * (WIDTH - 1))
            e = max(s, int((p.end_ts - t0).total_seconds() / span * (WIDTH - 1)))
        else:
            s = e = min(WIDTH - 1, PHASES.index(p.phase) * 6)
        for i in range(s, e + 1):
            bar[i] = _SHORT[p.phase]
    return "".join(bar)


def _readings_text(a, w: int) -> list[str]:
    """The attempt's memory readings, kernel events and systemd facts."""
    from logdoctor.render.text import wrap

    lines: list[str] = []
    mem = {k: v for k, v in a.readings.items() if any(t in k for t in ("mem", "gb", "gib", "tokens", "size"))}
    if mem:
        lines += wrap("memory: " + ", ".join(f"{k}={_num(v)}" for k, v in mem.items()), w, "  ", "    ")
    for e in a.kernel:
        lines.append(cut(f"  kernel line {e.line}: {e.text}", w))
    if a.systemd:
        lines += wrap("systemd: " + ", ".join(f"{k}={v}" for k, v in a.systemd.items()), w, "  ", "    ")
    return lines
