"""Journal records and the clock that stamps them.

A case is built as a list of `Record`s (one journal entry each).  Engine
emitters append records through a `Log`, which owns the clock, the host and
the unit; renderers (render.py) turn the records into one output format.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass
class Record:
    t: datetime          # journald realtime (host-local wall clock), microseconds
    ident: str           # SYSLOG_IDENTIFIER: python3 / vllm / systemd / kernel / sshd ...
    pid: int | None      # None for kernel lines
    msg: str             # one line, or several when the writer used the native protocol
    kind: str = "app"    # app: the service's own output; unit: systemd about the unit;
                         # kernel; other: another service on the host
    priority: int = 6
    boot: int = 0        # index of the boot (a reboot in the window adds '-- Boot --')
    mono: float = 0.0    # seconds since boot


@dataclass
class Log:
    rng: random.Random
    t: datetime
    host: str
    unit: str                    # "sglang-qwen.service"
    ident: str = "python3"       # identifier of the service's stdout
    pid: int = 4242
    records: list[Record] = field(default_factory=list)
    boot: int = 0
    boot_t: datetime | None = None
    engine_skew: timedelta = timedelta(0)   # engine clock minus journal clock (container TZ)

    def __post_init__(self) -> None:
        if self.boot_t is None:
            self.boot_t = self.t - timedelta(hours=self.rng.randint(3, 900), seconds=self.rng.randint(0, 3599))

    # -- clock ---------------------------------------------------------
    def tick(self, lo: float = 0.0, hi: float = 0.05) -> datetime:
        micros = int(self.rng.uniform(lo, hi) * 1_000_000)
        self.t += timedelta(microseconds=micros)
        return self.t

    def wait(self, seconds: float, jitter: float = 0.1) -> None:
        self.tick(seconds * (1 - jitter), seconds * (1 + jitter))

    @property
    def et(self) -> datetime:
        """The engine's own clock (what it prints inside its prefix)."""
        return self.t + self.engine_skew

    # -- writers ------------------------------------------------------
    def _add(self, ident: str, pid: int | None, msg: str, kind: str, prio: int) -> Record:
        self.tick(0.0, 0.002)
        rec = Record(self.t, ident, pid, msg, kind, prio, self.boot,
                     (self.t - self.boot_t).total_seconds())
        self.records.append(rec)
        return rec

    def app(self, msg: str, prio: int = 6) -> Record:
        return self._add(self.ident, self.pid, msg, "app", prio)

    def app_lines(self, text: str, prio: int = 6) -> None:
        for line in text.split("\n"):
            self.app(line, prio)

    def systemd(self, msg: str, prio: int = 6) -> Record:
        return self._add("systemd", 1, msg, "unit", prio)

    def kernel(self, msg: str, prio: int = 4) -> Record:
        return self._add("kernel", None, msg, "kernel", prio)

    def other(self, ident: str, pid: int | None, msg: str, prio: int = 6) -> Record:
        return self._add(ident, pid, msg, "other", prio)

    def other_unit(self, ident: str, pid: int, msg: str, prio: int = 6) -> Record:
        """A helper process of the same unit (ExecStartPost): shown by `journalctl -u`, not by docker."""
        return self._add(ident, pid, msg, "unit", prio)

    def reboot(self, gap_s: float = 240.0) -> None:
        self.wait(gap_s)
        self.boot += 1
        self.boot_t = self.t - timedelta(seconds=self.rng.uniform(18, 40))

