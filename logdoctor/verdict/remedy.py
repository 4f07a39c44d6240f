"""The fix planner: a rule's fixes (lever + operation) → concrete flag changes for the detected engine, relative
to the config in force, bounded, and never a value already in force or tried by an earlier attempt.

Every value passes `levers.check_value` (one token of the lever's type) before it becomes a FixStep: a bad literal
in a rule file is a bad rule (BadValue, exit 2, naming the rule); a bad value a rule captured from the log is never
proposed, and a note names the rule and the log line (`fix` refuses on it, exit 2: `refusals`)."""

from __future__ import annotations

import re

from logdoctor.core.lean import dataclass, field
from logdoctor.engines import levers as lv
from logdoctor.matching.loader import Fix, Rule
from logdoctor.timeline.build import Attempt, Timeline
from logdoctor.verdict.diagnosis import FixStep

REFUSED_MARK = " refused: expected "  # in the note of a refused log-captured value (levers.BadValue's wording)


def plan(
    rule: Rule, captures: dict, attempt: Attempt, tl: Timeline, *, tried_extra: dict | None = None
) -> tuple[list[FixStep], list[str]]:
    """Return (fixes, notes). Notes say what was skipped and why ("--disable-cuda-graph already set").
    `tried_extra`: lever -> values tried in earlier attempts outside the window (the attempt history)."""
    p = _Planning(rule, captures, attempt, tl.engine, tl.engine_version, bracket=_bracket(attempt, tl))
    fixes: list[FixStep] = []
    cfg = attempt.config
    for f in rule.fixes:
        if not _when(f, captures, cfg.levers, p.engine):
            continue
        flag = lv.flag_for(f.lever, p.engine, p.version, cfg.raw)
        if not flag:
            why = lv.missing_flag_note(f.lever, p.engine, p.version)
            if why and why not in p.notes:
                p.notes.append(why)
            continue
        current = cfg.levers.get(f.lever)
        if current is None:  # the error itself may state the value in force ("Current value: mem_fraction_static=0.88")
            current = _number(captures.get(f"{f.lever}_now"))
        tried = _tried(f.lever, attempt, tl) | set((tried_extra or {}).get(f.lever, ()))
        step = p.fix(f, flag, current, tried)
        if step is not None:
            fixes.append(step)
    return fixes, p.notes


@dataclass
class _Planning:
    """One plan(): the rule and what the attempt says, and the notes on every fix skipped. Each `_…` method turns
    one rule fix of its kind of operation into a FixStep, or None (with a note when the reason is worth saying)."""

    rule: Rule
    captures: dict
    attempt: Attempt
    engine: str
    version: str | None
    bracket: dict = field(default_factory=dict)  # lever -> (above, below, why): bounds earlier attempts set
    notes: list[str] = field(default_factory=list)

    def fix(self, f: Fix, flag: str, current, tried: set) -> FixStep | None:
        if f.op in ("enable", "disable"):
            return self._switch(f, flag, current, tried)
        if f.op == "set":
            return self._set(f, flag, current, tried)
        if current is None:
            return self._without_current(f, flag)
        return self._relative(f, flag, current, tried)

    def _step(self, f: Fix, flag: str, from_, to, why: str) -> FixStep:
        return _step(f.lever, flag, from_, to, why, self.engine, self.version, self.attempt.config.raw)

    def _checked(self, f: Fix, value):
        return _checked(self.rule, f, value, self.captures, self.attempt, self.notes)

    def _switch(self, f: Fix, flag: str, current, tried: set) -> FixStep | None:
        """enable/disable: a switch, unless it is already in force or an earlier attempt tried it."""
        want = f.op == "enable"
        if current is not None and bool(_truthy(current)) == want:
            self.notes.append(f"{_render(flag, want)} already in force")
            return None
        if any(_truthy(t) == want for t in tried if t is not None):
            self.notes.append(f"{_render(flag, want)} already tried in an earlier attempt")
            return None
        from_ = current if current is not None else (None if not self.attempt.config.known else (not want))
        return self._step(f, flag, from_, want, _why(f.why, self.captures))

    def _set(self, f: Fix, flag: str, current, tried: set) -> FixStep | None:
        """set: the rule's value (a literal or a capture), unless it is in force or tried."""
        if f.value is None:  # "set" without a value: the flag must change, the rule cannot say to what
            return FixStep(f.lever, flag, current, None, _why(f.why, self.captures))
        value = _fill(f.value, self.captures, self.attempt.config.levers)
        if value is None:
            return None
        value = self._checked(f, value)
        if value is _REFUSED:
            return None
        if current is not None and str(current) == str(value):
            self.notes.append(f"{flag} {value} already in force")
            return None
        if str(value) in {str(t) for t in tried}:
            self.notes.append(f"{flag} {value} already tried")
            return None
        return self._step(f, flag, current, value, _why(f.why, self.captures))

    def _without_current(self, f: Fix, flag: str) -> FixStep | None:
        """raise/lower/halve/double with no value in force to start from: the rule's own value when it gives one."""
        base = _fill(f.value, self.captures, self.attempt.config.levers) if f.value is not None else None
        if base is not None and f.op in ("lower", "halve", "raise"):
            new = self._checked(f, base)
            if new is _REFUSED:
                return None
        else:
            new = None
        why = _why(f.why, self.captures)
        if not self.attempt.config.known:
            why += " (current value not in the window: the log starts after launch)"
        return self._step(f, flag, None, new, why)

    def _bound(self, f: Fix, up: bool, current) -> tuple[float | None, str, str]:
        """The rule's bound tightened by the earlier attempts' bracket: (bound, why it caps a raise, why no move is
        left at all)."""
        bound = f.max if up else f.min if f.op in ("lower", "halve") else None
        above, below, why = self.bracket.get(f.lever, (None, None, ""))
        capped = ""
        if up and below is not None:  # a value an earlier attempt failed at from the other side caps the raise
            bound = below - _STEP if bound is None else min(bound, below - _STEP)
            capped = why if bound == below - _STEP else ""
        elif not up and above is not None:
            bound = above + _STEP if bound is None else max(bound, above + _STEP)
        edge = (above if not up else below) is not None and bound is not None and current is not None
        blocked = why if edge and ((up and bound <= current) or (not up and bound >= current)) else ""
        return bound, capped, blocked

    def _relative(self, f: Fix, flag: str, current, tried: set) -> FixStep | None:
        """raise/lower/halve/double from the value in force, within the rule's bound, to a value not tried."""
        up = f.op in ("raise", "double")
        bound, capped, blocked = self._bound(f, up, current)
        if blocked:
            self.notes.append(f"{flag} not moved from {current}: {blocked}")
            return None
        # a raise with a value: the least that can work, from the log's own numbers (a reading such as
        # mem_fraction_needed); a smaller step would fail the same way
        need = (
            _number(_fill(f.value, self.captures, self.attempt.config.levers)) if up and f.value is not None else None
        )
        new = lv.step(f.lever, current, f.op, avoid=tried | {current}, bound=bound, at_least=need)
        if new is None:
            if need is not None and bound is not None and need > bound:
                cap = f"{bound:g}, the most it can be ({capped})" if capped else f"the {bound:g} cap"
                self.notes.append(f"{flag} would have to reach {need:g} for this to work, above {cap}")
            else:
                self.notes.append(f"{flag} is already at its bound ({current})")
            return None
        new = self._checked(f, new)
        if new is _REFUSED:
            return None
        return self._step(f, flag, current, new, _why(f.why, self.captures))


