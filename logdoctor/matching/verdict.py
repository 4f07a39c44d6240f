"""The verdict for one failed attempt: rule candidates (+ the atlas, + the classifier) -> winner, confidence,
alternatives, or unknown. The numbers and the policy are in matching/decide.py; this module only applies them.

Why a module of its own: building the atlas's candidate needs a Rule, a Hit and a Candidate; decide.py holds the
numbers that rank and loader read, so it must import none of them back (tools/import_graph.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from logdoctor.core.lean import dataclass, field
from logdoctor.core.vocab import CAUSE_TITLES
from logdoctor.matching.conditions import Hit
from logdoctor.matching.decide import (
    ATLAS_CONFIDENCE,
    CLASSIFIER_SHOWN,
    MIN_CONFIDENCE,
    Alternative,
    Classifier,
    alternatives,
    confidence,
)
from logdoctor.matching.loader import Rule
from logdoctor.matching.rank import Candidate

if TYPE_CHECKING:
    from logdoctor.engines.atlas.model import AtlasHit
    from logdoctor.timeline.build import Attempt, Timeline


@dataclass(frozen=True)
class Verdict:
    """What the rules and the classifier decided for one failed attempt."""

    winner: Candidate | None  # None: the cause is unknown
    confidence: float
    alternatives: tuple[Alternative, ...] = ()
    classifier: tuple[tuple[str, float], ...] = ()  # the classifier's top causes (for -v), empty without one
    ranked: tuple[Candidate, ...] = field(default=(), repr=False)
    atlas: tuple[int, str, AtlasHit] | None = None  # (line, text, hit): the decisive error's engine message


def decide(
    tl: Timeline,
    attempt: Attempt,
    cands: list[Candidate],
    rule_set: list[Rule],
    classifier: Classifier | None = None,
    atlas: bool = True,
) -> Verdict:
    """Rule candidates (+ the atlas, + the classifier, if any) -> the winner, its confidence and the alternatives
    (PRECEDENCE; 4. and 5.)."""
    placed = atlas_verdict(tl, attempt) if atlas and not cands else None
    if placed is not None and placed[2].cause != "unknown":
        win = atlas_candidate(*placed)
        return Verdict(win, ATLAS_CONFIDENCE, (), (), (win,), atlas=placed)
    scored = cands
    shown: tuple[tuple[str, float], ...] = ()
    if classifier is not None:
        probs = classifier.proba(tl, attempt)
        scored = classifier.rerank(tl, attempt, cands, rules=rule_set, probs=probs)
        shown = tuple((c, round(p, 3)) for c, p in sorted(probs.items(), key=lambda kv: -kv[1])[:CLASSIFIER_SHOWN])
    conf = confidence(scored)
    if not scored or conf < MIN_CONFIDENCE:
        return Verdict(None, 0.0, (), shown, tuple(scored), atlas=placed)
    win = scored[0]
    return Verdict(win, conf, tuple(alternatives(win, scored[1:])), shown, tuple(scored), atlas=placed)


def atlas_verdict(tl: Timeline, attempt: Attempt) -> tuple[int, str, AtlasHit] | None:
    """The atlas tier (5.): the decisive error resolved to the engine's own message (logdoctor/engines/atlas/tier.py)."""
    from logdoctor.engines.atlas.tier import decisive_hit

    return decisive_hit(attempt, tl.engine if tl.engine != "unknown" else None, tl.engine_version)


def atlas_candidate(line: int, text: str, hit: AtlasHit) -> Candidate:
    """A candidate for the cause the atlas placed: no flag change (the lexicon knows the mechanism, not the lever)."""
    title = CAUSE_TITLES.get(hit.cause, hit.cause)
    quoted = hit.variant.text()
    explain = (
        f'No rule matches this failure. The decisive error is the engine\'s own message "{quoted}", '
        f"{hit.citation()}; its words place it as {hit.cause}: {title}. No flag change is proposed: read the "
        "check at that line for the argument or component it names."
    )
    rule = Rule(
        id=f"atlas:{hit.entry.id}",
        cause=hit.cause,
        title=title,
        engines=(hit.entry.engine,),
        match={},
        tier="specific",
        confidence=ATLAS_CONFIDENCE,
        phases=(hit.phase,) if hit.phase != "unknown" else (),
        explain=explain.replace("{", "{{").replace("}", "}}"),
        actions=[f"read {hit.variant.module}:{hit.variant.line} ({hit.variant.qualname}) in {hit.version_range()}"],
        no_flag_change=False,
    )
    return Candidate(rule, Hit(evidence=[(line, text)]), 0.0, confidence=ATLAS_CONFIDENCE)
