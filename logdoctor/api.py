"""The pipeline in one place: read → timeline → rules (+ classifier) → fix plan → Diagnosis.

`diagnose()` is the deploy-script hook (design.md): it accepts text (str), bytes, a pathlib.Path or an iterable of lines, never
raises on a bad log (the Diagnosis says so) and raises LogdoctorError subclasses only for usage errors.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from logdoctor import remedy
from logdoctor.diagnosis import Diagnosis, Evidence
from logdoctor.matching.conditions import Context
from logdoctor.matching.decide import MIN_CONFIDENCE, decide, healthy_confidence  # noqa: F401 (re-export)
from logdoctor.matching.loader import Rule, load_rules
from logdoctor.matching.rank import Candidate, candidates
from logdoctor.read import read_any  # noqa: F401 - the read stage; re-exported for callers of api.read_any
from logdoctor.records import ReadResult
from logdoctor.timeline import Attempt, Timeline, build
from logdoctor.vocab import UNKNOWN

UNKNOWN_COLLECT = ("journalctl -u UNIT -n 1000 --no-pager", "journalctl -k -b --no-pager | grep -E 'NVRM|oom|Killed'",
                   "nvidia-smi -q")


def diagnose(source, engine: str = "auto", history=None, rules: Iterable[str] = (), *,
             loaded_rules: list[Rule] | None = None, classifier="default", unit: str | None = None,
             host: str | None = None) -> Diagnosis:
    """history: None (off), True (the default store), a path, or a logdoctor.history.History; with a history the
    verdict reasons across earlier attempts (crossattempt.py) and the window's attempts are recorded."""
    res = source if isinstance(source, ReadResult) else read_any(source)
    if classifier == "default":   # the shipped model, as `explain` uses it (None: rules only)
        from logdoctor.classify.runtime import load_default
        classifier = load_default()
    rule_set = loaded_rules if loaded_rules is not None else load_rules(tuple(rules))
    tl = build(res.records, engine)
    if history is None or history is False:
        return diagnose_timeline(tl, res, rule_set, classifier=classifier)
    from logdoctor.crossattempt import diagnose_with_history
    from logdoctor.history import History, open_history
    store = open_history(history)
    try:
        return diagnose_with_history(tl, res, rule_set, classifier=classifier, history=store, unit=unit, host=host)
    finally:
        if store is not None and not isinstance(history, History):
            store.close()


def diagnose_timeline(tl: Timeline, res: ReadResult, rule_set: list[Rule], *, classifier=None,
                      tried_extra: dict | None = None) -> Diagnosis:
    """Timeline -> Diagnosis of its last attempt: rules (+ classifier) decide (matching/decide.py), the fix planner
    proposes (skipping `tried_extra` values: lever -> values tried elsewhere, from the attempt history), and the
    Diagnosis is built here, once."""
    per_attempt: list[tuple[Attempt, list[Candidate]]] = []
    for a in tl.attempts:
        cands = candidates(rule_set, Context.build(tl, a)) if a.failed else []
        per_attempt.append((a, cands))
    a, cands = per_attempt[-1]
    listed = [{"rule": c.rule.id, "cause": c.cause, "score": c.score} for c in cands]
    common: dict[str, Any] = dict(engine=tl.engine, engine_version=tl.engine_version, failed=a.failed, rank=a.first_failing_rank,
                  config=_config_view(a), window=_window(tl, res), origin=res.origin)
    if not a.failed:
        explanation = ("The service came up: " + _ready_text(a)) if a.ready else \
            "No failure in this window: no fatal traceback, no death message, no failed systemd result."
        return Diagnosis(phase=a.phase, cause=None, confidence=healthy_confidence(a.ready), rule=None,
                         explanation=explanation, attempts=_attempts(per_attempt, None), candidates=listed, **common)
    v = decide(tl, a, cands, rule_set, classifier)
    listed += [{"rule": "classifier", "cause": c, "score": p} for c, p in v.classifier]
    if v.winner is None:
        return Diagnosis(phase=a.phase, cause=UNKNOWN, confidence=0.0, rule=None, evidence=_unknown_evidence(a),
                         explanation=UNKNOWN_TEXT, actions=list(UNKNOWN_COLLECT),
                         attempts=_attempts(per_attempt, None), candidates=listed, **common)
    win = v.winner
    phase = a.phase
    if a.phase_source == "none" and len(win.rule.phases) >= 1:
        # no marker and no telling frame: the mechanism the rule recognised says where it happens
        phase = win.rule.phases[0]
    evidence, derived = _evidence(win, a)
    vars_ = _vars(win, a, tl)
    explanation = _fill(win.rule.explain, vars_) if win.rule.explain else win.rule.title
    if derived:  # what the rule read off the log, said as a statement, not shown as a quoted line
        explanation = explanation.rstrip() + (" " if explanation.rstrip().endswith(".") else ". ") + \
            "Read from the log: " + "; ".join(derived) + "."
    fixes, notes = remedy.plan(win.rule, vars_, a, tl, tried_extra=tried_extra)
    if not a.config.known:
        notes.append("the log starts after launch: the flags in force are unknown (use -n 1000 to include the start)")
    return Diagnosis(
        phase=phase, cause=win.cause, confidence=v.confidence, rule=win.rule.id, title=win.rule.title,
        evidence=evidence, explanation=explanation,
        fixes=fixes, notes=notes + _tried_notes(tl), actions=[_fill(x, vars_) for x in win.rule.actions],
        no_flag_change=win.rule.no_flag_change, alternatives=[alt.to_dict() for alt in v.alternatives],
        attempts=_attempts(per_attempt, win.cause), candidates=listed, **common)


