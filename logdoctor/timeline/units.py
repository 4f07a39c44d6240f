"""Which unit is the engine: a journal of several services → one part per owning unit, each said to be an engine's
or not by the Engine records (engines/): a unit whose name holds an engine's `unit_words`, or whose own lines carry
an engine's prefix or config dump / version banner (`Engine.config_dump`).

The one home of this question. `explain` (timeline.build) reads the part `pick` gives; `triage` (triage.analyse)
maps over `engine_parts`; `name` says a part's unit when no journal field does (timeline.attempts.ownership). A part keeps its unit's service lines (and service lines of no unit), systemd's lines
about that unit, and every kernel and journal line.
"""

from __future__ import annotations

import re
from collections import Counter

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass
from logdoctor.core.records import SERVICE, SYSTEMD, Record
from logdoctor.engines import each

# words in a unit's name that say it runs an engine (Engine.unit_words)
_UNIT_WORDS = rxcache.compile("|".join(map(re.escape, each("unit_words"))), re.I)
# an engine's config dump or version banner (Engine.config_dump: the lines an attempt starts with)
_DUMP = rxcache.compile("|".join(each("config_dump")))
# systemd's own lines that name a unit: "U.service: Main process exited, …", "Started U - Desc."
_UNIT_MSG = rxcache.compile(r"^(?P<unit>[\w@.\-\\:]+\.service): ")
_UNIT_START = rxcache.compile(
    r"^(?:Started|Starting|Stopped|Stopping) (?P<unit>[\w@.\-\\:]+\.(?:service|scope|timer|socket|slice))\b"
)
_UNIT_END = rxcache.compile(r"^(?:Finished|Stopped|Failed to start) (?P<unit>[\w@.\-\\:]+\.(?:service|scope|timer))\b")
_ENDED = rxcache.compile(
    r"^(?:Finished|Stopped|Failed to start) |: (?:Deactivated successfully|Main process exited|Failed with result|"
    r"Succeeded|Consumed )"
)
START_DESC = rxcache.compile(
    r"^(?:Started|Starting|Stopped|Stopping) (?:[\w@.\-\\:]+\.service - )?(?P<desc>.+?)\.{0,3}$"
)


@dataclass(slots=True)
class Part:
    """One owning unit's share of the window."""

    unit: str | None  # the unit (a journal field); None when the window names at most one
    records: list[Record]
    engine: bool  # the Engine records say this unit runs an inference engine (a window's lone part: taken as one)
    votes: int  # its service lines, engine-prefixed ones counted thrice (explain picks the most)


def partition(records: list[Record]) -> list[Part]:
    """The window by owning unit, in the order the units first log. A window whose service lines name one unit or
    none is one part, its records as they are (after `by_process` names the units of a short journal of several
    engine services running at once)."""
    by_process(records)
    votes: dict[str, int] = {}
    for r in records:
        if r.transport == SERVICE and r.unit:
            votes[r.unit] = votes.get(r.unit, 0) + (2 if r.prefix_engine else 0) + 1
    if len(votes) < 2:
        unit = next(iter(votes), None)
        return [Part(unit, records, True, votes.get(unit, 0) if unit else 0)]
    engines = _engine_units(records, votes)
    return [Part(u, _keep(records, u), u in engines, n) for u, n in votes.items()]


OVERLAP = 3  # lines an earlier engine process still logs after a later one started: two services, not a restart


def by_process(records: list[Record]) -> None:
    """A short journal (no unit field) of two or more engine services that ran at once: journald prints each
    service's stream under its own pid (every rank of one service shares its stream's pid), and systemd's lines name
    the units. When engine processes (each with engine-prefixed lines or a config dump) interleave, each process's
    lines get the unit systemd's own lines tie it to (`_stream_units`). A restart (a new pid after the old one stopped
    logging) does not interleave and is left as it is: the attempts of one unit."""
    if any(r.unit for r in records if r.transport == SERVICE):
        return
    spans = _engine_processes(records)
    if len(spans) < 2 or not _interleaved(records, spans):
        return
    unit_of = _stream_units(records, spans)
    for r in records:
        if r.transport == SERVICE and r.pid is not None:
            u = unit_of.get((r.ident, r.pid))
            if u is not None:
                r.unit = u


