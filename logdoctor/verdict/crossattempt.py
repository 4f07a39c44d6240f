"""Reasoning across attempts and hosts: the window's attempts plus the attempt history (history.py).

One log shows one failure; a deploy loop shows a sequence. This module turns a Timeline + Diagnosis into history
rows, feeds the values already tried for this unit on this host to the fix planner, and escalates to a suspected
hardware fault when the sequence says that flags have stopped mattering:

* regression: the previous attempt's suggested fix was applied and the service now fails at the same or an earlier
  phase (a same-phase failure with the same cause is not a regression: the fix went the right way, not far enough);
* no flag explains it: an earlier attempt on this host got past the phase this one died in, and every lever that
  differs between the two acts only in later phases (LEVER_PHASE).

Causes that come from outside the GPUs (a busy port, host RAM, a missing model, a bad flag value, an old driver)
never escalate. A healthy start of the same unit and model on another host with the same or a larger configuration
is reported as evidence.
"""

from __future__ import annotations

from collections.abc import Callable

from logdoctor.core.lean import dataclass, field
from logdoctor.core.records import KERNEL
from logdoctor.history import AttemptRow
from logdoctor.timeline.attempts import outcome as attempt_outcome
from logdoctor.timeline.build import PHASE_INDEX, Attempt, Timeline
from logdoctor.verdict import confidence as cf
from logdoctor.verdict import signature as failure
from logdoctor.verdict.diagnosis import Amendment, Diagnosis

# causes that depend on things outside the host's GPUs: sequences of these never point at the hardware
EXTERNAL_CAUSES = frozenset(
    ("port_in_use", "host_oom", "model_load_error", "config_invalid", "kernel_arch_mismatch", "startup_timeout")
)
# the earliest phase in which a lever can change what happens (unknown levers: "launch", i.e. anywhere)
LEVER_PHASE = {
    "tp_size": "launch",
    "pp_size": "launch",
    "ep_size": "launch",
    "port": "launch",
    "trust_remote_code": "launch",
    "context_length": "launch",
    "speculative_algorithm": "launch",
    "nccl_port": "dist_init",
    "dist_init_addr": "dist_init",
    "custom_all_reduce_off": "dist_init",
    "quantization": "weight_load",
    "dtype": "weight_load",
    "cpu_offload": "weight_load",
    "attention_backend": "kernel_init",
    "mem_fraction": "memory_pool",
    "max_running": "memory_pool",
    "prefill_chunk": "memory_pool",
    "max_prefill_tokens": "memory_pool",
    "max_total_tokens": "memory_pool",
    "kv_cache_dtype": "memory_pool",
    "mamba_ratio": "memory_pool",
    "max_mamba_cache": "memory_pool",
    "mamba_strategy": "memory_pool",
    "prefix_cache_off": "memory_pool",
    "graphs_off": "graph_capture",
    "graph_max_bs": "graph_capture",
    "piecewise_graph_off": "graph_capture",
    "prefill_graph_max": "graph_capture",
    "torch_compile": "graph_capture",
    "torch_compile_max_bs": "graph_capture",
}
# levers where a higher value asks more of the GPU (for "came up elsewhere with the same or a larger config")
DEMAND_LEVERS = (
    "context_length",
    "max_running",
    "prefill_chunk",
    "max_prefill_tokens",
    "max_total_tokens",
    "graph_max_bs",
    "mem_fraction",
)
HOST_CHECKS = (
    "nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER",
    "journalctl -k -b | grep -E 'NVRM: Xid|fallen off'",
    "dcgmi diag -r 2",
)
# the fleet circuit breaker: the same hardware verdict (cause and rule) recorded on at least BREAKER_MIN_HOSTS hosts
# within BREAKER_WINDOW_S seconds reads as a software or driver cause (a release, an image, a driver update) rather
# than that many failing GPUs (NVSentinel's lesson); the verdict's confidence is capped at BREAKER_CONFIDENCE and no
# action says to drain a host
BREAKER_MIN_HOSTS = 4
BREAKER_WINDOW_S = 6 * 3600
BREAKER_CONFIDENCE = cf.BREAKER_CAP


