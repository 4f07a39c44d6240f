"""The pipeline in one place: read → timeline → rules (+ classifier) → fix plan → Diagnosis.

`diagnose()` is the deploy-script hook (design.md): it accepts text (str), bytes, a pathlib.Path or an iterable of lines, never
raises on a bad log (the Diagnosis says so) and raises LogdoctorError subclasses only for usage errors.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

from logdoctor.classify import calibration
from logdoctor.core import rxcache
from logdoctor.core.lean import replace
from logdoctor.core.records import ReadResult
from logdoctor.core.vocab import TIERS, UNKNOWN
from logdoctor.matching.conditions import Context
from logdoctor.matching.decide import DECISIVE_CONFIDENCE, MIN_CONFIDENCE, healthy_confidence  # noqa: F401
from logdoctor.matching.loader import Rule, load_rules
from logdoctor.matching.rank import Candidate, candidates
from logdoctor.matching.verdict import atlas_verdict, decide
from logdoctor.scan.sources import read_any  # noqa: F401 - the read stage; re-exported for callers of api.read_any
from logdoctor.timeline.attempts import outcome, verdict_attempt
from logdoctor.timeline.build import Attempt, Timeline, build
from logdoctor.timeline.decisive import error_before_cut
from logdoctor.verdict import confidence as cf
from logdoctor.verdict import remedy
from logdoctor.verdict.defects import engine_defect
from logdoctor.verdict.diagnosis import Diagnosis, Evidence, version_fields

UNKNOWN_COLLECT = (
    "journalctl -u UNIT -n 1000 --no-pager",
    "journalctl -k -b --no-pager | grep -E 'NVRM|oom|Killed'",
    "nvidia-smi -q",
)


def diagnose(
    source,
    engine: str = "auto",
    history=None,
    rules: Iterable[str] = (),
    *,
    loaded_rules: list[Rule] | None = None,
    classifier="default",
    unit: str | None = None,
    host: str | None = None,
) -> Diagnosis:
    """history: None (off), True (the default store), a path, or a logdoctor.history.History; with a history the
    verdict reasons across earlier attempts (crossattempt.py) and the window's attempts are recorded."""
    res = source if isinstance(source, ReadResult) else read_any(source)
    if classifier == "default":  # the shipped model, as `explain` uses it (None: rules only)
        from logdoctor.classify.runtime import load_default

        classifier = load_default()
    rule_set = loaded_rules if loaded_rules is not None else load_rules(tuple(rules))
    tl = build(res.records, engine)
    if history is None or history is False:
        return diagnose_timeline(tl, res, rule_set, classifier=classifier)
    from logdoctor.history import History, open_history

    store = open_history(history)
    try:
        return diagnose_with_history(tl, res, rule_set, classifier=classifier, history=store, unit=unit, host=host)
    finally:
        if store is not None and not isinstance(history, History):
            store.close()


