"""Follow a unit during a deploy and return as soon as it is ready or has failed, with the diagnosis.

The journal is followed with systemd-python: the unit's own lines (_SYSTEMD_UNIT=), systemd's lines about it
(_PID=1 + UNIT=), its coredumps and the kernel's lines (Xid, OOM killer), from the unit's latest start. The live
journal is waited on with sd_journal_wait(); journal files (a growing file, e.g. written by systemd-journal-remote)
are polled, since sd-journal cannot wait on files opened by path.

Ready: the engine's ready line (the timeline's ready marker), or HTTP 200 from health_url (polled with backoff).
Failed: the timeline says the attempt failed (a systemd failure result, an engine death line, a fatal traceback);
watch then reads on for a short grace period (until systemd's verdict on the process, at most `grace` seconds) so
that the rest of the traceback and the kernel's lines are part of the diagnosis. Never blocks past `timeout`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from logdoctor.core.errors import InputError, UsageError
from logdoctor.verdict.diagnosis import Diagnosis

KERNEL_MATCH = "_TRANSPORT=kernel"
_START_PREFIXES = ("Starting ", "Started ")


@dataclass
class Progress:
    """What the status line shows."""

    unit: str
    elapsed: float
    phase: str
    ranks: dict = field(default_factory=dict)  # rank -> phase
    lines: int = 0
    health: str | None = None  # last health-check result, e.g. "503", "refused"

    def line(self, width: int = 0) -> str:
        """The status line; with a width, the per-rank part is shortened first so the elapsed time stays visible."""
        ranks = {r: p for r, p in self.ranks.items() if r != "main" or len(self.ranks) == 1}
        per_rank = " · ".join(f"{r} {p or '-'}" for r, p in sorted(ranks.items()))
        head = f"{self.unit}  {self.phase}"
        tail = (f"  health {self.health}" if self.health else "") + f"  {self.elapsed:.0f}s"
        if per_rank:
            room = width - len(head) - len(tail) - 2 if width else len(per_rank)
            if room < len(per_rank):
                per_rank = per_rank[: max(0, room - 1)] + "…" if room > 8 else ""
            if per_rank:
                head += "  " + per_rank
        line = head + tail
        return line[-width:] if width and len(line) > width else line


@dataclass
class WatchResult:
    """outcome: ready | failed | timeout. Attribute access falls through to the diagnosis (r.cause, r.fixes...)."""

    unit: str
    outcome: str
    diagnosis: Diagnosis
    elapsed: float
    ready_by: str | None = None  # "log" (the engine's ready line) | "health" (health_url answered 200)
    lines: int = 0

    def __getattr__(self, name):
        if name == "diagnosis":
            raise AttributeError(name)
        return getattr(self.diagnosis, name)

    @property
    def exit_code(self) -> int:
        if self.outcome == "timeout":
            return 5
        if self.outcome == "ready":
            return 0
        return self.diagnosis.exit_code

    def to_dict(self) -> dict:
        out = self.diagnosis.to_dict()
        out["watch"] = {
            "unit": self.unit,
            "outcome": self.outcome,
            "elapsed": round(self.elapsed, 2),
            "ready_by": self.ready_by,
            "entries": self.lines,
        }
        return out


class _Follower:
    """Reads new matching entries from the journal (files, a directory, or the live system journal)."""

    def __init__(self, unit: str, journal, since_us: int | None):
        from logdoctor.input.sources import journal as sj

        try:
            from systemd import _reader as rmod
        except ImportError:
            raise InputError(
                "logdoctor watch needs systemd-python (pip install systemd-python; it needs libsystemd-dev)"
            ) from None
        self._norm = sj._python_entry  # noqa: SLF001  (one normalisation for every journal reader)
        files, directory = _journal_arg(journal)
        try:
            if files:
                sj._check_files(files)  # noqa: SLF001
                self.r = rmod._Reader(0, None, files)
                self.can_wait = False
            elif directory:
                sj._check_directory(directory)  # noqa: SLF001
                self.r = rmod._Reader(0, directory, None)
                self.can_wait = True
            else:
                sj._check_live(unit)  # noqa: SLF001
                self.r = rmod._Reader(rmod.LOCAL_ONLY)
                self.can_wait = True
        except OSError as e:
            raise InputError(f"cannot open the journal: {e.strerror or e}") from None
        self.r.data_threshold = 0
        groups = (
            (f"_SYSTEMD_UNIT={unit}",),
            ("_PID=1", f"UNIT={unit}"),
            ("MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1", f"COREDUMP_UNIT={unit}"),
            (KERNEL_MATCH,),
        )
        for i, g in enumerate(groups):
            if i:
                self.r.add_disjunction()
            for term in g:
                self.r.add_match(term)
        if since_us is not None:
            self.r.seek_realtime(since_us)
        else:
            self.r.seek_head()
        self._source = (rmod, files, directory)

    def unit_seen(self, unit: str) -> bool:
        """Whether the journal holds any entry of the unit itself or of systemd about it (at any time)."""
        rmod, files, directory = self._source
        try:
            r = (
                rmod._Reader(0, None, files)
                if files
                else (rmod._Reader(0, directory, None) if directory else rmod._Reader(rmod.LOCAL_ONLY))
            )
        except OSError:
            return True  # cannot tell: the follower reports what it can
        try:
            r.add_match(f"_SYSTEMD_UNIT={unit}")
            r.add_disjunction()
            r.add_match("_PID=1")
            r.add_match(f"UNIT={unit}")
            r.seek_head()
            return bool(r._next(1))
        except OSError:
            return True
        finally:
            r.close()

    def read(self) -> list[dict]:
        out = []
        try:
            while self.r._next(1):
                out.append(self._norm(self.r))
        except OSError as e:
            raise InputError(f"error reading the journal: {e.strerror or e}") from None
        return out

    def wait(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if self.can_wait:
            try:
                self.r.wait(int(seconds * 1_000_000))
                return
            except OSError:
                self.can_wait = False
        time.sleep(seconds)

    def close(self) -> None:
        self.r.close()


UNIT_DIRS = (
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)


def unit_file_exists(unit: str) -> bool:
    """A unit file for `unit` (or its template, for name@instance) in systemd's system unit folders."""
    names = [unit]
    if "@" in unit:
        names.append(unit.split("@", 1)[0] + "@." + unit.rsplit(".", 1)[-1])  # name@x.service -> name@.service
    return any(os.path.exists(os.path.join(d, n)) for d in UNIT_DIRS for n in names)


