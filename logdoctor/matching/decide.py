"""The verdict, in one place: the precedence of what may name a cause (PRECEDENCE: reviewed rules, then the atlas of
the engines' own messages, then the classifier), how rule candidates score, how sure the winner is, how the classifier joins in, which
causes are reported as alternatives, and when the answer is "unknown". Every number is a named constant here.

1. Rules score (`rank.candidates`): TIER_POINTS of the rule's precedence tier (vocab.TIERS) + LEAF_POINTS per leaf
   matched (specificity) + EARLY_EVIDENCE_POINTS when the evidence starts at or just after (EARLY_EVIDENCE_SLACK
   lines) the first fatal line (root cause beats shutdown debris) - OFF_PHASE_PENALTY when the rule is scoped to
   phases the failure was not in. Tiers are TIER_STEP apart, more than specificity and position can add, so a
   higher tier always wins unless the rule is off-phase; equal scores go to the earlier evidence line.
2. Rules' confidence (`confidence`): the winner's own confidence, times CLOSE_FACTOR when a rule of another cause
   scores within CLOSE_GAP points, times NEAR_FACTOR within NEAR_GAP; never above MAX_CONFIDENCE.
3. The classifier (`combine`, called by classify/runtime.Classifier.rerank) re-ranks or fills in, in four cases
   (decisive rule / no rule / close call / weak rules only) with the DECISIVE_*, SWITCH_MARGIN and DISSENT_*
   constants; the classifier's own threshold comes from the model file.
4. The decision (`decide`): below MIN_CONFIDENCE (or with no candidate) the verdict is "unknown"; alternatives are
   up to MAX_ALTERNATIVES other causes, a rule's at ALTERNATIVE_FACTOR x its confidence x its score share,
   clipped to [ALTERNATIVE_MIN, ALTERNATIVE_MAX]. A healthy attempt is reported with HEALTHY_READY_CONFIDENCE when
   the service said it was ready, else HEALTHY_QUIET_CONFIDENCE.
5. The atlas (`atlas_verdict`, logdoctor/engines/atlas/): when no rule fired, the decisive error resolved to the engine's
   own message names the cause at ATLAS_CONFIDENCE when the concept lexicon places it, ahead of the classifier; a
   message it cannot place keeps the verdict to the classifier (or "unknown") and still gives its phase and source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from logdoctor.core.lean import dataclass, replace
from logdoctor.core.vocab import TIER_NAMES

if TYPE_CHECKING:
    from logdoctor.matching.loader import Rule
    from logdoctor.matching.rank import Candidate
    from logdoctor.timeline.build import Attempt, Timeline


class Classifier(Protocol):
    """What `combine` and `verdict.decide` need of the classifier (classify/runtime.Classifier): declared here so
    this module, the bottom of matching, imports nothing above it."""

    threshold: float

    def synth(
        self, tl: Any, attempt: Any, cause: str, p: float, rules: Any, score: float, *, alternative: bool = False
    ) -> Any: ...

    def proba(self, tl: Any, attempt: Any) -> dict[str, float]: ...

    def rerank(self, tl: Any, attempt: Any, cands: Any, *, rules: Any = None, probs: Any = None) -> Any: ...


# 0. precedence (docs/rules.md "Precedence"): who may name the cause, most specific first. Rules are reviewed and
# carry fixes; the atlas reads the engine's own message (its source, its words) but proposes no flag change; the
# classifier generalises from labelled logs. A later tier speaks only where the earlier ones did not.
PRECEDENCE = ("rules", "atlas", "classifier")
ATLAS_CONFIDENCE = 0.7  # the lexicon reads words of the engine's message: below a reviewed rule's 0.75-0.93

# 1. scoring
TIER_STEP = 40.0  # bundled rules match 1-4 leaves: specificity + position add at most 11 points, never a tier
TIER_POINTS = {tier: TIER_STEP * (len(TIER_NAMES) - 1 - i) for i, tier in enumerate(TIER_NAMES)}  # system 160 .. 0
# rules written against the old shape (`priority: N`, 0..200, higher wins) load with the tier of their band
LEGACY_PRIORITY_TIERS = ((115, "system"), (85, "specific"), (60, "inferred"), (0, "generic"))
LEAF_POINTS = 2.0
OFF_PHASE_PENALTY = 25.0
EARLY_EVIDENCE_POINTS = 3.0
EARLY_EVIDENCE_SLACK = 2
# 2. rules' confidence
CLOSE_GAP = 5.0
CLOSE_FACTOR = 0.8
NEAR_GAP = 15.0
NEAR_FACTOR = 0.92
MAX_CONFIDENCE = 0.99
# 3. classifier combination (docs/rules.md: rules of the top three tiers, confidence 0.75-0.93)
DECISIVE_CONFIDENCE = 0.7
DECISIVE_TIERS = ("system", "specific", "inferred")  # generic evidence and catch-alls never overrule a dissent
DECISIVE_MARGIN = CLOSE_GAP  # a rule of another cause this close makes it a close call
SWITCH_MARGIN = 0.10
DISSENT_P = 0.05
DISSENT_FACTOR = 0.85
FILL_IN_ALTERNATIVE_P = 0.05  # the classifier's runner-up causes shown as alternatives when no rule fired
# 4. decision
MIN_CONFIDENCE = 0.35
MAX_ALTERNATIVES = 3
ALTERNATIVE_FACTOR = 0.4
ALTERNATIVE_MIN = 0.01
ALTERNATIVE_MAX = 0.5
CLASSIFIER_SHOWN = 3  # classifier probabilities listed with the candidates (-v)
HEALTHY_READY_CONFIDENCE = 0.9
HEALTHY_QUIET_CONFIDENCE = 0.6


def tier_for_priority(priority: int) -> str:
    """The tier an old-style `priority: N` rule gets (its band in LEGACY_PRIORITY_TIERS)."""
    return next(tier for floor, tier in LEGACY_PRIORITY_TIERS if priority >= floor)


def score(tier: str, leaves: int, off_phase: bool, early: bool) -> float:
    """A firing rule's score (1.)."""
    s = TIER_POINTS[tier] + LEAF_POINTS * leaves
    if off_phase:
        s -= OFF_PHASE_PENALTY
    if early:
        s += EARLY_EVIDENCE_POINTS
    return s


