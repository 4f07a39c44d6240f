"""The fix planner: a rule's fixes (lever + operation) → concrete flag changes for the detected engine, relative
to the config in force, bounded, and never a value already in force or tried by an earlier attempt.

Every value passes `levers.check_value` (one token of the lever's type) before it becomes a FixStep: a bad literal
in a rule file is a bad rule (BadValue, exit 2, naming the rule); a bad value a rule captured from the log is never
proposed, and a note names the rule and the log line (`fix` refuses on it, exit 2: `refusals`)."""
from __future__ import annotations

from logdoctor import levers as lv
from logdoctor.diagnosis import FixStep
from logdoctor.matching.loader import Fix, Rule
from logdoctor.timeline import Attempt, Timeline

REFUSED_MARK = " refused: expected "    # in the note of a refused log-captured value (levers.BadValue's wording)


def plan(rule: Rule, captures: dict, attempt: Attempt, tl: Timeline, *, tried_extra: dict | None = None
         ) -> tuple[list[FixStep], list[str]]:
    """Return (fixes, notes). Notes say what was skipped and why ("--disable-cuda-graph already set").
    `tried_extra`: lever -> values tried in earlier attempts outside the window (the attempt history)."""
    fixes: list[FixStep] = []
    notes: list[str] = []
    engine, version = tl.engine, tl.engine_version
    cfg = attempt.config
    known = cfg.known
    for f in rule.fixes:
        if not _when(f, captures, cfg.levers, engine):
            continue
        flag = lv.flag_for(f.lever, engine, version, cfg.raw)
        if not flag:
            continue
        current = cfg.levers.get(f.lever)
        if current is None:  # the error itself may state the value in force ("Current value: mem_fraction_static=0.88")
            current = _number(captures.get(f"{f.lever}_now"))
        tried = _tried(f.lever, attempt, tl) | set((tried_extra or {}).get(f.lever, ()))
        bound = f.max if f.op in ("raise", "double") else f.min if f.op in ("lower", "halve") else None
        if f.op in ("enable", "disable"):
            want = f.op == "enable"
            if current is not None and bool(_truthy(current)) == want:
                notes.append(f"{_render(flag, want)} already in force")
                continue
            if any(_truthy(t) == want for t in tried if t is not None):
                notes.append(f"{_render(flag, want)} already tried in an earlier attempt")
                continue
            fixes.append(_step(f.lever, flag, current if current is not None else (None if not known else (not want)),
                               want, _why(f.why, captures), engine, version, cfg.raw))
            continue
        if f.op == "set":
            if f.value is None:   # "set" without a value: the flag must change, the rule cannot say to what
                fixes.append(FixStep(f.lever, flag, current, None, _why(f.why, captures)))
                continue
            value = _fill(f.value, captures, cfg.levers)
            if value is None:
                continue
            value = _checked(rule, f, value, captures, attempt, notes)
            if value is _REFUSED:
                continue
            if current is not None and str(current) == str(value):
                notes.append(f"{flag} {value} already in force")
                continue
            if str(value) in {str(t) for t in tried}:
                notes.append(f"{flag} {value} already tried")
                continue
            fixes.append(_step(f.lever, flag, current, value, _why(f.why, captures), engine, version, cfg.raw))
            continue
        if current is None:
            base = _fill(f.value, captures, cfg.levers) if f.value is not None else None
            if base is not None and f.op in ("lower", "halve", "raise"):
                new = _checked(rule, f, base, captures, attempt, notes)
                if new is _REFUSED:
                    continue
            else:
                new = None
            why = _why(f.why, captures)
            if not known:
                why += " (current value not in the window: the log starts after launch)"
            fixes.append(_step(f.lever, flag, None, new, why, engine, version, cfg.raw))
            continue
        new = lv.step(f.lever, current, f.op, avoid=tried | {current}, bound=bound)
        if new is None:
            notes.append(f"{flag} is already at its bound ({current})")
            continue
        new = _checked(rule, f, new, captures, attempt, notes)
        if new is _REFUSED:
            continue
        fixes.append(_step(f.lever, flag, current, new, _why(f.why, captures), engine, version, cfg.raw))
    return fixes, notes


_REFUSED = object()