@dataclass
class Review:
    """What the history added to a verdict (Diagnosis.history in JSON)."""

    host: str
    unit: str
    attempts_here: int = 0  # earlier attempts of this unit on this host (window + history)
    tried: dict = field(default_factory=dict)  # lever -> values already tried here
    escalation: str | None = None  # the history rule that escalated, if any
    reason: str = ""
    healthy_elsewhere: list = field(default_factory=list)
    fleet: dict | None = None  # the circuit breaker, when it tripped: {"rule", "hosts", "window_s"}
    amendments: list[Amendment] = field(default_factory=list)  # what it changes in the verdict, in order

    def to_dict(self) -> dict:
        return {
            "host": self.host,
            "unit": self.unit,
            "attempts_here": self.attempts_here,
            "tried": {k: sorted(v, key=str) for k, v in self.tried.items()},
            "escalation": self.escalation,
            "reason": self.reason,
            "healthy_elsewhere": self.healthy_elsewhere,
            "fleet": self.fleet,
        }


# --------------------------------------------------------------------------------------------------------------
# attempts → rows


def _sha256(data: bytes):
    """hashlib.sha256 from the interpreter's builtin module: the same digest without loading OpenSSL's _hashlib
    (~10 ms of the start-up of every explain that keeps the attempt history)."""
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.11
        except ImportError:  # pragma: no cover - an interpreter without the builtin modules
            from hashlib import sha256
    return sha256(data)


def _sha1(data: bytes):
    """hashlib.sha1 (a fingerprint, not security) from the builtin module; see `_sha256`."""
    try:
        from _sha1 import sha1
    except ImportError:  # pragma: no cover
        from hashlib import sha1
    return sha1(data, usedforsecurity=False)


def unit_of(tl: Timeline, hint: str | None = None) -> str:
    """The unit the history keys this service by: the caller's (`--unit`, mangled as journald names units), else
    the one the timeline named (timeline/units.py, the one home of "which unit is the engine")."""
    if hint:
        from logdoctor.input.sources.journal import mangle_unit

        return mangle_unit(hint)
    return tl.unit or ""


def host_of(a: Attempt, hint: str | None = None) -> str:
    if hint:
        return hint
    return next((r.host for r in a.records if r.host), "") or ""


def attempt_key(host: str, unit: str, a: Attempt) -> str:
    """From the attempt's own beginning: the same attempt read again (or read later, grown) gets the same key.

    Its first 25 lines carry their times; when they carry none, they do not tell two attempts apart (two
    timestamp-less logs can share a beginning and end differently), so the key then hashes all of the attempt's
    lines: different attempts never share a key (a grown timestamp-less attempt is recorded as a new one)."""
    h = _sha256(f"{host}\0{unit}\0".encode())
    n = 0
    timed = False
    for r in a.records:
        if r.transport == KERNEL or not r.msg.strip():
            continue
        timed = timed or r.ts is not None
        if n < 25:
            h.update(((r.ts.isoformat() if r.ts else "") + "\0" + r.msg + "\n").encode("utf-8", "replace"))
        elif timed:
            break
        else:
            h.update((r.msg + "\n").encode("utf-8", "replace"))
        n += 1
    if not timed:
        h.update(b"\0untimed")
    return h.hexdigest()[:32]


def signature(a: Attempt) -> str | None:
    """A short hash of the decisive error with numbers, addresses and paths taken out (same error → same hash);
    `verdict.signature` defines "the same failure" for the history and triage alike."""
    return failure.history_key(a)


def _config(a: Attempt) -> dict:
    return {k: v for k, v in a.config.levers.items() if isinstance(v, (int, float, str, bool))}