def confidence(cands: list[Candidate]) -> float:
    """The winner's own confidence, reduced when a different cause scores close behind it (2.)."""
    if not cands:
        return 0.0
    top = cands[0]
    if top.confidence is not None:
        return round(min(top.confidence, MAX_CONFIDENCE), 2)
    conf = top.rule.confidence
    rival = next((c for c in cands[1:] if c.cause != top.cause), None)
    if rival is not None:
        gap = top.score - rival.score
        if gap < CLOSE_GAP:
            conf *= CLOSE_FACTOR
        elif gap < NEAR_GAP:
            conf *= NEAR_FACTOR
    return round(min(conf, MAX_CONFIDENCE), 2)


def combine(
    clf: Classifier,
    tl: Timeline,
    attempt: Attempt,
    cands: list[Candidate],
    probs: dict[str, float],
    rules: list[Rule] | None = None,
) -> list[Candidate]:
    """Rules + classifier probabilities -> re-ranked candidates (3.); `clf.synth` builds a classifier candidate."""
    order = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0]))
    top_cause, top_p = order[0]
    confident = top_p >= clf.threshold

    if not cands:  # no rule: fill in
        if not confident:
            return []
        return [clf.synth(tl, attempt, top_cause, top_p, rules, 0.0)] + [
            clf.synth(tl, attempt, c, p, rules, 0.0, alternative=True) for c, p in _fill_in_alternatives(order)
        ]

    top = cands[0]
    rival = next((c for c in cands[1:] if c.cause != top.cause), None)
    gap = top.score - rival.score if rival is not None else float("inf")
    strong = top.rule.confidence >= DECISIVE_CONFIDENCE and top.rule.tier in DECISIVE_TIERS
    p_rule = probs.get(top.cause, 0.0)
    knows = top.cause in probs  # a cause the model never saw has p = 0 by ignorance, not by dissent

    if strong and gap >= DECISIVE_MARGIN:  # decisive rule
        if knows and confident and top_cause != top.cause and p_rule < DISSENT_P:
            conf = confidence(cands) * DISSENT_FACTOR
            return [replace(top, confidence=round(conf, 2))] + list(cands[1:])
        return list(cands)

    if gap < DECISIVE_MARGIN:  # close call
        return _close_call(cands, probs, p_rule)

    # weak rules only
    if knows and confident and top_cause != top.cause and p_rule < DISSENT_P:
        syn = clf.synth(tl, attempt, top_cause, top_p, rules, top.score)
        # rules did match: say so (the classifier's text is written for the case where none did, issue 18 F22)
        matched = ", ".join(dict.fromkeys(c.rule.id for c in cands[:3]))
        syn.rule.explain = syn.rule.explain.replace(
            NO_RULE_SENTENCE, f"Only weak rules match this failure ({matched}), and the classifier disagrees.", 1
        )
        return [syn] + list(cands)
    return list(cands)


