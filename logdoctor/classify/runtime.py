"""The classifier at explain time: load the shipped model (plain JSON, pure-Python inference) and combine its scores
with the rule candidates.

Combination (`Classifier.rerank` -> matching/decide.combine, where the constants live), in order:

1. A decisive rule wins unchanged. Decisive = the top rule is a strong one (confidence ≥ DECISIVE_CONFIDENCE and
   of a tier in DECISIVE_TIERS) and no candidate of another cause scores within DECISIVE_MARGIN points of it.
   The only thing the classifier may do to it: when it is itself confident (≥ threshold) in another cause and gives
   the rule's cause less than DISSENT_P, the reported confidence is multiplied by DISSENT_FACTOR.
2. No rule fired: the classifier fills in. Its top cause with calibrated probability p ≥ threshold becomes a
   synthesised candidate (rule id "classifier", the cause, a title, and the actions of the best-matching bundled
   rule of that cause for the engine, if any — its flag fixes too when it is a near miss, i.e. its evidence
   conditions hold and only its scoping failed; see best_rule) with confidence p; below the threshold nothing is
   returned and the verdict stays "unknown".
3. A close call between rules of different causes (within DECISIVE_MARGIN): the classifier re-ranks the contending
   causes when it prefers another one by at least SWITCH_MARGIN in probability. The winner's confidence is the
   rules' reduced confidence (rank.confidence), lifted up to the winning rule's own confidence when the classifier
   agrees: max(reduced, min(rule confidence, p)).
4. Only weak rules fired (below the decisive bar, no close rival): a confident classifier (≥ threshold) that gives
   the rule's cause less than DISSENT_P overrides them with a synthesised candidate; otherwise the rule stands.

The threshold comes from the model file (chosen on held-out folds by classify/train.py, not by hand). The
DECISIVE_* constants follow the rule-writing guide (docs/rules.md: system, specific and inferred rules carry
confidence 0.75-0.93; generic evidence and catch-alls are weaker) and rank.confidence's "close" gap of 5 points.
$LOGDOCTOR_CLASSIFIER=PATH uses another model file, =off none.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from logdoctor.classify.features import FEATURE_VERSION, features
from logdoctor.classify.model import Model
from logdoctor.core.paths import PACKAGE
from logdoctor.core.vocab import CAUSE_TITLES, TIER_NAMES
from logdoctor.verdict import confidence as cf

DEFAULT_PATH = PACKAGE / "data" / "classifier.json"


class Classifier:
    def __init__(self, model: Model, path: str = ""):
        self.model = model
        self.path = path
        self.threshold = model.threshold
        self._bundled = None

    # ---- scores -----------------------------------------------------------------------------------------------
    def tokens(self, tl, attempt) -> list[str]:
        return features(tl, attempt)

    def proba(self, tl, attempt) -> dict[str, float]:
        return self.model.predict_proba(self.tokens(tl, attempt))

    # ---- combination ------------------------------------------------------------------------------------------
    def rerank(self, tl, attempt, cands, *, rules=None, probs: dict[str, float] | None = None):
        """Rules + this model's probabilities -> re-ranked candidates; the policy is matching/decide.combine."""
        from logdoctor.matching.decide import combine

        probs = probs if probs is not None else self.proba(tl, attempt)
        return combine(self, tl, attempt, cands, probs, rules)

    # ---- the synthesised candidate ----------------------------------------------------------------------------
    def _rules(self, rules):
        if rules:
            return rules
        if self._bundled is None:
            from logdoctor.matching.loader import load_rules

            try:
                self._bundled = load_rules(())
            except Exception:  # noqa: BLE001 - fixes are a bonus; a broken rule folder must not break the verdict
                self._bundled = []
        return self._bundled

    def best_rule(self, tl, attempt, cause: str, rules=None):
        """The bundled rule of `cause` for this engine that fits this attempt best, and whether it is a near miss.

        Near miss: all the rule's evidence conditions hold (those that read the log's text: messages, exceptions,
        frames, hints, kernel, systemd, exit codes), only its scoping (phase, flags, engine, ranks, ...) failed.
        Order: near misses first, then the most top-level evidence conditions holding, phase fit, engine-specific
        over generic, tier, id. Returns (rule or None, near_miss)."""
        from logdoctor.matching.conditions import Context

        pool = [r for r in self._rules(rules) if r.cause == cause and r.applies_to(tl.engine) and r.id != "classifier"]
        if not pool:
            return None, False
        try:
            ctx = Context.build(tl, attempt)
        except Exception:  # noqa: BLE001
            ctx = None

        def partial(r) -> int:
            """How many of the rule's top-level conditions that read the log's text hold (`AllNode.parts`)."""
            if ctx is None:
                return 0
            n = 0
            for p in r.cond.parts():
                if not p.has_evidence():
                    continue
                try:
                    if p.holds(ctx, r.compiled) is not None:
                        n += 1
                except Exception:  # noqa: BLE001, S110 - a rule that cannot evaluate here adds no evidence
                    pass
            return n

        def near_miss(r) -> bool:
            """The rule's evidence conditions hold; only its scoping (phase, flags, engine, ranks, ...) failed."""
            cond = r.cond.evidence_only()
            if ctx is None or cond is None:
                return False
            try:
                return cond.holds(ctx, r.compiled) is not None
            except Exception:  # noqa: BLE001
                return False

        scored = []
        for r in pool:
            phase_fit = 2 if attempt.phase in r.phases else 1 if not r.phases else 0
            scored.append(
                (
                    (
                        not near_miss(r),
                        -partial(r),
                        -phase_fit,
                        0 if tl.engine in r.engines else 1,
                        TIER_NAMES.index(r.tier),
                        r.id,
                    ),
                    r,
                )
            )
        key, best = min(scored, key=lambda kr: kr[0])
        return best, not key[0]

    def synth(self, tl, attempt, cause: str, p: float, rules, score: float, *, alternative: bool = False):
        """A candidate for `cause` from the classifier (no rule fired, or it overrides weak ones)."""
        from logdoctor.matching.conditions import Hit
        from logdoctor.matching.loader import Rule
        from logdoctor.matching.rank import Candidate

        best, near = (None, False) if alternative else self.best_rule(tl, attempt, cause, rules)
        title = CAUSE_TITLES.get(cause, cause.replace("_", " "))
        # flag changes only from a near miss: a cause has several mechanisms with opposite fixes (capture OOM:
        # smaller graphs; capture-unsafe op: no graphs), and guessing one is worse than proposing none; the rule's
        # non-flag actions (diagnostic commands) are kept either way
        fixes = list(best.fixes) if best is not None and near else []
        explain = "" if alternative else self._explain(tl, attempt, cause, p, title, best, bool(fixes))
        rule = Rule(
            id="classifier",
            cause=cause,
            title=title,
            engines=("any",),
            match={},
            tier="generic",
            confidence=cf.classifier(p),
            explain=explain,
            fixes=fixes,
            actions=list(best.actions) if best else [],
            no_flag_change=bool(best.no_flag_change) if best else False,
            path=self.path,
        )
        hit = Hit(evidence=[] if alternative else _evidence(attempt))
        return Candidate(rule, hit, score, confidence=round(min(p, cf.CLASSIFIER_CEILING), 2))

    def _explain(self, tl, attempt, cause, p, title, best, with_fixes: bool) -> str:
        toks = self.model.top_tokens(self.tokens(tl, attempt), cause, n=4)
        shown = [_human(t) for t, w in toks if w > 0][:3]
        s = (
            f"No rule matches this failure exactly. The classifier (trained on labelled logs) reads it as {cause}: "
            f"{title} (probability {p:.2f})."
        )
        if shown:
            s += " What weighs most: " + "; ".join(shown) + "."
        if best is not None and with_fixes:
            s += f" The next steps are those of the closest rule ({best.id}); check them against the evidence."
        elif best is not None and best.actions:
            s += (
                f" No rule of this cause matches the evidence, so no flag change is proposed; the checks are those "
                f"of {best.id}."
            )
        else:
            s += " Check the evidence lines before changing anything."
        return s.replace("{", "{{").replace("}", "}}")