def diagnose_timeline(
    tl: Timeline, res: ReadResult, rule_set: list[Rule], *, classifier=None, tried_extra: dict | None = None
) -> Diagnosis:
    """Timeline -> Diagnosis of the attempt the verdict is about (attempts.verdict_attempt: the most recent failed
    attempt while a later one is still starting, else the last): rules (+ classifier) decide (matching/decide.py),
    the fix planner proposes (skipping `tried_extra` values: lever -> values tried elsewhere, from the attempt
    history), and the Diagnosis is built here, once. Mechanisms that are not a cause of the taxonomy come first: a
    hang while serving (serving.py) and a defect in the engine's own code (defects.py) are named, cause unknown."""
    per_attempt: list[tuple[Attempt, list[Candidate]]] = []
    for a in tl.attempts:
        cands = candidates(rule_set, Context.build(tl, a)) if a.failed else []
        per_attempt.append((a, cands))
    vi, attempt_note = verdict_attempt(tl.attempts)
    a, cands = per_attempt[vi]
    listed = [{"rule": c.rule.id, "cause": c.cause, "score": c.score} for c in cands]
    window, head, tail = _window(tl, res, a, attempt_note)
    version, version_hint = version_fields(tl.engine_version)
    common: dict[str, Any] = dict(
        engine=tl.engine,
        engine_version=version,
        engine_version_hint=version_hint,
        failed=a.failed,
        rank=a.first_failing_rank,
        config=_config_view(a),
        window=window,
        origin=res.origin,
        attempt_index=vi,
    )
    if not a.failed:
        explanation = (
            ("The service came up: " + _ready_text(a))
            if a.ready
            else "No failure in this window: no fatal traceback, no death message, no failed systemd result."
        )
        return Diagnosis(
            phase=a.phase,
            cause=None,
            confidence=healthy_confidence(a.ready),
            rule=None,
            explanation=explanation,
            attempts=_attempts(per_attempt, vi, None),
            candidates=listed,
            notes=tail + _hardware_warnings(a),
            **common,
        )
    named = dict(
        phase=a.phase,
        cause=UNKNOWN,
        confidence=0.0,
        rule=None,
        no_flag_change=True,
        notes=head + tail,
        attempts=_attempts(per_attempt, vi, None),
        candidates=listed,
        **common,
    )
    mechanism = _mechanism(tl, a, cands, named)
    if mechanism is not None:
        return mechanism
    v = decide(tl, a, cands, rule_set, classifier)
    listed += [{"rule": "classifier", "cause": c, "score": p} for c, p in v.classifier]
    source, cited, atlas_phase = _atlas_source(v, a)
    carried = _from_earlier(per_attempt, vi, v.winner) if v.winner is not None else _cut_like_earlier(per_attempt, vi)
    if v.winner is None and carried is None:
        return Diagnosis(
            phase=atlas_phase or a.phase,
            cause=UNKNOWN,
            confidence=0.0,
            rule=None,
            evidence=_unknown_evidence(a),
            explanation=UNKNOWN_TEXT,
            actions=list(UNKNOWN_COLLECT),
            notes=head + cited + tail,
            attempts=_attempts(per_attempt, vi, None),
            candidates=listed,
            source=source,
            **common,
        )
    win, seen, base_conf, head = _carry(v, carried, a, head)
    phase = atlas_phase or a.phase
    if a.phase_source == "none" and len(win.rule.phases) >= 1:
        # no marker and no telling frame: the mechanism the rule recognised says where it happens
        phase = win.rule.phases[0]
    evidence, derived = _evidence(win, seen, tl)
    vars_ = _vars(win, a, tl)
    explanation = _explanation(win, vars_, derived)
    fixes, notes = remedy.plan(win.rule, vars_, a, tl, tried_extra=tried_extra)
    notes += _config_notes(a)
    # calibration: a decision resting on the classifier alone or on one hint line reports less; so does cut evidence
    ruled = per_attempt[seen.index][1] if v.winner is None else cands  # a carried verdict: that attempt's rules
    conf, why_low = calibration.adjust(base_conf, rule_candidates=ruled, winner=win, evidence=evidence)
    if window["cut"]:
        conf = cf.cut_window(conf)
    low = [f"confidence lowered: {why_low}"] if why_low else []
    return Diagnosis(
        phase=phase,
        cause=win.cause,
        confidence=conf,
        rule=win.rule.id,
        title=win.rule.title,
        evidence=evidence,
        explanation=explanation,
        fixes=fixes,
        notes=[_named(n, tl.unit) for n in head + notes + _tried_notes(tl) + low + cited + tail],
        source=source,
        actions=[_named(_fill(x, vars_), tl.unit) for x in win.rule.actions],
        no_flag_change=win.rule.no_flag_change,
        alternatives=[alt.to_dict() for alt in v.alternatives],
        attempts=_attempts(per_attempt, vi, win.cause),
        candidates=listed,
        **common,
    )


def _carry(v, carried, a: Attempt, head: list[str]) -> tuple[Candidate, Attempt, float, list[str]]:
    """The winning rule, the attempt its evidence is read from, the base confidence and the head notes: this
    attempt's own, or an earlier attempt's verdict carried over (same configuration, same phase, more detail)."""
    if carried is None:
        assert v.winner is not None
        return v.winner, a, v.confidence, head
    win, seen = carried
    if v.winner is None:  # the window ends inside this attempt's traceback, the earlier one's is whole
        base_conf = win.rule.confidence
        shown = f"a traceback cut before its exception, through the frames attempt {seen.index + 1}'s ends in"
    else:
        base_conf = min(v.confidence, win.rule.confidence)
        shown = v.winner.rule.title
    note = (
        f"the mechanism is from attempt {seen.index + 1}: the same configuration failed there in the "
        f"same phase with more detail; this attempt shows only {shown}"
    )
    return win, seen, base_conf, head + [note]


