"""Text and JSON for a preflight report: the verdict first, then every budget number with its derivation."""

from __future__ import annotations

import json

from logdoctor.preflight.verdict import Report


def to_json(rep: Report) -> str:
    return json.dumps(rep.to_dict(), indent=2)


def to_text(rep: Report) -> str:
    from logdoctor.verdict.remedy import render_fix

    head = rep.verdict.upper() if rep.verdict != "no-go" else "NO-GO"
    out = [
        f"preflight: {head}"
        + (f" — {rep.cause} ({rep.phase})" if rep.cause else "")
        + f"   engine {rep.engine}, model {rep.model or '?'}"
    ]
    if rep.gpus:
        g = rep.gpus[0]
        out.append(f"GPUs used: {len(rep.gpus)} x {g['name']} {g['memory_gib']} GiB ({g['source']})")
    for f in rep.findings:
        if f.message:
            out.append(f"  {f.level}: {f.message}")
    if rep.evidence:
        out.append("evidence:")
        out.extend(f"  [{e['source']}{':' + str(e['line']) if e['line'] else ''}] {e['text']}" for e in rep.evidence)
    if rep.fixes:
        out.append("fixes:")
        out.extend(f"  {i}. {render_fix(f)}   ({f.why})" for i, f in enumerate(rep.fixes, 1))
    if rep.budget is not None and rep.budget.lines:
        out.append("budget per GPU:")
        w = max(len(ln.key) for ln in rep.budget.lines)
        for ln in rep.budget.lines:
            v = (
                f"{ln.value:,.2f}"
                if isinstance(ln.value, float) and ln.unit
                else f"{ln.value:,}"
                if isinstance(ln.value, int)
                else f"{ln.value:g}"
            )
            out.append(f"  {ln.key:<{w}}  {v:>12} {ln.unit:<8}  {ln.how}")
    if rep.notes:
        out.append("notes:")
        out.extend(f"  - {n}" for n in rep.notes)
    return "\n".join(out) + "\n"
