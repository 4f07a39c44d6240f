"""The marker-table mechanism: an engine module is a list of `Marker` rows (data), matched against message bodies.

A row says which phase a line belongs to and whether it begins it, ends it (and which phase starts after it), or
is a point inside it; named regex groups become readings (memory figures, token counts). To teach logdoctor a new
wording, add a row; no code changes.
"""

from __future__ import annotations

import re

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass
from logdoctor.core.vocab import PHASE_INDEX, PHASES, Edge  # noqa: F401 - PHASE_INDEX re-exported (timeline, older callers)


@dataclass(frozen=True)
class Marker:
    """A named engine log line: the regex that spots it and the phase or edge it marks."""

    name: str
    pattern: str
    phase: str  # the phase this line belongs to
    edge: Edge = "point"  # vocab.EDGES: begin | end | point | ready | config | version | death
    then: str | None = None  # for edge=end: the phase that starts after it
    keyword: str = ""  # cheap substring(s), "a|b", one of which must be present before the regex runs
    sums: tuple[str, ...] = ()  # readings that add up per rank when the marker repeats (target + draft weights)

    def __post_init__(self):
        if self.phase not in PHASES:
            raise ValueError(f"marker {self.name}: unknown phase {self.phase}")

    @property
    def regex(self) -> re.Pattern:
        """Compiled on first use: most rows' keywords never occur in a given log (start-up cost, issue 11)."""
        rx = _COMPILED.get(self.pattern)
        if rx is None:
            rx = _COMPILED[self.pattern] = rxcache.compile(self.pattern)
        return rx


_COMPILED: dict[str, re.Pattern] = {}


# deaths any engine's process can show: the shell's report of a SIGKILL, and argparse refusing the command line
COMMON_DEATHS: tuple[Marker, ...] = (
    Marker("shell_killed", r"^Killed$", "launch", "death", keyword="Killed"),
    Marker(
        "argparse",
        r"^[\w.\-]+(?: [\w.\-]+)?: error: (?:argument |unrecognized arguments|the following arguments are required)",
        "launch",
        "death",
        keyword="error: ",
    ),
)


def match(markers: tuple[Marker, ...], body: str):
    """First marker matching body → (marker, readings), else None."""
    for m, kws in _prepared(markers):
        if kws:
            for k in kws:
                if k in body:
                    break
            else:
                continue
        mo = m.regex.search(body)
        if mo:
            return m, {k: _num(v) for k, v in mo.groupdict().items() if v is not None}
    return None


_PREPARED: dict[int, tuple] = {}


def _prepared(markers: tuple[Marker, ...]) -> list[tuple[Marker, tuple[str, ...]]]:
    """Each row with its keywords split once (match runs for every line of the log: issue 11)."""
    got = _PREPARED.get(id(markers))
    if got is None or got[0] is not markers:  # keep the table itself: an id is only unique while it lives
        if len(_PREPARED) > 64:
            _PREPARED.clear()
        got = _PREPARED[id(markers)] = (
            markers,
            [(m, tuple(m.keyword.split("|")) if m.keyword else ()) for m in markers],
        )
    return got[1]


def _num(v: str):
    try:
        return (
            float(v.replace(",", ""))
            if any(c.isdigit() for c in v) and v.replace(",", "").replace(".", "", 1).lstrip("-").isdigit()
            else v
        )
    except ValueError:
        return v