def _config_notes(a: Attempt) -> list[str]:
    if a.config.known:
        return []
    if a.start_seen:  # the launch is in the window; the engine died before its config dump
        return ["the engine printed no config before it stopped: the flags in force are the launch command's"]
    return ["the log starts after launch: the flags in force are unknown (use -n 1000 to include the start)"]


def _window(
    tl: Timeline, res: ReadResult, a: Attempt, attempt_note: str | None
) -> tuple[dict[str, Any], list[str], list[str]]:
    """The JSON `window` (lines, start seen, cut, damage, prefix), and the notes that go before and after the
    verdict's own."""
    window: dict[str, Any] = {
        "lines": res.stats.read,
        "start_seen": tl.start_seen,
        "cut": cut_reason(a),
        "damage": res.stats.damage(),
    }
    tail = []
    if res.stats.unknown_prefix:
        window["prefix"] = res.stats.unknown_prefix
        tail.append(
            f"most lines start with a prefix logdoctor does not know ({res.stats.unknown_prefix!r}); it was "
            "peeled off as an unknown wrapper, so the writer or rank it may name is not used"
        )
    head = [n for n in (attempt_note, cut_note(a) if window["cut"] else None) if n]
    if res.stats.stopped:  # a truncated or capped archive: the verdict covers only what was read (reliability.md)
        window["cut"] = f"input ends early ({res.stats.stopped})"
        head = [
            n
            for n in (
                attempt_note,
                f"the input ends early ({res.stats.stopped}): the verdict covers only the lines read",
            )
            if n
        ]
    return window, head, tail


def _mechanism(tl: Timeline, a: Attempt, cands: list[Candidate], named: dict[str, Any]) -> Diagnosis | None:
    """Mechanisms that are not a cause of the taxonomy, named before any rule unless a strong rule says otherwise:
    a hang while serving (serving.py), a defect in the engine's own code (defects.py)."""
    strong = [c for c in cands if c.rule.confidence >= DECISIVE_CONFIDENCE]
    fatal = a.decisive is not None and a.decisive.fatal
    if a.hang is not None and not fatal and not any(c.cause != "startup_timeout" for c in strong):
        h = a.hang
        return Diagnosis(
            title="a hang while serving (health checks failing, no error from the engine)",
            evidence=[Evidence(ln, t[:300]) for ln, t in h.evidence],
            explanation=h.explanation(),
            actions=h.actions(),
            **named,
        )
    defect = engine_defect(a)
    if defect is not None and not strong and not (not cands and _atlas_places(tl, a)):
        return Diagnosis(
            title="a defect in the engine's code (or an unsupported feature combination)",
            evidence=[Evidence(defect.line, defect.exc)],
            explanation=defect.explanation(tl.engine),
            actions=defect.actions(tl.engine),
            **named,
        )
    return None


def _explanation(win: Candidate, vars_: dict, derived: list[str]) -> str:
    explanation = _fill(win.rule.explain, vars_) if win.rule.explain else win.rule.title
    if derived:  # what the rule read off the log, said as a statement, not shown as a quoted line
        explanation = (
            explanation.rstrip()
            + (" " if explanation.rstrip().endswith(".") else ". ")
            + "Read from the log: "
            + "; ".join(derived)
            + "."
        )
    return explanation


