"""Write a verdict back into the journal as structured fields, next to the failure it explains.

`journalctl -u UNIT` shows the entry right under the failure (OBJECT_SYSTEMD_UNIT= from a root process is part of
journalctl's -u match) and `journalctl LOGDOCTOR_CAUSE=hardware_fault` finds every such verdict. Where no journald
runs (a container, CI) the same fields are written in the journal export format, which systemd-journal-remote turns
into a journal file (`systemd-journal-remote -o verdicts.journal -`).
"""

from __future__ import annotations

import os
import socket
import struct
import time

from logdoctor.verdict.diagnosis import Diagnosis

JOURNAL_SOCKET = "/run/systemd/journal/socket"


def verdict_fields(d: Diagnosis, unit: str) -> dict[str, str]:
    from logdoctor.verdict.remedy import render_fix

    if not d.failed:
        fix, cause, prio = "none", "none", "6"
        msg = f"logdoctor: {unit}: no failure in the log"
    else:
        cause = d.cause or "unknown"
        if d.fixes:
            fix = render_fix(d.fixes[0])
        elif d.no_flag_change:
            fix = "none: do not change flags; " + (d.actions[0] if d.actions else "check the host")
        else:
            fix = "none" + (f": {d.actions[0]}" if d.actions else "")
        prio = "3" if cause != "unknown" else "4"
        where = f" during {d.phase}" if d.phase and d.phase != "unknown" else ""
        msg = f"logdoctor: {unit} failed{where}: {cause} (confidence {d.confidence:.2f}); next: {fix}"
    fields = {
        "MESSAGE": msg,
        "PRIORITY": prio,
        "SYSLOG_IDENTIFIER": "logdoctor",
        "OBJECT_SYSTEMD_UNIT": unit,
        "LOGDOCTOR_UNIT": unit,
        "LOGDOCTOR_CAUSE": cause,
        "LOGDOCTOR_CONFIDENCE": f"{d.confidence:.2f}",
        "LOGDOCTOR_PHASE": d.phase or "unknown",
        "LOGDOCTOR_FIX": fix,
    }
    if d.rule:
        fields["LOGDOCTOR_RULE"] = d.rule
    if d.rank:
        fields["LOGDOCTOR_RANK"] = d.rank
    if d.history and d.history.get("escalation"):
        fields["LOGDOCTOR_ESCALATION"] = d.history["escalation"]
    return fields


def journald_available() -> bool:
    return os.path.exists(JOURNAL_SOCKET)


def send(fields: dict[str, str]) -> None:
    """Through journald (systemd.journal.send; silently dropped by the library when journald is not running)."""
    from systemd import journal

    args = {k: v for k, v in fields.items() if k != "MESSAGE"}
    journal.send(fields["MESSAGE"], **args)


def export_bytes(fields: dict[str, str], *, now_us: int | None = None) -> bytes:
    """One entry in the journal export format, with the fields journald would add (time, host, pid, uid)."""
    now_us = now_us if now_us is not None else time.time_ns() // 1000
    full = {
        "__REALTIME_TIMESTAMP": str(now_us),
        "_HOSTNAME": socket.gethostname(),
        "_PID": str(os.getpid()),
        "_UID": str(os.getuid()),
        "_COMM": "logdoctor",
        "_TRANSPORT": "journal",
        **fields,
    }
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            full.setdefault("_BOOT_ID", f.read().strip().replace("-", ""))
    except OSError:
        pass
    out = bytearray()
    for k, v in full.items():
        raw = v.encode("utf-8", "replace")
        if any(c < 0x20 for c in raw):
            out += k.encode("ascii") + b"\n" + struct.pack("<Q", len(raw)) + raw + b"\n"
        else:
            out += k.encode("ascii") + b"=" + raw + b"\n"
    out += b"\n"
    return bytes(out)
