"""Run every applicable rule over an attempt and rank the ones that fire.

Score = priority + specificity (leaves matched) + evidence position (root-cause lines at or before the first fatal
line beat shutdown debris after it) − a penalty when the rule is scoped to phases the failure was not in.
"""
from __future__ import annotations

from dataclasses import dataclass

from logdoctor.matching import prefilter
from logdoctor.matching.conditions import Context, Hit, evaluate
from logdoctor.matching.loader import Rule


@dataclass
class Candidate:
    rule: Rule
    hit: Hit
    score: float
    confidence: float | None = None   # set by the classifier combination (classify/runtime.py); None: from the rule

    @property
    def cause(self) -> str:
        return self.rule.cause


def candidates(rules: list[Rule], ctx: Context) -> list[Candidate]:
    out = []
    a = ctx.attempt
    prefilter.for_context(ctx, lambda: prefilter.vocabulary(rules))
    for rule in rules:
        if not rule.applies_to(ctx.engine):
            continue
        hit = evaluate(rule.match, ctx, rule.compiled)
        if hit is None:
            continue
        score = float(rule.priority) + 2.0 * hit.leaves
        if rule.phases and a.phase not in rule.phases and a.phase != "unknown":
            score -= 25
        lines = [ln for ln, _ in hit.evidence if ln]
        if lines and a.fatal_line:
            first = min(lines)
            if first <= a.fatal_line + 2:
                score += 3
        out.append(Candidate(rule, hit, score))
    out.sort(key=lambda c: (-c.score, c.rule.id))
    return out


def confidence(cands: list[Candidate]) -> float:
    """The winner's own confidence, reduced when a different cause scores close behind it."""
    if not cands:
        return 0.0
    top = cands[0]
    if top.confidence is not None:
        return round(min(top.confidence, 0.99), 2)
    conf = top.rule.confidence
    rival = next((c for c in cands[1:] if c.cause != top.cause), None)
    if rival is not None:
        gap = top.score - rival.score
        if gap < 5:
            conf *= 0.8
        elif gap < 15:
            conf *= 0.92
    return round(min(conf, 0.99), 2)
