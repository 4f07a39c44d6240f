"""Text output: verdict, where, evidence with line numbers, why, next. Colour only on a TTY without NO_COLOR."""
from __future__ import annotations

import os
import textwrap

from logdoctor.diagnosis import Diagnosis
from logdoctor.evidence import cut
from logdoctor.remedy import render_fix
from logdoctor.render.safe_text import visible
from logdoctor.vocab import PHASE_WORDS

_HEADINGS = frozenset(("evidence", "why", "next", "attempts"))


def use_color(stream) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ \
        and os.environ.get("TERM") != "dumb"


def _c(s: str, code: str, on: bool) -> str:
    return f"\x1b[{code}m{s}\x1b[0m" if on else s


def render(d: Diagnosis, *, color: bool = False, verbose: bool = False, timeline_text: str = "") -> str:
    """The verdict as text. Built plain, then every control character the log brought is made visible (F21), and
    only then are the renderer's own colours added (the first word and the section headings)."""
    out: list[str] = []
    on, color = color, False
    if not d.failed:
        out.append(_c("OK", "32;1", color) + "      " + (d.explanation or "no failure in the log"))
        out.append(f"        {d.engine}" + (f" {d.engine_version}" if d.engine_version else "") +
                   f" · {d.window.get('lines', 0)} lines" +
                   ("" if d.window.get("start_seen") else " · log starts after launch"))
        for n in d.notes:
            out.append(f"        note: {n}")
    else:
        where = PHASE_WORDS.get(d.phase, d.phase)
        if d.cause == "unknown":
            out.append(_c("FAILED", "31;1", color) + f"  {where}: cause unknown")
        else:
            out.append(_c("FAILED", "31;1", color) + f"  {where}: {d.cause} (confidence {d.confidence:.2f})")
        sub = [d.engine + (f" {d.engine_version}" if d.engine_version else "")]
        if d.rank:
            sub.append(f"first failing rank {d.rank}")
        if d.title:
            sub.append(d.title)
        if not d.window.get("start_seen", True):
            sub.append("log starts after launch: flags unknown (use -n 1000)")
        if len(d.attempts) > 1:
            n = d.attempt_index + 1 if d.attempt_index is not None else len(d.attempts)
            sub.append(f"attempt {n} of {len(d.attempts)} in this window")
        out.append("        " + " · ".join(sub))
    if d.evidence:
        out.append("")
        out.append(_c("evidence", "1", color))
        for e in d.evidence:
            out.append(f"  {e.line:>5}  {cut(e.text, 160)}")   # whole, or cut visibly with "…"
    if d.failed and d.explanation:
        out.append("")
        out.append(_c("why", "1", color))
        out += ["   " + l for l in textwrap.wrap(d.explanation, 110)]
    if d.failed:
        out.append("")
        out.append(_c("next", "1", color))
        if d.no_flag_change:
            out.append("   do not change flags: the config is not what fails here")
        for f in d.fixes[:3]:
            out.append(f"   {render_fix(f):<38} {f.why}")
        for a in d.actions[:4]:
            out.append(f"   {a}")
        for n in d.notes:
            out.append(f"   note: {n}")
        if len(d.attempts) > 1:
            out.append("")
            out.append(_c("attempts", "1", color))
            for i, a in enumerate(d.attempts, 1):
                what = a["cause"] or {"ready": "came up", "in_progress": "still starting", "stopped": "stopped by the operator"
                                      }.get(a.get("outcome"), "came up")
                out.append(f"   {i}. line {a['started_line']:>5}  {a['phase']:<14} {what}")
    if verbose:
        if d.alternatives:
            out.append("")
            out.append("alternatives: " + ", ".join(f"{a['cause']} {a['confidence']:.2f}" for a in d.alternatives))
        if d.candidates:
            out.append("candidates:")
            for c in d.candidates:
                out.append(f"   {c['score']:>6.1f}  {c['rule']}  ({c['cause']})")
        if d.config:
            out.append("config: " + ", ".join(f"{k}={v}" for k, v in d.config.items()))
        if timeline_text:
            out.append("")
            out.append(timeline_text)
    text = visible("\n".join(out) + "\n")
    return _colour(text) if on else text


def _colour(text: str) -> str:
    """Colour the verdict word of the first line and the section headings (lines that are exactly a heading: log
    text is always indented under them)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if i == 0 and line.startswith(("FAILED", "OK")):
            word = "FAILED" if line.startswith("FAILED") else "OK"
            lines[i] = _c(word, "31;1" if word == "FAILED" else "32;1", True) + line[len(word):]
        elif line in _HEADINGS:
            lines[i] = _c(line, "1", True)
    return "\n".join(lines)