def _engine_processes(records: list[Record]) -> dict[tuple, list[int]]:
    """(ident, pid) -> [first line, last line] of each process with engine-prefixed lines or a config dump."""
    spans: dict[tuple, list[int]] = {}  # (ident, pid) -> [first line, last line, engine-prefixed lines]
    for r in records:
        if r.transport == SERVICE and r.pid is not None:
            sp = spans.get((r.ident, r.pid))
            if sp is None:
                sp = spans[(r.ident, r.pid)] = [r.line, r.line, 0]
            sp[1] = r.line
            if r.prefix_engine:
                sp[2] += 1
    if len(spans) < 2:  # one process (or none): nothing to tell apart (the common case: no regex per line)
        return {}
    for r in records:  # a process without engine-prefixed lines may still print a config dump
        if r.transport == SERVICE and r.pid is not None:
            sp = spans[(r.ident, r.pid)]
            if not sp[2] and _DUMP.search(r.msg):
                sp[2] = 1
    return {k: sp[:2] for k, sp in sorted(spans.items(), key=lambda kv: kv[1][0]) if sp[2]}


def _interleaved(records: list[Record], spans: dict[tuple, list[int]]) -> bool:
    """Each later process starts while the earlier ones still log OVERLAP lines after it (not a restart)."""
    keys = list(spans)
    for i in range(1, len(keys)):
        first, earlier = spans[keys[i]][0], set(keys[:i])
        after = sum(1 for r in records if r.line > first and r.transport == SERVICE and (r.ident, r.pid) in earlier)
        if after < OVERLAP:
            return False
    return True


def _unit_lines(records: list[Record]) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """systemd's lines that start and that end an engine unit: (input line, unit) each."""
    starts: list[tuple[int, str]] = []
    ends: list[tuple[int, str]] = []
    for r in records:
        if r.transport != SYSTEMD:
            continue
        m = _UNIT_MSG.match(r.msg) or _UNIT_START.match(r.msg) or _UNIT_END.match(r.msg)
        if not m or not _UNIT_WORDS.search(m.group("unit")):
            continue
        if r.msg.startswith(("Started ", "Starting ")):
            starts.append((r.line, m.group("unit")))
        elif _ENDED.search(r.msg):
            ends.append((r.line, m.group("unit")))
    return starts, ends


def _stream_units(records: list[Record], spans: dict[tuple, list[int]]) -> dict[tuple, str]:
    """Each engine process's unit, from systemd's own lines: the engine unit whose end systemd reports first after the
    process's last line (latest-ending process first), else the engine unit systemd last started before its first
    line; a process left over gets the one engine unit left over. Nothing is guessed beyond that ({} when not every
    process gets one)."""
    starts, ends = _unit_lines(records)
    out: dict[tuple, str] = {}
    for k, (_first, last) in sorted(spans.items(), key=lambda kv: -kv[1][1]):
        u = next((u for ln, u in ends if ln > last and u not in out.values()), None)
        if u is not None:
            out[k] = u
    for k, (first, _last) in spans.items():
        u = None if k in out else next((u for ln, u in reversed(starts) if ln < first and u not in out.values()), None)
        if u is not None:
            out[k] = u
    left = [k for k in spans if k not in out]
    free = [u for u in dict.fromkeys(u for _, u in starts + ends) if u not in out.values()]
    if len(left) == 1 and len(free) == 1:
        out[left[0]] = free[0]
    return out if len(out) == len(spans) else {}