_SRC_WORDS = {
    "inner": "root exception",
    "wrap": "outer exception",
    "exc": "exception chain",
    "err": "error lines",
    "kern": "kernel log",
    "sd": "systemd verdict",
    "death": "death line",
    "hint": "engine's hint",
    "head": "traceback header",
}


def _human(tok: str) -> str:
    """A feature token in words, for the explanation."""
    ns, _, rest = tok.partition(":")
    if ns in ("t", "w", "b"):
        src, _, val = rest.partition(":")
        where = _SRC_WORDS.get(src, src)
        if ns == "b":
            val = val.replace("_", " ", 1)
        return f'"{val[:90]}" in the {where}'
    names = {
        "exc": "exception",
        "inner_exc": "root exception",
        "wrap_exc": "outer exception",
        "fn": "frame",
        "fn_in": "innermost frame",
        "file": "file",
        "phase": "failure phase",
        "reached": "furthest phase reached",
        "xid": "Xid",
        "xid_class": "Xid class",
        "sd": "systemd",
        "death": "death line",
        "death_exit": "exit code",
        "flag": "flag",
        "kernel": "kernel",
        "env": "environment variable",
        "engine": "engine",
        "lever": "lever",
        "engine_phase": "engine and phase",
    }
    if ns in names:
        return f"{names[ns]} {rest}"
    return tok


