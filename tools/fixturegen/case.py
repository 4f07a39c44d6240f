"""A case = one or more attempts of a service, a view (format + selection) and a label.

Endings (sg_*.py / vl_*.py / others.py) are functions `ending(run) -> Outcome`: they drive an engine
emitter through its start-up phases and write the failure (or a healthy start).  `build()` strings the
attempts together with systemd's restart lines, sprinkles unrelated host lines, renders the view and
derives the label from the LAST attempt's outcome.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable

from . import noise, system
from .deploy import Deploy
from .render import LABEL_FORMAT, View, render
from .sglang import SGLang
from .timeline import Log
from .vllm import VLLM


@dataclass
class Outcome:
    phase: str
    cause: str | None
    fix_flags: list[str] = field(default_factory=list)
    fix_other: str = ""
    must_not: list[str] = field(default_factory=list)
    notes: str = ""
    secondary: str | None = None
    confidence: str = "high"
    exit: str = "exit1"      # exit1 | sigkill | oom | oom-exit1 | timeout | abrt | alive

    @property
    def failed(self) -> bool:
        return self.cause is not None


@dataclass
class Attempt:
    d: Deploy
    ending: Callable[["Run"], Outcome]
    desc: str | None = None
    gap: float = 30.0        # seconds since the previous attempt ended
    manual: bool = False     # operator restarted it (changed flags) instead of Restart=on-failure
    reboot: bool = False     # the host was rebooted before this attempt (journal shows '-- Boot ... --')
    hooks: dict = field(default_factory=dict)


@dataclass
class Case:
    id: str
    group: str
    attempts: list[Attempt]
    view: View = field(default_factory=View)
    notes: str = ""
    desc: str | None = None
    ident: str | None = None
    native_tb: bool = False
    ansi: bool = False
    rank_style: str = "tp"
    hooks: dict = field(default_factory=dict)
    host_noise: int = 0
    excerpt: dict | None = None           # {"start": regex, "n": max lines, "last": bool, "end": regex}
    only_attempt: int | None = None       # keep just this attempt's records (seed story slices)
    label: dict = field(default_factory=dict)   # label overrides
    start: tuple[int, int, int] | None = None   # (day, hour, minute) in May 2026
    rng_key: str | None = None            # cases sharing a key are built from the same random stream


class Run:
    """What an ending works with: the log, the rng, the deployment and the case's emitter options."""

    def __init__(self, case: Case, att: Attempt, log: Log, rng: random.Random, k: int, prev: list[Outcome]):
        self.case, self.att, self.log, self.rng, self.d, self.k, self.prev = case, att, log, rng, att.d, k, prev

    def _hooks(self) -> dict:
        out: dict = {}
        for src in (self.case.hooks, self.att.hooks):
            for ph, fns in src.items():
                out.setdefault(ph, []).extend(fns)
        return out

    def sg(self) -> SGLang:
        return SGLang(self.log, self.d, self.rng, self._hooks(), self.case.native_tb, self.case.rank_style)

    def vl(self) -> VLLM:
        return VLLM(self.log, self.d, self.rng, self._hooks(), self.case.ansi)


HOSTS = ["gpu-h100-a07", "inf-node-14", "h200-pool-3", "dgx-b200-02", "a100-rack2-11", "l40s-edge-5", "ml-serve-09",
         "node-gpu-221", "infer-prod-4", "gpu-worker-17", "hpc-g8-31", "lab-rtx-1"]


def default_host(case: Case) -> str:
    h = case.attempts[-1].d.host
    if h:
        return h
    rng = random.Random("host:" + case.group)
    g = case.attempts[-1].d.gpu_key.lower().replace("-40", "")
    return f"{g}-{rng.choice(['node', 'srv', 'gpu', 'inf', 'worker'])}-{rng.randint(1, 48):02d}"


