"""The pipeline in one place: read → timeline → rules (+ classifier) → fix plan → Diagnosis.

`diagnose()` is the deploy-script hook (design.md): it accepts text, bytes, a path or an iterable of lines, never
raises on a bad log (the Diagnosis says so) and raises LogdoctorError subclasses only for usage errors.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

from logdoctor import remedy
from logdoctor.diagnosis import Diagnosis, Evidence
from logdoctor.errors import InputError, UsageError
from logdoctor.matching.conditions import Context
from logdoctor.matching.loader import Rule, load_rules
from logdoctor.matching.rank import Candidate, candidates, confidence
from logdoctor.read import check_bytes, read_bytes, read_lines
from logdoctor.records import ReadResult
from logdoctor.timeline import Attempt, Timeline, build

UNKNOWN_COLLECT = ("journalctl -u UNIT -n 1000 --no-pager", "journalctl -k -b --no-pager | grep -E 'NVRM|oom|Killed'",
                   "nvidia-smi -q")
MIN_CONFIDENCE = 0.35


def read_any(source, *, strict: bool = True) -> ReadResult:
    """text | bytes | path | iterable of lines → ReadResult (strict: refuse binary/empty input with InputError)."""
    if isinstance(source, bytes):
        if strict:
            check_bytes(source, "<bytes>")
        return read_bytes(source, "<bytes>")
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and len(source) < 4096
                                            and Path(source).exists()):
        from logdoctor.sources.files import read_source
        raw = read_source(source)
        if raw.is_journal_file:
            from logdoctor.read import read_entries
            from logdoctor.sources.journal import iter_journal_entries
            return read_entries(iter_journal_entries(files=[str(source)]), raw.origin)
        if strict:
            check_bytes(raw.data, raw.origin)
        return read_bytes(raw.data, raw.origin, damage=raw.damage)
    if isinstance(source, str):
        data = source.encode("utf-8", "surrogateescape")
        if strict:
            check_bytes(data, "<text>")
        return read_bytes(data, "<text>")
    if isinstance(source, Iterable):
        lines = [l.decode("utf-8", "replace") if isinstance(l, bytes) else str(l) for l in source]
        lines = [l[:-1] if l.endswith("\n") else l for l in lines]
        if strict and not any(l.strip() for l in lines):
            raise InputError("empty input — no log lines")
        from logdoctor.intake import repair_lines
        lines, dmg = repair_lines(lines)
        res = read_lines(lines, "<lines>")
        res.stats.nul_bytes, res.stats.cut_lines, res.stats.cut_bytes, res.stats.long_lines = \
            dmg.nul_bytes, dmg.cut_lines, dmg.cut_bytes, dmg.long_lines
        res.warnings += dmg.notes
        return res
    raise UsageError(f"cannot read a log from {type(source).__name__}")


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
        if not isinstance(history, History):
            store.close()


def diagnose_timeline(tl: Timeline, res: ReadResult, rule_set: list[Rule], *, classifier=None,
                      tried_extra: dict | None = None) -> Diagnosis:
    per_attempt: list[tuple[Attempt, list[Candidate]]] = []
    for a in tl.attempts:
        cands = candidates(rule_set, Context.build(tl, a)) if a.failed else []
        per_attempt.append((a, cands))
    a, cands = per_attempt[-1]
    attempts = [{"started_line": x.start_line, "phase": x.phase,
                 "cause": (c[0].cause if c else "unknown") if x.failed else None}
                for x, c in per_attempt]
    window = {"lines": res.stats.read, "start_seen": tl.start_seen, "damage": res.stats.damage()}
    if res.stats.stopped:   # a truncated or capped archive: the verdict covers only what was read
        window["cut"] = f"input ends early ({res.stats.stopped})"
    d = Diagnosis(engine=tl.engine, engine_version=tl.engine_version, failed=a.failed, phase=a.phase, cause=None,
                  confidence=0.0, rule=None, rank=a.first_failing_rank, config=_config_view(a),
                  attempts=attempts, window=window, origin=res.origin)
    d.candidates = [{"rule": c.rule.id, "cause": c.cause, "score": c.score} for c in cands]
    if not a.failed:
        d.confidence = 0.9 if a.ready else 0.6
        d.explanation = ("The service came up: " + _ready_text(a)) if a.ready else \
            "No failure in this window: no fatal traceback, no death message, no failed systemd result."
        return d
    scored = cands
    if classifier is not None:
        probs = classifier.proba(tl, a)
        scored = classifier.rerank(tl, a, cands, rules=rule_set, probs=probs)
        d.candidates += [{"rule": "classifier", "cause": c, "score": round(p, 3)}
                         for c, p in sorted(probs.items(), key=lambda kv: -kv[1])[:3]]
    conf = confidence(scored)
    if not scored or conf < MIN_CONFIDENCE:
        _unknown(d, a)
        return d
    win = scored[0]
    d.cause, d.rule, d.title = win.cause, win.rule.id, win.rule.title
    if a.phase_source == "none" and len(win.rule.phases) >= 1:
        # no marker and no telling frame: the mechanism the rule recognised says where it happens
        d.phase = win.rule.phases[0]
    attempts[-1]["cause"] = win.cause
    d.confidence = conf
    seen = set()
    alts = []
    for c in scored[1:]:
        if c.cause != win.cause and c.cause not in seen:
            seen.add(c.cause)
            alt = c.confidence if c.confidence is not None and c.rule.id == "classifier" else \
                c.rule.confidence * (c.score / max(win.score, 1)) * 0.4
            alts.append({"cause": c.cause, "confidence": round(max(0.01, min(0.5, alt)), 2)})
    d.alternatives = alts[:3]
    d.evidence = _evidence(win, a)
    vars_ = _vars(win, a, tl)
    d.explanation = _fill(win.rule.explain, vars_) if win.rule.explain else win.rule.title
    d.fixes, d.notes = remedy.plan(win.rule, vars_, a, tl, tried_extra=tried_extra)
    d.actions = [_fill(x, vars_) for x in win.rule.actions]
    d.no_flag_change = win.rule.no_flag_change
    if not a.config.known:
        d.notes.append("the log starts after launch: the flags in force are unknown (use -n 1000 to include the start)")
    d.notes += _tried_notes(tl)
    return d


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


def _unknown(d: Diagnosis, a: Attempt) -> None:
    d.cause, d.rule, d.confidence = "unknown", None, 0.0
    d.evidence = [Evidence(b.final.exc_line or b.first_line, _exc_text(b))
                  for b in a.blocks if b.final is not None][:3]
    d.explanation = ("The service failed, but no rule recognises the failure and the log does not show enough to "
                     "name a cause. Collect: " + "; ".join(UNKNOWN_COLLECT) + ".")
    d.actions = list(UNKNOWN_COLLECT)


def _exc_text(b) -> str:
    s = b.final
    text = f"{s.exc_type}: {s.exc_msg}" if s.exc_type else s.exc_msg
    return text.splitlines()[0] if text else b.header


def _evidence(win: Candidate, a: Attempt) -> list[Evidence]:
    """1-5 evidence lines, each as the log shows it (a leaf may have matched only part of the line, e.g. the
    inner error of a wrapper)."""
    by_line: dict[int, list[str]] = {}
    for r in a.records:
        by_line.setdefault(r.line, []).append(r.msg)
    seen: dict[int, str] = {}
    for ln, text in win.hit.evidence:
        if ln and ln not in seen:
            first = text.splitlines()[0] if text else ""
            whole = next((m for m in by_line.get(ln, ()) if first and first in m), None)
            seen[ln] = (whole or first)[:300]
    return [Evidence(ln, seen[ln]) for ln in sorted(seen)][:5]


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


def _ready_text(a: Attempt) -> str:
    r = a.readings
    bits = []
    if "max_total_num_tokens" in r:
        bits.append(f"max_total_num_tokens={_fmt(r['max_total_num_tokens'])}")
    if "kv_tokens" in r:
        bits.append(f"KV cache {_fmt(r['kv_tokens'])} tokens")
    return ("ready to serve" + (f" ({', '.join(str(b) for b in bits)})" if bits else "")) + "."
