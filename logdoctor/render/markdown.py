"""Markdown for pasting into an incident ticket."""

from __future__ import annotations

import re

from logdoctor.core.vocab import PHASE_WORDS
from logdoctor.render.visible import visible_lines as visible
from logdoctor.verdict.diagnosis import Diagnosis
from logdoctor.verdict.remedy import render_fix

_COMMAND = re.compile(r"^(?:[a-z][\w.-]*(?: [a-z][\w.-]*)? -|.* [|#] )")  # anchored: linear under search too


def _action(a: str) -> str:
    """A command goes in a code span (copied as is); prose stays prose ("start on another host, ...")."""
    return f"`{a}`" if _COMMAND.match(a) else a


def render(d: Diagnosis) -> str:
    lines = []
    if not d.failed:
        lines.append(f"### ✅ {d.engine}: no failure\n\n{d.explanation}\n")
        return visible("\n".join(lines))
    lines.append(
        f"### ❌ {d.engine} failed {PHASE_WORDS.get(d.phase, d.phase)}: `{d.cause}`"
        + (f" (confidence {d.confidence:.2f})" if d.cause != "unknown" else "")
    )
    lines.append("")
    version = d.engine_version or (f"({d.engine_version_hint})" if d.engine_version_hint else "")
    meta = [f"**engine** {d.engine} {version}".rstrip(), f"**phase** `{d.phase}`"]
    if d.rank:
        meta.append(f"**first failing rank** {d.rank}")
    if d.rule:
        meta.append(f"**rule** `{d.rule}`")
    lines.append(" · ".join(meta))
    lines.append("")
    if d.evidence:
        lines.append("**Evidence**")
        lines.append("")
        lines.append("```")
        lines += [f"{e.line:>5}  {e.text}" for e in d.evidence]
        lines.append("```")
        lines.append("")
    lines.append("**Why**")
    lines.append("")
    lines.append(d.explanation)
    lines.append("")
    lines.append("**Next**")
    lines.append("")
    if d.no_flag_change:
        lines.append("- do not change flags: the config is not what fails here")
    lines += [f"- `{render_fix(f)}` — {f.why}" for f in d.fixes]
    lines += [f"- {_action(a)}" for a in d.actions]
    lines += [f"- note: {n}" for n in d.notes]
    return visible("\n".join(lines) + "\n")