def _journal_arg(journal) -> tuple[list[str], str | None]:
    """journal=None (the live system journal) | a path of a journal file or a directory | a list of file paths."""
    if journal is None:
        return [], None
    if isinstance(journal, (str, os.PathLike)):
        p = os.fspath(journal)
        return ([], p) if os.path.isdir(p) else ([p], None)
    files = [os.fspath(f) for f in journal]
    if not files:
        raise UsageError("journal= needs at least one file")
    return files, None


def latest_start(entries: list[dict], unit: str) -> int:
    """Index of the unit's latest start (systemd's "Starting"/"Started" line for it); 0 when none is in view."""
    idx = None
    for i in range(len(entries) - 1, -1, -1):
        e = entries[i]
        if e.get("_PID") == "1" and e.get("UNIT") == unit and e.get("MESSAGE", "").startswith(_START_PREFIXES):
            idx = i
            break
    if idx is None:
        return 0
    if entries[idx]["MESSAGE"].startswith("Started "):  # the "Starting" line of the same start, if any
        for j in range(idx - 1, -1, -1):
            e = entries[j]
            if e.get("_PID") == "1" and e.get("UNIT") == unit:
                if e.get("MESSAGE", "").startswith("Starting "):
                    idx = j
                break
    return idx


def _health(url: str, timeout: float) -> str:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=max(0.1, timeout)) as resp:  # noqa: S310 (the user's own URL)
            return str(resp.status)
    except urllib.error.HTTPError as e:
        return str(e.code)
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        return "refused" if isinstance(reason, ConnectionRefusedError) else type(reason).__name__


def watch(
    unit: str,
    *,
    timeout: float,
    health_url: str | None = None,
    journal=None,
    history=None,
    engine: str = "auto",
    since: str | None = None,
    rules=(),
    grace: float = 2.0,
    poll: float = 0.2,
    on_progress: Callable[[Progress], None] | None = None,
) -> WatchResult:
    """Block until `unit` is ready or has failed, or `timeout` seconds pass; return the outcome and diagnosis."""
    from logdoctor.input.sources.journal import mangle_unit, parse_since

    if timeout is None or timeout <= 0:
        raise UsageError("watch needs a timeout > 0 seconds (it never blocks forever)")
    unit = mangle_unit(unit)
    t0 = time.monotonic()
    follower = _Follower(unit, journal, parse_since(since) if since else None)
    if not follower.unit_seen(unit) and not unit_file_exists(unit):
        follower.close()
        raise InputError(f"no journal entries and no unit file for {unit}: is the name right?")
    w = _Watch(unit, engine, health_url, grace, poll, on_progress, t0, t0 + float(timeout))
    outcome, ready_by = "timeout", None
    try:
        while True:
            new = follower.read()
            if new:
                w.entries += new
                w.dirty = True
            now = time.monotonic()
            done = w.from_log(now)
            if done is None and w.failed_at is not None and now - w.failed_at >= grace:
                done = ("failed", None)  # the grace period after the failure is over
            if done is None:
                done = w.from_health(now)
            if done is not None:
                outcome, ready_by = done
                break
            now = time.monotonic()
            w.tick(now)
            if now >= w.deadline:
                if w.failed_at is not None:
                    outcome = "failed"
                break
            follower.wait(w.wake(now) - now)
    finally:
        follower.close()
    view = w.entries[latest_start(w.entries, unit) :] if w.entries else []
    d = _diagnose(view, unit, engine, history, rules)
    return WatchResult(
        unit=unit, outcome=outcome, diagnosis=d, elapsed=time.monotonic() - t0, ready_by=ready_by, lines=len(view)
    )