def _attempts(per_attempt: list[tuple[Attempt, list[Candidate]]], last_cause: str | None) -> list[dict]:
    """One entry per attempt: where it started, its phase, and its cause (the verdict's for the last one)."""
    out = [{"started_line": x.start_line, "phase": x.phase,
            "cause": (c[0].cause if c else UNKNOWN) if x.failed else None} for x, c in per_attempt]
    if last_cause is not None:
        out[-1]["cause"] = last_cause
    return out


def _tried_notes(tl: Timeline) -> list[str]:
    """What changed between the attempts in the window ("already tried: --disable-cuda-graph at attempt 3")."""
    from logdoctor import levers as lv
    notes = []
    known = [a for a in tl.attempts if a.config.known]
    for prev, cur in zip(known, known[1:]):
        for lever, new in cur.config.levers.items():
            old = prev.config.levers.get(lever)
            if new == old or new is None:
                continue
            flag = lv.flag_for(lever, tl.engine, tl.engine_version, cur.config.raw)
            if not flag:
                continue
            tokens = lv.render(lever, tl.engine, new, version=tl.engine_version, config=cur.config.raw)
            if isinstance(new, bool) or (tokens and " ".join(tokens) == flag):
                change = " ".join(tokens) if tokens else f"removed {flag}"
            else:
                change = f"{flag} {old} → {new}"
            notes.append(f"already tried at attempt {cur.index + 1}: {change}")
    return notes


UNKNOWN_TEXT = ("The service failed, but no rule recognises the failure and the log does not show enough to "
                "name a cause. Collect: " + "; ".join(UNKNOWN_COLLECT) + ".")


def _unknown_evidence(a: Attempt) -> list[Evidence]:
    """Without a winning rule, the final exception of each traceback is the best evidence there is."""
    from logdoctor.evidence import quote
    quoted, _ = quote(a.records, [(b.final.exc_line or b.first_line, _exc_text(b))
                                  for b in a.blocks if b.final is not None])
    return [Evidence(ln, text) for ln, text in quoted][:3]


def _exc_text(b) -> str:
    s = b.final
    text = f"{s.exc_type}: {s.exc_msg}" if s.exc_type else s.exc_msg
    return text.splitlines()[0] if text else b.header


def _evidence(win: Candidate, a: Attempt) -> tuple[list[Evidence], list[str]]:
    """1-5 evidence lines, each quoted as the log shows it (logdoctor/evidence.py: a leaf may have matched only part
    of the line, e.g. the inner error of a wrapper), and the statements the leaves derived (for the explanation)."""
    from logdoctor.evidence import quote
    quoted, derived = quote(a.records, win.hit.evidence)
    return [Evidence(ln, text) for ln, text in quoted][:5], derived


def _vars(win: Candidate, a: Attempt, tl: Timeline) -> dict:
    v: dict = {}
    v.update({k: _fmt(x) for k, x in a.readings.items()})
    v.update({k: _fmt(x) for k, x in a.config.levers.items()})
    v.update({k: x for k, x in win.hit.captures.items() if x is not None})
    v.update({"phase": a.phase, "rank": a.first_failing_rank or "the engine", "engine": tl.engine})
    return v


def _fmt(x):
    if isinstance(x, float) and x.is_integer() and abs(x) > 100:
        return int(x)
    return x


_MISSING = "\x00missing\x00"


def _fill(template: str, vars_: dict) -> str:
    """Fill an explain template; a sentence that names a value the log did not show is dropped, not printed
    with a hole in it."""
    class Safe(dict):
        def __missing__(self, key):
            return _MISSING
    text = " ".join(template.split())
    try:
        text = text.format_map(Safe(vars_))
    except (ValueError, IndexError, AttributeError):
        return text
    if _MISSING not in text:
        return text
    sentences = re.split(r"(?<=[.!?])\s+", text)
    return " ".join(s for s in sentences if _MISSING not in s).strip()


def _config_view(a: Attempt) -> dict:
    return {k: v for k, v in a.config.levers.items() if isinstance(v, (int, float, str, bool)) or v is None}


def _window(tl: Timeline, res: ReadResult) -> dict:
    """The JSON `window`: lines read, whether the launch is in it, what was repaired on the way in, and where a
    truncated or capped archive cut it short (the verdict covers only what was read; docs/reliability.md)."""
    window = {"lines": res.stats.read, "start_seen": tl.start_seen, "damage": res.stats.damage()}
    if res.stats.stopped:
        window["cut"] = f"input ends early ({res.stats.stopped})"
    return window


def _ready_text(a: Attempt) -> str:
    r = a.readings
    bits = []
    if "max_total_num_tokens" in r:
        bits.append(f"max_total_num_tokens={_fmt(r['max_total_num_tokens'])}")
    if "kv_tokens" in r:
        bits.append(f"KV cache {_fmt(r['kv_tokens'])} tokens")
    return ("ready to serve" + (f" ({', '.join(str(b) for b in bits)})" if bits else "")) + "."
