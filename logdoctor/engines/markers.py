"""The marker-table mechanism: an engine module is a list of `Marker` rows (data), matched against message bodies.

A row says which phase a line belongs to and whether it begins it, ends it (and which phase starts after it), or
is a point inside it; named regex groups become readings (memory figures, token counts). To teach logdoctor a new
wording, add a row; no code changes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from logdoctor.vocab import PHASE_INDEX, PHASES, Edge  # noqa: F401 - PHASE_INDEX re-exported (timeline, older callers)


@dataclass(frozen=True)
class Marker:
    name: str
    pattern: str
    phase: str                 # the phase this line belongs to
    edge: Edge = "point"       # vocab.EDGES: begin | end | point | ready | config | version | death
    then: str | None = None    # for edge=end: the phase that starts after it
    keyword: str = ""          # cheap substring(s), "a|b", one of which must be present before the regex runs
    sums: tuple[str, ...] = ()  # readings that add up per rank when the marker repeats (target + draft weights)
    regex: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "regex", re.compile(self.pattern))
        if self.phase not in PHASES:
            raise ValueError(f"marker {self.name}: unknown phase {self.phase}")


# deaths any engine's process can show: the shell's report of a SIGKILL, and argparse refusing the command line
COMMON_DEATHS: tuple[Marker, ...] = (
    Marker("shell_killed", r"^Killed$", "launch", "death", keyword="Killed"),
    Marker("argparse", r"^[\w.\-]+(?: [\w.\-]+)?: error: (?:argument |unrecognized arguments|the following arguments are required)",
           "launch", "death", keyword="error: "),
)


def match(markers: tuple[Marker, ...], body: str):
    """First marker matching body → (marker, readings), else None."""
    for m in markers:
        if m.keyword and not any(k in body for k in m.keyword.split("|")):
            continue
        mo = m.regex.search(body)
        if mo:
            return m, {k: _num(v) for k, v in mo.groupdict().items() if v is not None}
    return None


def _num(v: str):
    try:
        return float(v.replace(",", "")) if any(c.isdigit() for c in v) and v.replace(",", "").replace(".", "", 1).lstrip("-").isdigit() else v
    except ValueError:
        return v
