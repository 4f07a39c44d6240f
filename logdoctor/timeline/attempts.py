"""Which lines are the service's, where its attempts begin, and which attempt a verdict is about.

A window of `journalctl -b` (or a paste with a cron job, sshd or nvidia-smi in it) mixes programs. An attempt is
only the service's own start: systemd's Starting/Started for *that* unit, a new config dump, or a new main PID of the
engine's own process. Lines of other programs belong to no attempt; they stay in the records as evidence (an
nvidia-smi "Unknown Error", a kernel Xid) but never open an attempt, never count as "the service logged", and never
end one. Kernel Xid and OOM-kill lines name the pid they hit; one that names another program's pid is not the
service's failure.

The verdict is about the most recent *failed* attempt when the last one is still starting (Restart=on-failure
brought it back while the window was cut); otherwise about the last attempt.
"""

from __future__ import annotations

import re
from collections import Counter

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass, field
from logdoctor.core.records import META, SERVICE, SYSTEMD, Record, kernel_sourced
from logdoctor.engines import each
from logdoctor.timeline import decisive as dcs
from logdoctor.timeline import units

FOREIGN = "foreign"  # Record.extra key set on lines of other programs

# a unit name anywhere: its suffix and the name character before it (fixed width, so linear on any line)
_ANY_UNIT = rxcache.compile(r"[\w@\-\\:]\.(?:service|scope|timer|socket|slice|mount|target)\b")
# systemd lines about something else than a unit of ours: logind sessions, user managers
_OTHER_SD = rxcache.compile(r"Session \d+ of User|User Manager for UID|user@\d+|user-runtime-dir|Daily |Cleanup of ")
# the process names an inference engine runs under (Engine.process_names; Xid/oom-kill lines give the kernel's comm
# name, ≤15 chars), and Ray's (a generic "python" is not enough: on a shared host another user's notebook is python too)
_ENGINE_COMM = rxcache.compile("|".join(each("process_names") + (r"ray::", r"raylet")), re.I)
# Where an attempt starts, on a message: every engine's config dump or version banner (Engine.config_dump), and a
# new boot (journalctl's "-- Boot ID --" line). The one table: the scan's boundary patterns (scan/prefilter.py) and
# its boundary check (scan/boundary.py) are derived from it, so the two cuts cannot disagree.
STARTS: tuple[str, ...] = each("config_dump")
BOOT = "-- Boot"
_CONFIG = rxcache.compile("|".join(STARTS))


# what only a program writes at the start of a message: a traceback and its frames, an exception or a C++ abort, an
# error report of the runtime (a notes file or a README quotes these inside its prose, never at a line's start)
_PROGRAM_LINE = rxcache.compile(
    r"^(?:Traceback \(most recent call last\)|\s*File \"|[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b|"
    r"terminate called|\s*what\(\):|Fatal Python error|Segmentation fault|Aborted|Killed\b|"
    r"(?:CUDA|NCCL|Cuda|cuda)\b.{0,40}(?:error|failure|failed)|\*\*\* |#\d+ |\s+at |"
    # a level word first, as triage's looks_like_log reads a line of log shape (a logger without a time)
    r"\s*\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b)"
)


def written_by_a_program(records: list[Record]) -> bool:
    """Some line of the window is a program's: it carries a log format's fields (a time, a level, a host, unit or
    pid, an engine or wrapper prefix, a rank), came from systemd, the kernel or journalctl, or starts the way only
    a program's output does (a traceback, an exception, an abort, a config dump). False for prose, such as a note
    that retells a crash in words, which is then no engine failure, whatever words it quotes."""
    for r in records:
        if r.transport != SERVICE or r.ts is not None or r.engine_ts or r.level or r.prefix_engine or kernel_sourced(r):
            return True
        if r.ident or r.unit or r.host or r.pid is not None or r.rank or r.proc or r.extra.get("wrapper"):
            return True
        if _PROGRAM_LINE.match(r.msg) or dcs.PARSER_USAGE.match(r.msg) or dcs.PARSER_ERROR.match(r.msg):
            return True
        if _CONFIG.search(r.msg[:200]):
            return True
    return False


