"""Newest-first input (`journalctl -r`, `-o short-iso -r`, `-o json -r`) put back in time order.

Everything after the reader (phases, attempts, the decisive error, the traceback's order) reads time forwards; a
reversed journal read as it comes would show the traceback's last line first and the phase markers after the
death. journalctl reverses entries, not lines: an entry's own continuation lines (indented, no prefix) still follow
its first line, so the input is cut into entries (a line with a journal time starts one) and the entries are
reversed. Only a journal's own time decides, as the journal formats read it (the short family, ISO, full, unix, and
JSON's __REALTIME_TIMESTAMP): an engine's clock inside the message may be another process's."""

from __future__ import annotations

from logdoctor.input.formats import journal_json, journal_text

HEAD = 2000  # lines the decision reads
MIN_STEPS = 3  # backward steps in time needed before an input is called newest first
BACKWARD_SHARE = 4  # ... and backward steps outnumber forward ones this many times over
_ANY_YEAR = 2000  # the short form has no year: any one year orders the lines of one input


def _key(line: str):
    """The sortable journal time at the start of a line, read by the journal formats' own parsers (None: a
    continuation line, or no journal time)."""
    if line[:1] in ("{", "\x1e"):
        entry = journal_json.parse_json_line(line)
        rt = journal_json.field_text(entry.get("__REALTIME_TIMESTAMP")) if entry else None
        return ("json", int(rt)) if rt and rt.isdigit() else None
    o = journal_text.parse(line, _ANY_YEAR)
    if o is None or o.ts is None:
        return None
    return (o.fmt.replace("-precise", ""), o.ts.timestamp())


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