def diagnose_with_history(
    tl: Timeline,
    res: ReadResult,
    rule_set: list[Rule],
    *,
    classifier=None,
    history=None,
    unit: str | None = None,
    host: str | None = None,
) -> Diagnosis:
    """diagnose_timeline with the history (crossattempt.py): tried values go to the planner, the sequence may amend
    the verdict (`Review.amendments`), and every attempt of the window is recorded (idempotently). Here, not in
    crossattempt, so that the reasoning across attempts never calls back into the pipeline (no import cycle)."""
    if history is None:
        return diagnose_timeline(tl, res, rule_set, classifier=classifier)
    from logdoctor.history import AttemptRow
    from logdoctor.verdict import crossattempt as xa

    u = xa.unit_of(tl, unit)
    # the attempt the verdict is about: the last, or the most recent failed one while a restart is still starting
    vi, _ = verdict_attempt(tl.attempts)
    last = tl.attempts[vi]
    h = xa.host_of(last, host)
    cur_key = xa.attempt_key(h, u, last)
    cur_started = next((r.ts.isoformat() for r in last.records if r.ts), None)
    # the window's earlier attempts, each with its own verdict (cause, phase, suggested fix) for the sequence rules;
    # the store is asked only about these keys and the latest attempts here (bounded: never the whole history)
    window = [(a, xa.attempt_key(xa.host_of(a, host), u, a)) for a in tl.attempts[:vi] if a.records]
    known = history.get([k for _, k in window] + [cur_key]) if h else {}
    window_rows: list = []
    for a, key in window:
        if key in known:
            window_rows.append(known[key])
            continue
        sub = xa.only(tl, a)
        window_rows += xa.rows_for(sub, diagnose_timeline(sub, res, rule_set, classifier=classifier), unit=u, host=host)
    hist_rows = history.recent_here(h, u, started_before=cur_started) if h else []
    cur_stub = AttemptRow(key=cur_key, host=h, unit=u, started=cur_started)
    earlier = xa.earlier_here(hist_rows, window_rows, cur_stub) if h else window_rows
    tried = xa.tried_values(earlier)
    tried_store: dict[str, set] = {}
    attempts_here = None
    if h:
        tried_store = _tried_in_store(history, h, u, cur_started)
        for k, vs in tried_store.items():
            tried.setdefault(k, set()).update(vs)
        in_store = history.count_here(h, u, started_before=cur_started) - (
            1 if cur_key in known and not cur_started else 0
        )
        attempts_here = max(in_store, 0) + sum(1 for r in window_rows if r.key not in known)
    d = diagnose_timeline(tl, res, rule_set, classifier=classifier, tried_extra=tried)
    rows = xa.rows_for(tl, d, unit=u, host=host)
    ci = next((i for i, r in enumerate(rows) if r.key == cur_stub.key), None)
    if ci is not None:
        since = time.time() - xa.BREAKER_WINDOW_S

        def fleet(cause: str, rule: str | None) -> list[str]:
            return history.verdict_hosts(cause, rule, since)

        rv = xa.review(
            d,
            replace(rows[ci]),
            earlier,
            history.ready_elsewhere(u, h) if u else [],
            tried_extra=tried_store,
            attempts_here=attempts_here,
            fleet=fleet if h else None,
        )
        d = d.amended(*rv.amendments, history=rv.to_dict())
        rows[ci] = xa.rows_for(tl, d, unit=u, host=host)[ci]
    history.record(window_rows + rows)
    return d


def _tried_in_store(history, host: str, unit: str, started_before: str | None) -> dict[str, set]:
    """lever -> values the store says were tried for this unit on this host (beyond the latest attempts)."""
    out: dict[str, set] = {}
    for cfg in history.tried_here(host, unit, started_before=started_before):
        for k, v in cfg.items():
            if v is not None:
                out.setdefault(k, set()).add(v)
    return out


def _atlas_places(tl: Timeline, a: Attempt) -> bool:
    """The engine's own message names a cause (the atlas tier): an assert that two features cannot be combined is a
    rejected configuration, not a defect in the engine's code."""
    placed = atlas_verdict(tl, a)
    return placed is not None and placed[2].cause != UNKNOWN


def _atlas_source(v, a: Attempt) -> tuple[dict | None, list[str], str | None]:
    """The decisive error's place in the engine's source (the atlas tier, matching/decide.py): the JSON `source`,
    the note citing it, and its phase when the attempt's markers and frames placed none."""
    if v.atlas is None:
        return None, [], None
    line, _text, hit = v.atlas
    phase = hit.phase if a.phase_source == "none" and hit.phase != UNKNOWN else None
    cited = v.winner is not None and v.winner.rule.id.startswith("atlas:")  # its explanation cites it already
    note = [] if cited else [f"the decisive error (line {line}) is the engine's own message, {hit.citation()}"]
    return {**hit.source(), "log_line": line}, note, phase