@dataclass
class Ownership:
    """Who the service is in this window."""

    unit: str | None = None  # "sglang-qwen.service", when systemd named it
    desc: str | None = None  # its Description, from "Started U - Desc."
    idents: set[str] = field(default_factory=set)  # syslog identifiers of the service's processes
    pids: set[int] = field(default_factory=set)  # journal pids and engine-tag pids of the service
    foreign_pids: set[int] = field(default_factory=set)

    def own(self, r: Record) -> bool:
        if r.transport == SERVICE:
            return not r.extra.get(FOREIGN)
        if r.transport == SYSTEMD:
            return self.own_systemd(r.msg, r.unit)
        return True

    def own_systemd(self, msg: str, unit: str | None = None) -> bool:
        if self.unit is None:
            return not _OTHER_SD.search(msg)
        if unit:
            return unit == self.unit
        if msg.startswith(self.unit + ":") or self.unit in msg:
            return True
        base = self.unit.removesuffix(".service")
        if base and re.search(rf"(?<![\w-]){re.escape(base)}(?![\w-])", msg):
            return True
        if _ANY_UNIT.search(msg) or _OTHER_SD.search(msg):
            return False
        m = units.START_DESC.match(msg)
        if m and self.desc:
            return m.group("desc").rstrip(".") == self.desc
        return m is not None and self.desc is None

    def kernel_attribution(self, values: dict, text: str, kind: str) -> dict:
        """{"foreign": True} for a kernel event that hit another program, else {}."""
        return {"foreign": True} if self.kernel_foreign(values.get("pid"), values.get("comm"), text, kind) else {}

    def kernel_foreign(self, pid: int | None, comm: str | None, text: str, kind: str = "xid") -> bool:
        """A kernel Xid / OOM-kill line that hit another program (its pid is another program's, its memory cgroup
        another unit's or a user's session, or its process is not an engine process)."""
        memcg = re.search(r"task_memcg=(\S+?)(?:,|$)", text) or re.search(r"oom_memcg=(\S+?)(?:,|$)", text)
        if memcg and self.unit:
            return self.unit not in memcg.group(1)
        if pid is None:
            return False
        if pid in self.pids:
            return False
        if pid in self.foreign_pids:
            return True
        if kind != "xid":
            # an OOM kill without cgroup details: the victim is often an engine child whose pid the log never shows
            return False
        if not self.pids:
            return comm is not None and comm != "" and not _ENGINE_COMM.search(comm) and not comm.startswith("python")
        return not (comm and _ENGINE_COMM.search(comm))


def attribute_kill_reports(kernel: list) -> None:
    """One OOM-kill report spans several kernel lines: a victim pid the cgroup line placed elsewhere is foreign on
    every line, and "X invoked oom-killer" (the allocating task, not the victim) belongs to the report after it."""
    gone = {e.values["pid"] for e in kernel if e.name == "oom_kill" and e.values.get("foreign") and "pid" in e.values}
    for e in kernel:
        if e.name == "oom_kill" and e.values.get("pid") in gone:
            e.values["foreign"] = True
    for i, e in enumerate(kernel):
        if e.name == "oom_kill" and "pid" not in e.values:
            nxt = [k for k in kernel[i + 1 :] if k.name == "oom_kill" and "pid" in k.values and k.line - e.line <= 40]
            if nxt and all(k.values.get("foreign") for k in nxt):
                e.values["foreign"] = True


def ownership(records: list[Record]) -> Ownership:
    """Find the service's unit, identifiers and pids, and mark every line of another program FOREIGN."""
    o = Ownership()
    if not written_by_a_program(records):  # prose (a note retelling a crash): no line is the service's
        for r in records:
            r.extra[FOREIGN] = "1"
        return o
    o.idents = _engine_idents(records)
    o.unit, o.desc = units.name(records, o.idents)
    for r in records:
        if r.transport == SERVICE and _mine(o, r, by_pid=False):
            if r.pid is not None:
                o.pids.add(r.pid)
            tp = r.extra.get("tag_pid")
            if tp and tp.isdigit():
                o.pids.add(int(tp))
    for r in records:
        if r.transport != SERVICE:
            continue
        if not _mine(o, r, by_pid=True):
            r.extra[FOREIGN] = "1"
            if r.pid is not None:
                o.foreign_pids.add(r.pid)
        else:
            r.extra.pop(FOREIGN, None)
    return o


def _engine_idents(records: list[Record]) -> set[str]:
    """The syslog identifiers of the service: those with engine lines (prefixed, config dumps, tracebacks), else the
    most frequent one."""
    idents: Counter = Counter()
    engine_lines: Counter = Counter()
    for r in records:
        if r.transport != SERVICE or not r.ident:
            continue
        idents[r.ident] += 1
        if r.prefix_engine or _CONFIG.search(r.msg) or "Traceback (most recent call last)" in r.msg:
            engine_lines[r.ident] += 1
    # one stray line that happens to look prefixed (cron's "(root) CMD ...") does not make a program the engine
    top = max(engine_lines.values(), default=0)
    engine_idents = {i for i, n in engine_lines.items() if n >= 3 or n * 2 >= top}
    if engine_idents:
        return engine_idents
    return {idents.most_common(1)[0][0]} if idents else set()


def _mine(o: Ownership, r: Record, by_pid: bool) -> bool:
    """A service line of the service's own program (by identifier, or by a pid it was seen with)."""
    if r.unit and o.unit and r.unit != o.unit:
        return False
    if not o.idents or r.ident is None or r.ident in o.idents:
        return True
    return by_pid and r.pid is not None and r.pid in o.pids


