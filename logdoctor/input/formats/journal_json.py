"""journalctl -o json / json-seq / json-pretty lines, and the journal-entry → Outer mapping shared with the
systemd-python and export readers.

Traps handled (journald.md §3): keys in any order; every value a string; a MESSAGE holding ESC or TAB arrives as
an array of byte ints; a field over 4096 bytes arrives as null unless journalctl ran with -a.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from logdoctor.core.records import KERNEL, SERVICE, SYSTEMD
from logdoctor.input.formats import Outer

_KEEP = (
    "_BOOT_ID",
    "UNIT",
    "USER_UNIT",
    "_SYSTEMD_UNIT",
    "EXIT_CODE",
    "EXIT_STATUS",
    "JOB_RESULT",
    "JOB_TYPE",
    "MESSAGE_ID",
    "_COMM",
    "_CMDLINE",
    "_EXE",
    "CODE_FILE",
    "__MONOTONIC_TIMESTAMP",
    "_LOGDOCTOR_NOTE",
    "CONTAINER_NAME",
    "INVOCATION_ID",
    "_SYSTEMD_INVOCATION_ID",
)


def field_text(value: object) -> str | None:
    """journalctl json field → text: strings as is, byte arrays decoded, null kept as None."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, list):
        if all(isinstance(v, int) and 0 <= v < 256 for v in value):
            return bytes(value).decode("utf-8", "replace")
        # a field set several times in one entry: journalctl prints the values as a list
        parts = [field_text(v) for v in value]
        return "\n".join(p for p in parts if p is not None)
    return str(value)


def parse_json_line(line: str) -> dict | None:
    """One json/json-seq line → a dict entry, or None if the line is not a journal JSON object."""
    s = line.lstrip("\x1e").strip()
    if not (s.startswith("{") and s.endswith("}")):
        return None
    import json  # here: only JSON journals need it, and `explain` on a text log skips its import (~1.5 ms)

    try:
        obj = json.loads(s)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    if "MESSAGE" not in obj and "__REALTIME_TIMESTAMP" not in obj and "__CURSOR" not in obj:
        return None
    return obj


def looks_like_json_entry(line: str) -> bool:
    s = line.lstrip("\x1e")
    return s.startswith("{") and ('"MESSAGE"' in s or '"__CURSOR"' in s or '"__REALTIME_TIMESTAMP"' in s)


def entry_outer(entry: Mapping[str, object], fmt: str) -> Outer:
    """A journal entry → Outer; MESSAGE may hold several lines (the reader splits them into records)."""
    msg = field_text(entry.get("MESSAGE"))
    extra: dict[str, str] = {}
    if msg is None:
        msg = ""
        if "MESSAGE" in entry:
            extra["_LOGDOCTOR_NOTE"] = "MESSAGE was null: field over 4096 bytes (run journalctl with -a)"
    ts = None
    rt = field_text(entry.get("__REALTIME_TIMESTAMP"))
    if rt:
        try:
            ts = datetime.fromtimestamp(int(rt) / 1e6, tz=UTC)
        except (ValueError, OverflowError, OSError):
            ts = None
    pid = _int(entry.get("_PID"))
    prio = _int(entry.get("PRIORITY"))
    ident = field_text(entry.get("SYSLOG_IDENTIFIER")) or field_text(entry.get("_COMM"))
    unit = field_text(entry.get("_SYSTEMD_UNIT")) or field_text(entry.get("UNIT"))
    tr = field_text(entry.get("_TRANSPORT"))
    if tr == "kernel" or ident == "kernel":
        transport = KERNEL
    elif pid == 1 or (tr == "journal" and ident == "systemd"):
        transport = SYSTEMD
        unit = field_text(entry.get("UNIT")) or unit
    else:
        transport = SERVICE
    for k in _KEEP:
        v = entry.get(k)
        if v is not None:
            t = field_text(v)
            if t is not None:
                extra[k] = t
    return Outer(
        fmt=fmt,
        msg=msg,
        ts=ts,
        host=field_text(entry.get("_HOSTNAME")),
        ident=ident,
        pid=pid,
        unit=unit,
        priority=prio,
        transport=transport,
        extra=extra,
    )


def _int(v: object) -> int | None:
    t = field_text(v)
    if t is None:
        return None
    try:
        return int(t)
    except ValueError:
        return None
