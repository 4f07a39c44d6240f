"""The start-up phase state machine, declared once: (state, marker edge) → transition, read by one driver.

Why: the phase an attempt is in was tracked twice (while reading the attempt, and by replaying its markers up to
the fatal line) with rules that differed in the details (a `point` marker could move one back and not the other).
Both now feed `Tracker`, the only reader of `TRANSITIONS`. A rank's phase *spans* (`timeline._advance`) are
bookkeeping over the same marker edges: they say which lines each phase took, not which phase comes next.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal

from logdoctor.core.lean import dataclass
from logdoctor.engines.markers import PHASE_INDEX

if TYPE_CHECKING:
    from logdoctor.engines.markers import Marker

State = Literal["idle", "in_phase"]  # no phase yet / inside some phase
Target = Literal["own", "then", "serving"]  # the marker's own phase / the phase after it (end) / serving
When = Literal["always", "forward", "never"]  # move always / only when not behind the current phase / never


@dataclass(frozen=True, slots=True)
class Transition:
    """What a marker of one edge does to a machine in one state."""

    target: Target
    when: When
    implied: bool = False  # the new phase is inferred (the phase after an end marker), not seen begin


TRANSITIONS: Final = MappingProxyType(
    {
        ("idle", "begin"): Transition("own", "always"),
        ("idle", "point"): Transition("own", "always"),
        ("idle", "end"): Transition("then", "always", implied=True),
        ("idle", "ready"): Transition("serving", "always"),
        ("idle", "config"): Transition("own", "always"),
        ("idle", "version"): Transition("own", "always"),
        ("in_phase", "begin"): Transition("own", "always"),
        ("in_phase", "point"): Transition("own", "forward"),
        ("in_phase", "end"): Transition("then", "always", implied=True),
        ("in_phase", "ready"): Transition("serving", "always"),
        # config dumps and version banners are launch lines; workers re-print them after launch
        ("in_phase", "config"): Transition("own", "never"),
        ("in_phase", "version"): Transition("own", "never"),
    }
)
# a phase that is entered only from `idle`: workers print launch lines long after the attempt launched
ENTERED_ONCE: Final = frozenset({"launch"})
# markers printed from inside another step's forward pass (vLLM compiles during the profile run): they say the
# engine got there, not which step the forward belonged to, so a traceback's frames may place the failure
NESTED_MARKERS: Final = frozenset({"dynamo", "compile_range", "compile_cache"})


@dataclass(slots=True)
class Tracker:
    """One machine: feed markers in line order; `phase` is where it is, `implied` whether that was only inferred."""

    phase: str | None = None
    implied: bool = False

    def feed(self, m: Marker) -> bool:
        """Apply marker `m`; True when it moved the machine (to the same phase counts)."""
        state: State = "idle" if self.phase is None else "in_phase"
        t = TRANSITIONS.get((state, m.edge))
        if t is None or t.when == "never" or (state == "in_phase" and m.phase in ENTERED_ONCE):
            return False
        nxt = "serving" if t.target == "serving" else (m.then or m.phase) if t.target == "then" else m.phase
        if t.when == "forward" and self.phase is not None and PHASE_INDEX[nxt] < PHASE_INDEX.get(self.phase, 0):
            return False
        self.phase = nxt
        self.implied = (t.implied and bool(m.then)) or m.name in NESTED_MARKERS
        return True


def phase_after(phase: str, marker_tab) -> str:
    """The phase that follows `phase` once it completed: the `then` of its end marker (else `phase` itself)."""
    for m in marker_tab:
        if m.edge == "end" and m.phase == phase and m.then:
            return m.then
    return phase