SD_STARTED = rxcache.compile(r"^(?:Started|Starting) (?P<what>.+?)\.{0,3}$")
# the unit's process is gone: systemd's words now, and before v236 ("main process exited", "holdoff time over,
# scheduling restart", "entered failed state"), as an older host still logs them
_SD_EXIT = rxcache.compile(
    r"[Mm]ain process exited, code=|Scheduled restart job, restart counter is at|holdoff time over, scheduling restart|"
    r"Failed with result '|entered failed state"
)


@dataclass(slots=True)
class _Cutter:
    """Where a new attempt opens, as a machine over the records in order (split's state between lines)."""

    markers: tuple
    own: Ownership
    seen_config: bool = False
    seen_progress: bool = False
    exited: bool = False
    has_own: bool = False  # the current chunk holds a line of the service
    has_start: bool = False  # ... and its own start line
    last_pid: int | None = None

    def opens(self, r: Record) -> bool:
        """Record `r` starts a new attempt (read before `r` joins the current one)."""
        if r.transport == SYSTEMD and self.own.own_systemd(r.msg, r.unit):
            # "Starting X..." then ExecStartPre output then "Started X" is one start: a start line opens a new
            # attempt only once the current one has exited, or when it holds no start line of its own yet
            new = bool(SD_STARTED.match(r.msg) and self.has_own and (self.exited or not self.has_start))
            if _SD_EXIT.search(r.msg):
                self.exited = True
            return new
        if r.transport == META:
            return r.msg.startswith(BOOT) and self.has_own
        if r.transport == SERVICE and not r.extra.get(FOREIGN):
            if _CONFIG.search(r.msg) and self.seen_config and self.seen_progress:
                return True
            return bool(
                self.exited
                and self.last_pid is not None
                and r.pid is not None
                and r.pid != self.last_pid
                and self.seen_progress
            )
        return False

    def reset(self) -> None:
        self.seen_config = self.seen_progress = self.exited = self.has_own = self.has_start = False
        self.last_pid = None

    def joined(self, r: Record) -> None:
        """Record `r` is now part of the current attempt."""
        if r.transport == SYSTEMD and SD_STARTED.match(r.msg) and self.own.own_systemd(r.msg, r.unit):
            self.has_start = True
        if r.transport != SERVICE or r.extra.get(FOREIGN) or not r.msg.strip():
            return  # a blank line (a paste's first line, a quote's empty line) is nobody's: no attempt of its own
        self.has_own = True
        if _CONFIG.search(r.msg):
            self.seen_config = True
        elif self.seen_config and not self.seen_progress and r.msg and not r.continuation:
            self.seen_progress = self._progress(r.msg)
        if r.pid is not None and self.last_pid is None:
            self.last_pid = r.pid

    def _progress(self, msg: str) -> bool:
        """A line past launch: a marker of a later phase, or a traceback."""
        return (
            any(m.keyword and m.keyword in msg and m.edge != "config" and m.phase != "launch" for m in self.markers)
            or "Traceback" in msg
        )


def split(records: list[Record], markers, own: Ownership) -> list[list[Record]]:
    """Cut the window where the service starts again: systemd Started for its unit, a new boot, a new config dump or
    version banner after the previous attempt got going, or a new main PID after systemd saw the old one exit.
    Lines of other programs never cut and never make a chunk "the service's"."""
    chunks: list[list[Record]] = [[]]
    cut = _Cutter(tuple(markers), own)
    for r in records:
        if cut.opens(r):
            chunks.append([])
            cut.reset()
        chunks[-1].append(r)
        cut.joined(r)
    # a trailing chunk with no line of the service itself (another unit's "Started") is not an attempt
    out = [c for c in chunks if c]
    while len(out) > 1 and not _own_service(out[-1]):
        out[-2].extend(out.pop())
    return out or [[]]


def _own_service(chunk: list[Record]) -> bool:
    return any(x.transport == SERVICE and not x.extra.get(FOREIGN) and x.msg.strip() for x in chunk)


def outcome(a) -> str:
    """failed | ready | in_progress | stopped (an operator's stop of a healthy service)."""
    if a.failed:
        return "failed"
    if a.systemd.get("stopped_by") == "operator" or any(e.kind == "systemd" and e.name == "stopping" for e in a.events):
        return "stopped"
    if a.ready:
        return "ready"
    return "in_progress"


def verdict_attempt(attempts: list) -> tuple[int, str | None]:
    """Index of the attempt the verdict is about, and a note when it is not the last one: the most recent failed
    attempt when every later one is still starting."""
    last = len(attempts) - 1
    if last <= 0 or attempts[last].failed:
        return last, None
    if outcome(attempts[last]) != "in_progress":
        return last, None
    failed = [i for i, a in enumerate(attempts) if a.failed]
    if not failed:
        return last, None
    i = failed[-1]
    if any(outcome(a) != "in_progress" for a in attempts[i + 1 :]):
        return last, None
    nxt = attempts[i + 1]
    ph = nxt.phase if nxt.phase not in (None, "unknown") else "launch"
    return i, f"a new attempt started at line {nxt.start_line} and is in {ph}"