def rows_for(tl: Timeline, d: Diagnosis, *, unit: str | None = None, host: str | None = None) -> list[AttemptRow]:
    """One row per attempt in the window; the attempt the verdict is about (the last, or the most recent failed one
    while a restart is still starting: Diagnosis.attempt_index) carries the verdict's cause, rule and fixes[0]."""
    u = unit_of(tl, unit)
    rows = []
    vi = d.attempt_index if d.attempt_index is not None else len(tl.attempts) - 1
    for i, a in enumerate(tl.attempts):
        last = i == vi
        if not a.records:
            continue
        h = host_of(a, host)
        cause = d.attempts[i].get("cause") if i < len(d.attempts) else None
        fix = None
        if last and d.fixes:
            f = d.fixes[0]
            fix = {"lever": f.lever, "flag": f.flag, "from": f.from_, "to": f.to, "text": f.text}
        ts = next((r.ts for r in a.records if r.ts), None)
        rows.append(
            AttemptRow(
                key=attempt_key(h, u, a),
                host=h,
                unit=u,
                engine=tl.engine,
                engine_version=tl.engine_version,
                model=str(a.config.raw.get("model_path") or a.config.raw.get("model") or "") or None,
                started=ts.isoformat() if ts else None,
                config=_config(a),
                phase=d.phase if last else a.phase,
                outcome=attempt_outcome(a),
                cause=(d.cause if last else cause) if a.failed else None,
                signature=signature(a) if a.failed else None,
                fix=fix,
                rule=d.rule if last else None,
                origin=d.origin or None,
            )
        )
    return rows


# --------------------------------------------------------------------------------------------------------------
# the reasoning


def earlier_here(hist_rows: list[AttemptRow], window_rows: list[AttemptRow], cur: AttemptRow) -> list[AttemptRow]:
    """Attempts of this unit on this host before the current one, oldest first (history first, then the window;
    a row in both counts once, with what the history knew: its suggested fix)."""
    keys = {r.key for r in hist_rows}
    out = [r for r in hist_rows if r.key != cur.key and _before(r, cur)]
    seen = {r.key for r in out}
    for r in window_rows:
        if r.key == cur.key:
            break
        if r.key not in seen and r.key not in keys:
            out.append(r)
        elif r.key in keys and r.key not in seen:
            out.append(next(h for h in hist_rows if h.key == r.key))
        seen.add(r.key)
    out.sort(key=lambda r: r.started or "")
    return out


def _before(r: AttemptRow, cur: AttemptRow) -> bool:
    if r.started and cur.started:
        return r.started < cur.started
    return True  # no times to compare: what was recorded earlier came earlier


def tried_values(rows: list[AttemptRow]) -> dict[str, set]:
    """lever -> values in force in failed attempts (the planner must not propose them again)."""
    out: dict[str, set] = {}
    for r in rows:
        if r.outcome != "failed":
            continue
        for k, v in r.config.items():
            if v is not None:
                out.setdefault(k, set()).add(v)
    return out


def _applied(fix: dict | None, before: dict, now: dict) -> bool:
    if not fix or not fix.get("lever"):
        return False
    lever, to = fix["lever"], fix.get("to")
    cur, old = now.get(lever), before.get(lever)
    if to is None or cur is None:
        return False
    if isinstance(to, bool) or isinstance(cur, bool):
        return bool(cur) == bool(to)
    try:
        cur_f, to_f = float(cur), float(to)
        old_f = float(old) if old is not None else float(fix.get("from"))
    except (TypeError, ValueError):
        return str(cur) == str(to)
    if cur_f == to_f:
        return True
    return cur_f != old_f and (cur_f - old_f) * (to_f - old_f) > 0  # moved the suggested way (maybe further)


def _phase_i(p: str | None) -> int:
    return PHASE_INDEX.get(p or "", -1)


def _reached(r: AttemptRow) -> int:
    return len(PHASE_INDEX) if r.outcome == "ready" else _phase_i(r.phase)


def regression(prev: AttemptRow, cur: AttemptRow) -> str | None:
    if prev.outcome != "failed" or not _applied(prev.fix, prev.config, cur.config):
        return None
    p, c = _phase_i(prev.phase), _phase_i(cur.phase)
    if c < 0 or p < 0 or c > p:
        return None
    if c == p and prev.cause == cur.cause:
        return None
    fix = prev.fix.get("text") or prev.fix.get("flag")
    where = "at the same phase" if c == p else f"earlier, in {cur.phase}"
    return (
        f"the previous attempt failed in {prev.phase} ({prev.cause or 'unknown'}); its suggested fix ({fix}) was "
        f"applied, and now the service fails {where}"
    )


