"""Calibration: what a confidence means, on cases nobody wrote a rule for.

Two halves:
- `adjust` (explain path, no heavy imports): the confidence a verdict reports is lowered where the decision rests on
  little — the classifier alone (no rule fired), or a single line that is only an engine's hint ("If exit code is
  -9 ...", "Possible solutions: ...", "It is likely due to ... OOM"), since a hint is advice, not evidence.
- `reliability` (eval path): how often a confidence >= 0.8 is right, measured with grouped folds (the classifier is
  trained without the case's variant_of group) over the cases whose group shares nothing with any rule's examples:
  the shapes the rules were not written for.
"""
from __future__ import annotations

import re

CLASSIFIER_ALONE_MAX = 0.7
HINT_ONLY_MAX = 0.6
_HINT = re.compile(r"^\s*(?:If |Try |Please |Consider |You (?:may|can|might|should) |Possible (?:solutions|suggestions)|"
                   r"Hints?:|HINT|Suggestion)|It is likely due to|a common cause is|[Ii]t usually means|"
                   r"might be (?:caused|due)|[Pp]lease (?:check|try|increase|decrease|lower|set)")


_ERROR_LINE = re.compile(r"^\s*[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b|^\s*(?:ERROR|CRITICAL|FATAL)\b")


def is_hint(text: str) -> bool:
    """A line that only advises (an exception or error line that carries advice is still the error)."""
    return bool(_HINT.search(text or "")) and not _ERROR_LINE.match(text or "")


def adjust(confidence: float, *, rule_candidates: list, winner, evidence: list) -> tuple[float, str | None]:
    """The reported confidence, and why it was lowered (None when it was not)."""
    if not rule_candidates and winner is not None:
        if confidence > CLASSIFIER_ALONE_MAX:
            return CLASSIFIER_ALONE_MAX, "no rule matched: the cause is the classifier's reading alone"
        return confidence, None
    texts = [e.text for e in evidence]
    if len(texts) == 1 and is_hint(texts[0]) and confidence > HINT_ONLY_MAX:
        return HINT_ONLY_MAX, "the decision rests on one line that is only the engine's hint"
    return confidence, None


# ---- eval side ----

def example_groups(cases, rules) -> set[str]:
    """The variant_of groups of every fixture a rule names as an example (a case without variant_of is its own group)."""
    by_id = {c.id: str(c.label.get("variant_of") or c.id) for c in cases}
    out = set()
    for r in rules:
        for ex in r.examples:
            out.add(by_id.get(ex, ex))
    return out


def reliability(results, unseen_ids: set[str] | None = None, threshold: float = 0.8) -> dict:
    """Share of verdicts with confidence >= threshold that are right (cause, incl. healthy = healthy), plus bins."""
    rs = [r for r in results if unseen_ids is None or r.id in unseen_ids]
    hi = [r for r in rs if r.confidence >= threshold]
    bins = {}
    for lo, hi_ in ((0.0, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01)):
        b = [r for r in rs if lo <= r.confidence < hi_ and (r.cause is not None or r.label_cause is None)]
        bins[f"{lo:.1f}-{min(hi_, 1.0):.1f}"] = {"cases": len(b),
                                                  "right": round(sum(r.cause_ok for r in b) / len(b), 3) if b else None}
    return {"cases": len(rs), f"conf>={threshold}": len(hi),
            f"right_at_conf>={threshold}": round(sum(r.cause_ok for r in hi) / len(hi), 3) if hi else None,
            "wrong_at_conf": sorted(r.id for r in hi if not r.cause_ok), "bins": bins}
