"""Text output: verdict, where, evidence with line numbers, why, next. Colour only on a TTY without NO_COLOR.

Fitted to the terminal (issue 23): the width is `$COLUMNS`, else the terminal's, else 100 when piped; prose wraps on
words (a flag is never split at its hyphens), evidence lines are cut visibly with "…", and every fix and action the
JSON carries is printed — the text is the JSON for a person, not a summary of it."""

from __future__ import annotations

import os
import sys
import textwrap

from logdoctor.core.vocab import PHASE_WORDS
from logdoctor.render.visible import visible_lines as visible
from logdoctor.verdict.diagnosis import Diagnosis
from logdoctor.verdict.evidence import cut
from logdoctor.verdict.remedy import render_fix

MIN_WIDTH, MAX_WIDTH, PIPE_WIDTH = 40, 200, 100
FIX_COLUMN = 38  # a fix up to this long gets its reason beside it; a longer one gets it on the next line
_HEADINGS = frozenset(("evidence", "why", "next", "attempts"))


def use_color(stream) -> bool:
    return (
        bool(getattr(stream, "isatty", lambda: False)())
        and "NO_COLOR" not in os.environ
        and os.environ.get("TERM") != "dumb"
    )


def width() -> int:
    """`$COLUMNS` when it is a number, else the terminal's width, else PIPE_WIDTH; clamped to [40, 200]."""
    cols = os.environ.get("COLUMNS", "")
    w = int(cols) if cols.strip().isdigit() else _terminal_columns()
    return max(MIN_WIDTH, min(MAX_WIDTH, w or PIPE_WIDTH))


def _terminal_columns() -> int:
    """`shutil.get_terminal_size((PIPE_WIDTH, 24)).columns` past its $COLUMNS check, without importing shutil (which
    imports bz2 and lzma: ~4 ms of every explain's start-up)."""
    try:
        cols = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        cols = 0
    return cols or PIPE_WIDTH


def _c(s: str, code: str, on: bool) -> str:
    return f"\x1b[{code}m{s}\x1b[0m" if on else s


def wrap(text: str, w: int, first: str, rest: str | None = None) -> list[str]:
    """Words wrapped to w columns; flags like --mem-fraction-static stay whole (no hyphen breaks)."""
    return textwrap.wrap(
        text, w, initial_indent=first, subsequent_indent=first if rest is None else rest, break_on_hyphens=False
    ) or [first.rstrip()]


def _fix_lines(fix: str, why: str, w: int) -> list[str]:
    if len(fix) <= FIX_COLUMN and w >= 70:
        return wrap(f"{fix:<{FIX_COLUMN}} {why}", w, "   ", " " * (4 + FIX_COLUMN))
    return wrap(fix, w, "   ", "     ") + (wrap(why, w, "       ") if why else [])


def _engine(d: Diagnosis) -> str:
    if d.engine_version:
        return f"{d.engine} {d.engine_version}"
    return f"{d.engine} ({d.engine_version_hint})" if d.engine_version_hint else d.engine


def render(
    d: Diagnosis, *, color: bool = False, verbose: bool = False, timeline_text: str = "", width_: int | None = None
) -> str:
    """The verdict as text, fitted to `width_` (else the terminal). Built plain, then every control character the
    log brought is made visible (F21), and only then are the renderer's own colours added (the first word and the
    section headings)."""
    w = width_ or width()
    out: list[str] = []
    on, color = color, False
    out += _failed_head(d, w, color) if d.failed else _ok_head(d, w, color)
    if d.evidence:
        out.append("")
        out.append(_c("evidence", "1", color))
        for e in d.evidence:
            out.append(f"  {e.line:>5}  {cut(e.text, max(10, w - 9))}")  # whole, or cut visibly with "…"
    if d.failed and d.explanation:
        out.append("")
        out.append(_c("why", "1", color))
        out += wrap(d.explanation, w, "   ")
    if d.failed:
        out += _next_section(d, w, color)
    if verbose:
        out += _verbose_section(d, w, timeline_text)
    text = visible("\n".join(out) + "\n")
    return _colour(text) if on else text


