"""Log formats: each module recognises one outer line format and returns an `Outer` (header fields + message).

Detection is per line, so a mixture (a docker log pasted under a journal excerpt) reads correctly; see read.py.
"""

from __future__ import annotations

from datetime import datetime

from logdoctor.core.lean import dataclass, field


@dataclass(slots=True)
class Outer:
    """What the outer (non-engine) prefix of a line says."""

    fmt: str
    msg: str
    ts: datetime | None = None
    host: str | None = None
    ident: str | None = None
    pid: int | None = None
    unit: str | None = None
    priority: int | None = None
    transport: str | None = None
    msg_col: int = 0  # column where the message starts (for short-format continuation lines)
    extra: dict[str, str] = field(default_factory=dict)

    def __init__(  # written out: one per log line (tests/test_startup_dataclass.py checks it against the fields)
        self,
        fmt: str,
        msg: str,
        ts: datetime | None = None,
        host: str | None = None,
        ident: str | None = None,
        pid: int | None = None,
        unit: str | None = None,
        priority: int | None = None,
        transport: str | None = None,
        msg_col: int = 0,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.fmt = fmt
        self.msg = msg
        self.ts = ts
        self.host = host
        self.ident = ident
        self.pid = pid
        self.unit = unit
        self.priority = priority
        self.transport = transport
        self.msg_col = msg_col
        self.extra = {} if extra is None else extra