# how the classifier's explanation opens (classify/runtime.py); replaced when weak rules did match
NO_RULE_SENTENCE = "No rule matches this failure exactly."


def _fill_in_alternatives(order: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return [(c, p) for c, p in order[1:3] if p >= FILL_IN_ALTERNATIVE_P]


def _close_call(cands: list[Candidate], probs: dict[str, float], p_rule: float) -> list[Candidate]:
    """Rules of different causes within DECISIVE_MARGIN: the classifier picks among them (3., close call)."""
    top = cands[0]
    contenders: list[str] = []
    for c in cands:
        if c.score >= top.score - DECISIVE_MARGIN and c.cause not in contenders:
            contenders.append(c.cause)
    best = max(contenders, key=lambda c: (probs.get(c, 0.0), c == top.cause))
    switch = all(c in probs for c in contenders) and probs.get(best, 0.0) - p_rule >= SWITCH_MARGIN
    win_cause = best if switch else top.cause
    win = next(c for c in cands if c.cause == win_cause)
    rest = [c for c in cands if c is not win]
    reduced = confidence([win] + rest)
    conf = max(reduced, min(win.rule.confidence, probs.get(win_cause, 0.0)))
    return [replace(win, confidence=round(min(conf, MAX_CONFIDENCE), 2))] + rest


@dataclass(frozen=True)
class Alternative:
    """A runner-up cause with its confidence, shown beside the verdict."""

    cause: str
    confidence: float

    def to_dict(self) -> dict[str, object]:
        return {"cause": self.cause, "confidence": self.confidence}


def alternatives(win: Candidate, rest: list[Candidate]) -> list[Alternative]:
    """The runner-up causes beside the winner, one per cause, each with its reduced confidence."""
    seen: set[str] = set()
    alts = []
    for c in rest:
        if c.cause != win.cause and c.cause not in seen:
            seen.add(c.cause)
            alt = (
                c.confidence
                if c.confidence is not None and c.rule.id == "classifier"
                else c.rule.confidence * (c.score / max(win.score, 1)) * ALTERNATIVE_FACTOR
            )
            alts.append(Alternative(c.cause, round(max(ALTERNATIVE_MIN, min(ALTERNATIVE_MAX, alt)), 2)))
    return alts[:MAX_ALTERNATIVES]


def healthy_confidence(ready: bool) -> float:
    return HEALTHY_READY_CONFIDENCE if ready else HEALTHY_QUIET_CONFIDENCE