def default_unit(case: Case) -> str:
    d = case.attempts[-1].d
    if d.unit:
        return d.unit
    base = d.model.name.split("-")[0].lower().replace(".", "")
    return f"{d.engine}-{base}.service"


def _pid(rng: random.Random) -> int:
    return rng.randint(1800, 390000)


def build(case: Case, seed: int) -> tuple[str, dict]:
    rng = random.Random(f"{seed}:{case.rng_key or case.id}")
    day, hh, mm = case.start or (rng.randint(2, 28), rng.randint(0, 23), rng.randint(0, 59))
    start = datetime(2026, 5, day, hh, mm, rng.randint(0, 59), rng.randint(0, 999999))
    d0 = case.attempts[-1].d
    ident = case.ident or ("vllm" if d0.engine == "vllm" else "python3")
    log = Log(rng, start, default_host(case), default_unit(case), ident, _pid(rng))
    desc = case.desc or f"{d0.engine.upper() if d0.engine != 'sglang' else 'SGLang'} {d0.model.name}"
    if d0.engine == "vllm":
        desc = case.desc or f"vLLM {d0.model.name}"
    outcomes: list[Outcome] = []
    starts: list[int] = []
    for k, att in enumerate(case.attempts):
        if k:
            prev = outcomes[-1]
            if att.reboot:
                log.reboot(att.gap)
            elif att.manual:
                log.wait(att.gap)
            elif prev.exit != "alive":
                system.restart(log, k, att.desc or desc, att.gap)
        starts.append(len(log.records))
        if case.view.scope == "app":   # a container: the server is (nearly) PID 1
            log.pid = rng.randint(1, 60) if k == 0 else log.pid
        else:
            log.pid = _pid(rng) if k == 0 else log.pid + rng.randint(300, 9000)
        t_start = log.t
        system.started(log, att.desc or desc)
        log.wait(0.2)
        out = att.ending(Run(case, att, log, rng, k, outcomes))
        outcomes.append(out)
        if out.exit not in ("alive", "none"):
            if out.exit == "timeout" and not any("timed out" in r.msg for r in log.records[-8:]):
                system.timed_out(log)
            wall = max((log.t - t_start).total_seconds(), 2.0)
            n = max(att.d.world, 1) ** 0.5 if wall > 30 else 1.0
            system.exited(log, out.exit, rng, cpu=(wall * 0.9 * n, wall * 2.6 * n))
            if out.exit == "timeout":
                system.failed_to_start(log, att.desc or desc)
    records = log.records
    if case.only_attempt is not None:
        k = case.only_attempt
        end = starts[k + 1] if k + 1 < len(starts) else len(records)
        # the attempt and its exit lines; the restart lines belong to the next start (systemd logs them when the
        # restart timer fires, right before the next 'Started')
        records = [r for r in records[starts[k]:end]
                   if not (r.kind == "unit" and ("Scheduled restart job" in r.msg or r.msg.startswith("Stopped ")))]
        outcomes = outcomes[: k + 1]
    records = _sprinkle(records, case.host_noise, rng, log)
    comm = "vllm" if ident == "vllm" else "python3"
    exe = (d0.site.split("/lib/")[0] + "/bin/python3") if "venv" in d0.site else "/usr/bin/python3.12"
    cmd = _cmdline(d0)
    text = render(records, case.view, log.host, log.unit, rng, comm=comm, exe=exe, cmdline=cmd)
    if case.excerpt:
        text = _excerpt(text, **case.excerpt)
    last = outcomes[-1]
    n_att = 1 if case.only_attempt is not None else len(case.attempts)
    label = make_label(case, last, outcomes, n_att)
    return text, label


def _cmdline(d: Deploy) -> str:
    if d.engine == "vllm":
        return f"/usr/bin/python3 /usr/local/bin/vllm serve {d.path}"
    if d.engine == "sglang":
        return f"/usr/bin/python3 -m sglang.launch_server --model-path {d.path}"
    return d.engine


