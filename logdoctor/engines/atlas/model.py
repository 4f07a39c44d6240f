"""The atlas's records: an entry (one message an engine can print, under a stable ID), its variants across releases,
and a hit (a log line resolved to an entry, with the phase and cause read from where the message lives)."""

from __future__ import annotations

from dataclasses import dataclass

Part = str | None  # a literal segment of a template, or None for a formatted value


@dataclass(frozen=True)
class Variant:
    """One wording/location of an entry, and the releases that carry it (bit i = the engine's i-th version)."""

    template: tuple[Part, ...]
    module: str  # path in the wheel, e.g. vllm/config/model.py
    qualname: str  # Class.function or <module>
    line: int  # in the newest release that carries this variant
    mask: int

    @property
    def literals(self) -> tuple[str, ...]:
        return tuple(p for p in self.template if p)

    def text(self) -> str:
        """The template as a person reads it: formatted values shown as {} (the build dropped the spaces at the
        literals' edges; they are put back where a value is not glued to punctuation)."""
        out = []
        t = self.template
        for i, p in enumerate(t):
            if p is not None:
                out.append(p)
                continue
            before = t[i - 1] if i else None
            after = t[i + 1] if i + 1 < len(t) else None
            lead = " " if before and not before.endswith(_GLUE_LEFT) else ""
            trail = " " if after and not after.startswith(_GLUE_RIGHT) else ""
            out.append(f"{lead}{{}}{trail}")
        return "".join(out)


_GLUE_LEFT = ("(", "[", "{", "=", "'", '"', "/", "-", "_", "`", "<")
_GLUE_RIGHT = (")", "]", "}", ",", ".", ";", ":", "'", '"', "/", "%", "-", "_", "`", ">", "!", "?")


@dataclass(frozen=True)
class Entry:
    """A message of an engine: how it is raised or logged, and its history across releases."""

    id: str
    engine: str
    kind: str  # raise | assert | exit | log
    exc: str | None  # exception class (raise / assert / exit)
    level: str | None  # error | critical | warning (log calls)
    recoverable: str  # "" (fatal path) | caught | handled | warning
    variants: tuple[Variant, ...]


@dataclass(frozen=True)
class AtlasHit:
    """A log line resolved to an atlas entry."""

    entry: Entry
    variant: Variant
    versions: tuple[str, ...]  # the releases read that carry this variant, oldest first
    phase: str  # a vocab phase, or "unknown"
    cause: str  # a vocab cause, or "unknown" (the lexicon could not place the message)
    matched: int  # literal characters of the template found in the line

    @property
    def recoverable(self) -> bool:
        return bool(self.entry.recoverable)

    def version_range(self) -> str:
        """'sglang 0.5.2–0.5.6' (or one version)."""
        if not self.versions:
            return self.entry.engine
        lo, hi = self.versions[0], self.versions[-1]
        return f"{self.entry.engine} {lo}" if lo == hi else f"{self.entry.engine} {lo}–{hi}"

    def citation(self) -> str:
        """Where the engine raises or logs this message, e.g. 'raised in vllm/config/model.py:812
        (ModelConfig.verify), vllm 0.10.2–0.33.0'."""
        how = {"raise": "raised", "assert": "asserted", "exit": "exited"}.get(self.entry.kind, "logged")
        v = self.variant
        return f"{how} in {v.module}:{v.line} ({v.qualname}), {self.version_range()}"

    def source(self) -> dict[str, object]:
        """The Diagnosis's `source` field (schema logdoctor.diagnosis/v1, optional)."""
        v = self.variant
        return {
            "atlas_id": self.entry.id,
            "engine": self.entry.engine,
            "module": v.module,
            "line": v.line,
            "function": v.qualname,
            "exception": self.entry.exc,
            "level": self.entry.level,
            "versions": list(self.versions),
            "recoverable": self.recoverable,
        }