def _ok_head(d: Diagnosis, w: int, color: bool) -> list[str]:
    """A healthy log's head: OK and the explanation, the engine and window size, then the notes."""
    out = wrap(_c("OK", "32;1", color) + "      " + (d.explanation or "no failure in the log"), w, "", "        ")
    out += wrap(
        _engine(d)
        + f" · {d.window.get('lines', 0)} lines"
        + ("" if d.window.get("start_seen") else " · log starts after launch"),
        w,
        "        ",
    )
    for n in d.notes:
        out += wrap(f"note: {n}", w, "        ", "          ")
    return out


def _failed_head(d: Diagnosis, w: int, color: bool) -> list[str]:
    """A failure's head: FAILED, where and what (with confidence), then one line of engine, rank, title, a missing
    launch and which attempt this is."""
    where = PHASE_WORDS.get(d.phase, d.phase)
    head = f"{where}: cause unknown" if d.cause == "unknown" else f"{where}: {d.cause} (confidence {d.confidence:.2f})"
    body = wrap(head, w - 8, "")
    out = [_c("FAILED", "31;1", color) + "  " + body[0]]
    out += ["        " + b for b in body[1:]]
    sub = [_engine(d)]
    if d.rank:
        sub.append(f"first failing rank {d.rank}")
    if d.title:
        sub.append(d.title)
    if not d.window.get("start_seen", True):
        sub.append("log starts after launch: flags unknown (capture more: -n 1000)")
    if len(d.attempts) > 1:
        n = d.attempt_index + 1 if d.attempt_index is not None else len(d.attempts)
        sub.append(f"attempt {n} of {len(d.attempts)} in this window")
    return out + wrap(" · ".join(sub), w, "        ")


def _next_section(d: Diagnosis, w: int, color: bool) -> list[str]:
    """The "next" section (every fix, action and note the JSON carries), then the attempts when there are several."""
    out = ["", _c("next", "1", color)]
    if d.no_flag_change:
        out += wrap("do not change flags: the config is not what fails here", w, "   ")
    for f in d.fixes:
        out += _fix_lines(render_fix(f), f.why, w)
    for a in d.actions:
        out += wrap(a, w, "   ", "     ")
    for n in d.notes:
        out += wrap(f"note: {n}", w, "   ", "         ")
    if len(d.attempts) > 1:
        out.append("")
        out.append(_c("attempts", "1", color))
        for i, a in enumerate(d.attempts, 1):
            what = a["cause"] or {
                "ready": "came up",
                "in_progress": "still starting",
                "stopped": "stopped by the operator",
            }.get(a.get("outcome"), "came up")
            out.append(f"   {i}. line {a['started_line']:>5}  {a['phase']:<14} {what}")
    return out


def _verbose_section(d: Diagnosis, w: int, timeline_text: str) -> list[str]:
    """-v: the other causes, the candidate rules with scores, the config read, and the timeline."""
    out: list[str] = []
    if d.alternatives:
        out.append("")
        out += wrap(
            "alternatives: " + ", ".join(f"{a['cause']} {a['confidence']:.2f}" for a in d.alternatives), w, "", "  "
        )
    if d.candidates:
        out.append("candidates:")
        for c in d.candidates:
            out.append(f"   {c['score']:>6.1f}  {c['rule']}  ({c['cause']})")
    if d.config:
        out += wrap("config: " + ", ".join(f"{k}={v}" for k, v in d.config.items()), w, "", "  ")
    if timeline_text:
        out.append("")
        out.append(timeline_text)
    return out


def _colour(text: str) -> str:
    """Colour the verdict word of the first line and the section headings (lines that are exactly a heading: log
    text is always indented under them)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if i == 0 and line.startswith(("FAILED", "OK")):
            word = "FAILED" if line.startswith("FAILED") else "OK"
            lines[i] = _c(word, "31;1" if word == "FAILED" else "32;1", True) + line[len(word) :]
        elif line in _HEADINGS:
            lines[i] = _c(line, "1", True)
    return "\n".join(lines)
