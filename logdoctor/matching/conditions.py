"""Evaluate a rule's `match` tree over one attempt. Leaves look at the parsed structure, not at raw text only:
the inner vs. wrapper exception of a chained traceback, frames, the phase reached, the flags in force, kernel Xid
codes, systemd's verdict, which ranks failed. A leaf returns evidence lines and named captures, or None."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from logdoctor.blocks import Block
from logdoctor.limits import MATCH_CAP
from logdoctor.records import KERNEL, META, SERVICE, SYSTEMD, Record
from logdoctor.timeline import PHASE_INDEX, Attempt, Timeline, is_fatal_block

# Xid classes (engines.md §E): GPU/driver/interconnect faults vs. usually the application's own bug
XID_HARDWARE = {48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140, 154}
XID_APP = {13, 31, 43, 45, 8, 109}
_WRAPPED = re.compile(r"^(?:Capture cuda graph failed|Fail when using backend: \w+ for prefill runner|.*? failed): (?P<inner>.+)$", re.S)


@dataclass
class Hit:
    evidence: list[tuple[int, str]] = field(default_factory=list)
    captures: dict[str, object] = field(default_factory=dict)
    leaves: int = 0

    def merge(self, other: "Hit") -> None:
        self.evidence += other.evidence
        for k, v in other.captures.items():
            self.captures.setdefault(k, v)
        self.leaves += other.leaves


@dataclass
class Context:
    """Everything a leaf may look at, computed once per attempt."""

    timeline: Timeline
    attempt: Attempt
    engine: str
    levers: dict
    fatal: list[Block]
    service: list[Record]
    kernel: list[Record]
    systemd: list[Record]
    errors: list[tuple[int, str]]      # decisive exception texts "Type: message" (every section) + ERROR lines
    inner: list[tuple[int, str]]       # root causes: first section of a chain, and X of "... failed: X"
    wrapper: list[tuple[int, str]]     # the outermost exception of each fatal traceback

    @classmethod
    def build(cls, tl: Timeline, a: Attempt) -> "Context":
        fatal = [b for b in a.blocks if is_fatal_block(b)]
        service = [r for r in a.records if r.transport == SERVICE]
        kernel = [r for r in a.records if r.transport == KERNEL or (r.transport == SERVICE and "NVRM:" in r.msg)]
        systemd = [r for r in a.records if r.transport == SYSTEMD]
        errors, inner, wrapper = [], [], []
        for b in fatal:
            for i, s in enumerate(b.sections):
                text = f"{s.exc_type}: {s.exc_msg}" if s.exc_type else s.exc_msg
                errors.append((s.exc_line or b.first_line, text))
            if b.sections:
                root, fin = b.sections[0], b.sections[-1]
                inner.append((root.exc_line or b.first_line, f"{root.exc_type}: {root.exc_msg}" if root.exc_type else root.exc_msg))
                wrapper.append((fin.exc_line or b.first_line, f"{fin.exc_type}: {fin.exc_msg}" if fin.exc_type else fin.exc_msg))
                for s in b.sections:
                    w = _WRAPPED.match(s.exc_msg or "")
                    if w:
                        inner.append((s.exc_line or b.first_line, w.group("inner")))
        in_blocks = {r.line for b in a.blocks for r in b.records}
        for r in service:
            if r.line in in_blocks:
                continue
            if r.level in ("ERROR", "CRITICAL") or re.match(r"^[A-Za-z_][\w.]*(?:Error|Exception): ", r.msg):
                errors.append((r.line, r.msg))
        levers = dict(a.config.levers)
        return cls(tl, a, tl.engine, levers, fatal, service, kernel, systemd, errors, inner, wrapper)


def evaluate(cond, ctx: Context, compiled: dict) -> Hit | None:
    """True-ish (a Hit) when the condition holds."""
    if isinstance(cond, list):
        return evaluate({"all": cond}, ctx, compiled)
    hit = Hit()
    scope = cond.get("scope")
    for key, val in cond.items():
        if key in ("scope", "rank", "capture"):
            continue
        if key == "all":
            for c in val:
                h = evaluate(c, ctx, compiled)
                if h is None:
                    return None
                hit.merge(h)
        elif key == "any":
            best = None
            for c in val:
                h = evaluate(c, ctx, compiled)
                if h is not None and (best is None or h.leaves > best.leaves):
                    best = h
            if best is None:
                return None
            hit.merge(best)
        elif key == "none":
            for c in val:
                if evaluate(c, ctx, compiled) is not None:
                    return None
        elif key == "not":
            if evaluate(val, ctx, compiled) is not None:
                return None
        else:
            h = _LEAF[key](val, ctx, compiled, scope)
            if h is None:
                return None
            h.leaves = max(h.leaves, 1)
            hit.merge(h)
    return hit


def _rx(p, compiled):
    key = str(p)
    rx = compiled.get(key)
    if rx is None:
        try:
            rx = compiled[key] = re.compile(key)
        except re.error as exc:  # only reachable for a rule that skipped lint: say which pattern
            from logdoctor.errors import RuleError
            raise RuleError(f"bad regex {key!r}: {exc}") from None
    return rx


def _search_lines(pats, lines, compiled, limit=3):
    pats = pats if isinstance(pats, list) else [pats]
    hit = Hit()
    for p in pats:
        rx = _rx(p, compiled)
        found = False
        for ln, text in lines:
            m = rx.search(text, 0, MATCH_CAP)   # the cap bounds a near-miss line's cost (docs/reliability.md)
            if m:
                hit.evidence.append((ln, text))
                for k, v in m.groupdict().items():
                    if v is not None:
                        hit.captures.setdefault(k, v)
                found = True
                if len(hit.evidence) >= limit:
                    break
        if found:
            return hit
    return None


def _scoped(ctx: Context, scope) -> list[Record]:
    recs = ctx.service
    fl = ctx.attempt.fatal_line
    if scope == "before_fatal" and fl:
        return [r for r in recs if r.line <= fl]
    if scope == "after_fatal" and fl:
        return [r for r in recs if r.line >= fl]
    return recs


def leaf_message(val, ctx, compiled, scope):
    return _search_lines(val, [(r.line, r.msg) for r in _scoped(ctx, scope)], compiled)


def leaf_error(val, ctx, compiled, scope):
    return _search_lines(val, ctx.errors, compiled)


def leaf_inner(val, ctx, compiled, scope):
    return _search_lines(val, ctx.inner, compiled)


def leaf_wrapper(val, ctx, compiled, scope):
    return _search_lines(val, ctx.wrapper, compiled)


def leaf_exception(val, ctx, compiled, scope):
    pats = val if isinstance(val, list) else [val]
    for b in ctx.fatal:
        for s in b.sections:
            t = s.exc_type or ""
            for p in pats:
                rx = _rx(p, compiled)
                if t and (rx.fullmatch(t) or rx.fullmatch(t.rsplit(".", 1)[-1])):
                    return Hit([(s.exc_line or b.first_line, f"{t}: {s.exc_msg}".splitlines()[0])])
    return None


def leaf_frame(val, ctx, compiled, scope):
    pats = val if isinstance(val, list) else [val]
    for b in ctx.fatal:
        for s in b.sections:
            for f in reversed(s.frames):
                for p in pats:
                    if _rx(p, compiled).search(f.func):
                        ln = next((r.line for r in b.records if f.file in r.msg and f"line {f.line}" in r.msg), b.first_line)
                        return Hit([(ln, f"{f.func} ({f.basename}:{f.line}) {f.code}".strip())])
    return None


def leaf_file(val, ctx, compiled, scope):
    pats = val if isinstance(val, list) else [val]
    for b in ctx.fatal:
        for s in b.sections:
            for f in s.frames:
                for p in pats:
                    if _rx(p, compiled).search(f.file):
                        return Hit([(b.first_line, f"{f.basename}:{f.line} in {f.func}")])
    return None


def leaf_phase(val, ctx, compiled, scope):
    vals = val if isinstance(val, list) else [val]
    return Hit() if ctx.attempt.phase in vals else None


def _reached(ctx) -> int:
    idx = [PHASE_INDEX[e.phase] for e in ctx.attempt.events if e.kind == "marker" and e.phase in PHASE_INDEX]
    return max(idx) if idx else -1


def leaf_phase_reached(val, ctx, compiled, scope):
    return Hit() if _reached(ctx) >= PHASE_INDEX[val] else None


def leaf_phase_not_reached(val, ctx, compiled, scope):
    return Hit() if _reached(ctx) < PHASE_INDEX[val] else None


def leaf_flag(val, ctx, compiled, scope):
    name = val.get("lever") or val.get("field")
    cur = ctx.levers.get(name) if "lever" in val else ctx.attempt.config.raw.get(name)
    if "present" in val:
        ok = (cur is not None) == bool(val["present"])
        return Hit(captures={name: cur}) if ok else None
    if cur is None:
        return None
    for op, ref in val.items():
        if op in ("lever", "field"):
            continue
        try:
            if op in ("is", "eq") and not _eq(cur, ref):
                return None
            if op == "ne" and _eq(cur, ref):
                return None
            if op == "in" and not any(_eq(cur, x) for x in ref):
                return None
            if op == "gte" and not float(cur) >= float(ref):
                return None
            if op == "lte" and not float(cur) <= float(ref):
                return None
            if op == "gt" and not float(cur) > float(ref):
                return None
            if op == "lt" and not float(cur) < float(ref):
                return None
        except (TypeError, ValueError):
            return None
    line = ctx.attempt.config.line
    return Hit([(line, f"{name} = {cur}")] if line and val.get("evidence") else [], captures={name: cur})


def _eq(a, b) -> bool:
    if isinstance(b, bool) or isinstance(a, bool):
        return _truthy(a) == _truthy(b)
    return str(a).lower() == str(b).lower()


def _truthy(v) -> bool:
    return v is True or str(v).lower() in ("true", "1", "yes", "disabled")


def leaf_xid(val, ctx, compiled, scope):
    # this attempt's kernel lines and earlier ones (a GPU that died before is still dead), never later ones
    codes = ctx.attempt.kernel + [e for a in ctx.timeline.attempts for e in a.kernel
                                  if a is not ctx.attempt and e.line <= ctx.attempt.end_line]
    if isinstance(val, str):
        want = XID_HARDWARE if val == "hardware" else XID_APP if val == "app" else set()
    else:
        want = set(val if isinstance(val, list) else [val])
    for e in codes:
        if e.name == "xid" and e.values.get("xid") in want:
            return Hit([(e.line, e.text)], captures={"xid": e.values["xid"], "pci": e.values.get("pci")})
    return None


def leaf_kernel(val, ctx, compiled, scope):
    return _search_lines(val, [(r.line, r.msg) for r in ctx.kernel], compiled)


def leaf_systemd(val, ctx, compiled, scope):
    sd = ctx.attempt.systemd
    for k, want in val.items():
        have = sd.get(k)
        if k == "timeout":
            if bool(want) != ("timeout" in sd or sd.get("result") == "timeout"):
                return None
            continue
        if have is None or str(have) != str(want):
            return None
    ev = [(e.line, e.text) for e in ctx.attempt.events if e.kind == "systemd" and e.name in ("exit", "result", "timeout")]
    return Hit(ev[:2])


def leaf_exit_code(val, ctx, compiled, scope):
    want = {int(v) for v in (val if isinstance(val, list) else [val])}
    for e in ctx.attempt.events:
        code = e.values.get("exit_code") if e.kind == "death" else None
        if code is not None and int(float(code)) in want:
            return Hit([(e.line, e.text)], captures={"exit_code": int(float(code))})
    sd = ctx.attempt.systemd
    # an engine death line that names its own exit code (e.g. -6 from an abort) outranks systemd's verdict on the
    # main process: SGLang's launcher SIGKILLs its own tree after "Received sigquit", so status=9/KILL follows any
    # child failure
    if any(e.kind == "death" and e.values.get("exit_code") is not None for e in ctx.attempt.events):
        return None
    if sd.get("code") == "killed" and sd.get("status") and -int(sd["status"]) in want:
        ev = [(e.line, e.text) for e in ctx.attempt.events if e.kind == "systemd" and e.name == "exit"]
        return Hit(ev[:1], captures={"exit_code": -int(sd["status"])})
    return None


# front-end processes that only echo a worker's error (vLLM's APIServer / EngineCore with TP>1, the launcher)
_FRONT_END = re.compile(r"^(?:main|APIServer\w*|EngineCore\w*|LLMEngine\w*|Engine\w*)$")


def leaf_ranks_failed(val, ctx, compiled, scope):
    ranks = ctx.attempt.ranks
    real = [r for r in ranks.values() if not _FRONT_END.match(r.rank)]
    if len(real) < 2:   # a single worker (vLLM TP=1 runs the model in EngineCore): count every process
        real = [r for r in ranks.values() if r.rank != "main"]
    died = [r for r in real if r.died]
    if val.get("alone"):
        if len(died) != 1 or len(real) < 2:
            return None
        d = died[0]
        others = [r for r in real if r is not d]
        # the others were fine: none died with an error of their own
        if any(r.died for r in others):
            return None
        return Hit([(d.death_line, f"{d.rank} failed alone: {d.error}")], captures={"failed_rank": d.rank})
    if "min" in val and len(died) < int(val["min"]):
        return None
    return Hit()


def leaf_attempts(val, ctx, compiled, scope):
    atts = ctx.timeline.attempts
    failed = [a for a in atts if a.failed]
    if "min" in val and len(atts) < int(val["min"]):
        return None
    if "failed_min" in val and len(failed) < int(val["failed_min"]):
        return None
    if val.get("configs_differ"):
        cfgs = {tuple(sorted((k, str(v)) for k, v in a.config.levers.items())) for a in failed if a.config.known}
        if len(cfgs) < 2:
            return None
    if val.get("phases_differ"):
        if len({a.phase for a in failed}) < 2:
            return None
    return Hit()


def leaf_death(val, ctx, compiled, scope):
    for e in ctx.attempt.events:
        if e.kind != "death":
            continue
        h = _search_lines(val, [(e.line, f"{e.name} {e.text}")], compiled)  # matched as "name text"
        if h is not None:
            h.evidence = [(e.line, e.text)] if e.text else []
            return h
    return None


def leaf_engine(val, ctx, compiled, scope):
    vals = val if isinstance(val, list) else [val]
    return Hit() if ctx.engine in vals else None


def leaf_level(val, ctx, compiled, scope):
    return Hit() if any(r.level == val for r in ctx.service) else None


def leaf_hint(val, ctx, compiled, scope):
    lines = [(b.first_line, h) for b in ctx.fatal for s in b.sections for h in s.hints]
    return _search_lines(val, lines, compiled)


def leaf_env(val, ctx, compiled, scope):
    env = ctx.attempt.config.env
    for k, want in val.items():
        if k not in env:
            return None
        if want not in (True, None) and not re.search(str(want), env[k]):
            return None
    return Hit()


def leaf_reading(val, ctx, compiled, scope):
    """A timeline reading compared with a number: {name: static_left, lt: 0.05} (absent reading → no match)."""
    cur = ctx.attempt.readings.get(val.get("name"))
    if not isinstance(cur, (int, float)):
        return None
    for op, ref in val.items():
        if op == "name":
            continue
        ok = {"lt": cur < ref, "lte": cur <= ref, "gt": cur > ref, "gte": cur >= ref}.get(op)
        if not ok:
            return None
    return Hit(captures={val["name"]: cur})


_LEAF = {
    "message": leaf_message, "error": leaf_error, "inner": leaf_inner, "wrapper": leaf_wrapper,
    "exception": leaf_exception, "frame": leaf_frame, "file": leaf_file, "phase": leaf_phase,
    "phase_reached": leaf_phase_reached, "phase_not_reached": leaf_phase_not_reached, "flag": leaf_flag,
    "xid": leaf_xid, "kernel": leaf_kernel, "systemd": leaf_systemd, "exit_code": leaf_exit_code,
    "ranks_failed": leaf_ranks_failed, "attempts": leaf_attempts, "death": leaf_death, "engine": leaf_engine,
    "level": leaf_level, "hint": leaf_hint, "env": leaf_env, "reading": leaf_reading,
}