def _evidence(a) -> list[tuple[int, str]]:
    from logdoctor.timeline.decisive import of

    ev: list[tuple[int, str]] = []
    for b in sorted(of(a).fatal, key=lambda b: b.first_line)[:2]:
        for s in (b.sections[0], b.sections[-1]) if b.sections else ():
            text = f"{s.exc_type}: {s.exc_msg}" if s.exc_type else s.exc_msg
            ln = s.exc_line or b.first_line
            if text and all(ln != x for x, _ in ev):
                ev.append((ln, text))
    for e in a.kernel[:2]:
        ev.append((e.line, e.text))
    for e in a.events:
        if e.kind == "systemd" and e.name in ("exit", "result", "timeout"):
            ev.append((e.line, e.text))
        elif e.kind == "death" and not a.blocks and len(ev) < 5:
            ev.append((e.line, e.text))
    return ev[:6]


@lru_cache(maxsize=4)
def _load(path: str, mtime: float):
    from logdoctor.matching.cache import cached_json  # a binary copy keyed by content: no 0.5 MB JSON parse

    data = cached_json(path)
    assert isinstance(data, dict), f"{path}: not a model"
    model = Model(data)
    if model.feature_version != FEATURE_VERSION:
        return None
    return Classifier(model, path)


def load_default():
    """The shipped classifier, or None when no model file is present (or it was trained on other features).

    $LOGDOCTOR_CLASSIFIER overrides the path; "off" disables the classifier."""
    env = os.environ.get("LOGDOCTOR_CLASSIFIER", "")
    if env.lower() in ("off", "none", "0"):
        return None
    path = Path(env) if env else DEFAULT_PATH
    try:
        st = path.stat()
    except OSError:
        return None
    try:
        return _load(str(path), st.st_mtime)
    except (ValueError, KeyError, TypeError):
        return None


def load(path) -> Classifier | None:
    """A classifier from a model file (eval --cv / tests); None when its feature version does not match."""
    model = Model.load(path)
    return Classifier(model, str(path)) if model.feature_version == FEATURE_VERSION else None


def from_data(data: dict) -> Classifier:
    return Classifier(Model(data), "<memory>")