def _attempts(per_attempt: list[tuple[Attempt, list[Candidate]]], vi: int, cause: str | None) -> list[dict]:
    """One entry per attempt: where it started, its phase, its cause (the verdict's for the attempt it is about) and
    its outcome (failed / ready / in_progress / stopped)."""
    out = [
        {
            "started_line": x.start_line,
            "phase": x.phase,
            "cause": (c[0].cause if c else UNKNOWN) if x.failed else None,
            "outcome": outcome(x),
        }
        for x, c in per_attempt
    ]
    if cause is not None:
        out[vi]["cause"] = cause
    return out


def _hardware_warnings(a: Attempt) -> list[str]:
    """A hardware-class Xid while the service is up is worth a warning even though nothing failed (yet)."""
    from logdoctor.core.vocab import XID_HARDWARE

    out = []
    for e in a.kernel:
        x = e.values.get("xid")
        if e.name == "xid" and x in XID_HARDWARE:
            w = (
                f"warning: the kernel logged hardware-class Xid {x} for the GPU at PCI {e.values.get('pci')} (line "
                f"{e.line}) while the service was up; if the service uses that GPU, check it: "
                "nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER"
            )
            if w not in out:
                out.append(w)
        elif e.name == "fallen_off":
            out.append(f"warning: a GPU fell off the bus (line {e.line}) while the service was up")
    return out[:3]


def cut_reason(a: Attempt) -> str | None:
    """Where the window ends early: inside the decisive traceback, or after a death line whose error is missing.
    A traceback cut after the service already printed its error (decisive.error_before_cut) is no early end."""
    if not a.failed:
        return None
    dec = a.decisive
    if dec is not None and dec.cut is not None:
        return None if error_before_cut(dec, a) is not None else dec.cut_reason
    if (
        dec is not None
        and not dec.fatal
        and not dec.errors
        and any(e.kind == "death" for e in a.events)
        and not a.kernel
        and not any(k in a.systemd for k in ("timeout", "oom"))
    ):
        return "before the final error"
    return None


def cut_note(a: Attempt) -> str:
    dec = a.decisive
    if dec is not None and dec.cut is not None:
        f = dec.engine_frame()
        where = f" (last engine frame: {f.func} in {f.basename})" if f is not None and f.func else ""
        return (
            f"the final error is not in the window: it ends {dec.cut_reason}{where}; "
            "run journalctl -u UNIT -n 1000 to see the exception"
        )
    return "the final error is not in the window: only the death notice is; run journalctl -u UNIT -n 1000"


def _tried_notes(tl: Timeline) -> list[str]:
    """What changed between the attempts in the window ("already tried: --disable-cuda-graph at attempt 3")."""
    from logdoctor.engines import levers as lv
    from logdoctor.timeline.config import comparable_levers

    notes = []
    known = [a for a in tl.attempts if a.config.known]
    for prev, cur in zip(known, known[1:]):
        pair = comparable_levers([prev.config, cur.config])
        if pair is None:
            continue  # nothing logged by both: no change can be told from a difference in what was logged
        before, after = pair
        for lever, new in after.items():
            old = before.get(lever)
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


UNKNOWN_TEXT = (
    "The service failed, but no rule recognises the failure and the log does not show enough to "
    "name a cause. Collect: " + "; ".join(UNKNOWN_COLLECT) + "."
)


def _unknown_evidence(a: Attempt) -> list[Evidence]:
    """Without a winning rule, the final exception of each traceback is the best evidence there is."""
    from logdoctor.verdict.evidence import quote

    quoted, _ = quote(
        a.records, [(b.final.exc_line or b.first_line, _exc_text(b)) for b in a.blocks if b.final is not None]
    )
    return [Evidence(ln, text) for ln, text in quoted][:3]


def _exc_text(b) -> str:
    s = b.final
    text = f"{s.exc_type}: {s.exc_msg}" if s.exc_type else s.exc_msg
    return text.splitlines()[0] if text else b.header