_REFUSED = object()
_STEP = 0.01  # a fraction flag's resolution: a bound an earlier attempt failed at is excluded by one step

# the phases a failure at a static fraction says "too little for the pool" (raise it) or "too little left outside
# it" (lower it): the KV/state pool not sized, or graphs, warm-up and the first batches out of memory
_POOL_PHASES = ("memory_pool",)
_HEADROOM_PHASES = ("graph_capture", "warmup")
# the levers that must match for an earlier attempt's failure at some fraction to bound this one's
_SAME_DEMAND = ("context_length", "max_running", "tp_size", "pp_size", "kv_cache_dtype", "graph_max_bs", "graphs_off")


# what an attempt's errors say when memory, not a fault, ended it (a GPU that fell off the bus in the pool phase
# bounds nothing)
_OOM = re.compile(r"out of memory|OutOfMemoryError|Not enough memory|Not enough space|No available memory|KV cache")


def _out_of_memory(a: Attempt) -> bool:
    d = a.decisive
    return d is not None and any(_OOM.search(text) for _ln, text in d.errors + d.inner)


def _bracket(attempt: Attempt, tl: Timeline) -> dict:
    """mem_fraction bounds from the earlier attempts of this window with the same demand (context, running requests,
    parallelism, graphs): one that failed sizing its pool at fraction f means this one needs more than f; one that
    failed outside the pool (graph capture, warm-up) at f means less than f. A raise or a lower that would cross
    such a bound repeats a failure already seen."""
    above = below = None
    whys = []
    mine = attempt.config.levers
    for a in tl.attempts:
        if a.index >= attempt.index or not a.failed:
            continue
        f = _number(a.config.levers.get("mem_fraction"))
        if f is None or any(a.config.levers.get(k) != mine.get(k) for k in _SAME_DEMAND) or not _out_of_memory(a):
            continue
        if a.phase in _POOL_PHASES:
            above = f if above is None else max(above, f)
            whys.append(f"attempt {a.index + 1} could not size its pool at {f}")
        elif a.phase in _HEADROOM_PHASES:
            below = f if below is None else min(below, f)
            whys.append(f"attempt {a.index + 1} ran out of memory outside the pool ({a.phase}) at {f}")
    if above is None and below is None:
        return {}
    return {"mem_fraction": (above, below, "; ".join(whys))}


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
            return False  # engine-specific values, e.g. attention_backend triton (SGLang) / TRITON_ATTN (vLLM)
        if k == "captured" and v not in captures:
            return False
        if k == "lever_set" and levers.get(v) is None:
            return False
        if k == "lever_unset" and levers.get(v) is not None:
            return False
        if k == "lever_on" and not (levers.get(v) is True or str(levers.get(v)).lower() in ("true", "1", "yes")):
            return False  # a switch in force (torch.compile on): a fix that turns it off
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
        return f"{f.flag} {f.from_} → {f.text[len(f.flag) :].strip()}"
    if f.text:
        return f.text
    if f.to is False:
        return f"remove {f.flag}"
    if f.to is None:
        return f"change {f.flag}"
    if f.from_ is None:
        return f"{f.flag} {f.to}"
    return f"{f.flag} {f.from_} → {f.to}"
