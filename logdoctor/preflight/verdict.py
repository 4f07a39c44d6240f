"""go / no-go / risky from the budget and the host's health, with fixes from explain's planner.

Why the planner: a fix preflight proposes must be the one explain would render (the engine's own flag, relative to
the value in force, never a value already in force or tried on this host). The budget sizes the value; remedy.plan
renders and vets it."""

from __future__ import annotations

from dataclasses import dataclass, field

from logdoctor.preflight.budget import Budget, Finding
from logdoctor.preflight.health import Sign
from logdoctor.verdict.diagnosis import FixStep

SCHEMA = "logdoctor.preflight/v1"
EXIT = {"go": 0, "no-go": 1, "risky": 3}
LOAD_CAVEAT = (
    "Fitting at start-up does not guarantee fitting the longest prompt under load: the pool is shared "
    "by all running requests, and prefill activations grow with the chunk size."
)


@dataclass
class Report:
    """What preflight says: the verdict, its cause and phase, the budget, fixes, evidence and notes."""

    verdict: str
    engine: str
    cause: str | None = None
    phase: str | None = None
    budget: Budget | None = None
    fixes: list[FixStep] = field(default_factory=list)
    evidence: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    model: str | None = None
    gpus: list[dict] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT[self.verdict]

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "verdict": self.verdict,
            "cause": self.cause,
            "phase": self.phase,
            "engine": self.engine,
            "model": self.model,
            "gpus": self.gpus,
            "budget": self.budget.to_dict() if self.budget else {},
            "findings": [
                {"level": f.level, "cause": f.cause, "phase": f.phase, "message": f.message}
                for f in self.findings
                if f.message
            ],
            "fixes": [f.to_dict() for f in self.fixes],  # explain's shape (diagnosis.FixStep)
            "evidence": self.evidence,
            "notes": self.notes,
        }


def decide(
    engine: str,
    budget: Budget | None,
    signs: list[Sign],
    raw: dict,
    levers: dict,
    tried: dict[str, set],
    version: str | None = None,
) -> Report:
    """The verdict: host health first (no flag helps a sick GPU), then the budget's worst finding."""
    rep = Report("go", engine, budget=budget)
    if budget is not None:
        rep.findings = list(budget.findings)
    if signs:
        rep.verdict, rep.cause, rep.phase = "no-go", "hardware_fault", "launch"
        rep.evidence = [{"source": s.source, "line": s.line, "text": s.text} for s in signs]
        rep.notes.append(
            "deploy elsewhere: this host's GPU shows a hardware fault; no flag change will help "
            "(reset or drain the GPU, then check it with dcgmi diag -r 3)"
        )
        return rep
    nogo = [f for f in rep.findings if f.level == "no-go"]
    risky = [f for f in rep.findings if f.level == "risky"]
    worst = nogo or risky
    if worst:
        rep.verdict = "no-go" if nogo else "risky"
        rep.cause, rep.phase = worst[0].cause, worst[0].phase
        rep.fixes, notes = _fixes(engine, worst, raw, levers, tried, version)
        rep.notes.extend(notes)
    return rep


def _fixes(
    engine: str, findings: list[Finding], raw: dict, levers: dict, tried: dict[str, set], version: str | None
) -> tuple[list[FixStep], list[str]]:
    """Each sized target through remedy.plan as a `set` fix: rendered in the engine's flag, vetted against the
    value in force and the values tried on this host (a tried value moves one step further)."""
    from logdoctor.matching.loader import Fix, Rule
    from logdoctor.timeline.build import Attempt, Timeline
    from logdoctor.timeline.config import Config
    from logdoctor.verdict import remedy

    fixes: list[Fix] = []
    seen: set[str] = set()
    for lever, target in [c for f in findings for c in f.changes]:
        if lever in seen:
            continue
        seen.add(lever)
        value = _untried(lever, target, tried.get(lever, set()))
        if value is None:
            continue
        why = {
            "mem_fraction": "the smallest static share whose pool holds one request of the context length",
            "tp_size": "the smallest tensor-parallel size at which the budget fits",
            "context_length": "the longest context the pool holds",
            "graph_max_bs": "the largest captured batch whose graphs fit outside the static share",
        }.get(lever, "sized from the shortfall")
        fixes.append(Fix(lever, "set", value=value, why=why))
    if not fixes:
        return [], []
    cfg = Config(engine=engine, raw=dict(raw), levers=dict(levers), sources=["command line"], version=version)
    attempt = Attempt(0, 0, 0, [], [], [], {}, cfg)
    tl = Timeline(engine, version, [attempt], [], True)
    rule = Rule("preflight.budget", findings[0].cause, "preflight budget", (engine,), {}, fixes=fixes)
    steps, notes = remedy.plan(rule, {}, attempt, tl, tried_extra={k: list(v) for k, v in tried.items()})
    return steps, notes


def _untried(lever: str, target, tried: set):
    """The sized value, or the next one in the direction of the fix when this host already tried it."""
    v = target
    for _ in range(20):
        if v not in tried and str(v) not in {str(t) for t in tried}:
            return v
        if isinstance(v, float):
            v = round(v + 0.01, 2)
            if v > 0.95:
                return None
        elif isinstance(v, int) and lever == "tp_size":
            v *= 2
        elif isinstance(v, int):
            v = max(1, v - (1024 if v > 4096 else max(1, v // 8)))
        else:
            return None
    return None