def _sprinkle(records: list, n: int, rng: random.Random, log: Log) -> list:
    if not n:
        return records
    out = list(records)
    for _ in range(n):
        i = rng.randint(1, len(out) - 1)
        t = out[i - 1].t + (out[i].t - out[i - 1].t) / 2
        saved = log.t, log.records
        log.t, log.records = t - timedelta(microseconds=1), []
        noise.host_line(log, rng)
        rec = log.records[0]
        rec.boot = out[i - 1].boot
        log.t, log.records = saved
        out.insert(i, rec)
    return out


def _excerpt(text: str, start: str | None = None, n: int = 16, last: bool = True, end: str | None = None,
             lead: int = 0) -> str:
    """Cut what a user would paste: from the `start` match (first or last), at most n lines, through the first
    `end` match; without `start`, the n lines that end at the last `end` match (the bottom of a traceback)."""
    lines = text.split("\n")
    if start is None:
        j = [k for k, ln in enumerate(lines) if re.search(end, ln)][-1] + 1
        return "\n".join(lines[max(0, j - n):j]).rstrip("\n") + "\n"
    hits = [i for i, ln in enumerate(lines) if re.search(start, ln)]
    i = max(0, (hits[-1] if last else hits[0]) - lead)
    j = min(len(lines), i + n)
    if end:
        ends = [k for k in range(i, len(lines)) if re.search(end, lines[k])]
        if ends:
            j = min(j, ends[0] + 1)
    return "\n".join(lines[i:j]).rstrip("\n") + "\n"


def _merge_must_not(last: Outcome, outcomes: list[Outcome]) -> list[str]:
    out = list(last.must_not)
    for o in outcomes[:-1]:
        out += [m for m in o.must_not if " " in m]
    bare = {m for m in out if " " not in m}
    seen, res = set(), []
    for m in out:
        if " " in m and m.split(" ", 1)[0] in bare:
            continue
        if m not in seen:
            seen.add(m)
            res.append(m)
    return res


def make_label(case: Case, last: Outcome, outcomes: list[Outcome], n_att: int) -> dict:
    d = case.attempts[case.only_attempt if case.only_attempt is not None else -1].d
    notes = " ".join(x for x in (case.notes, last.notes) if x)
    lab = {
        "id": case.id,
        "source": "fixturegen: synthetic case composed from engine facts (shared/reference/engines.md)",
        "generator": "fixturegen",
        "variant_of": case.group,
        "engine": d.engine,
        "engine_version": d.version,
        "gpu": d.gpu_label(),
        "format": LABEL_FORMAT[case.view.fmt],
        "render": _render_name(case),
        "failed": last.failed,
        "phase": last.phase if last.failed else "serving",
        "cause": last.cause,
        "secondary": last.secondary,
        "fix_flags": list(last.fix_flags),
        "fix_other": last.fix_other,
        "resolved": False,
        "label_confidence": last.confidence,
        "notes": notes,
        "must_not_suggest": _merge_must_not(last, outcomes) if last.failed else list(last.must_not),
        "attempts": n_att,
    }
    lab.update(case.label)
    return lab


def _render_name(case: Case) -> str:
    v = case.view
    name = {"short": "journalctl -o short", "short-precise": "journalctl -o short-precise",
            "short-iso": "journalctl -o short-iso", "json": "journalctl -o json", "cat": "journalctl -o cat",
            "docker": "docker logs", "docker-t": "docker logs -t", "kubectl": "kubectl logs --timestamps",
            "paste": "pasted excerpt"}[v.fmt]
    if v.fmt.startswith(("short", "json", "cat")):
        name += " -b" if v.scope == "boot" else " -u UNIT"
        if v.tail:
            name += f" -n {v.tail}"
        if v.all_chars:
            name += " -a"
    elif v.tail:
        name += f" --tail {v.tail}"
    return name
