"""Run every applicable rule over an attempt and rank the ones that fire.

Score = the rule's precedence tier + specificity (leaves matched) + evidence position (root-cause lines at or before
the first fatal line beat shutdown debris after it) − a penalty when the rule is scoped to phases the failure was not
in; equal scores go to the rule whose evidence starts earlier, then to a rule written for the engine over one for any
engine (it reads that engine's own wording of the same line). The numbers, and the confidence that follows from the
ranking, live in matching/decide.py; the tiers in vocab.TIERS.
"""

from __future__ import annotations

from logdoctor.core.lean import dataclass
from logdoctor.matching import prefilter
from logdoctor.matching.conditions import Context, Hit
from logdoctor.matching.decide import EARLY_EVIDENCE_SLACK, confidence, score
from logdoctor.matching.loader import Rule


@dataclass
class Candidate:
    """A rule that matched an attempt, with its hit and score."""

    rule: Rule
    hit: Hit
    score: float
    confidence: float | None = None  # set by the classifier combination (classify/runtime.py); None: from the rule

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
        hit = rule.cond.holds(ctx, rule.compiled)
        if hit is None:
            continue
        off_phase = bool(rule.phases) and a.phase not in rule.phases and a.phase != "unknown"
        lines = [ln for ln, _ in hit.evidence if ln]
        early = bool(lines) and bool(a.fatal_line) and min(lines) <= a.fatal_line + EARLY_EVIDENCE_SLACK
        out.append(Candidate(rule, hit, score(rule.tier, hit.leaves, off_phase, early)))
    out.sort(key=lambda c: (-c.score, _first_line(c), "any" in c.rule.engines, c.rule.id))
    if any(c.rule.fallback for c in out) and not all(c.rule.fallback for c in out):
        out = [c for c in out if not c.rule.fallback]  # a catch-all yields to any other rule that fired
    return out


def _first_line(c: Candidate) -> int:
    """Where the candidate's evidence starts: of two equal scores, the earlier line is nearer the root cause."""
    return min((ln for ln, _ in c.hit.evidence if ln), default=1 << 30)


__all__ = ["Candidate", "candidates", "confidence"]  # confidence: matching/decide.py