def _from_earlier(
    per_attempt: list[tuple[Attempt, list[Candidate]]], vi: int, win: Candidate
) -> tuple[Candidate, Attempt] | None:
    """A generic verdict on a restart of an unchanged configuration takes the mechanism an earlier attempt showed.
    Engines often print the telling detail only once: NCCL's WARN about the /dev/shm segment it could not grow or the
    interface it picked, before the respawn dies with a bare "unhandled system error". Same configuration (over the
    sources both attempts logged), same failure phase, same cause, a rule of a stronger tier: that rule, with its
    evidence from that attempt. Nothing carries across a changed flag."""
    from logdoctor.timeline.config import comparable_levers

    order = list(TIERS)
    if win.rule.tier not in ("generic", "fallback"):
        return None
    a = per_attempt[vi][0]
    for e, cands in reversed(per_attempt[:vi]):
        if not e.failed or e.phase != a.phase:
            continue
        pair = comparable_levers([e.config, a.config])
        if pair is None or pair[0] != pair[1]:
            continue
        better = [c for c in cands if c.cause == win.cause and order.index(c.rule.tier) < order.index(win.rule.tier)]
        if better:
            return max(better, key=lambda c: c.score), e
    return None


def _cut_like_earlier(per_attempt: list[tuple[Attempt, list[Candidate]]], vi: int) -> tuple[Candidate, Attempt] | None:
    """A restart loop whose last attempt the window cut inside its traceback: when an earlier attempt of the same
    configuration failed in the same phase with a whole traceback through the same frames (the cut one's frames
    are where that traceback starts), the loop is repeating that failure: that attempt's best rule, its evidence
    from there (the cut window lowers the confidence)."""
    from logdoctor.timeline.config import comparable_levers

    a = per_attempt[vi][0]
    cut = a.decisive.cut if a.decisive is not None else None
    fin = cut.final if cut is not None else None
    path = [(f.file, f.func) for f in fin.frames] if fin is not None else []
    if not path:
        return None
    for e, cands in reversed(per_attempt[:vi]):
        if not e.failed or e.phase != a.phase or not cands or e.decisive is None:
            continue
        pair = comparable_levers([e.config, a.config])
        if pair is None or pair[0] != pair[1]:
            continue
        if any([(f.file, f.func) for f in s.frames][: len(path)] == path for b in e.decisive.fatal for s in b.sections):
            return max(cands, key=lambda c: c.score), e
    return None


def _evidence(win: Candidate, a: Attempt, tl: Timeline) -> tuple[list[Evidence], list[str]]:
    """1-5 evidence lines, each quoted as the log shows it (logdoctor/verdict/evidence.py: a leaf may have matched only part
    of the line, e.g. the inner error of a wrapper), and the statements the leaves derived (for the explanation).
    A leaf may cite an earlier attempt's line (a GPU's Xid before a restart): that line is quoted from its attempt."""
    from logdoctor.verdict.evidence import quote

    own = {r.line for r in a.records}
    lines = {ln for ln, _ in win.hit.evidence if ln and ln not in own}
    records = a.records
    if lines:
        records = records + [
            r for b in tl.attempts if b is not a and b.start_line <= a.end_line for r in b.records if r.line in lines
        ]
    quoted, derived = quote(records, win.hit.evidence)
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


_UNIT_WORD = rxcache.compile(r"(?<![\w-])UNIT(?![\w-])")
_UNIT_NAME = rxcache.compile(r"[A-Za-z0-9][\w@.:\-]{0,254}")  # systemd's unit name characters: safe to paste in a shell


def _named(text: str, unit: str | None) -> str:
    """A command that says `UNIT` names the service's unit when the window names it (the journal field or
    systemd's own lines), so it can be pasted as it is; a name outside systemd's characters is left as UNIT."""
    if not unit or "UNIT" not in text or not _UNIT_NAME.fullmatch(unit):
        return text
    return _UNIT_WORD.sub(unit, text)


def _fill(template: str, vars_: dict) -> str:
    """Fill an explain template; a sentence that names a value the log did not show is dropped, not printed
    with a hole in it."""
    from logdoctor.matching.template import fill  # {name} only: rule text never reaches str.format (F9)

    text = fill(" ".join(template.split()), vars_, lambda _key: _MISSING)
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
