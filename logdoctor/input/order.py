"""Newest-first input (`journalctl -r`, `-o short-iso -r`, `-o json -r`) put back in time order.

Everything after the reader (phases, attempts, the decisive error, the traceback's order) reads time forwards; a
reversed journal read as it comes would show the traceback's last line first and the phase markers after the
death. journalctl reverses entries, not lines: an entry's own continuation lines (indented, no prefix) still follow
its first line, so the input is cut into entries (a line with a journal time starts one) and the entries are
reversed. Only a journal's own time prefix decides (the short family, ISO, unix, monotonic and JSON's
__REALTIME_TIMESTAMP): an engine's clock inside the message may be another process's."""

from __future__ import annotations

import re

_MONTHS = {
    m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"))
}
# the journal prefixes of journalctl's text outputs: short / short-precise, short-iso(-precise) / short-full's date,
# short-unix, short-monotonic; and -o json's realtime field (anywhere in the entry's one line)
_SHORT = re.compile(r"([A-Z][a-z]{2}) ([ \d]\d) (\d\d:\d\d:\d\d(?:\.\d+)?) \S")
_ISO = re.compile(r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?)")
_NUMERIC = re.compile(r"(?:\[ *)?(\d{1,12}\.\d{6})\]? \S")
_JSON_RT = re.compile(r'"__REALTIME_TIMESTAMP"\s*:\s*"?(\d+)')
HEAD = 2000  # lines the decision reads
MIN_STEPS = 3  # backward steps in time needed before an input is called newest first
BACKWARD_SHARE = 4  # ... and backward steps outnumber forward ones this many times over


def _key(line: str):
    """The sortable journal time at the start of a line (None: a continuation, or no journal time)."""
    if line[:1] == "{":
        m = _JSON_RT.search(line)
        return (0, int(m.group(1))) if m else None
    m = _SHORT.match(line)
    if m:
        mon = _MONTHS.get(m.group(1))
        return None if mon is None else (1, mon, int(m.group(2)), m.group(3))
    m = _ISO.match(line)
    if m:
        return (2, m.group(1).replace(" ", "T").replace(",", "."))
    m = _NUMERIC.match(line)
    return (3, float(m.group(1))) if m else None


def newest_first(lines: list[str]) -> bool:
    """Whether the journal times of the input's head run backwards (ties, as lines of one second, say nothing)."""
    back = fwd = 0
    prev = None
    for line in lines[:HEAD]:
        k = _key(line)
        if k is None:
            continue
        if prev is not None and k[0] == prev[0]:
            if k < prev:
                back += 1
            elif k > prev:
                fwd += 1
        prev = k
    return back >= MIN_STEPS and back >= BACKWARD_SHARE * fwd


def oldest_first(lines: list[str]) -> list[str]:
    """The entries of a newest-first input in time order, each entry's lines kept in their own order (a line with
    no journal time belongs to the entry above it; lines before the first entry stay first)."""
    lead: list[str] = []
    entries: list[list[str]] = []
    for line in lines:
        if _key(line) is not None:
            entries.append([line])
        elif entries:
            entries[-1].append(line)
        else:
            lead.append(line)
    return lead + [line for e in reversed(entries) for line in e]