def engine_parts(records: list[Record]) -> list[Part]:
    """Triage's parts, by unit name: the engine units', or every unit's when none is an engine's."""
    parts = partition(records)
    if len(parts) < 2:
        return parts
    return sorted([p for p in parts if p.engine] or parts, key=lambda p: p.unit or "")


def pick(records: list[Record]) -> Part:
    """Explain's part: of the engine units (else of all), one that systemd saw fail, else the one with the most
    votes (the first to log on a tie). A journal of two engine services where one failed is read for the failure:
    the busier healthy one would answer "came up" (exit 0) for a window that holds a crash."""
    parts = partition(records)
    if len(parts) < 2:
        return parts[0]
    pool = [p for p in parts if p.engine] or parts
    return max(pool, key=lambda p: (_failed(p), p.votes))


# systemd's own words for a unit that did not end well (its result, a non-zero exit, a signal, a core dump)
_UNIT_FAILED = rxcache.compile(
    r": (?:Failed with result|Main process exited, code=(?:killed|dumped|exited, status=(?!0/)))|^Failed to start "
)


def _failed(p: Part) -> bool:
    return any(r.transport == SYSTEMD and _UNIT_FAILED.search(r.msg) for r in p.records)


def name(records: list[Record], idents: set[str]) -> tuple[str | None, str | None]:
    """The unit of a part's service and its Description (from "Started U - Desc."): the journal field of its
    processes `idents`; a short-format journal has none, so then the unit systemd had started (and not yet seen
    end) when the service printed its config dump, each time it did; else the unit systemd's own lines name most.
    (A timer's oneshot unit that runs every minute is named more often than the engine's, but it has ended before
    the engine starts.)"""
    by_field = Counter(r.unit for r in records if r.transport == SERVICE and r.unit and r.ident in idents)
    if by_field:
        unit: str | None = by_field.most_common(1)[0][0]
    else:
        launched, named = _launches(records, idents)
        unit = (launched or named).most_common(1)[0][0] if (launched or named) else None
    if unit:
        for r in records:
            if r.transport == SYSTEMD and r.msg.startswith(("Started ", "Starting ")) and f"{unit} - " in r.msg:
                m = START_DESC.match(r.msg)
                if m:
                    return unit, m.group("desc").rstrip(".")
    return unit, None


def _launches(records: list[Record], idents: set[str]) -> tuple[Counter, Counter]:
    """Per unit: how often it was the latest unit systemd started and had not seen end when the service printed a
    config dump (its launch), and how often systemd's lines name it."""
    launched: Counter = Counter()
    named: Counter = Counter()
    running: list[str] = []  # units started and not ended, in start order
    for r in records:
        if r.transport == SYSTEMD:
            m = _UNIT_MSG.match(r.msg) or _UNIT_START.match(r.msg) or _UNIT_END.match(r.msg)
            if not m:
                continue
            u = m.group("unit")
            named[u] += 1
            if u in running:
                running.remove(u)
            if r.msg.startswith(("Started ", "Starting ")):
                running.append(u)
            elif not _ENDED.search(r.msg):
                running.append(u)  # another line about a running unit ("U: Consumed …" is said at its end)
        elif r.transport == SERVICE and running and (not idents or r.ident in idents) and _DUMP.search(r.msg):
            launched[running[-1]] += 1
    return launched, named


def _engine_units(records: list[Record], units) -> set[str]:
    found = {u for u in units if _UNIT_WORDS.search(u)}
    for r in records:
        if r.transport == SERVICE and r.unit and r.unit not in found and (r.prefix_engine or _DUMP.search(r.msg)):
            found.add(r.unit)
    return found


def _keep(records: list[Record], unit: str) -> list[Record]:
    base = unit.removesuffix(".service")

    def keep(r: Record) -> bool:
        if r.transport == SERVICE:
            return r.unit in (unit, None)
        if r.transport == SYSTEMD:
            return r.unit == unit or base in r.msg
        return True

    return [r for r in records if keep(r)]
