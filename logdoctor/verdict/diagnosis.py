"""The Diagnosis: what `explain` prints and what `diagnose()` returns; `to_dict()` is schema
logdoctor.diagnosis/v1 (design.md), validated in tests against logdoctor/schemas/diagnosis.schema.json."""

from __future__ import annotations

from logdoctor.core.lean import dataclass, field, replace
from logdoctor.core.vocab import OUTCOMES, UNKNOWN

SCHEMA = "logdoctor.diagnosis/v1"


@dataclass
class FixStep:
    """One remediation step: set a lever's flag from its current value to a new one."""

    lever: str
    flag: str
    from_: object
    to: object
    why: str
    text: str = ""  # the change as a person types it: "--mem-fraction-static 0.92", "remove --enable-torch-compile"

    def to_dict(self) -> dict:
        return {"lever": self.lever, "flag": self.flag, "from": self.from_, "to": self.to, "why": self.why}


@dataclass
class Evidence:
    """A log line quoted as evidence, with its 1-based input line number."""

    line: int
    text: str


def version_fields(dated: str | None) -> tuple[str | None, str | None]:
    """(engine_version, engine_version_hint): a version the log printed, or None plus how the build was dated.

    Engines that print no version are dated by wording they introduced (engines/<engine>.py `infer_version`,
    ">=0.5.23"); that is a lower bound, not a version, so it never goes into `engine_version`."""
    if dated and dated.startswith(">="):
        return None, f"{dated[2:]} or later, from wording"
    return dated, None


@dataclass(frozen=True, slots=True)
class Amendment:
    """A change to a built verdict that reasoning beyond the log (the attempt history, the fleet) asks for.

    Why: the verdict used to be edited in place after it was built; now each such finding is a value, and
    `Diagnosis.amended` builds the final verdict from the log's verdict and its amendments. None: unchanged."""

    notes: tuple[str, ...] = ()  # appended
    cause: str | None = None
    rule: str | None = None
    title: str | None = None
    explanation: str | None = None
    confidence: float | None = None
    alternatives: tuple[dict, ...] | None = None
    actions: tuple[str, ...] | None = None  # the whole new list
    clear_fixes: bool = False  # no flag change: the fixes go, `no_flag_change` is set
    attempt_cause: str | None = None  # the cause of the attempt the verdict is about, in `attempts`


@dataclass(frozen=True)
class Diagnosis:
    """The verdict `explain` reports: cause, phase, confidence, evidence, fixes and attempts. Frozen once built
    (api.diagnose_timeline); later findings are `Amendment`s."""

    engine: str
    engine_version: str | None
    failed: bool
    phase: str
    cause: str | None
    confidence: float
    rule: str | None
    rank: str | None = None
    evidence: list[Evidence] = field(default_factory=list)
    explanation: str = ""
    fixes: list[FixStep] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    alternatives: list[dict] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    attempts: list[dict] = field(default_factory=list)
    window: dict = field(default_factory=dict)
    # extras (not in the JSON schema's required set; shown by text/markdown and -v)
    title: str = ""
    notes: list[str] = field(default_factory=list)
    candidates: list[dict] = field(default_factory=list)
    no_flag_change: bool = False
    origin: str = ""
    attempt_index: int | None = None  # which attempt of the window the verdict is about (0-based)
    history: dict | None = None  # what the attempt history added (crossattempt.Review); in JSON when present
    source: dict | None = (
        None  # where the engine raises the decisive error (the atlas, docs/atlas.md); in JSON when present
    )
    engine_version_hint: str | None = None  # "0.5.23 or later, from wording" when no version was printed

    def amended(self, *amendments: Amendment, history: dict | None = None) -> Diagnosis:
        """A new Diagnosis: this one with `amendments` applied in order (and `history` set, when given)."""
        d = self
        for am in amendments:
            d = d._apply(am)
        return d if history is None else replace(d, history=history)

    def _apply(self, am: Amendment) -> Diagnosis:
        given = {k: getattr(am, k) for k in ("cause", "rule", "title", "explanation", "confidence")}
        changes: dict = {k: v for k, v in given.items() if v is not None}
        changes["notes"] = self.notes + list(am.notes)
        if am.alternatives is not None:
            changes["alternatives"] = list(am.alternatives)
        if am.actions is not None:
            changes["actions"] = list(am.actions)
        if am.clear_fixes:
            changes["fixes"], changes["no_flag_change"] = [], True
        if am.attempt_cause is not None and self.attempts:
            i = self.attempt_index if self.attempt_index is not None else -1
            attempts = [dict(x) for x in self.attempts]
            attempts[i]["cause"] = am.attempt_cause
            changes["attempts"] = attempts
        return replace(self, **changes)

    @property
    def exit_code(self) -> int:
        return OUTCOMES[self.outcome][0]

    @property
    def outcome(self) -> str:
        """vocab.OUTCOMES: healthy | known | unknown."""
        if not self.failed:
            return "healthy"
        return "unknown" if self.cause in (None, UNKNOWN) else "known"

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "engine_version_hint": self.engine_version_hint,
            "failed": self.failed,
            "phase": self.phase,
            "cause": self.cause if self.failed else None,
            "confidence": self.confidence,
            "rule": self.rule,
            "rank": self.rank,
            "evidence": [{"line": e.line, "text": e.text} for e in self.evidence],
            "explanation": self.explanation,
            "fixes": [f.to_dict() for f in self.fixes],
            "actions": list(self.actions),
            "alternatives": list(self.alternatives),
            "config": dict(self.config),
            "attempts": list(self.attempts),
            "window": dict(self.window),
            "notes": list(self.notes),
            **({"history": dict(self.history)} if self.history is not None else {}),
            **({"source": dict(self.source)} if self.source is not None else {}),
        }