def _checked(rule: Rule, f: Fix, value, captures: dict, attempt: Attempt, notes: list[str]):
    """`value` as the lever's type (levers.check_value), or _REFUSED with a note when it came from the log (a
    capture or the config in force); a rule's own literal that fails raises BadValue: the rule file is wrong."""
    key = f.value[1:-1] if isinstance(f.value, str) and f.value.startswith("{") and f.value.endswith("}") else None
    if key is None:
        return lv.check_value(f.lever, value, source=f"rule {rule.id}")
    raw = captures.get(key)
    line = _line_of(attempt, str(raw)) if raw is not None else None
    where = f"rule {rule.id}, {{{key}}} from the log" + (f" (line {line})" if line else "")
    try:
        return lv.check_value(f.lever, value, source=where)
    except lv.BadValue as e:
        notes.append(str(e))
        return _REFUSED


def _line_of(attempt: Attempt, text: str) -> int | None:
    return next((r.line for r in attempt.records if text and text in r.msg), None)


def refusals(notes: list[str]) -> list[str]:
    """The notes that say a log-captured fix value was refused (`fix` exits 2 on them)."""
    return [n for n in notes if REFUSED_MARK in n]


def _step(lever, flag, from_, to, why, engine, version, raw) -> FixStep:
    """A FixStep in the flag's own terms (design.md: `to` is the new value, true for a switch). A lever value that
    a switch expresses (vLLM torch_compile=False is the switch -O0) becomes true/false for that switch."""
    text = ""
    if to is not None:
        tokens = lv.render(lever, engine, to, version=version, config=raw)
        if tokens == []:
            text = f"remove {flag}"
            to, from_ = False, (True if from_ is not None else None)
        elif tokens == [flag]:
            text = flag
            was = lv.render(lever, engine, from_, version=version, config=raw) if from_ is not None else None
            to, from_ = True, (None if was is None else was == [flag])
        elif tokens:
            text = " ".join(tokens)
    return FixStep(lever, flag, from_, to, why, text)


def _number(v):
    if v is None:
        return None
    try:
        x = float(str(v))
    except ValueError:
        return None
    return int(x) if x.is_integer() and "." not in str(v) else x


def _tried(lever: str, attempt: Attempt, tl: Timeline) -> set:
    out = set()
    for a in tl.attempts:
        if a.index < attempt.index:
            v = a.config.levers.get(lever)
            if v is not None:
                out.add(v)
    return out


def _when(f: Fix, captures: dict, levers: dict, engine: str | None = None) -> bool:
    if not f.when:
        return True
    for k, v in f.when.items():
        if k == "engine" and engine not in (v if isinstance(v, list) else [v]):
            return False   # engine-specific values, e.g. attention_backend triton (SGLang) / TRITON_ATTN (vLLM)
        if k == "captured" and v not in captures:
            return False
        if k == "lever_set" and levers.get(v) is None:
            return False
        if k == "lever_unset" and levers.get(v) is not None:
            return False
    return True


def _fill(value, captures: dict, levers: dict):
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        key = value[1:-1]
        v = captures.get(key, levers.get(key))
        if v is None:
            return None
        try:
            return int(str(v).replace(",", ""))
        except ValueError:
            try:
                return float(v)
            except ValueError:
                return v
    return value


def _why(text: str, captures: dict) -> str:
    from logdoctor.matching.template import fill  # {name} only: rule text never reaches str.format (F9)
    return fill(text, captures, lambda _key: "?")


def _truthy(v) -> bool:
    return v is True or str(v).lower() in ("true", "1", "yes", "disabled", "none")


def _render(flag: str, value) -> str:
    return flag if value is True else f"{flag} (off)" if value is False else f"{flag} {value}"


def render_fix(f: FixStep) -> str:
    if f.text.startswith("remove "):
        return f.text
    if f.to is True:
        return f"add {f.text or f.flag}"
    if f.text and f.from_ is not None and f.text.startswith(f.flag + " "):
        return f"{f.flag} {f.from_} → {f.text[len(f.flag):].strip()}"
    if f.text:
        return f.text
    if f.to is False:
        return f"remove {f.flag}"
    if f.to is None:
        return f"change {f.flag}"
    if f.from_ is None:
        return f"{f.flag} {f.to}"
    return f"{f.flag} {f.from_} → {f.to}"