def unexplained(earlier: AttemptRow, cur: AttemptRow) -> str | None:
    if not earlier.config or not cur.config:
        return None
    c = _phase_i(cur.phase)
    if c < 0 or _reached(earlier) <= c:
        return None
    diff = sorted(k for k in set(earlier.config) | set(cur.config) if earlier.config.get(k) != cur.config.get(k))
    if any(_phase_i(LEVER_PHASE.get(k, "launch")) <= c for k in diff):
        return None
    got = "came up" if earlier.outcome == "ready" else f"got past it, to {earlier.phase}"
    what = (
        "with the same flags"
        if not diff
        else "and the flags that differ (" + ", ".join(diff) + ") act only after " + cur.phase
    )
    return f"an earlier attempt on this host {got} {what}; this one died in {cur.phase}, which no flag change explains"


def _larger_or_same(other: dict, mine: dict) -> tuple[bool, bool]:
    """(other's config is the same or larger than mine, it is exactly the same)."""
    same = True
    for k in set(other) | set(mine):
        a, b = other.get(k), mine.get(k)
        if a == b:
            continue
        same = False
        if k in DEMAND_LEVERS:
            try:
                if float(a) >= float(b):
                    continue
            except (TypeError, ValueError):
                pass
            return False, False
        if k == "graphs_off" and a is False and b is True:
            continue
        return False, False
    return True, same


def healthy_elsewhere(rows: list[AttemptRow], cur: AttemptRow) -> list[dict]:
    out = []
    for r in rows:
        if r.outcome != "ready" or not r.host or r.host == cur.host:
            continue
        if cur.model and r.model and r.model != cur.model:
            continue
        ok, same = _larger_or_same(r.config, cur.config)
        if ok and r.config:
            out.append({"host": r.host, "started": r.started, "same_flags": same, "key": r.key[:12]})
    return out[-3:]


def _when(started: str | None) -> str:
    if not started:
        return ""
    return " at " + started[11:16] if len(started) >= 16 else ""


def review(
    d: Diagnosis,
    cur: AttemptRow,
    earlier: list[AttemptRow],
    elsewhere: list[AttemptRow],
    *,
    tried_extra: dict[str, set] | None = None,
    attempts_here: int | None = None,
    fleet: Callable[[str, str | None], list[str]] | None = None,
) -> Review:
    """Apply the cross-attempt rules to a fresh verdict `d` (read, never changed) and say what the history added;
    the changes it asks for are `Review.amendments` (`d.amended(*rv.amendments)` is the final verdict).

    `earlier`: the latest attempts here (bounded); `tried_extra`: values the store says were tried here beyond
    them; `attempts_here`: the store's count; `fleet(cause, rule)`: the hosts that got this verdict recently."""
    tried_all = tried_values(earlier)
    for k, vs in (tried_extra or {}).items():
        tried_all.setdefault(k, set()).update(vs)
    tried = {k: {v for v in vs if v != cur.config.get(k)} for k, vs in tried_all.items()}
    rv = Review(
        host=cur.host,
        unit=cur.unit,
        attempts_here=len(earlier) if attempts_here is None else attempts_here,
        tried={k: v for k, v in tried.items() if v},
    )
    rv.healthy_elsewhere = healthy_elsewhere(elsewhere, cur)
    seen = []
    for h in rv.healthy_elsewhere:
        how = "with the same flags" if h["same_flags"] else "with the same or a larger configuration"
        seen.append(f"history: {cur.unit or 'this unit'} came up on {h['host']} {how}{_when(h['started'])}")
    if seen:
        rv.amendments.append(Amendment(notes=tuple(seen)))
    if not d.failed or not cur.host or (d.cause in EXTERNAL_CAUSES):
        return rv
    if d.cause == "hardware_fault" and _breaker(d, cur, rv, d.rule, fleet):
        return rv
    rule, reason = _sequence(cur, earlier)
    if reason is None or _breaker(d, cur, rv, rule, fleet):
        return rv
    rv.escalation, rv.reason = rule, reason
    rv.amendments.append(_escalate(d, cur, earlier, rv))
    return rv


def _sequence(cur: AttemptRow, earlier: list[AttemptRow]) -> tuple[str | None, str | None]:
    """(history rule, reason) when the sequence of attempts here points at the host, else (None, None)."""
    failed_before = [r for r in earlier if r.outcome in ("failed", "ready")]
    if failed_before and failed_before[-1].outcome == "failed":
        reason = regression(failed_before[-1], cur)
        if reason:
            return "history.same-host-regression", reason
    for e in reversed(failed_before):
        reason = unexplained(e, cur)
        if reason:
            return "history.no-flag-explains", reason
    return None, None


