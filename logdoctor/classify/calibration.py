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

from logdoctor.core import rxcache

CLASSIFIER_ALONE_MAX = 0.7
HINT_ONLY_MAX = 0.6
_HINT = rxcache.compile(
    r"^\s*(?:If |Try |Please |Consider |You (?:may|can|might|should) |Possible (?:solutions|suggestions)|"
    r"Hints?:|HINT|Suggestion)|It is likely due to|a common cause is|[Ii]t usually means|"
    r"might be (?:caused|due)|[Pp]lease (?:check|try|increase|decrease|lower|set)"
)


_ERROR_LINE = rxcache.compile(r"^\s*[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b|^\s*(?:ERROR|CRITICAL|FATAL)\b")


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


BINS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.0))


def _claims(r) -> bool:
    """A verdict that names a cause with a confidence: failed, and neither `unknown` (an abstention, confidence 0)
    nor healthy (its confidence says the service came up, not that a cause is right)."""
    return r.cause is not None and r.cause != "unknown" and not str(r.cause).startswith("error:")


def reliability(results, unseen_ids: set[str] | None = None, threshold: float = 0.8) -> dict:
    """How often a named cause at a given confidence is the labelled one.

    Only verdicts that name a cause are binned (a healthy case called healthy, or an abstention, would fill the low
    bins with "right" and make every bin read 1.0); a named cause on a case labelled healthy or unknown is wrong.
    Healthy verdicts, abstentions and missed failures are counted beside the bins."""
    rs = [r for r in results if unseen_ids is None or r.id in unseen_ids]
    named = [r for r in rs if _claims(r)]
    hi = [r for r in named if r.confidence >= threshold]
    bins = {f"{lo:.1f}-{up:.1f}": _bin(named, lo, up) for lo, up in BINS}
    healthy = [r for r in rs if r.cause is None]
    unknown = [r for r in rs if r.cause == "unknown"]
    return {
        "cases": len(rs),
        "named_cause": len(named),
        f"conf>={threshold}": len(hi),
        f"right_at_conf>={threshold}": round(sum(r.cause_ok for r in hi) / len(hi), 3) if hi else None,
        "wrong_at_conf": sorted(r.id for r in hi if not r.cause_ok),
        "bins": bins,
        "healthy_verdicts": {"cases": len(healthy), "right": sum(r.cause_ok for r in healthy)},
        "unknown_verdicts": {"cases": len(unknown), "label_unknown": sum(r.label_cause == "unknown" for r in unknown)},
    }


def _bin(named: list, lo: float, up: float) -> dict:
    """One confidence bin [lo, up) (the top bin holds 1.0 too): its cases, how many are right, the share right and
    the mean confidence (None for an empty bin)."""
    b = [r for r in named if lo <= r.confidence < up or (up == 1.0 and r.confidence == 1.0)]
    right = sum(r.cause_ok for r in b)
    return {
        "cases": len(b),
        "right": right,
        "share": round(right / len(b), 3) if b else None,
        "mean_confidence": round(sum(r.confidence for r in b) / len(b), 3) if b else None,
    }
