"""Typed records: the one shape every input format is read into.

A Record is one message line of the log as the engine wrote it, with where it came from (input line numbers, for
evidence), who wrote it (host, unit, pid, rank/process) and what the log format and engine prefix said about it
(timestamp, priority, level). Everything downstream (timeline, rules, classifier) reads Records only.
"""

from __future__ import annotations

import re
from datetime import datetime

from logdoctor.core.lean import dataclass, field
from logdoctor.core.vocab import Transport

# transports: where a line came from (vocab.TRANSPORTS describes each)
SERVICE: Transport = "service"  # the service's own stdout/stderr (or a raw paste)
KERNEL: Transport = "kernel"  # the kernel ring buffer (journalctl -k, _TRANSPORT=kernel): Xid, OOM killer
SYSTEMD: Transport = "systemd"  # PID 1 / systemd's own lines about the unit (Started, Main process exited, ...)
META: Transport = "meta"  # journalctl's own lines: "-- Boot ... --", "-- No entries --"


@dataclass(slots=True)
class Record:
    """One log line, with the outer (journal/docker/kubectl) and engine prefixes split off."""

    line: int  # 1-based input line number (first line when a record spans several)
    msg: str  # the message with every prefix split off: what rules match against
    text: str = ""  # the message after the outer prefix only (engine prefix still on)
    end_line: int = 0  # last input line this record covers (0 = same as line)
    fmt: str = "raw"  # the input format that produced it
    ts: datetime | None = None  # absolute where the format allows (short has no year: the year is assumed)
    host: str | None = None
    ident: str | None = None  # syslog identifier / container / pod name
    unit: str | None = None  # systemd unit, when known
    pid: int | None = None
    priority: int | None = None  # syslog priority 0..7, when known
    transport: Transport = SERVICE
    level: str | None = None  # engine log level (INFO, WARNING, ERROR, ...)
    engine_ts: str | None = None  # the engine's own timestamp text
    proc: str | None = None  # the full process tag, e.g. "TP0 DP1", "EngineCore_DP0", "APIServer/Worker_TP1"
    rank: str | None = None  # canonical rank of the writer, e.g. "TP1", "DP0", "rank0"; None if not known
    src: str | None = None  # engine source location, e.g. "gpu_worker.py:123"
    continuation: bool = False  # an indented continuation of the previous message (short output, multi-line)
    prefix_engine: str | None = None  # which engine's prefix was recognised ("sglang", "vllm", "torch")
    extra: dict[str, str] = field(default_factory=dict)  # extra journal fields (_BOOT_ID, UNIT, EXIT_STATUS, ...)

    def __init__(  # written out: one per log line (tests/test_startup_dataclass.py checks it against the fields)
        self,
        line: int,
        msg: str,
        text: str = "",
        end_line: int = 0,
        fmt: str = "raw",
        ts: datetime | None = None,
        host: str | None = None,
        ident: str | None = None,
        unit: str | None = None,
        pid: int | None = None,
        priority: int | None = None,
        transport: Transport = SERVICE,
        level: str | None = None,
        engine_ts: str | None = None,
        proc: str | None = None,
        rank: str | None = None,
        src: str | None = None,
        continuation: bool = False,
        prefix_engine: str | None = None,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.line = line
        self.msg = msg
        self.text = text
        self.end_line = end_line
        self.fmt = fmt
        self.ts = ts
        self.host = host
        self.ident = ident
        self.unit = unit
        self.pid = pid
        self.priority = priority
        self.transport = transport
        self.level = level
        self.engine_ts = engine_ts
        self.proc = proc
        self.rank = rank
        self.src = src
        self.continuation = continuation
        self.prefix_engine = prefix_engine
        self.extra = {} if extra is None else extra

    @property
    def last_line(self) -> int:
        return self.end_line or self.line

    def stream_key(self) -> tuple:
        """Which writer this line belongs to, for reassembling multi-line structures per process."""
        return (self.host, self.pid, self.rank or self.proc)


# Words of a kernel report (GPU driver, OOM killer): the cheap test before kernel_sourced's shape test.
KERNEL_WORDS = ("NVRM:", "oom-kill", "Out of memory: Killed")
# A whole line as dmesg prints it: [seconds] or [ctime] (dmesg -T) or neither (dmesg -t, journalctl -k -o cat),
# an optional "kernel: ", then the report itself at the start of the message.
_DMESG_LINE = re.compile(
    r"(?:<\d>)?(?:\[\s*\d+\.\d+\]|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\])?\s?"
    r"(?:kernel: )?(?:NVRM: |Out of memory: Killed process |oom-kill:|[\w:./-]{1,64} invoked oom-killer)"
)


def kernel_sourced(r: Record) -> bool:
    """The record is the kernel's own report, so its Xid/NVRM/OOM-kill text is evidence: it came through the kernel
    transport (a `kernel:` journal identifier, _TRANSPORT=kernel), or it is a whole line of dmesg shape in a raw
    paste. An engine's line that quotes such text (a logged prompt, an exception message) is never one: it has a
    journal identifier of its own, or an engine prefix, or the quote is not at the start of the line."""
    if r.transport == KERNEL:
        return True
    if r.transport != SERVICE or r.ident is not None or r.continuation or r.prefix_engine or r.extra.get("wrapper"):
        return False
    return _DMESG_LINE.match(r.text or r.msg) is not None


@dataclass(slots=True)
class Stats:
    """Line accounting: read == parsed + unparsed + scanned; skipped counts parsed lines that carry no message."""

    read: int = 0
    parsed: int = 0
    unparsed: int = 0
    skipped: int = 0
    collapsed_frames: int = 0  # \r-rewritten progress-bar states collapsed into their last one
    bad_bytes: int = 0  # bytes replaced while decoding invalid UTF-8
    nul_bytes: int = 0  # NUL bytes replaced (intake.repair)
    cut_lines: int = 0  # lines longer than limits.LINE_CAP, cut to their head
    cut_bytes: int = 0  # bytes cut from them
    long_lines: int = 0  # lines longer than limits.MATCH_CAP (rules match their first MATCH_CAP chars)
    encoding: str = "utf-8"  # detected input encoding (utf-16-le, utf-8-bom, ...)
    stopped: str | None = None  # where a truncated or capped compressed input stopped
    # what the streaming store (stream.Keep) did not keep: not line accounting, so left out of ==
    ring_dropped: int = field(default=0, compare=False)  # routine serving lines its ring let go
    evidence_dropped: int = field(default=0, compare=False)  # evidence lines from the middle of a huge input
    # a large input read through the scan (scan/reader.py): lines the prefilter passed over without a line parse
    scanned: int = field(default=0, compare=False)
    formats: dict[str, int] = field(default_factory=dict)
    prefixes: dict[str, int] = field(default_factory=dict)  # process-manager prefixes peeled (ray, torchrun, ...)
    unknown_prefix: str | None = None  # a prefix most lines share that no parser knows (digits shown as N)

    def count_format(self, fmt: str) -> None:
        self.formats[fmt] = self.formats.get(fmt, 0) + 1

    def line(self) -> str:
        fm = ", ".join(f"{k} {v}" for k, v in sorted(self.formats.items(), key=lambda kv: -kv[1]))
        s = f"lines: read {self.read}, parsed {self.parsed}, unparsed {self.unparsed}, skipped {self.skipped}"
        if self.scanned:
            s += f"; {self.scanned} routine lines passed by the scan without a line parse"
        if self.collapsed_frames:
            s += f"; {self.collapsed_frames} progress-bar frames collapsed"
        if self.bad_bytes:
            s += f"; {self.bad_bytes} invalid UTF-8 bytes replaced"
        if self.nul_bytes:
            s += f"; {self.nul_bytes} NUL bytes replaced"
        if self.cut_lines:
            s += f"; {self.cut_lines} over-long lines cut ({self.cut_bytes} bytes)"
        if self.long_lines:
            from logdoctor.core.limits import MATCH_CAP, human

            s += f"; {self.long_lines} lines over {human(MATCH_CAP)} (rules match their first {human(MATCH_CAP)})"
        if self.encoding != "utf-8":
            s += f"; encoding {self.encoding}"
        if self.stopped:
            s += f"; input stopped early: {self.stopped}"
        if self.ring_dropped or self.evidence_dropped:
            s += (
                f"; not kept (bounded store): {self.ring_dropped} routine serving lines, "
                f"{self.evidence_dropped} evidence lines"
            )
        if fm:
            s += f"; formats: {fm}"
        if self.prefixes:
            s += "; prefixes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.prefixes.items(), key=lambda kv: -kv[1]))
        if self.unknown_prefix:
            s += f"; unknown line prefix {self.unknown_prefix!r} on most lines (peeled as an unknown wrapper)"
        return s

    def damage(self) -> dict:
        """The damage counts for the JSON `window.damage` (all zero for a clean log)."""
        return {
            "unparsed": self.unparsed,
            "bad_bytes": self.bad_bytes,
            "nul_bytes": self.nul_bytes,
            "cut_lines": self.cut_lines,
            "cut_bytes": self.cut_bytes,
            "long_lines": self.long_lines,
            "encoding": self.encoding,
            "stopped": self.stopped,
        }


@dataclass(slots=True)
class Unparsed:
    """An input line no format could read (kept, counted, and shown with --stats -v)."""

    line: int
    text: str
    reason: str


@dataclass(slots=True)
class ReadResult:
    """What reading gave: the records, counts, the lines no format parsed, and warnings."""

    records: list[Record]
    stats: Stats
    unparsed: list[Unparsed] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    origin: str = "<stdin>"