@dataclass
class _Watch:
    """What one watch() knows between two reads of the journal: the entries so far, when the attempt failed, the
    health check's schedule and the status line. `from_log`/`from_health` return (outcome, ready_by) once one of
    them decides, else None."""

    unit: str
    engine: str
    health_url: str | None
    grace: float
    poll: float
    on_progress: Callable[[Progress], None] | None
    t0: float
    deadline: float
    entries: list[dict] = field(default_factory=list)
    dirty: bool = True  # entries came since the timeline was last built
    failed_at: float | None = None  # when the timeline first said the attempt failed
    backoff: float = 0.5
    health: str | None = None
    next_health: float = field(init=False)
    prog: Progress = field(init=False)
    shown_at: float = field(init=False)

    def __post_init__(self) -> None:
        self.next_health = self.t0
        self.prog = Progress(self.unit, 0.0, "waiting for the start")
        self.shown_at = self.t0 - 1.0

    def from_log(self, now: float) -> tuple[str, str | None] | None:
        """After new entries: the timeline of the latest start, shown; failed once systemd's verdict is in (until
        then the grace period runs from `failed_at`), ready on the engine's ready line."""
        if not (self.dirty and self.entries):
            return None
        from logdoctor.input.read import read_entries
        from logdoctor.timeline.build import build

        self.dirty = False
        view = self.entries[latest_start(self.entries, self.unit) :]
        a = build(read_entries(view, self.unit).records, self.engine).last
        self.prog = Progress(
            self.unit, now - self.t0, a.phase, {r: v.phase for r, v in a.ranks.items()}, len(view), self.health
        )
        if self.on_progress:
            self.on_progress(self.prog)
            self.shown_at = now
        if a.failed:
            if self.failed_at is None:
                self.failed_at = now
            if a.systemd.get("result") or a.systemd.get("code"):
                return "failed", None
        elif a.ready:
            return "ready", "log"
        return None

    def from_health(self, now: float) -> tuple[str, str | None] | None:
        """When a check is due (and nothing failed): ready on HTTP 200, else the next check after a growing wait."""
        if not (self.health_url and now >= self.next_health and self.failed_at is None):
            return None
        self.health = _health(self.health_url, min(2.0, self.deadline - now))
        if self.health == "200":
            return "ready", "health"
        self.next_health = time.monotonic() + self.backoff
        self.backoff = min(self.backoff * 1.5, 5.0)
        self.prog.health = self.health
        return None

    def tick(self, now: float) -> None:
        """The elapsed time ticks on the status line even when the journal is quiet."""
        if self.on_progress and now - self.shown_at >= 1.0:
            self.prog.elapsed = now - self.t0
            self.on_progress(self.prog)
            self.shown_at = now

    def wake(self, now: float) -> float:
        """When to look again: after `poll`, at the end of the grace period, at the next health check."""
        wake = min(self.deadline, now + self.poll)
        if self.failed_at is not None:
            wake = min(wake, self.failed_at + self.grace)
        if self.health_url and self.failed_at is None:
            wake = min(wake, self.next_health)
        return wake


def _diagnose(view: list[dict], unit: str, engine: str, history, rules) -> Diagnosis:
    from logdoctor.classify.runtime import load_default
    from logdoctor.input.read import read_entries
    from logdoctor.matching.loader import load_rules
    from logdoctor.timeline.build import build
    from logdoctor.verdict.api import diagnose_timeline

    res = read_entries(view, unit)
    tl = build(res.records, engine)
    rule_set = load_rules(tuple(rules))
    if not view:
        return diagnose_timeline(tl, res, rule_set, classifier=None)
    if history is None or history is False:
        return diagnose_timeline(tl, res, rule_set, classifier=load_default())
    from logdoctor.history import History, open_history
    from logdoctor.verdict.api import diagnose_with_history

    store = open_history(history)
    try:
        return diagnose_with_history(tl, res, rule_set, classifier=load_default(), history=store, unit=unit)
    finally:
        if not isinstance(history, History):
            store.close()