def _breaker(
    d: Diagnosis, cur: AttemptRow, rv: Review, rule: str | None, fleet: Callable[[str, str | None], list[str]] | None
) -> bool:
    """The fleet circuit breaker: True (and an amendment says so) when this hardware verdict already landed on
    BREAKER_MIN_HOSTS hosts, this one included, within BREAKER_WINDOW_S."""
    if fleet is None:
        return False
    hosts = sorted(set(fleet("hardware_fault", rule)) | {cur.host})
    if len(hosts) < BREAKER_MIN_HOSTS:
        return False
    rv.fleet = {"rule": rule, "hosts": hosts, "window_s": BREAKER_WINDOW_S}
    shown = ", ".join(hosts[:8]) + (f" and {len(hosts) - 8} more" if len(hosts) > 8 else "")
    hours = f"{BREAKER_WINDOW_S / 3600:g} h"
    note = (
        f"fleet: the same hardware verdict ({rule or 'hardware_fault'}) landed on {len(hosts)} hosts "
        f"within {hours} ({shown}): more likely a software or driver cause than {len(hosts)} failing hosts"
    )
    check = (
        f"before draining hosts, check what changed across {len(hosts)} hosts within {hours}: the GPU driver "
        "(nvidia-smi), the CUDA and engine versions, the container image"
    )
    actions, conf = list(d.actions), None
    if d.cause == "hardware_fault":  # the log's own verdict: kept, with less confidence and no draining
        conf = cf.breaker(d.confidence)
        actions = [a for a in actions if "drain" not in a.lower()]
    rv.amendments.append(Amendment(notes=(note,), confidence=conf, actions=(check, *actions)))
    return True


def _escalate(d: Diagnosis, cur: AttemptRow, earlier: list[AttemptRow], rv: Review) -> Amendment:
    """The history's hardware-fault verdict, as an amendment of the log's verdict `d`."""
    was, conf = d.cause, d.confidence
    moved = rv.healthy_elsewhere[-1]["host"] if rv.healthy_elsewhere else None
    base = cf.escalation(rv.escalation == "history.same-host-regression", bool(rv.healthy_elsewhere))
    target = f" (it came up on {moved})" if moved else ""
    move = f"move the service to another host{target}, or drain {cur.host} until its GPUs pass the checks"
    if was == "hardware_fault":
        actions = list(d.actions) + ([move] if move not in d.actions else [])
        return Amendment(
            notes=(f"history agrees ({rv.escalation}): {rv.reason}",),
            confidence=round(max(conf, base), 2),
            actions=tuple(actions),
            clear_fixes=True,
        )
    story = "; ".join(
        f"attempt {i + 1}: {r.outcome} in {r.phase or 'unknown'}"
        + (f" ({r.cause})" if r.cause else "")
        + (f", suggested {r.fix.get('text') or r.fix.get('flag')}" if r.fix else "")
        for i, r in enumerate(earlier[-4:])
    )
    alternatives = None
    if was:
        alternatives = (
            {"cause": was, "confidence": cf.demoted(conf)},
            *[a for a in d.alternatives if a.get("cause") not in (was, "hardware_fault")][:2],
        )
    explanation = (
        f"Suspected hardware fault on {cur.host}: {rv.reason}. Earlier attempts of "
        f"{cur.unit or 'this service'} on this host — {story}. Changing flags has stopped making "
        f"sense: the host (most likely one of its GPUs), not the configuration, is what fails. "
        f"On its own, this attempt's log reads: {d.explanation}"
    ).strip()
    actions = list(HOST_CHECKS) + ([move] if move not in HOST_CHECKS else [])
    return Amendment(
        cause="hardware_fault",
        rule=rv.escalation,
        title="suspected hardware fault on " + cur.host,
        confidence=round(base, 2),
        alternatives=alternatives,
        explanation=explanation,
        actions=tuple(actions),
        clear_fixes=True,
        attempt_cause="hardware_fault",
    )


def only(tl: Timeline, a: Attempt) -> Timeline:
    """A timeline of attempt `a` alone (its own verdict, for the sequence rules)."""
    return Timeline(
        engine=tl.engine, engine_version=tl.engine_version, attempts=[a], records=a.records, start_seen=a.start_seen
    )
